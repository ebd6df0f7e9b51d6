"""The collective step: all_reduce, all_gather, reduce_scatter, all_to_all, broadcast.

Every rank contributes values that name it, all integers in float32 and far
below 2^24, so every correct result is exact whatever order the reduction
takes (``v(r) = r + 1``; ``1`` on a world too large for that to stay exact):

* all_reduce: rank r fills ``v(r)``; every element must be ``sum v = n(n+1)/2``;
* all_gather: rank r fills ``v(r)``; output chunk j must be ``v(j)``;
* reduce_scatter: rank r fills input chunk j with ``v(r) + j % 7``; rank r's
  output must be ``sum v + n * (r % 7)``;
* all_to_all: rank r sends ``r*n + j + 1`` to rank j; chunk j of rank r's
  output must be ``j*n + r + 1``;
* broadcast: the root (rank 0) fills ``1``, the others ``-(r+1)``; all must be ``1``.

The buffer sizes and the bandwidths follow nccl-tests (see
:mod:`nccl_doctor.probe.formulas`): ``size`` is the nccl-tests size of each
collective, ``algbw = size / time``, ``busbw = algbw * factor(n)``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from nccl_doctor.probe.device import Dev
from nccl_doctor.probe.formulas import algbw_gbytes_s, busbw_gbytes_s, chunks, expected_gbytes_s
from nccl_doctor.probe.worker import Ctx

_EXACT = 1 << 24


def value(rank: int, n: int) -> float:
    """What rank ``rank`` of ``n`` contributes."""
    return float(rank + 1) if n * (n + 1) // 2 + 7 * n < _EXACT and n * n < _EXACT else 1.0


def _init(ctx: Ctx, dev: Dev) -> Any:
    torch = dev.torch
    dist = torch.distributed
    store_spec = ctx.spec["store"]
    timeout = timedelta(seconds=float(ctx.spec.get("pg_timeout_s", 600)))
    if "file" in store_spec:
        store: Any = dist.FileStore(store_spec["file"], ctx.world)
    else:
        host, port = store_spec["tcp"]
        base = dist.TCPStore(host, int(port), is_master=False, timeout=timeout)
        store = dist.PrefixStore(store_spec.get("prefix", "probe"), base)
    # on CUDA, device_id makes NCCL create the communicator here, inside the init step
    extra = {"device_id": dev.device} if dev.cuda else {}
    dist.init_process_group(
        dev.backend, store=store, rank=ctx.rank, world_size=ctx.world, timeout=timeout, **extra
    )
    return dist


def _buffers(dev: Dev, coll: str, rank: int, n: int, count: int, *, bad: bool) -> tuple[Any, Any]:
    """(input, output) of one collective on one rank, filled as the module doc says."""
    torch = dev.torch
    v = value(rank, n) + (1.0 if bad else 0.0)
    if coll in ("all_reduce", "broadcast"):
        fill = v if coll == "all_reduce" or rank == 0 else -float(rank + 1)
        x = dev.floats(count, fill)
        return x, x
    if coll == "all_gather":
        return dev.floats(count, v), dev.floats(count * n)
    j = torch.arange(n, dtype=torch.float32, device=dev.device).repeat_interleave(count)
    if coll == "reduce_scatter":
        return v + j % 7, dev.floats(count)
    extra = 1.0 if bad else 0.0
    return rank * n + j + 1 + extra, dev.floats(count * n)


def expected(dev: Dev, coll: str, rank: int, n: int, count: int) -> Any:
    """The exact result rank ``rank`` must hold."""
    torch = dev.torch
    total = sum(value(r, n) for r in range(n))
    if coll == "all_reduce":
        return dev.floats(count, total)
    if coll == "broadcast":
        return dev.floats(count, value(0, n))
    j = torch.arange(n, dtype=torch.float32, device=dev.device).repeat_interleave(count)
    if coll == "all_gather":
        return j + 1 if value(1, n) == 2.0 else j * 0 + 1
    if coll == "reduce_scatter":
        return dev.floats(count, total + n * (rank % 7))
    return j * n + rank + 1


def _op(dist: Any, coll: str, inp: Any, out: Any) -> None:
    if coll == "all_reduce":
        dist.all_reduce(inp)
    elif coll == "broadcast":
        dist.broadcast(inp, 0)
    elif coll == "all_gather":
        dist.all_gather_into_tensor(out, inp)
    elif coll == "reduce_scatter":
        dist.reduce_scatter_tensor(out, inp)
    else:
        dist.all_to_all_single(out, inp)


def run_one(ctx: Ctx, dev: Dev, dist: Any, coll: str, size: int) -> str:
    """Check one collective at one size exactly, then time it; returns the step detail."""
    n = ctx.world
    per = chunks(coll, n)
    count = max(1, size // (4 * per))
    bad = ctx.fault("corrupt", coll)
    inp, out = _buffers(dev, coll, ctx.rank, n, count, bad=bad)
    _op(dist, coll, inp, out)
    dev.sync()
    want = expected(dev, coll, ctx.rank, n, count)
    nbytes = count * 4 * per
    verdict = f"{nbytes} bytes checked"
    if not dev.torch.equal(out, want):
        wrong = int((out != want).sum())
        first = float(out.flatten()[(out != want).flatten().nonzero()[0, 0]])
        verdict = (
            f"WRONG {coll} result on rank {ctx.rank}: {wrong} of {out.numel()} elements wrong "
            f"(e.g. {first:g}, expected {float(want.flatten()[0]):g}...) at {nbytes} bytes"
        )
    # every rank times every size, right or wrong, so the ranks stay in step
    iters = int(ctx.spec.get("iters", 10))
    seconds = dev.timed(lambda: _op(dist, coll, inp, out), iters, warmup=2)
    if ctx.rank == 0 and not verdict.startswith("WRONG"):
        ctx.bw(  # the probe file's keys (schema 1, docs/probe.md), in GB/s
            kind=coll,
            gpus=ctx.devices,
            size_bytes=nbytes,
            seconds=seconds,
            algbw_GBps=algbw_gbytes_s(nbytes, seconds),
            busbw_GBps=busbw_gbytes_s(coll, n, nbytes, seconds),
            expected_GBps=expected_gbytes_s(coll, dev.name(), n),
            gpu_model=dev.name(),
            world=n,
        )
    return verdict


def collective_task(ctx: Ctx) -> None:
    """Init the group, then every collective over the size sweep, each a step."""
    dev = Dev(ctx.kind, ctx.device)
    holder: dict[str, Any] = {}

    def init() -> str:
        dev.activate()
        holder["dist"] = _init(ctx, dev)
        return f"{dev.backend} group of {ctx.world}"

    if not ctx.step("init", init):
        return
    dist = holder["dist"]
    sizes = [int(s) for s in ctx.spec.get("sizes", [1 << 20])]
    for coll in ctx.spec.get("collectives", []):
        details: list[str] = []

        def run(coll: str = coll, details: list[str] = details) -> str:
            details.extend(run_one(ctx, dev, dist, coll, size) for size in sizes)
            wrong = [d for d in details if d.startswith("WRONG")]
            return wrong[0] if wrong else f"{len(sizes)} sizes checked exactly"

        ctx.step(coll, run)
    dist.destroy_process_group()
