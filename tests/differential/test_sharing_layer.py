"""A GPU-sharing layer between the job and the driver (HAMi-core's libvgpu.so).

HAMi splits GPUs between Kubernetes pods by preloading HAMi-core into the container: every
CUDA driver and NVML call goes through it, and it logs its own ``[HAMI-core ...]`` lines.
NCCL's driver calls (cuMem allocations and their export, device queries) meet its
bookkeeping, so a multi-GPU start-up that fails there points at the container's driver
layer before NCCL's transports.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import diagnose_text

_FAILURE = (
    "INFO 05-12 08:14:02 [parallel_state.py:1004] rank 1 in world size 2 is assigned as DP "
    "rank 0, PP rank 0, TP rank 1\n"
    "(VllmWorker rank=1 pid=612) ERROR 05-12 08:14:03 [multiproc_executor.py:470] "
    "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)\n"
    "ERROR 05-12 08:14:04 [core.py:396] RuntimeError: Engine core initialization failed. "
    "See root cause above.\n"
)

_HAMI_LINES = (
    "[HAMI-core Msg(612:140267266266944:libvgpu.c:836)]: Initializing.....\n"
    "[HAMI-core Msg(612:140267266266944:libvgpu.c:855)]: Initialized\n"
)


@pytest.mark.parametrize(
    "layer",
    [
        _HAMI_LINES,
        "The pod gets its 2 GPUs from HAMi (libvgpu.so is mounted into the container).\n",
    ],
)
def test_a_gpu_sharing_layer_puts_the_containers_driver_stack_first(
    tmp_path: Path, layer: str
) -> None:
    report = diagnose_text(
        tmp_path,
        "vLLM with tensor parallelism 2 in a Kubernetes pod fails at start.\n" + layer + _FAILURE,
    )
    lead = report.hypotheses[0]
    assert lead.id == "driver.container"
    assert any("GPU-sharing layer" in why for why in lead.for_)


def test_the_same_failure_without_the_layer_leaves_the_driver_stack_behind(
    tmp_path: Path,
) -> None:
    report = diagnose_text(
        tmp_path, "vLLM with tensor parallelism 2 in a Kubernetes pod fails at start.\n" + _FAILURE
    )
    assert report.hypotheses[0].id != "driver.container"
    assert not any("GPU-sharing layer" in why for h in report.hypotheses for why in h.for_)
