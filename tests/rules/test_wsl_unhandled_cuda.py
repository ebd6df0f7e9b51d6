"""Under WSL (its kernel shown), NCCL's unhandled CUDA error in a job of several GPUs is WSL's
missing peer-to-peer and CUDA IPC, whatever code the Windows driver returns (999 here): the
unknown error is its cascade. The same error on native Linux, or in a job of one rank, is
not WSL's."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import critical_ids, diagnose_text

_WSL = "Python platform: Linux-5.15.153.1-microsoft-standard-WSL2-x86_64-with-glibc2.35\n"
_NATIVE = "Python platform: Linux-5.15.0-113-generic-x86_64-with-glibc2.35\n"
_FAIL = (
    "torchrun --nproc_per_node=2 train.py dies at the first all_reduce:\n"
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
    "NCCLUtils.hpp:275, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL "
    "version 2.20.5\n"
    "ncclUnhandledCudaError: Call to CUDA function failed.\n"
    "Last error:\n"
    "Cuda failure 999 'unknown error'\n"
)


def test_nccls_cuda_failure_under_wsl_is_wsls(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _WSL + _FAIL)
    assert critical_ids(report) == ["driver.wsl"]
    assert report.findings[0].summary.startswith("NCCL's CUDA call failed (unhandled cuda error)")
    assert "cuda.unknown_error" in report.findings[0].explains


def test_the_same_on_native_linux_or_one_rank_is_not(tmp_path: Path) -> None:
    assert "driver.wsl" not in critical_ids(diagnose_text(tmp_path, _NATIVE + _FAIL))
    alone = diagnose_text(tmp_path, _WSL + "WORLD_SIZE=1\n" + _FAIL)
    assert "driver.wsl" not in critical_ids(alone)
