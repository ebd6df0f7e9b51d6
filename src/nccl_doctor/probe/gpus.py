"""Which GPUs the probe may use: discovery, and the refusal of GPUs other processes hold.

The parent reads device names and UUIDs through torch (this initialises the
CUDA runtime in the parent but creates no context on any GPU; workers come
from a fresh forkserver, so the parent's CUDA state never reaches them). The
process list comes from NVML through :mod:`nccl_doctor.evidence.nvml` (a
child under a deadline), else from ``torch.cuda.list_gpu_processes``.
Nothing here changes any GPU setting.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from nccl_doctor.probe.device import torch_module


def cuda_gpus() -> list[dict[str, Any]]:
    """Visible CUDA devices: ordinal, name, UUID (without ``GPU-``); empty without CUDA."""
    torch = torch_module()
    if not torch.cuda.is_available():
        return []
    out = []
    for i in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(i)
        uuid = str(getattr(props, "uuid", "") or "")
        out.append({"index": i, "name": str(props.name), "uuid": uuid.removeprefix("GPU-")})
    return out


def _nvml_pids(timeout_s: float) -> dict[str, list[int]] | None:
    """UUID -> PIDs of compute processes, from NVML; ``None`` when NVML did not answer."""
    from nccl_doctor.evidence.nvml import read_nvml  # noqa: PLC0415 -- a child process
    from nccl_doctor.live_check import nvml_module_name  # noqa: PLC0415

    snap = read_nvml(timeout_s, module=nvml_module_name())
    if snap.get("outcome") != "ok":
        return None
    out: dict[str, list[int]] = {}
    for gpu in snap.get("gpus", []):
        procs = gpu.get("processes")
        if procs is None or not gpu.get("uuid"):
            continue
        out[str(gpu["uuid"]).removeprefix("GPU-")] = [int(p["pid"]) for p in procs]
    return out


def _torch_pids(index: int) -> list[int]:
    text = str(torch_module().cuda.list_gpu_processes(index))
    return [int(m) for m in re.findall(r"process\s+(\d+)", text)]


def _parent(pid: int) -> int | None:
    try:
        text = Path(f"/proc/{pid}/status").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    m = re.search(r"^PPid:\s*(\d+)", text, re.MULTILINE)
    return int(m.group(1)) if m else None


def busy_gpus(gpus: list[dict[str, Any]], timeout_s: float = 5.0) -> dict[int, list[int]]:
    """CUDA ordinal -> PIDs of *other* processes on that GPU (only GPUs that have some).

    This process, its parent (a wrapper or benchmark that started it) and its
    siblings (the other probe processes of one torchrun or srun launch,
    children of the same parent) do not count.
    """
    mine = {os.getpid(), os.getppid()}
    by_uuid = _nvml_pids(timeout_s)
    out: dict[int, list[int]] = {}
    for gpu in gpus:
        if by_uuid is not None and gpu["uuid"] in by_uuid:
            pids = by_uuid[gpu["uuid"]]
        else:
            try:
                pids = _torch_pids(gpu["index"])
            except Exception:  # noqa: BLE001 -- no process list: nothing to refuse
                pids = []
        others = [p for p in pids if p not in mine and _parent(p) != os.getppid()]
        if others:
            out[gpu["index"]] = others
    return out
