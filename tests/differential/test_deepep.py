"""DeepEP's timeouts (scripts/signatures/mine_deepep.py): its dispatch and combine kernels wait
~100 s for a peer's tokens, print which kernel and rank gave up, then trap, and the framework
raises ``unspecified launch failure``. Before, that trap was read as the job's own illegal
memory access (critical, the root cause); now the timeout is the first failure and its class
ranks the causes, the trap a note under it. The same CUDA error without DeepEP's line is still
the job's fault.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.facts.catalogue import signature_of
from nccl_doctor.findings import Severity
from nccl_doctor.report import Report
from tests.helpers import diagnose_text

TRAP = (
    "[2026-03-02 10:42:58 TP3] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.12/dist-packages/deep_ep/buffer.py", line 373, in dispatch\n'
    "    self.runtime.intranode_dispatch(x, x_scales, topk_idx, topk_weights,\n"
    "RuntimeError: Failed: CUDA error /sgl-workspace/DeepEP/csrc/deep_ep.cpp:760 'unspecified "
    "launch failure'\n"
)
LABEL = (
    "a DeepEP dispatch or combine waited ~100 s for a peer that never sent (its kernel then "
    "trapped)"
)


def _log(*timeouts: str) -> str:
    head = "[2026-03-02 10:41:17 TP3] Decode batch. #running-req: 64, #token: 81920\n"
    return head + "".join(f"{t}\n" for t in timeouts) + TRAP


def _illegal(report: Report) -> list[Severity]:
    return [f.severity for f in report.findings if f.id == "cuda.illegal_access"]


def test_an_intranode_timeout_leads_and_its_trap_is_no_root_cause(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        _log(
            "DeepEP timeout for dispatch receivers, rank 3, responsible_channel = 5, tokens "
            "remained: 12",
            "DeepEP timeout for dispatch receivers, rank 3, responsible_channel = 7, tokens "
            "remained: 3",
        ),
    )
    assert report.first_failure is not None
    assert report.first_failure.rank == 3
    assert report.first_failure.cite.line == 2
    assert not any(f.cause for f in report.findings)
    assert _illegal(report) == [Severity.INFO]
    assert report.hypotheses[0].symptom == LABEL
    assert report.top(3) == ["app.hang", "launch.rank_crash", "gpu.nvlink"]


def test_a_low_latency_timeout_names_the_rank_it_waited_for(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        _log(
            "Warning: DeepEP timeout for dispatch receive, rank 4, local_expert_idx 2, src_rank 9"
        ),
    )
    assert report.first_failure is not None
    assert report.first_failure.rank == 4
    assert report.hypotheses[0].symptom == LABEL
    # between nodes the path is NVSHMEM's RDMA: the network set-up is among the first three
    assert "net.ib_config" in report.top(3)


def test_the_same_launch_failure_without_deepep_is_still_the_jobs_fault(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, "DeepEP initialized with NCCL version: 2.28.9\n" + TRAP)
    assert _illegal(report) == [Severity.CRITICAL]
    assert [f.id for f in report.findings if f.cause] == ["cuda.illegal_access"]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("DeepEP timeout for combine senders, rank 1, responsible_channel = 2",
         "deepep.intranode.combine_senders_timeout"),
        (("DeepEP dispatch RDMA sender timeout, channel: 3, RDMA: 1, nvl: 2, dst RDMA lane: 0, "
         "head: 7, tail: 9"), "deepep.internode.dispatch_rdma_sender_timeout"),
        (("DeepEP dispatch forwarder timeout (RDMA check), channel: 1, RDMA: 0, nvl: 4, dst NVL: "
         "5, src RDMA lane: 1, head: 2, tail: 3, expected: 4"),
         "deepep.internode.dispatch_forwarder_rdma_check_timeout"),
        ("RuntimeError: DeepEP error: CPU recv timeout", "deepep.cpu.recv_timeout"),
        ("Warning: DeepEP timeout for barrier, rank 2, dst_rank 6",
         "deepep.low_latency.barrier_timeout"),
    ],
)  # fmt: skip
def test_timeout_lines_read_as(line: str, expected: str) -> None:
    found = signature_of(line)
    assert found is not None
    assert found.id == expected
    assert found.symptom == "deepep_timeout"


def test_deepeps_start_up_line_is_no_failure() -> None:
    assert signature_of("DeepEP initialized with NCCL version: 2.28.9 (loaded library)") is None


def test_an_illegal_address_the_peers_then_time_out_on_stays_the_root(tmp_path: Path) -> None:
    # rank 1 faults on its own (700); rank 3's dispatch then waits for rank 1 and times out
    fault = TRAP.replace(
        "'unspecified launch failure'", "'an illegal memory access was encountered'"
    )
    report = diagnose_text(
        tmp_path,
        _log(
            "DeepEP timeout for dispatch receivers, rank 3, responsible_channel = 5, tokens "
            "remained: 12"
        ).replace(TRAP, fault),
    )
    assert _illegal(report) == [Severity.CRITICAL]
    assert [f.id for f in report.findings if f.cause] == ["cuda.illegal_access"]


WATCHDOG = (
    "[rank{r}]:[E1202 10:50:02.208349 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=51, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
    "Timeout(ms)=600000) ran for 600034 milliseconds before timing out.\n"
)


def test_the_rank_a_low_latency_timeout_waited_for_is_the_hangs_origin(tmp_path: Path) -> None:
    log = (
        "Warning: DeepEP timeout for dispatch receive, rank 4, local_expert_idx 2, src_rank 9\n"
        + WATCHDOG.format(r=4)
        + WATCHDOG.format(r=5)
    )
    report = diagnose_text(tmp_path, log)
    hang = next(f for f in report.findings if f.id == "app.hang")
    assert hang.cause
    origins = [r for r in hang.roles if r.role == "origin"]
    assert [r.ranks for r in origins] == [(9,)]
    assert "src_rank" in origins[0].reason


def test_a_timeout_that_names_no_peer_names_no_origin(tmp_path: Path) -> None:
    log = (
        "DeepEP timeout for dispatch receivers, rank 3, responsible_channel = 5, tokens "
        "remained: 12\n" + WATCHDOG.format(r=3)
    )
    report = diagnose_text(tmp_path, log)
    hang = next(f for f in report.findings if f.id == "app.hang")
    assert [r.ranks for r in hang.roles if r.role == "origin"] == []
