"""One small distributed job that fails on purpose, the way real jobs fail.

Run under torchrun on the GPU machine by capture.sh; the scenario comes from
ZOO_SCENARIO. Each scenario reproduces one mechanism a user meets.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist

SCENARIO = os.environ["ZOO_SCENARIO"]
rank = int(os.environ.get("RANK", "0"))
local = int(os.environ.get("LOCAL_RANK", "0"))


def _illegal_access(t: torch.Tensor) -> None:
    """A kernel that writes ~8 GB past its buffer: an illegal memory access."""
    import triton
    import triton.language as tl

    @triton.jit
    def poke(ptr, n, BLOCK: tl.constexpr):  # noqa: N803 -- triton's constexpr convention
        offs = tl.arange(0, BLOCK) + 2_000_000_000  # int32 offsets: 8 GB past the start
        tl.store(ptr + offs, tl.full((BLOCK,), 1.0, tl.float32), mask=offs > n)

    poke[(1,)](t, t.numel(), BLOCK=128)


def _train() -> None:
    """A healthy job as users run it: DDP over a small model for some steps, a second
    process group, the collectives a trainer calls besides gradients, then a clean end."""
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Sequential(
            torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8)
        ).cuda(),
        device_ids=[local],
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    side = dist.new_group(list(range(dist.get_world_size())))
    for step in range(int(os.environ.get("ZOO_STEPS", "30"))):
        x = torch.randn(64, 256, device="cuda")
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            dist.all_reduce(loss.detach(), group=side)
            print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    gathered = [torch.zeros(4, device="cuda") for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, torch.ones(4, device="cuda"))
    dist.broadcast(gathered[0], src=0)
    dist.barrier()


def main() -> None:
    if SCENARIO == "invalid_ordinal":
        torch.cuda.set_device(local + 1)
    elif SCENARIO == "duplicate_gpu":
        torch.cuda.set_device(0)
    elif SCENARIO != "no_gpus":
        torch.cuda.set_device(local)
    seconds = 10 if SCENARIO == "watchdog_timeout" else 120
    dist.init_process_group("nccl", timeout=dt.timedelta(seconds=seconds))
    t = torch.ones(1 << 20, device="cuda") * (rank + 1)
    if SCENARIO == "device_assert":
        idx = torch.tensor([t.numel() + 5], device="cuda")
        t[idx] = 0.0  # out-of-bounds index: a device-side assert
    if SCENARIO == "oom_foreign":
        big = torch.empty(40 * (1 << 30), dtype=torch.uint8, device="cuda")
        del big
    if SCENARIO == "oom_self":
        # the job's own appetite: it holds 100 GiB, then asks for 60 GiB more
        held = torch.empty(100 * (1 << 30), dtype=torch.uint8, device="cuda")
        more = torch.empty(60 * (1 << 30), dtype=torch.uint8, device="cuda")
        del held, more
    if SCENARIO == "busy_self":
        # a healthy job that holds 20 GiB while nvidia-smi is taken beside it
        held = torch.empty(20 * (1 << 30), dtype=torch.uint8, device="cuda")
        dist.all_reduce(t)
        print(f"rank {rank} pid {os.getpid()} holding", flush=True)
        time.sleep(25)
        del held
    if SCENARIO == "illegal_access":
        _illegal_access(t)
    if SCENARIO == "train":
        _train()
    if SCENARIO == "watchdog_timeout":
        # the GPU is busy for ~2 minutes before the collective can run: the
        # watchdog (10 s timeout) fires and, with TORCH_NCCL_DUMP_ON_TIMEOUT=1,
        # the flight recorder dumps its ring buffer
        torch.cuda._sleep(int(2e9 * 120))
    dist.all_reduce(t)
    torch.cuda.synchronize()
    print(f"rank {rank} sum {t[0].item()}", flush=True)
    if SCENARIO == "watchdog_timeout" and os.environ.get("ZOO_FR_OUT"):
        # what the watchdog would have dumped, taken on demand: the flight
        # recorder's own pickle of this rank's last collectives
        from torch._C._distributed_c10d import _dump_nccl_trace

        Path(f"{os.environ['ZOO_FR_OUT']}{rank}").write_bytes(_dump_nccl_trace())
    dist.destroy_process_group()


main()
