"""One small distributed job that fails on purpose, the way real jobs fail.

Run under torchrun on the GPU machine by capture.sh; the scenario comes from
ZOO_SCENARIO. Each scenario reproduces one mechanism a user meets.
"""

from __future__ import annotations

import datetime as dt
import os

import torch
import torch.distributed as dist

SCENARIO = os.environ["ZOO_SCENARIO"]
rank = int(os.environ.get("RANK", "0"))
local = int(os.environ.get("LOCAL_RANK", "0"))


def main() -> None:
    if SCENARIO == "invalid_ordinal":
        torch.cuda.set_device(local + 1)
    elif SCENARIO == "duplicate_gpu":
        torch.cuda.set_device(0)
    elif SCENARIO != "no_gpus":
        torch.cuda.set_device(local)
    dist.init_process_group("nccl", timeout=dt.timedelta(seconds=120))
    t = torch.ones(1 << 20, device="cuda") * (rank + 1)
    if SCENARIO == "device_assert":
        idx = torch.tensor([t.numel() + 5], device="cuda")
        t[idx] = 0.0  # out-of-bounds index: a device-side assert
    if SCENARIO == "oom_foreign":
        big = torch.empty(40 * (1 << 30), dtype=torch.uint8, device="cuda")
        del big
    dist.all_reduce(t)
    torch.cuda.synchronize()
    print(f"rank {rank} sum {t[0].item()}", flush=True)
    dist.destroy_process_group()


main()
