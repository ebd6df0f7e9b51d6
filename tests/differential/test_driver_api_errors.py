"""PyTorch's driver-API errors read as the CUDA error they name, and torch's symmetric memory
points at NVLS.

c10/cuda/driver_api.h raises ``CUDA driver error: <cuGetErrorString's text>`` for a failed
driver call (cuMem*, cuMulticast*, the calls torch's symmetric memory makes). The text is
a row of CUDA's enum, so it opens that row's symptom class, as PyTorch's ``CUDA error:``
does. Symmetric memory binds the ranks' buffers to an NVSwitch multicast object where the
GPUs allow: a failure named inside it leads with nccl.nvls. Every case runs the whole
pipeline.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import diagnose_text

SITE = "/usr/local/lib/python3.12/dist-packages"
SYMM_MEM = (
    "Traceback (most recent call last):\n"
    '  File "/app/vllm/distributed/device_communicators/symm_mem.py", line 88, in __init__\n'
    "    handle = torch_symm_mem.rendezvous(self.buffer, self.group.group_name)\n"
    f'  File "{SITE}/torch/distributed/_symmetric_memory/__init__.py", line 1711, in rendezvous\n'
    "    return _SymmetricMemory.rendezvous(tensor, group_name)\n"
    "RuntimeError: CUDA driver error: invalid argument\n"
)
#: the same driver error from a vLLM custom kernel's own allocator, no symmetric memory
ELSEWHERE = (
    "Traceback (most recent call last):\n"
    '  File "/app/vllm/worker/worker.py", line 120, in init_device\n'
    "    self.cache_engine = CacheEngine(self.cache_config, self.model_config)\n"
    "RuntimeError: CUDA driver error: invalid argument\n"
)


@pytest.mark.parametrize(
    ("text", "symptom"),
    [
        ("RuntimeError: CUDA driver error: invalid argument\n", "a CUDA call failed"),
        ("RuntimeError: CUDA driver error: unknown error\n", "CUDA returned its unknown error"),
        (
            "RuntimeError: CUDA driver error: operation not supported\n",
            "a CUDA call failed",
        ),
    ],
)
def test_a_driver_error_opens_its_cuda_class(tmp_path: Path, text: str, symptom: str) -> None:
    report = diagnose_text(tmp_path, "vllm serve -tp 8 fails:\n" + text)
    assert report.hypotheses[0].symptom.startswith(symptom)


def test_symmetric_memory_leads_with_nvls(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, SYMM_MEM)
    first = report.hypotheses[0]
    assert first.id == "nccl.nvls"
    assert any("symmetric-memory rendezvous" in why for why in first.for_)


def test_the_same_error_elsewhere_does_not_name_nvls_first(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, ELSEWHERE)
    assert report.hypotheses[0].id != "nccl.nvls"
    assert not any("symmetric" in why for h in report.hypotheses for why in h.for_)
