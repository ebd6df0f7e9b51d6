"""Per-device and peer-to-peer steps, run inside a worker (see :mod:`.worker`).

Per device, in order (a failed step ends the device's task, since the next
ones need it): ``context`` (CUDA context creation), ``alloc`` (allocate and
touch a buffer), ``kernel`` (a matmul and an elementwise op of small integers,
compared exactly with the CPU's result), then ``h2d`` and ``d2h`` (pinned
host memory) and ``d2d`` (a device copy), each a bandwidth record.

The P2P task runs in one worker that sees every GPU: ``p2p_access`` reads
``torch.cuda.can_device_access_peer`` for every ordered pair, then
``p2p i->j`` copies a buffer from GPU i to GPU j, checks it and times it.
"""

from __future__ import annotations

import time
from typing import Any

from nccl_doctor.knowledge.units import gbytes_s
from nccl_doctor.probe.device import Dev, copy_seconds
from nccl_doctor.probe.formulas import expected_gbytes_s
from nccl_doctor.probe.worker import Ctx

_MIB = 1 << 20


def _kernel(dev: Dev, ctx: Ctx) -> str:
    torch = dev.torch
    n = 256
    a = (torch.arange(n * n, dtype=torch.float32) % 7).reshape(n, n)
    b = (torch.arange(n * n, dtype=torch.float32) % 5).reshape(n, n).t().contiguous()
    want_mm = a @ b  # integers below 2^24: exact in float32 on any device
    want_ew = a * 2 + 1
    got_mm = (a.to(dev.device) @ b.to(dev.device)).cpu()
    got_ew = (a.to(dev.device) * 2 + 1).cpu()
    if ctx.fault("corrupt", "kernel"):
        got_mm[0, 0] += 1
    if not torch.equal(got_mm, want_mm):
        bad = int((got_mm != want_mm).sum())
        return f"WRONG matmul result: {bad} of {n * n} elements differ from the CPU's"
    if not torch.equal(got_ew, want_ew):
        return "WRONG elementwise result differs from the CPU's"
    return f"matmul {n}x{n} and elementwise checked exactly"


def versions(dev: Dev) -> dict[str, Any]:
    """torch, CUDA and NCCL versions of this worker, and the device model."""
    torch = dev.torch
    out: dict[str, Any] = {"torch": str(torch.__version__), "gpu_model": dev.name()}
    if dev.cuda:
        out["cuda"] = str(torch.version.cuda)
        try:
            v = torch.cuda.nccl.version()
            out["nccl"] = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
        except Exception:  # noqa: BLE001 -- a build without NCCL still probes the rest
            out["nccl"] = None
    return out


def _alloc(dev: Dev, nbytes: int) -> str:
    x = dev.floats(nbytes // 4, 3.0)
    dev.sync()
    if float(x[-1]) != 3.0:
        return "WRONG allocated buffer does not hold what was written"
    del x
    return f"{nbytes // _MIB} MiB allocated and touched"


def device_task(ctx: Ctx) -> None:
    """The per-device steps on ``ctx.device``."""
    spec = ctx.spec
    dev = Dev(ctx.kind, ctx.device)
    gpus = [ctx.device]

    def context() -> str:
        dev.activate()
        return f"context on {dev.name()}"

    if not ctx.step("context", context):
        return
    name = dev.name()
    if ctx.rank == 0:
        ctx.send({"t": "meta", **versions(dev)})
    if not ctx.step("alloc", lambda: _alloc(dev, spec.get("alloc_bytes", 256 * _MIB))):
        return
    if not ctx.step("kernel", lambda: _kernel(dev, ctx)):
        return
    size = int(spec.get("copy_bytes", 64 * _MIB))
    iters = int(spec.get("iters", 10))
    host = dev.floats(size // 4, 1.0, host=True)
    a, b = dev.floats(size // 4, 2.0), dev.floats(size // 4)
    plans = (("h2d", a, host, 1), ("d2h", host, a, 1), ("d2d", b, a, 2))
    for kind, dst, src, factor in plans:
        out: dict[str, float] = {}

        def run(dst: Any = dst, src: Any = src, out: dict[str, float] = out) -> str:
            out["s"] = copy_seconds(dev, dst, src, iters)
            return f"{size // _MIB} MiB x {iters}"

        if not ctx.step(kind, run):
            return
        moved = gbytes_s(factor * size, out["s"])
        ctx.bw(  # the probe file's keys (schema 1, docs/probe.md), in GB/s
            kind=kind,
            gpus=gpus,
            size_bytes=size,
            seconds=out["s"],
            algbw_GBps=moved,
            busbw_GBps=moved,
            expected_GBps=expected_gbytes_s(kind, name),
            gpu_model=name,
        )


def _pair(dev_i: Dev, dev_j: Dev, size: int, iters: int) -> tuple[float, bool]:
    torch = dev_i.torch
    src = torch.arange(size // 4, dtype=torch.float32, device=dev_i.device) % 251
    dst = torch.empty(size // 4, dtype=torch.float32, device=dev_j.device)
    dst.copy_(src)
    dev_i.sync()
    dev_j.sync()
    t0 = time.perf_counter()
    for _ in range(iters):
        dst.copy_(src, non_blocking=True)
    dev_i.sync()
    dev_j.sync()
    seconds = (time.perf_counter() - t0) / iters
    ok = bool(torch.equal(dst.cpu(), src.cpu()))
    return seconds, ok


def p2p_task(ctx: Ctx) -> None:
    """Peer access matrix and per-pair copy bandwidth over ``ctx.devices`` (CUDA only)."""
    spec = ctx.spec
    devs = {i: Dev(ctx.kind, i) for i in ctx.devices}
    matrix: dict[str, bool] = {}

    def access() -> str:
        for dev in devs.values():
            dev.activate()
        torch = devs[ctx.devices[0]].torch
        for i in devs:
            for j in devs:
                if i != j:
                    matrix[f"{i}->{j}"] = bool(torch.cuda.can_device_access_peer(i, j))
        denied = [k for k, v in matrix.items() if not v]
        ctx.send({"t": "matrix", "matrix": matrix})
        return f"peer access denied for {', '.join(denied)}" if denied else "all pairs"

    if not ctx.step("p2p_access", access):
        return
    size = int(spec.get("p2p_bytes", 64 * _MIB))
    iters = int(spec.get("iters", 10))
    both = bool(spec.get("both_directions", False))
    pairs = [(i, j) for i in devs for j in devs if i != j and (both or i < j)]
    name = devs[ctx.devices[0]].name()
    for i, j in pairs:
        out: dict[str, float] = {}

        def run(i: int = i, j: int = j, out: dict[str, float] = out) -> str:
            seconds, ok = _pair(devs[i], devs[j], size, iters)
            out["s"] = seconds
            if not ok:
                return f"WRONG data copied from GPU {i} to GPU {j} differs"
            return "peer access" if matrix.get(f"{i}->{j}") else "staged (no peer access)"

        if ctx.step(f"p2p {i}->{j}", run):
            moved = gbytes_s(size, out["s"])
            ctx.bw(  # the probe file's keys (schema 1, docs/probe.md), in GB/s
                kind="p2p",
                gpus=[i, j],
                size_bytes=size,
                seconds=out["s"],
                algbw_GBps=moved,
                busbw_GBps=moved,
                expected_GBps=expected_gbytes_s("p2p", name) if matrix.get(f"{i}->{j}") else None,
                gpu_model=name,
            )
