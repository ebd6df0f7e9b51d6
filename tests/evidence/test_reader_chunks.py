"""Chunk boundaries never move, lose or double a line, whatever the chunk size."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from nccl_doctor.evidence import chunks, reader
from nccl_doctor.facts.host import XidEvent
from nccl_doctor.facts.text import TextLine
from tests.helpers import decoded_lines

XID = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus."


def _log(tmp_path: Path, seed: int, *, long_line_at: int | None = None) -> tuple[Path, list[int]]:
    rng = random.Random(seed)
    lines: list[str] = []
    expected: list[int] = []
    for number in range(1, 3001):
        if number == long_line_at:
            lines.append("y" * 30_000)
        elif rng.random() < 0.02:
            lines.append(XID.replace("79", str(number % 200)))
            expected.append(number)
        else:
            lines.append("x" * rng.randrange(0, 300))
    path = tmp_path / f"kern-{seed}.log"
    lines[-1] = lines[-1] or "last"  # an empty last line would not be a line without "\n"
    path.write_text("\n".join(lines) + ("\n" if seed % 2 else ""))
    return path, expected


@pytest.mark.parametrize("chunk", [64, 997, 4096, 1 << 16])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_lines_are_numbered_right_across_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, seed: int
) -> None:
    monkeypatch.setattr(chunks, "CHUNK_BYTES", chunk)
    path, expected = _log(tmp_path, seed)
    result = reader.read_paths([str(path)])
    xids = [f for f in result.facts if isinstance(f, XidEvent)]
    assert [f.cite.line for f in xids] == expected
    assert [f.xid for f in xids] == [n % 200 for n in expected]
    assert result.sources[0].lines == 3000
    assert result.notes == []


@pytest.mark.parametrize("chunk", [97, 4096])
def test_an_overlong_line_is_cut_and_the_rest_still_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(chunks, "CHUNK_BYTES", chunk)
    monkeypatch.setattr(chunks, "LINE_MAX_BYTES", 10_000)
    path, expected = _log(tmp_path, 5, long_line_at=1500)
    result = reader.read_paths([str(path)])
    assert [f.cite.line for f in result.facts if isinstance(f, XidEvent)] == expected
    assert [n.message for n in result.notes] == ["1 line(s) longer than 10000 bytes were cut"]
    assert result.sources[0].lines == 3000


def test_runs_of_blank_lines_in_free_text_are_passed_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A MiB of newlines (the start of a newline bomb) took seconds, one line at a time."""
    path = tmp_path / "blank.log"
    path.write_bytes(b"\n" * 500_000 + b"  \r\n\t\n" + XID.encode() + b"\n" * 500_001 + b"end\n")
    assert path.stat().st_size <= reader.TEXT_MAX_BYTES  # read as free text, line by line
    seen = decoded_lines(monkeypatch)
    result = reader.read_paths([str(path)])
    assert seen == [500_003, 1_000_004]
    (xid,) = [f for f in result.facts if isinstance(f, XidEvent)]
    assert xid.cite.line == 500_003
    assert result.sources[0].lines == 1_000_004


RING = "node1:11:22 [0] NCCL INFO Channel 00/32 :    0   1   2   3   4   5   6   7\n"


def _c_calls(path: Path) -> tuple[int, reader.ReadResult]:
    """The C functions the reader calls reading ``path``, and what it read."""
    steps = 0

    def profile(_frame: object, event: str, _arg: object) -> None:
        nonlocal steps
        steps += event == "c_call"

    sys.setprofile(profile)
    try:
        result = reader.read_paths([str(path)])
    finally:
        sys.setprofile(None)
    return steps, result


