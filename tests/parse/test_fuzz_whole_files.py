"""Fuzzing the real flight-recorder dump and probe result: no parser exception reaches a note.

The reader turns a parser's exception into an "internal error" coverage note
so one bug cannot end the read; these tests make sure that net stays empty.
Mutations work on the captured H200 fixtures: bytes flipped, cut,
duplicated, opcodes swapped for other opcodes (pickle), and lines garbled,
cut, swapped (probe JSON). The examples are bounded so CI spends seconds.
"""

from __future__ import annotations

import io
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from nccl_doctor.evidence.intake import Note, Opened
from nccl_doctor.evidence.reader import read_opened
from nccl_doctor.parse.flight_recorder import KIND as FLIGHT_RECORDER
from tests.parse.mutations import mutated

CAPTURED = Path(__file__).resolve().parents[1] / "fixtures" / "captured"
DUMP = (CAPTURED / "fr-h200" / "fr_dump_rank0").read_bytes()
PROBE = (CAPTURED / "probe-h200" / "probe-full.json").read_text()
#: The opcodes of the dump's pickle, for swaps that keep the shape of a pickle.
OPCODES = b"()]}aelstuNKJMXhqjr\x85\x86\x87\x88\x89\x8a\x8c\x94\x95.012GIdgp"
FUZZ = settings(max_examples=250, deadline=None)


@st.composite
def mutated_bytes(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` with a few bytes replaced, inserted, removed, duplicated, or cut off."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 6))):
        i = draw(st.integers(0, max(0, len(out) - 1)))
        op = draw(st.sampled_from(["opcode", "byte", "insert", "delete", "dup", "cut"]))
        if op == "opcode" and out:
            out[i] = draw(st.sampled_from(OPCODES))
        elif op == "byte" and out:
            out[i] = draw(st.integers(0, 255))
        elif op == "insert":
            out[i:i] = draw(st.binary(min_size=1, max_size=4))
        elif op == "delete":
            del out[i : i + draw(st.integers(1, 8))]
        elif op == "dup":
            out[i:i] = out[i : i + draw(st.integers(1, 64))]
        else:
            del out[i:]
    return bytes(out)


def _internal_errors(opened: Opened) -> list[str]:
    notes: list[Note] = []
    read_opened(opened, notes)
    return [n.message for n in notes if "internal error" in n.message]


@FUZZ
@given(mutated_bytes(DUMP))
def test_mutated_flight_recorder_dumps_never_raise(data: bytes) -> None:
    opened = Opened("fr_dump_rank0", io.BufferedReader(io.BytesIO(data)), len(data), 0)
    opened.file_kind = FLIGHT_RECORDER
    assert _internal_errors(opened) == []


@FUZZ
@given(mutated([PROBE], tokens=['"steps": [', '"bandwidth": [', '"isolation": [', "]", "{"]))
def test_mutated_probe_results_never_raise(text: str) -> None:
    data = text.encode()
    opened = Opened("probe.json", io.BufferedReader(io.BytesIO(data)), len(data), None)
    assert _internal_errors(opened) == []
