"""Hostile flight-recorder pickles: bounded, never hung, never an internal error, in every format.

The dumps are built here from the real H200 dump: a million references to
one entry (two bytes each), lengths past the end of the data, numbers of
5,000 digits and texts of 6,000, containers a million levels deep.
"""

from __future__ import annotations

import copy
import pickle
from pathlib import Path
from typing import Any

import pytest

from nccl_doctor.cli import main
from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.flight import FlightEntry, FlightGroup
from nccl_doctor.parse import _pickle
from nccl_doctor.parse.flight_recorder import MAX_ENTRIES, FlightRecorderParser
from nccl_doctor.pipeline import diagnose_with_facts
from nccl_doctor.render import FORMATS, render_report
from tests.run._fr_dumps import real_dump

HUGE = 10**5000 + 7


def _notes(data: bytes) -> tuple[list[Any], list[str]]:
    return FlightRecorderParser().parse(data, "fr_dump_rank0", 0)


def _diagnose_every_format(tmp_path: Path, data: bytes) -> list[str]:
    """Read, diagnose and render ``data`` as a dump; the coverage notes."""
    path = tmp_path / "fr_dump_rank0"
    path.write_bytes(data)
    result = read_paths([str(path)])
    report, facts = diagnose_with_facts(result)
    for fmt in FORMATS:
        assert render_report(report, fmt, facts=facts if fmt == "html" else None)
    notes = [n.message for n in result.notes]
    assert not [n for n in notes if "internal error" in n]
    return notes


def test_a_million_references_to_one_entry_cost_one_entry() -> None:
    dump = real_dump()
    dump["entries"] = dump["entries"] * 1_000_000  # one object, listed by reference
    data = pickle.dumps(dump, protocol=2)
    assert len(data) < 3 << 20
    facts, notes = _notes(data)
    assert len([f for f in facts if isinstance(f, FlightEntry)]) == 1
    assert notes == [
        (
            "flight-recorder: 999999 entries repeat an earlier one by reference "
            "(never so in a real dump): each read once"
        )
    ]


def test_more_distinct_entries_than_the_bound_keep_the_most_recent() -> None:
    dump = real_dump()
    template = dump["entries"][0]
    dump["entries"] = [
        {**copy.deepcopy(template), "collective_seq_id": i} for i in range(MAX_ENTRIES + 10)
    ]
    facts, notes = _notes(pickle.dumps(dump, protocol=2))
    seqs = [f.seq for f in facts if isinstance(f, FlightEntry)]
    assert seqs == list(range(10, MAX_ENTRIES + 10))
    assert notes == [
        (
            f"flight-recorder: read the last {MAX_ENTRIES} of {MAX_ENTRIES + 10} entries "
            "(the most recent)"
        )
    ]


def test_thirty_million_references_are_refused_at_the_item_bound() -> None:
    # {"entries": [<the key itself, by reference> x 30M]}: 60 MB, one APPENDS, as torch writes
    data = b"\x80\x02}(X\x07\x00\x00\x00entriesq\x00](" + b"h\x00" * 30_000_000 + b"eu."
    facts, notes = _notes(data)
    assert facts == []
    assert notes == [
        (
            "flight-recorder: truncated or corrupt pickle, or over a bound: not loaded "
            f"(more than {_pickle.MAX_ITEMS} values on the stack)"
        )
    ]


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"\x80\x04\x8e" + (1 << 62).to_bytes(8, "little") + b".", "runs past the end of the data"),
        (b"\x80\x02}K\x01" + b"\x85" * 1_000_000 + b"K\x01s.", "nested more than 32 deep"),
        (b"\x80\x02}(" + b"]" * 3 + b"K\x01u.", "a key or set item of type list"),
        (b"\x80\x02]q\x00]q\x01h\x00ah\x00K\x01a.", "changed after it was put inside another"),
        (b"\x80\x02}(X\x01\x00\x00\x00ae.", "APPENDS on a dict"),
        (b"\x80\x02X\x01\x00\x00\x00a(Ne.", "APPENDS on a str"),
        (b"\x80\x02L" + b"9" * 6000 + b"L\n.", "bad integer"),
    ],
)
def test_malformed_pickles_are_notes(data: bytes, why: str) -> None:
    facts, notes = _notes(data)
    assert facts == []
    (note,) = notes
    assert note.startswith("flight-recorder: truncated or corrupt pickle, or over a bound")
    assert why in note


