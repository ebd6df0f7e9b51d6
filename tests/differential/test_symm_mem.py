"""Torch's symmetric memory (``torch.distributed._symmetric_memory``: async tensor parallelism,
symm_mem collectives) read from its own messages (torch/csrc/distributed/c10d/symm_mem): the
captures are real (torch 2.11 on an H100, ``tests/zoo/gpu/symm_mem.sh``); before the catalogue
held these rows, two ranks on one GPU gave launch.rank_crash first, mismatched sizes a critical
launch.rank_crash, and the invalid backend app.hang first.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.facts.catalogue import signature_of
from nccl_doctor.findings import Severity
from nccl_doctor.pipeline import diagnose_paths
from nccl_doctor.report import Report
from tests.helpers import diagnose_text

CAPTURED = Path(__file__).resolve().parents[1] / "fixtures" / "captured" / "symm-mem-h100"


def _report(name: str) -> Report:
    return diagnose_paths([str(CAPTURED / f"{name}.log")])


def _critical(report: Report) -> list[str]:
    return [f.id for f in report.findings if f.severity is Severity.CRITICAL]


def test_real_two_ranks_on_one_gpu_name_the_duplicate_gpu_first() -> None:
    report = _report("overlap")
    assert report.top(2) == ["nccl.duplicate_gpu", "cuda.device_visibility"]
    first = report.hypotheses[0]
    assert first.for_[0].startswith("the message is torch.symm_mem.overlapping_devices")
    assert "torch.cuda.current_device()" in first.check
    assert first.cite is not None
    assert first.cite.line == 18
    assert report.first_failure is not None
    assert report.first_failure.rank == 0


def test_real_sizes_that_differ_between_ranks_are_a_mismatch_not_a_crash() -> None:
    report = _report("sizes")
    assert report.top(1) == ["app.collective_mismatch"]
    assert "launch.rank_crash" not in _critical(report)
    text = "Expected reqs[r].block_size == reqs[0].block_size to be true, but got false."
    sig = signature_of(f"RuntimeError: {text}")
    assert sig is not None
    assert sig.id == "torch.symm_mem.allocation_mismatch"
    match = sig.compiled().search(text)
    assert match is not None
    assert match["what"] == "block_size"


def test_real_unknown_backend_in_torch_symmmem_is_the_setting() -> None:
    report = _report("backend")
    assert report.top(1) == ["nccl.env"]
    assert "TORCH_SYMMMEM" in (report.first_failure.message if report.first_failure else "")


@pytest.mark.parametrize("name", ["foreign", "allowed"])
def test_real_runs_that_ended_well_get_no_cause(name: str) -> None:
    # foreign: rendezvous of a torch.empty tensor warns and returns None (the job went on and
    # exited 0); allowed: two ranks on one GPU with the check switched off
    report = _report(name)
    assert _critical(report) == []
    assert report.hypotheses == ()
    assert report.first_failure is None


@pytest.mark.parametrize(
    ("line", "first"),
    [
        (
            (
                "RuntimeError: CUDASymmetricMemory::rendezvous: ranks have mismatched NVLink "
                "clique_ids. All ranks using fabric handles must be in the same NVLink "
                "domain."
            ),
            "gpu.fabric_manager",
        ),
        (
            (
                "RuntimeError: CUDA driver error: operation not permitted. Rank 3 (host: "
                "gb200-07, device: 3, fabric_info: {clique_id: 2}) failed to import memory "
                "from rank 4 (host: gb200-08, device: 0, NCCL_MNNVL_CLIQUE_ID: unset)."
            ),
            "gpu.fabric_manager",
        ),
        ("RuntimeError: multimem_all_reduce_: multicast support is required.", "nccl.nvls"),
        (
            (
                "RuntimeError: _low_contention_all_gather_ce_multicast requires multicast "
                "support (NVSwitch / NVLS)."
            ),
            "nccl.nvls",
        ),
        (
            "RuntimeError: NCCL symmetric memory is not supported. Requires NCCL >= 2.28.9",
            "nccl.version_mismatch",
        ),
        ("RuntimeError: Failed to send fd: No such file or directory", "driver.container"),
        ("RuntimeError: pidfd_getfd: Operation not permitted", "driver.container"),
        (
            (
                "RuntimeError: IntraNodeComm::rendezvous: detected overlapping devices "
                "across ranks. Please properly set device via torch.cuda.set_device() before "
                "initiating rendezvous."
            ),
            "nccl.duplicate_gpu",
        ),
        (
            (
                "[FATAL] SymmetricMemory::barrier: rank 1 failed to receive signal from rank "
                "0 on channel 0 after 10000 milliseconds"
            ),
            "app.hang",
        ),
    ],
)
def test_each_failure_names_its_cause_first(tmp_path: Path, line: str, first: str) -> None:
    report = diagnose_text(tmp_path, f"[rank1]: {line}\n")
    assert report.top(1) == [first], report.top(3)


@pytest.mark.parametrize(
    "line",
    [
        (
            "[rank0]:[W1206 09:35:39.129 CUDASymmetricMemory.cu:1204] SymmetricMemory: "
            "fail to export multicast handle."
        ),
        (
            "[rank0]:[W1206 09:35:39.130 CUDASymmetricMemory.cu:1260] Gracefully "
            "skipping multicast initialization."
        ),
        (
            "[rank0]:[W1206 09:35:39.129 intra_node_comm.cpp:150] Skipping "
            "IntraNodeComm::rendezvous() because participants have overlapping devices. "
            "To resolve this, call torch.cuda.set_device() before init_process_group()."
        ),
    ],
)
def test_fallback_notices_alone_are_no_failure(tmp_path: Path, line: str) -> None:
    report = diagnose_text(tmp_path, f"{line}\nstep 100 loss 1.93\n")
    assert _critical(report) == []
    assert report.hypotheses == ()
