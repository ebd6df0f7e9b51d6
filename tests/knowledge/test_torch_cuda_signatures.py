"""PyTorch's CUDA messages in the catalogue (c10/cuda, ATen's CUDA context, cuBLAS, cuDNN).

A message that reports one CUDA error has that error's class; a message that
only relays another's text gives way to the message it relays.
"""

from __future__ import annotations

import re

import pytest

from nccl_doctor.facts.catalogue import signature_of
from nccl_doctor.knowledge.signatures import by_id
from tests.knowledge._signature_lines import assert_reads_as

CUDA_LINES = [
    (
        (
            "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an "
            "NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx"
        ),
        "torch.cuda.no_driver",
        "cuda_driver",
        {},
    ),
    (
        (
            "RuntimeError: The NVIDIA driver on your system is too old (found version 10010). "
            "Please update your GPU driver by downloading and installing a new version from the "
            "URL: http://www.nvidia.com/Download/index.aspx"
        ),
        "torch.cuda.driver_too_old",
        "cuda_driver",
        {"version": "10010"},
    ),
    (
        "RuntimeError: CUDA driver initialization failed, you might not have a CUDA gpu.",
        "torch.cuda.driver_init_failed",
        "cuda_driver",
        {},
    ),
    (
        (
            "/opt/conda/lib/python3.10/site-packages/torch/cuda/__init__.py:138: UserWarning: "
            "CUDA initialization: CUDA unknown error - this may be due to an incorrectly set up "
            "environment, e.g. changing env variable CUDA_VISIBLE_DEVICES after program start. "
            "Setting the available devices to be zero. (Triggered internally at "
            "../c10/cuda/CUDAFunctions.cpp:108.)"
        ),
        "torch.cuda.unknown_error_env",
        "cuda_unknown",
        {},
    ),
    (
        (
            "UserWarning: CUDA initialization: Found no NVIDIA driver on your system. Please "
            "check that you have an NVIDIA GPU and installed a driver from "
            "http://www.nvidia.com/Download/index.aspx (Triggered internally at "
            "/pytorch/c10/cuda/CUDAFunctions.cpp:100.)"
        ),
        "torch.cuda.no_driver",
        "cuda_driver",
        {},
    ),
    ("RuntimeError: No CUDA GPUs are available", "torch.cuda.no_gpus", "cuda_device", {}),
    (
        "RuntimeError: device id must be non-negative!-1",
        "torch.cuda.negative_device",
        "cuda_device",
        {},
    ),
    (
        (
            "RuntimeError: device >= 0 && device < num_gpus INTERNAL ASSERT FAILED at "
            '"../aten/src/ATen/cuda/CUDAContext.cpp":50, please report a bug to PyTorch. '
            "device=1, num_gpus="
        ),
        "torch.cuda.device_index_assert",
        "cuda_device",
        {"path": "../aten/src/ATen/cuda/CUDAContext.cpp", "line": "50"},
    ),
    (
        (
            "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling "
            "`cublasCreate(handle)`"
        ),
        "torch.cublas.not_initialized",
        "gpu_oom",
        {"call": "cublasCreate(handle)"},
    ),
    (
        (
            "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( "
            "handle, opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`"
        ),
        "torch.cublas.execution_failed",
        "cuda_fault",
        {},
    ),
    (
        "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED",
        "torch.cudnn.not_initialized",
        "cuda_error",
        {},
    ),
]


@pytest.mark.parametrize(("line", "ident", "symptom", "fields"), CUDA_LINES)
def test_cuda_lines_read_as_their_message(
    line: str, ident: str, symptom: str, fields: dict[str, str]
) -> None:
    assert_reads_as(line, ident, symptom, fields)


def test_a_relaying_message_alone_still_reads() -> None:
    sig = signature_of("UserWarning: CUDA initialization: something new went wrong")
    assert sig is not None
    assert (sig.id, sig.symptom, sig.relays) == ("torch.cuda.init_warning", "cuda_init", True)


def test_an_assertion_names_its_line_at_each_release() -> None:
    lines = by_id()["torch.cuda.device_index_assert"].where
    assert "aten/src/ATen/cuda/CUDAContext.cpp:50@v2.1.2" in lines
    assert "aten/src/ATen/cuda/CUDAContext.cpp:67@v2.11.0" in lines
    assert all(re.fullmatch(r"aten/src/ATen/cuda/CUDAContext\.cpp:\d+@v[\d.]+", w) for w in lines)
