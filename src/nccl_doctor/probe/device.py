"""The backend/device abstraction: the same probe code on CUDA+NCCL and on CPU+gloo.

torch is imported here lazily, inside worker processes only. On ``cuda`` a
device is a GPU ordinal and timing uses CUDA events; on ``cpu`` (the tests,
CI) a "device" is a virtual index, tensors live in host memory, collectives
use gloo and timing uses the wall clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def torch_module() -> Any:
    """torch, imported on first use (never at import time of nccl_doctor)."""
    import torch  # noqa: PLC0415 -- lazy by design: only probe workers load torch

    return torch


class Dev:
    """One device of one kind (``cuda`` or ``cpu``) as the probe steps use it."""

    def __init__(self, kind: str, index: int) -> None:
        self.torch = torch_module()
        self.kind = kind
        self.index = index
        self.cuda = kind == "cuda"
        self.device = self.torch.device("cuda", index) if self.cuda else self.torch.device("cpu")

    @property
    def backend(self) -> str:
        """The process-group backend of this device kind."""
        return "nccl" if self.cuda else "gloo"

    def name(self) -> str:
        """The device model name (``torch.cuda.get_device_name``), or ``cpu``."""
        return str(self.torch.cuda.get_device_name(self.index)) if self.cuda else "cpu"

    def activate(self) -> None:
        """Create the CUDA context on this device (a no-op on the CPU)."""
        if self.cuda:
            self.torch.cuda.set_device(self.index)
            self.torch.zeros(1, device=self.device)
            self.sync()

    def sync(self) -> None:
        """Wait for the device's queued work."""
        if self.cuda:
            self.torch.cuda.synchronize(self.index)

    def floats(self, count: int, value: float = 0.0, *, host: bool = False) -> Any:
        """``count`` float32 filled with ``value``: on the device, or pinned host memory."""
        torch = self.torch
        if host:
            out = torch.empty(count, dtype=torch.float32, pin_memory=self.cuda)
            return out.fill_(value)
        return torch.full((count,), value, dtype=torch.float32, device=self.device)

    def timed(self, fn: Callable[[], object], iters: int, warmup: int = 1) -> float:
        """Seconds per call of ``fn``: CUDA events on the GPU, the wall clock on the CPU."""
        for _ in range(warmup):
            fn()
        self.sync()
        if self.cuda:
            start = self.torch.cuda.Event(enable_timing=True)
            end = self.torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(iters):
                fn()
            end.record()
            end.synchronize()
            return float(start.elapsed_time(end)) / 1000.0 / iters
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        return (time.perf_counter() - t0) / iters


def copy_seconds(dev: Dev, dst: Any, src: Any, iters: int) -> float:
    """Seconds per ``dst.copy_(src)``: the copy every bandwidth step (and the bench) times."""
    return dev.timed(lambda: dst.copy_(src, non_blocking=True), iters)
