"""A folder's coming files read ahead in other processes: the read is the one in order, always.

Each test reads one folder of per-rank logs twice, in order (one process) and
with three, and asserts the two reads are equal, fact for fact, note for note,
while counting how many files the other processes' reads stood for.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from nccl_doctor.evidence import ahead, budgets, reader
from nccl_doctor.evidence.reader import ReadResult
from nccl_doctor.facts.nccl import NcclWarn
from nccl_doctor.facts.run import PgInitOptions

RANKS = 40


def _rank_lines(rank: int) -> list[str]:
    """A rank's log: NCCL's communicator init lines (informational), a training loop's
    output, and for some ranks a warning."""
    host = f"node{rank // 8}:{1000 + rank}:{1001 + rank} [{rank % 8}]"
    lines = [
        f"{host} NCCL INFO ncclCommInitRank comm 0x{0x55D000 + i:x} rank {rank % 8} nranks 8 "
        f"cudaDev {rank % 8} nvmlDev {rank % 8} busId 18000 commId 0x{i:x} - Init START"
        for i in range(30)
    ]
    lines += [f"step {s} loss {1 / (s + 1):.4f} lr 3e-4" for s in range(400)]
    if rank % 7 == 3:
        lines.append(
            f"{host} transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion with error 12"
        )
    return lines


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "logs"
    folder.mkdir()
    for rank in range(RANKS):
        (folder / f"rank{rank:02d}.log").write_text("\n".join(_rank_lines(rank)) + "\n")
    return folder


def _pg_options(rank: int) -> str:
    """PyTorch's option list of a process group (an informational line of torchrun's kind)."""
    return (
        f"[I1106 01:00:00.089323323 ProcessGroupNCCL.cpp:905] [PG ID {rank} PG GUID {rank}(tp) "
        f"Rank 3] ProcessGroupNCCL initialization options: size: 8, global rank: 3, "
        f"TIMEOUT(ms): 600000, USE_HIGH_PRIORITY_STREAM: 0, SPLIT_FROM: 0, SPLIT_COLOR: 1, "
        f"PG Name: {rank}"
    )


def _reads(
    folder: Path, monkeypatch: pytest.MonkeyPatch, *, named: bool = False
) -> tuple[ReadResult, ReadResult, dict[str, int]]:
    """The folder (``named``: its files, as a shell's ``*`` names them) read in order, then
    with three processes, and how many files the other processes' reads stood for
    (``taken``) or did not (``missed``)."""
    paths = sorted(str(p) for p in folder.iterdir()) if named else [str(folder)]
    monkeypatch.setattr(budgets, "INFO_BUDGET", 60)  # spent by the first two files
    monkeypatch.setattr(budgets, "TEXT_TOTAL_BYTES", 4096)
    monkeypatch.setattr(ahead, "MIN_BYTES", 0)
    monkeypatch.setenv(ahead.PROCESSES_SETTING, "1")
    in_order = reader.read_paths(paths, line_totals=False)
    counts: dict[str, int] = {}
    close = ahead.Ahead.close

    def counted_close(self: ahead.Ahead) -> None:
        counts["taken"] = counts.get("taken", 0) + self.taken
        counts["missed"] = counts.get("missed", 0) + self.missed
        close(self)

    monkeypatch.setattr(ahead.Ahead, "close", counted_close)
    monkeypatch.setenv(ahead.PROCESSES_SETTING, "3")
    return in_order, reader.read_paths(paths, line_totals=False), counts


def _assert_same(a: ReadResult, b: ReadResult) -> None:
    assert [(s.kind, s.source, s.start, s.end) for s in a.sections] == [
        (s.kind, s.source, s.start, s.end) for s in b.sections
    ]
    assert a.facts == b.facts
    assert a.sources == b.sources
    assert a.notes == b.notes


@pytest.mark.parametrize("named", [False, True], ids=["folder", "files-named"])
def test_files_read_ahead_give_the_read_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, named: bool
) -> None:
    in_order, ahead_read, counts = _reads(_folder(tmp_path), monkeypatch, named=named)
    _assert_same(in_order, ahead_read)
    # files 0-1 spend the budgets, 2-3 show they are spent; of the 36 files to come, split
    # in thirds by bytes, 4-16 are read here and 17-39 by the other processes, every one taken
    assert counts == {"taken": 23, "missed": 0}
    warns = [f for f in ahead_read.facts if isinstance(f, NcclWarn)]
    assert [Path(w.cite.source).name for w in warns] == [
        f"rank{r:02d}.log" for r in range(RANKS) if r % 7 == 3
    ]
    assert len(ahead_read.sources) == RANKS


def test_budgets_spent_after_the_read_ahead_began_have_the_file_read_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _folder(tmp_path)
    # rank 8 (read here, after the others began) spends torchrun's budget: every later file
    # was read from budgets the read in order does not reach
    with (folder / "rank08.log").open("a") as log:
        log.write("\n".join(_pg_options(pg) for pg in range(5)) + "\n")
    in_order, ahead_read, counts = _reads(folder, monkeypatch)
    _assert_same(in_order, ahead_read)
    # (rank 8 now larger, the thirds by bytes are 4-15, 16-27, 28-39)
    assert counts == {"taken": 0, "missed": 24}
    assert sum(isinstance(f, PgInitOptions) for f in ahead_read.facts) == 5


def test_a_file_changed_after_it_was_read_ahead_is_read_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _folder(tmp_path)
    changed = folder / "rank20.log"
    result = ahead._Part.result

    def then_changed(self: ahead._Part, path: str) -> ahead.Done | None:
        if path == str(changed) and not changed.read_text().endswith("late\n"):
            with changed.open("a") as log:
                log.write("late\n")
        return result(self, path)

    monkeypatch.setattr(ahead._Part, "result", then_changed)
    in_order, ahead_read, counts = _reads(folder, monkeypatch)  # (the read in order: as it was)
    assert counts == {"taken": 22, "missed": 1}
    assert ahead_read.facts == in_order.facts  # the line added is no evidence
    (summary,) = [s for s in ahead_read.sources if s.source == str(changed)]
    assert summary.bytes_read == changed.stat().st_size  # read here, after the change
    (before,) = [s for s in in_order.sources if s.source == str(changed)]
    assert summary.bytes_read == before.bytes_read + len("late\n")


def test_a_reading_process_that_fails_costs_time_not_facts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fails(*_: object) -> list[ahead.Done]:
        raise RuntimeError

    monkeypatch.setattr(ahead, "read_part", fails)
    in_order, ahead_read, counts = _reads(_folder(tmp_path), monkeypatch)
    _assert_same(in_order, ahead_read)
    assert counts == {"taken": 0, "missed": 23}


def test_an_archive_among_the_files_is_read_here_and_what_it_changes_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _folder(tmp_path)
    plain = folder / "rank22.log"
    (folder / "rank22.log.gz").write_bytes(gzip.compress(plain.read_bytes()))
    plain.unlink()
    in_order, ahead_read, counts = _reads(folder, monkeypatch)
    _assert_same(in_order, ahead_read)
    # the thirds by bytes: 4-15, 16-28, 29-39. The second was read ahead up to the archive
    # (16-21, taken); the archive is read here, and its stream, of no size known, as free
    # text: that budget spent, every file after it was read ahead from budgets the read in
    # order does not reach, and is read here
    assert counts == {"taken": 6, "missed": 18}
    assert "rank22.log.gz" in {Path(w.cite.source).name for w in ahead_read.facts}


def test_the_processes_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    for setting, expected in (("1", 1), ("3", 3), ("64", ahead.MAX_PROCESSES), ("0", 1)):
        monkeypatch.setenv(ahead.PROCESSES_SETTING, setting)
        assert ahead.processes() == expected
    monkeypatch.setenv(ahead.PROCESSES_SETTING, "many")
    assert 1 <= ahead.processes() <= ahead.MAX_PROCESSES