def test_runs_of_nccl_info_lines_in_free_text_are_passed_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NCCL's INFO lines no parser asked for are never free text: a run of them is one step,
    not a few C calls a line; the lines around them are read as before."""
    path = tmp_path / "ranks.log"
    path.write_text(
        RING * 12_000
        + "a sentence a person wrote\n"
        + RING * 2
        + "node1:11:22 [0] NCCL INFO "
        + "x" * 70_000  # too long: decoded, to be cut
        + "\n"
        + RING * 3
        + XID
        + "\n"
    )
    assert path.stat().st_size <= reader.TEXT_MAX_BYTES  # read as free text, line by line
    seen = decoded_lines(monkeypatch)
    _, result = _c_calls(path)
    assert seen == [12_001, 12_004, 12_008]
    (xid,) = [f for f in result.facts if isinstance(f, XidEvent)]
    assert xid.cite.line == 12_008
    texts = [f.text for f in result.facts if isinstance(f, TextLine)]
    assert texts == ["a sentence a person wrote"]
    assert result.sources[0].lines == 12_008
    few, many = tmp_path / "few.log", tmp_path / "many.log"
    few.write_text(RING * 3_000 + XID + "\n")
    many.write_text(RING * 9_000 + XID + "\n")
    assert many.stat().st_size <= reader.TEXT_MAX_BYTES
    (few_steps, _), (many_steps, _) = _c_calls(few), _c_calls(many)
    assert many_steps - few_steps < 300  # one line at a time: 3 calls a line, 18,000


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_newlines_counts_what_bytes_count_counts(seed: int) -> None:
    rng = random.Random(seed)
    size = chunks.COUNT_PIECE * 3 + rng.randrange(1000)
    data = bytes(rng.choice(b"ab\n\r ") for _ in range(size))
    for _ in range(50):
        start = rng.randrange(size)
        stop = rng.choice([size, rng.randrange(start, size + 1), start + chunks.COUNT_PIECE])
        assert chunks.newlines(data, start, stop) == data.count(b"\n", start, stop)
    assert chunks.newlines(data, 0, size) == data.count(b"\n") > size // 6


def test_small_files_share_one_buffer_and_keep_their_own_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 997)
    monkeypatch.setattr(chunks, "SHARED_BUFFER_MAX", 1_000_000)
    folder = tmp_path / "ranks"
    folder.mkdir()
    expected: dict[str, list[int]] = {}
    for seed in (1, 2, 3, 4):  # seeds 2 and 4 end without a newline
        path, lines = _log(tmp_path, seed)
        path.rename(folder / path.name)
        expected[str(folder / path.name)] = lines
    big = folder / "zz-big.log"  # over SHARED_BUFFER_MAX: fresh bytes per read
    big.write_text(("x" * 99 + "\n") * 12_000 + XID + "\n")
    expected[str(big)] = [12_001]
    buffers: list[bytearray | None] = []
    reads = chunks.reads

    def spy(stream: object, buffer: bytearray | None) -> object:
        buffers.append(buffer)
        return reads(stream, buffer)  # type: ignore[arg-type]

    monkeypatch.setattr(chunks, "reads", spy)
    result = reader.read_paths([str(folder)])
    found: dict[str, list[int]] = {}
    for fact in result.facts:
        if isinstance(fact, XidEvent):
            found.setdefault(fact.cite.source, []).append(fact.cite.line)
    assert found == expected
    assert [s.lines for s in result.sources] == [3000, 3000, 3000, 3000, 12_001]
    shared = buffers[0]
    assert shared is not None
    assert len(shared) == 997
    assert buffers == [shared] * 4 + [None]


@pytest.mark.parametrize("held", [1 << 12, chunks.UNCOUNTED_MAX])
@pytest.mark.parametrize("seed", [1, 2])
def test_lines_past_the_last_one_read_are_counted_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, held: int, seed: int
) -> None:
    """A large log (no free text): the stretches between Xid lines are held uncounted until
    the next Xid (or counted once more than ``held`` bytes are held); the lines after the
    last Xid are counted for ``parse`` only. The Xids keep their numbers either way."""
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(chunks, "UNCOUNTED_MAX", held)
    monkeypatch.setattr("nccl_doctor.evidence.budgets.TEXT_MAX_BYTES", 0)
    path, expected = _log(tmp_path, seed)
    quick = reader.read_paths([str(path)], line_totals=False)
    full = reader.read_paths([str(path)])
    for result in (quick, full):
        assert [f.cite.line for f in result.facts if isinstance(f, XidEvent)] == expected
        assert not [f for f in result.facts if isinstance(f, TextLine)]  # not read as text
    assert expected[-1] < 3000
    assert (quick.sources[0].lines, full.sources[0].lines) == (None, 3000)
