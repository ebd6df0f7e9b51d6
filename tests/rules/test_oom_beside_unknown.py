"""An out-of-memory error does not explain CUDA's unknown error beside it.

CUDA returns ``cudaErrorUnknown`` (999; 30 before CUDA 10.1) when the driver fails in a
way it does not classify; a failed allocation returns ``cudaErrorMemoryAllocation`` (2)
and leaves the context usable. A job that reports both (here a training run's "CUDA
error: out of memory", then the same GPU failing at CUDA's initialisation with error 30
for a one-element tensor) has a broken CUDA state to explain, which no OOM does: both
stay root causes, and the unknown error's checklist is shown, not folded under the OOM.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_text

_LOG = (
    "RuntimeError: CUDA error: out of memory\n"
    ">>> import torch; torch.ones(1).cuda()\n"
    "THCudaCheck FAIL file=/opt/conda/conda-bld/pytorch-nightly_1542964575207/work/aten/src/THC/"
    "THCGeneral.cpp line=51 error=30 : unknown error\n"
    "Traceback (most recent call last):\n"
    '  File "<stdin>", line 1, in <module>\n'
    '  File "/opt/conda/lib/python3.7/site-packages/torch/cuda/__init__.py", line 162, in '
    "_lazy_init\n"
    "    torch._C._cuda_init()\n"
    "RuntimeError: cuda runtime error (30) : unknown error at /opt/conda/conda-bld/"
    "pytorch-nightly_1542964575207/work/aten/src/THC/THCGeneral.cpp:51\n"
)


def test_both_stay_root_causes(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _LOG)
    roots = [f.id for f in report.findings if f.root_cause]
    assert roots == ["gpu.oom", "cuda.unknown_error"]
    assert report.top(3)[:2] == ["gpu.oom", "cuda.unknown_error"]


def test_the_oom_alone_is_the_jobs_memory(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _LOG.split("\n", 1)[0] + "\n")
    assert [f.id for f in report.findings] == ["gpu.oom"]
