"""Hangs whose late ranks PyTorch itself names: the desync report and monitored_barrier.

Both tell who never arrived (the store's record of each rank's collectives,
TraceUtils.h; the barrier's root, ProcessGroupGloo::monitoredBarrier); the
report must name those ranks as the origin instead of asking the user to
find them. The wording is each message's as torch 2.0-2.11 print it; the
gloo barrier's is also run for real in the CPU zoo (tests/zoo).
"""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.pipeline import diagnose_paths
from nccl_doctor.report import Report
from tests.helpers import critical_ids, diagnose_text

CASES = Path(__file__).resolve().parents[1] / "cases/app"
_TIMEOUT = (
    "[rank0]:[E1205 10:41:12.345678901 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=4, NumelOut=4, "
    "Timeout(ms)=600000) ran for 600032 milliseconds before timing out.\n"
    "[rank0]:[E1205 10:41:12.345778901 ProcessGroupNCCL.cpp:1598] [PG ID 0 PG GUID 0(default_pg) "
    "Rank 0]\n"
)


def _case(path: str) -> Report:
    return diagnose_paths([str(CASES / path / "rank0.log")])


def _roles(report: Report, rule_id: str) -> dict[str, tuple[int, ...]]:
    finding = next(f for f in report.findings if f.id == rule_id)
    return {r.role: r.ranks for r in finding.roles}


def test_ranks_that_never_joined_are_the_origin() -> None:
    report = _case("hang/desync_report_never_joined")
    assert report.top(1) == ["app.hang"]
    hang = report.findings[0]
    assert "ranks 1, 3 are the origin: never started a collective of the group" in hang.summary
    assert _roles(report, "app.hang") == {"origin": (1, 3), "messenger": (0,)}


def test_a_rank_that_stopped_between_collectives_is_the_origin() -> None:
    report = _case("hang/desync_report_stopped_between")
    hang = report.findings[0]
    assert hang.id == "app.hang"
    assert "rank 2 is the origin: finished collective #41207 and never started #41208" in (
        hang.summary
    )
    assert _roles(report, "app.hang") == {"origin": (2,), "messenger": (0, 1, 3)}
    assert "app.collective_mismatch" not in critical_ids(report)


def test_different_collectives_under_one_number_are_a_mismatch() -> None:
    report = _case("collective_mismatch/desync_snapshot_differs")
    assert report.top(1) == ["app.collective_mismatch"]
    found = report.findings[0]
    assert "collective #12: rank 0 started BROADCAST, ranks 1-3 started ALLREDUCE" in found.summary
    assert found.subjects.ranks == (0,)
    assert [f.id for f in report.findings if f.root_cause] == ["app.collective_mismatch"]


def test_a_collective_every_rank_is_still_in_names_no_origin(tmp_path: Path) -> None:
    """Every rank started #12 with the same name and none finished it: the collective itself
    did not complete (transport, a GPU): no rank is singled out, and no mismatch."""
    report = diagnose_text(
        tmp_path,
        _TIMEOUT.format(seq=12, op="ALLREDUCE") + "\t - [0] Timeout at collective: ALLREDUCE, #12\n"
        "\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync "
        "are:\n"
        "\t   - [0, 1, 2, 3] joined but didn't finish collective #12 (count from 1)\n"
        "\t - Snapshot of ranks' latest states:\n"
        "\t   #12 started ranks:\n"
        "\t     [0, 1, 2, 3] started ALLREDUCE\n",
    )
    assert "app.collective_mismatch" not in critical_ids(report)
    assert "origin" not in _roles(report, "app.hang")


def test_the_barrier_names_every_rank_that_never_arrived(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        "[rank0]:[E1205 10:11:12.345678901 ProcessGroupGloo.cpp:143] [Rank 0]: Ranks 2, 3 "
        "failed to pass monitoredBarrier in 1800000 ms\n"
        "[rank0]: RuntimeError: [Rank 0]: Ranks 2, 3 failed to pass monitoredBarrier in "
        "1800000 ms\n",
    )
    assert report.top(1) == ["app.hang"]
    hang = report.findings[0]
    assert hang.subjects.ranks == (2, 3)
    assert "ranks 2, 3 never reached it" in hang.summary
    assert "app.collective_mismatch" not in critical_ids(report)


def test_a_barrier_in_order_names_the_rank_it_waited_on(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        "[rank0]:[E1205 10:11:12.345678901 ProcessGroupGloo.cpp:143] Rank 0 timed out in "
        "monitoredBarrier after 1800000 ms.\n"
        "No ranks successfully processed in monitoredBarrier.\n",
    )
    hang = report.findings[0]
    assert (hang.id, hang.subjects.ranks) == ("app.hang", (1,))
    assert "rank 1, the next it waited on in order, never reached it" in hang.summary


def test_the_debug_wrappers_barrier_is_still_a_mismatch(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        "RuntimeError: ProcessGroupWrapper: Monitored Barrier encountered error running "
        "collective: CollectiveFingerPrint(SequenceNumber=8, OpType=ALLREDUCE, "
        "TensorShape=[4], TensorDtypes=Float). Error: \n"
        "[Rank 0]: Ranks 1, 1 failed to pass monitoredBarrier in 1800000 ms\n",
    )
    found = report.findings[0]
    assert found.id == "app.collective_mismatch"
    assert found.subjects.ranks == (1,)  # each rank once
    assert "rank(s) 1 never reached the collective" in found.summary


def test_the_real_report_of_a_one_rank_job_on_the_h200() -> None:
    """torch 2.11 on an H200 (tests/fixtures/captured/desync-h200): the report's lines carry
    no rank prefix; its snapshot lists the group's only rank, so no peer can be behind."""
    capture = CASES.parents[1] / "fixtures/captured/desync-h200/console.log"
    report = diagnose_paths([str(capture)])
    hang = report.findings[0]
    assert (hang.id, hang.root_cause) == ("app.hang", True)
    assert "rank 0 is the origin: the job's only rank" in hang.summary
    assert _roles(report, "app.hang") == {"origin": (0,)}
