"""Healthy runs at the verbosity users turn on to debug, captured on the H200 machine.

``tests/fixtures/captured/healthy-h200/SOURCE.md`` says how they were made. A healthy
run is never a failure and never a warning: the debugging switches the user set, the
abort at exit and NET/Socket's GDR line are notes at most.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.pipeline import diagnose_paths
from tests.helpers import diagnose_text

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "captured" / "healthy-h200"


@pytest.mark.parametrize("run", ["info_detail", "info_all", "cumem_off", "warn_detail", "wrapped"])
def test_a_healthy_run_at_debug_verbosity_stays_healthy(run: str) -> None:
    report = diagnose_paths([str(RUNS / run)])
    assert report.verdict.value == "healthy"
    assert [(f.id, f.severity.value) for f in report.findings] == [("nccl.env", "info")]
    assert "TORCH_DISTRIBUTED_DEBUG=DETAIL" in report.findings[0].summary
    assert "NCCL_NVLS_ENABLE" not in report.findings[0].summary  # one rank: no NVLS to lose
    assert report.hypotheses == ()
    assert dict(report.inventory.versions)["nccl"] == "2.28.9"  # not the image's NCCL_VERSION


_ABORT = """\
vm:746:788 [0] NCCL INFO comm 0x594ca8f0 rank 0 nRanks 2 cudaDev 0 busId 60 - Abort START
vm:746:788 [0] NCCL INFO misc/socket.cc:64 -> 3
vm:746:788 [0] NCCL INFO misc/socket.cc:81 -> 3
vm:746:788 [0] NCCL INFO misc/socket.cc:868 -> 3
vm:746:785 [0] NCCL INFO misc/socket.cc:943 -> 3
vm:746:788 [0] NCCL INFO comm 0x594ca8f0 rank 0 nranks 2 cudaDev 0 busId 60 - Abort COMPLETE
"""
_INIT = (
    "vm:746:746 [0] NCCL INFO NCCL version 2.28.9+cuda13.0\n"
    "vm:746:746 [0] NCCL INFO ncclCommInitRankConfig comm 0x594ca8f0 rank 0 nranks 2 cudaDev 0 "
    "nvmlDev 0 busId 60 commId 0x66d8f3ec44b8d199 - Init COMPLETE\n"
)


def test_the_abort_of_a_communicator_at_exit_is_not_an_nccl_error(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _INIT + "rank 0 step 20 loss 0.0403\n" + _ABORT)
    assert report.findings == ()
    assert report.hypotheses == ()


def test_an_internal_error_before_the_abort_is_still_the_finding(tmp_path: Path) -> None:
    failing = (
        "vm:746:790 [0] NCCL INFO transport/p2p.cc:275 -> 3\n"
        "vm:746:790 [0] NCCL INFO transport.cc:183 -> 3\n"
    )
    report = diagnose_text(tmp_path, _INIT + failing + _ABORT)
    assert report.findings[0].id == "nccl.internal"
    assert report.findings[0].severity.value == "critical"
    cited = [c.line for c in report.findings[0].evidence]
    assert cited == [3]  # the chain before the abort, none of the abort's


def test_gdr_off_on_an_ib_nic_is_still_read(tmp_path: Path) -> None:
    # NET/Socket prints Disabled for every socket NIC; NET/IB's line still tells of the NIC
    line = "h1:1:1 [0] NCCL INFO NET/{} : GPU Direct RDMA Disabled for HCA 0 '{}'\n"
    sock = diagnose_text(tmp_path, _INIT + line.format("Socket", "eth0"))
    assert "net.gdr" not in [f.id for f in sock.findings]
    ib = diagnose_text(tmp_path, _INIT + line.format("IB", "mlx5_0"))
    assert "net.gdr" in [f.id for f in ib.findings]
