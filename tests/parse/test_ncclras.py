"""The ``ncclras`` parsers on the real one-rank H200 reports and the built multi-rank ones.

Real: tests/fixtures/captured/ras-h200 (NCCL 2.28.9: text from /usr/bin/ncclras and
from nccl-doctor's own client of the RAS socket, JSON from the socket). Built:
tests/fixtures/constructed/ncclras (README.md there), from NCCL's client code.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.ras import RasComm, RasOpCount, RasProcess, RasRank, RasReport
from nccl_doctor.facts.store import Facts
from nccl_doctor.parse.ncclras import RasJsonParser, comm_id
from tests.hang import _ras_build

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REAL = FIXTURES / "captured" / "ras-h200"
BUILT = FIXTURES / "constructed" / "ncclras"


def _facts(path: Path) -> Facts:
    read = read_paths([str(path)])
    return Facts([f for s in read.sections for f in s.facts])


@pytest.mark.parametrize("name", ["ras-text.txt", "ncclras.txt", "ncclras-v.txt"])
def test_real_text_reports(name: str) -> None:
    facts = _facts(REAL / name)
    (report,) = facts.of(RasReport)
    assert (report.format, report.nccl_version, report.processes) == ("text", "2.28.9", 1)
    assert report.communicators == 1
    (comm,) = facts.of(RasComm)
    assert (comm.comm, comm.size, comm.count, comm.status, comm.errors) == (
        "group 0",
        1,
        1,
        "RUNNING",
        "OK",
    )
    assert not facts.of(RasRank)
    assert not facts.of(RasOpCount)
    assert not facts.of(RasProcess)
    assert report.cite.line == 1
    assert "NCCL version 2.28.9" in report.cite.text


def test_real_json_report() -> None:
    facts = _facts(REAL / "ras-json.txt")
    (report,) = facts.of(RasReport)
    assert (report.format, report.nccl_version, report.communicators, report.timeouts) == (
        "json",
        "2.28.9",
        1,
        0,
    )
    (comm,) = facts.of(RasComm)
    assert (comm.comm, comm.size, comm.ranks_reported, comm.missing) == (
        "0x92d80bb37439ea4",
        1,
        1,
        0,
    )
    assert (comm.status, comm.errors) == ("RUNNING", "OK")
    assert not facts.of(RasRank)  # a healthy rank is counted, not listed


def test_the_builder_reproduces_the_real_reports_byte_for_byte() -> None:
    job = _ras_build.one_rank()
    assert _ras_build.text(job) == (REAL / "ras-text.txt").read_text()
    assert _ras_build.as_json(job) == (REAL / "ras-json.txt").read_text()


def test_the_built_fixtures_are_the_builders_output(tmp_path: Path) -> None:
    written = _ras_build.write(tmp_path)
    assert {p.name for p in written} == {p.name for p in BUILT.glob("*.*") if p.suffix != ".md"}
    for path in written:
        assert path.read_text() == (BUILT / path.name).read_text(), path.name


@pytest.mark.parametrize("ext", ["txt", "json"])
def test_a_dead_rank(ext: str) -> None:
    facts = _facts(BUILT / f"dead-rank5.{ext}")
    (rank,) = facts.of(RasRank)
    assert (rank.rank, rank.pid, rank.gpu, rank.host, rank.comm_size) == (
        5,
        1205,
        5,
        "192.0.2.2",
        8,
    )
    assert rank.comm == "0x92d80bb37439ea4"  # the text's 016lx hash and the JSON's 0x%lx agree
    assert rank.state == ("dead" if ext == "json" else "missing")
    if ext == "txt":  # the text's DEAD section names the process, not the rank
        (proc,) = facts.of(RasProcess)
        assert (proc.state, proc.pid, proc.gpus, proc.host) == ("dead", 1205, (5,), "192.0.2.2")
        assert facts.of(RasReport)[0].dead_processes == 1
    (comm,) = facts.of(RasComm)
    assert comm.errors == "INCOMPLETE"


@pytest.mark.parametrize("ext", ["txt", "json"])
def test_different_collective_counts(ext: str) -> None:
    facts = _facts(BUILT / f"behind-rank3.{ext}")
    groups = {(c.op, c.count): c for c in facts.of(RasOpCount)}
    assert set(groups) == {("AllReduce", 12), ("AllReduce", 11)}
    assert (groups["AllReduce", 11].n_ranks, groups["AllReduce", 11].ranks) == (1, (3,))
    assert groups["AllReduce", 12].n_ranks == 7
    # the text lists the majority by count only; the JSON has every rank
    assert groups["AllReduce", 12].ranks == (() if ext == "txt" else (0, 1, 2, 4, 5, 6, 7))
    (rank,) = facts.of(RasRank)
    assert rank.rank == 3
    assert ("AllReduce", 11) in rank.op_counts


@pytest.mark.parametrize("ext", ["txt", "json"])
def test_async_errors(ext: str) -> None:
    facts = _facts(BUILT / f"error-rank6.{ext}")
    errors = {r.rank: r.async_error for r in facts.of(RasRank)}
    assert errors[6] == "Unhandled CUDA error"
    assert {r for r, e in errors.items() if e == "Remote process error"} == {0, 1, 2, 3, 4, 5, 7}
    if ext == "json":  # the flags are only in the JSON (the text's table says ABORT for all)
        assert {r.status for r in facts.of(RasRank)} == {"ABORT"}
    assert facts.of(RasComm)[0].status == "ABORT"


@pytest.mark.parametrize("ext", ["txt", "json"])
def test_a_healthy_report_lists_no_rank(ext: str) -> None:
    facts = _facts(BUILT / f"healthy.{ext}")
    assert facts.of(RasReport)
    assert facts.of(RasComm)
    assert not facts.of(RasRank)
    assert not facts.of(RasOpCount)
    assert not facts.of(RasProcess)


def test_the_text_ends_where_the_report_does(tmp_path: Path) -> None:
    text = (BUILT / "behind-rank3.txt").read_text()
    log = tmp_path / "console.log"
    log.write_text(text + "[rank3]: Rank 3 -- not a RAS line\nTraceback (most recent call last):\n")
    facts = _facts(log)
    assert [r.rank for r in facts.of(RasRank)] == [3]
    assert all(r.cite.line <= text.count("\n") for r in facts.of(RasRank))


@pytest.mark.parametrize(
    ("data", "note"),
    [
        (b'{"nccl_version": "2.28.9", "communicators": [', "not valid JSON"),
        (b'{"nccl_version": "2.28.9", "communicators": 3}', "no communicators list"),
        (b'{"nccl_version": "2.28.9", "communicators": [1, "x", {"ranks": 5}]}', ""),
    ],
)
def test_bad_json_is_a_note_never_a_crash(data: bytes, note: str) -> None:
    facts, notes = RasJsonParser().parse(data, "ncclras.json", None)
    if note:
        assert not facts
        assert note in notes[0]
    else:
        assert [type(f).__name__ for f in facts] == ["RasReport", "RasComm"]


def test_a_report_over_the_bound_is_not_read() -> None:
    data = b'{"nccl_version": "x", "communicators": []}' + b" " * (32 << 20)
    facts, notes = RasJsonParser().parse(data, "ncclras.json", None)
    assert not facts
    assert "over 32 MiB" in notes[0]


def test_comm_ids_of_both_formats_agree() -> None:
    assert comm_id("092d80bb37439ea4") == comm_id("0x92d80bb37439ea4") == "0x92d80bb37439ea4"
