"""CUDA's error texts read behind whatever prints them, and never out of common phrases.

CUDA's texts are finite (``cudaGetErrorString``); the wrappers around them are many. A text
long enough and holding a GPU word names its error on its own; a short or common one
("invalid argument", "out of memory") needs a CUDA prefix beside it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.facts.catalogue import signature_of
from nccl_doctor.knowledge import cuda_errors
from tests.helpers import diagnose_text


@pytest.mark.parametrize(
    ("line", "ident"),
    [
        (
            "RuntimeError: CUDART error: peer access is not supported between these two devices",
            "cuda.error.peer_access_unsupported",
        ),
        (
            (
                "[TensorRT-LLM][ERROR] CUDA runtime error in cudaDeviceEnablePeerAccess: "
                "peer access is not supported between these two devices"
            ),
            "cuda.error.peer_access_unsupported",
        ),
        (
            "it crashed with `peer access is not supported between these two devices` at startup",
            "cuda.error.peer_access_unsupported",
        ),
        ("ggml_cuda_init: failed to initialize CUDA: unknown error", "cuda.error.unknown"),
        ("CUDA Error: invalid argument at src/kernels.cu:62", "cuda.error.invalid_value"),
        (
            "cupy.cuda.runtime.CUDARuntimeError: cudaErrorInvalidValue: invalid argument",
            "cuda.error.invalid_value",
        ),
        ("cuda runtime error (30) : unknown error at THCGeneral.cpp:50", "cuda.error.unknown"),
        (
            "Failed to allocate device vector A (error code system not yet initialized)!",
            "cuda.error.system_not_ready",
        ),
        ("CUDA Error: invalid device ordinal", "cuda.error.invalid_device"),
    ],
)
def test_a_cuda_text_is_read_behind_any_wrapper(line: str, ident: str) -> None:
    sig = signature_of(line)
    assert sig is not None
    assert sig.id == ident


@pytest.mark.parametrize(
    "line",
    [
        "the operation not supported here was the second copy",  # a common phrase
        "invalid argument passed to the launcher: --nproc_per_node",
        "we ran out of memory on the host during preprocessing",
        "NCCL INFO peer access is already enabled on GPU 1",  # a status, no failure
        "failed to enable peer access for some device pairs",  # Triton's warning, not CUDA's text
    ],
)
def test_a_common_phrase_without_a_cuda_prefix_is_no_cuda_error(line: str) -> None:
    sig = signature_of(line)
    assert sig is None or sig.library != "cuda"


def test_only_long_texts_with_a_gpu_word_stand_alone() -> None:
    evident = {e.message for e in cuda_errors.ERRORS if e.message and cuda_errors.self_evident(e)}
    assert "peer access is not supported between these two devices" in evident
    assert "system not yet initialized" in evident
    assert "invalid device ordinal" in evident
    assert {"unknown error", "invalid argument", "out of memory"}.isdisjoint(evident)
    assert "operation not permitted" not in evident  # no GPU word: strerror's EPERM too
    assert "peer access is already enabled" not in evident  # 704: no failure


def test_a_wrapped_peer_access_error_leads_with_its_own_reading(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        "Title: CustomAllreduce crashes on two RTX 4090\n\n"
        "When I start the server with --tensor-parallel-size=2 it crashed with "
        "`RuntimeError: CUDART error: peer access is not supported between these two devices`\n",
    )
    assert report.top(1) == ["nccl.p2p"]
    lead = report.hypotheses[0]
    assert "cuda.error.peer_access_unsupported" in lead.for_[0]