def _hostile_numbers() -> dict[str, Any]:
    dump = real_dump()
    entry = dump["entries"][0]
    entry.update(
        collective_seq_id=HUGE,
        p2p_seq_id="1" * 6000,
        timeout_ms=-HUGE,
        time_created_ns="9" * 6000,
        input_sizes=[[HUGE, 4], ["7" * 6000]],
        output_sizes=[[2**64]],
        process_group=[HUGE, "x" * 6000],
        profiling_name="nccl:" + "all_reduce" * 700,
    )
    dump["pg_config"] = {HUGE: {"ranks": "1" * 6000}, "0": {"ranks": [HUGE, 1, "2"]}}
    dump["pg_status"] = {"0": {"last_enqueued_collective": "8" * 6000}}
    dump["version"] = HUGE
    return dump


def test_huge_numbers_and_digit_strings_are_not_read_as_numbers() -> None:
    facts, notes = _notes(pickle.dumps(_hostile_numbers(), protocol=2))
    assert notes == []
    (entry,) = [f for f in facts if isinstance(f, FlightEntry)]
    assert (entry.seq, entry.p2p_seq, entry.timeout_ms, entry.time_created_ns) == (None,) * 4
    assert entry.input_sizes == ((4,), ())
    assert entry.output_sizes == ((),)
    assert entry.pg_id == "0"  # from pg_id: the group's own id is no int64
    assert entry.pg_desc == "x" * 1024 + "..."
    assert entry.profiling_name is not None
    assert len(entry.profiling_name) == 1027
    (group,) = [f for f in facts if isinstance(f, FlightGroup)]
    assert (group.pg_id, group.group_ranks, group.last_enqueued) == ("0", (1, 2), None)


def test_hostile_dumps_render_in_every_format(tmp_path: Path) -> None:
    assert _diagnose_every_format(tmp_path, pickle.dumps(_hostile_numbers(), protocol=2)) == []
    notes = _diagnose_every_format(
        tmp_path, b"\x80\x05\x8e" + (1 << 63).to_bytes(8, "little") + b"."
    )
    assert notes[0].startswith("flight-recorder: truncated or corrupt pickle, or over a bound")


def test_the_loader_builds_what_pickle_builds() -> None:
    values: list[Any] = [
        real_dump(),
        {"a": [1, -1, 255, 65536, -(2**31), 2**70, -(2**70), 1.5, None, True, False]},
        {(1, "a"): "tuple key", "é☃": ("x", ("y",)), "e": [], "t": ()},
        [[0] * 3] * 3,
        list(range(5000)),
    ]
    for protocol in range(2, 6):
        for value in values:
            assert _pickle.loads(pickle.dumps(value, protocol=protocol)) == value
    for protocol in (4, 5):
        sets = [{1, 2}, frozenset({"a"}), b"bytes"]
        assert _pickle.loads(pickle.dumps(sets, protocol=protocol)) == sets
    assert _pickle.loads(pickle.dumps(bytearray(b"ba"), protocol=5)) == bytearray(b"ba")


def test_the_cli_error_says_why_a_dump_was_not_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "fr_dump_rank0"
    path.write_bytes(b"\x80\x05\x8e" + (1 << 63).to_bytes(8, "little") + b".")
    assert main(["diagnose", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: no known evidence kind in {path} ({path}: flight-recorder: ")
    assert "a length of 9223372036854775808 bytes runs past the end of the data" in err
