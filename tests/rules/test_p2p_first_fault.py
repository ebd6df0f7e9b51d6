"""An illegal memory access that NCCL's watchdog reports at the ranks' first exchange, on a
host whose PCIe is virtualised or behind an IOMMU: NCCL's peer-to-peer writes through it go
astray, so nccl.p2p is the cause and the fault its consequence. On bare metal, after
collectives completed, or in a job of one rank, the fault stands as the kernel's own."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import critical_ids, diagnose_text

_VM = (
    "VMware ESXi 8.0 VM with 4x A100 40GB PCIe passed through (DirectPath I/O), driver "
    "535.154.05, torch 2.3.1.\n"
)
_BARE = "Bare-metal Dell R750xa with 4x A100 40GB PCIe, driver 535.154.05, torch 2.3.1.\n"
_FAULT = (
    "Any DDP run crashes:\n"
    "[rank1]:[E ProcessGroupNCCL.cpp:1414] [PG 0 Rank 1] Process group watchdog thread "
    "terminated with exception: CUDA error: an illegal memory access was encountered\n"
)
_LATER = (
    "[rank1]:[E1204 10:00:00.100000 812 ProcessGroupNCCL.cpp:681] [Rank 1] Timeout at NCCL "
    "work: 4012, last enqueued NCCL work: 4012, last completed NCCL work: 4011.\n"
)


def test_a_fault_at_the_first_exchange_under_a_hypervisor_is_p2p(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _VM + _FAULT)
    assert critical_ids(report) == ["nccl.p2p"]
    (finding,) = report.findings
    assert finding.root_cause
    assert finding.summary.startswith("A kernel faulted (illegal memory access) at the ranks'")
    assert finding.explains == ("cuda.illegal_access",)


def test_a_fault_on_bare_metal_or_after_collectives_is_the_kernels(tmp_path: Path) -> None:
    assert critical_ids(diagnose_text(tmp_path, _BARE + _FAULT)) == ["cuda.illegal_access"]
    later = diagnose_text(tmp_path, _VM + _FAULT + _LATER)
    assert "nccl.p2p" not in critical_ids(later)
    assert "cuda.illegal_access" in critical_ids(later)
    alone = diagnose_text(tmp_path, _VM + "WORLD_SIZE=1\n" + _FAULT)
    assert critical_ids(alone) == ["cuda.illegal_access"]
