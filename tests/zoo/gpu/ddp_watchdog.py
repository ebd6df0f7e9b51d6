"""A step whose collective waits behind the rank's own long GPU kernel until the watchdog fires,
for the flight recorder's stack of the timed-out collective.

Run under torchrun on the GPU machine by ddp_watchdog.sh. WD_SLEEP_S seconds of
``torch.cuda._sleep`` are queued on the current stream inside the model's forward. With
WD_PLAIN=1 the step then issues a plain all_reduce from a helper (train_step -> reduce_loss),
which cannot start before the kernel ends, so ProcessGroupNCCL's watchdog (timeout
WD_TIMEOUT_S) times it out and prints the call chain. Without it the step runs a
DistributedDataParallel backward; on one rank (torch 2.11, H100) that backward ended after
the kernel with no watchdog line, so it shows no stack of a collective torch issued itself
(tests/fixtures/captured/fr-stack-h100/SOURCE.md).
"""

from __future__ import annotations

import datetime as dt
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

local = int(os.environ.get("LOCAL_RANK", "0"))
torch.cuda.set_device(local)
timeout = dt.timedelta(seconds=float(os.environ.get("WD_TIMEOUT_S", "8")))
dist.init_process_group("nccl", timeout=timeout, device_id=torch.device("cuda", local))
SLEEP_CYCLES = int(1.98e9 * float(os.environ.get("WD_SLEEP_S", "30")))


class Slow(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(1024, 1024)
        self.slow = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.slow:
            torch.cuda._sleep(SLEEP_CYCLES)
        return self.lin(x)


def reduce_loss(loss: torch.Tensor) -> torch.Tensor:
    dist.all_reduce(loss)
    return loss


def train_step(model: torch.nn.Module, x: torch.Tensor) -> None:
    loss = model(x).sum()
    if os.environ.get("WD_PLAIN") == "1":
        reduce_loss(loss.detach())
    else:
        loss.backward()


net = Slow().cuda()
model = DistributedDataParallel(net, device_ids=[local])
x = torch.randn(64, 1024, device="cuda")
train_step(model, x)  # a first step that completes: the communicator exists
torch.cuda.synchronize()
print(f"rank {dist.get_rank()} warm-up done; the next step queues the long kernel", flush=True)
net.slow = True
train_step(model, x)
torch.cuda.synchronize()
print(f"rank {dist.get_rank()} step ended after the long kernel", flush=True)
dist.destroy_process_group()
