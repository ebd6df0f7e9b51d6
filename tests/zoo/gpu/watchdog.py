"""A collective that waits behind the rank's own long GPU kernel until the watchdog fires.

Run under torchrun on the GPU machine by watchdog.sh. WD_SLEEP_S seconds of
``torch.cuda._sleep`` are queued on the current stream, then an all_reduce is
issued with a process-group timeout of WD_TIMEOUT_S seconds: the collective
cannot start before the kernel ends, so ProcessGroupNCCL's watchdog times it
out and aborts the process. WD_EAGER=1 binds the device at init (eager
communicator creation), as recent PyTorch recommends.
"""

from __future__ import annotations

import datetime as dt
import os

import torch
import torch.distributed as dist

local = int(os.environ.get("LOCAL_RANK", "0"))
torch.cuda.set_device(local)
timeout = dt.timedelta(seconds=float(os.environ.get("WD_TIMEOUT_S", "8")))
if os.environ.get("WD_EAGER") == "1":
    dist.init_process_group("nccl", timeout=timeout, device_id=torch.device("cuda", local))
else:
    dist.init_process_group("nccl", timeout=timeout)
t = torch.ones(1 << 20, device="cuda")
dist.all_reduce(t)  # a first collective that completes: the communicator exists
torch.cuda.synchronize()
print(f"rank {dist.get_rank()} warm-up done; queueing the long kernel", flush=True)
torch.cuda._sleep(int(1.98e9 * float(os.environ.get("WD_SLEEP_S", "40"))))
dist.all_reduce(t)
torch.cuda.synchronize()
ended = "the collective ended after the long kernel"
print(f"rank {dist.get_rank()} sum {t[0].item()} ({ended})", flush=True)
dist.destroy_process_group()
