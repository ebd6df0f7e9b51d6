"""Torch's symmetric memory misused the ways a one-GPU machine can show: two ranks on one GPU
(no torch.cuda.set_device per rank), ranks that allocate different sizes, a backend name that
does not exist, and a tensor not allocated by symmetric memory. Run by symm_mem.sh under
torchrun --nproc-per-node 2 (a gloo group: the rendezvous needs only the store); SM_CASE picks
the misuse. Each rank prints what it did and the exception it met, if any."""

import os
import sys

import torch
import torch.distributed as dist

case = os.environ.get("SM_CASE", "overlap")
rank = int(os.environ["RANK"])
dist.init_process_group("gloo")
import torch.distributed._symmetric_memory as symm_mem  # noqa: E402  (after the group exists)

device = torch.device("cuda", 0)  # every rank on the one GPU: no set_device(local_rank)
group = dist.group.WORLD
if hasattr(symm_mem, "enable_symm_mem_for_group"):
    symm_mem.enable_symm_mem_for_group(group.group_name)
numel = 1024 * (rank + 1) if case == "sizes" else 1024
alloc = torch.empty if case == "foreign" else symm_mem.empty
t = alloc(numel, device=device)
print(f"rank {rank}: allocated {numel} floats on {device} ({case})", flush=True)
handle = symm_mem.rendezvous(t, group)
print(f"rank {rank}: rendezvous gave {type(handle).__name__}", flush=True)
dist.destroy_process_group()
sys.exit(0)
