"""A known hang bug of the release NCCL printed is the cause where the collective that timed out
is the bug's own operation (cuMem's all-to-all deadlock, 2.19.1-2.20.2: an ALLTOALL that timed
out); another collective timing out on that release leaves the bug a note beside the hang."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import critical_ids, diagnose_text

_LOG = (
    "MoE training hangs in all_to_all_single after a few hundred steps, 8x H100, torch 2.2.1.\n"
    "hgx-03:7712:7801 [0] NCCL INFO NCCL version 2.19.3+cuda12.3\n"
    "hgx-03:7712:7801 [0] NCCL INFO Channel 00/1 : 0[0] -> 1[1] via P2P/CUMEM/read\n"
    "[rank2]:[E ProcessGroupNCCL.cpp:523] [Rank 2] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=20317, OpType={op}, NumelIn=7340032, NumelOut=7471104, "
    "Timeout(ms)=1800000) ran for 1800384 milliseconds before timing out.\n"
)


def _internal(tmp_path: Path, op: str) -> tuple[list[str], str]:
    report = diagnose_text(tmp_path, _LOG.format(op=op))
    [found] = [f for f in report.findings if f.id == "nccl.internal"]
    return critical_ids(report), found.severity.value


def test_the_bugs_own_operation_timing_out_makes_it_the_cause(tmp_path: Path) -> None:
    critical, severity = _internal(tmp_path, "ALLTOALL_BASE")
    assert critical == ["nccl.internal"]
    assert severity == "critical"


def test_another_collective_timing_out_leaves_the_bug_a_note(tmp_path: Path) -> None:
    critical, severity = _internal(tmp_path, "ALLREDUCE")
    assert severity == "warning"
    assert critical == ["app.hang"]
