"""What nvidia-smi's GPU utilisation reads while a rank waits, two ways: inside an NCCL
collective its peer never joins (the kernel is launched and polls for the peer's data), and
on the host in the c10d store (no kernel is launched). Two ranks share the one GPU: each sets
its own NCCL_HOSTID, so NCCL takes them for two hosts (no duplicate-GPU refusal) and joins
them over its socket transport. Rank 0 samples NVML once a second and prints one JSON line;
halfway through it writes nvidia-smi's own table to SPIN_SMI; the sampler ends the job. Run
by spin.sh with SPIN_MODE=kernel or host.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

import pynvml
import torch
import torch.distributed as dist

SAMPLES = 12


def sample(mode: str, started: float) -> None:
    """Rank 0's sampler: NVML's utilisation once a second, then the job ends."""
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    time.sleep(2.0)  # the wait has begun: the kernel is queued, or the store call blocks
    utils = []
    for i in range(SAMPLES):
        utils.append(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)
        if i == SAMPLES // 2 and os.environ.get("SPIN_SMI"):
            with Path(os.environ["SPIN_SMI"]).open("w") as table:
                subprocess.run(["nvidia-smi"], stdout=table, stderr=subprocess.STDOUT, check=False)
        time.sleep(1.0)
    print(
        json.dumps(
            {
                "mode": mode,
                "gpu_util_percent": utils,
                "seconds_waiting": round(time.monotonic() - started, 1),
                "nccl": ".".join(map(str, torch.cuda.nccl.version())),
            }
        ),
        flush=True,
    )
    os._exit(0)


def main() -> None:
    mode = os.environ["SPIN_MODE"]
    rank = int(os.environ["RANK"])
    os.environ["NCCL_HOSTID"] = f"spin-host-{rank}"
    torch.cuda.set_device(0)
    dist.init_process_group(
        "nccl", device_id=torch.device("cuda", 0), timeout=timedelta(seconds=120)
    )
    data = torch.ones(1 << 20, device="cuda")
    dist.all_reduce(data)  # both ranks connected: the transport works
    torch.cuda.synchronize()
    print(f"rank {rank} first all_reduce {data[0].item()}", flush=True)
    store = dist.distributed_c10d._get_default_store()
    if rank == 1:
        time.sleep(60)  # never joins rank 0's wait; rank 0's sampler ends the job first
        sys.exit(0)
    threading.Thread(target=sample, args=(mode, time.monotonic()), daemon=True).start()
    if mode == "kernel":
        dist.all_reduce(data)  # rank 1 never calls it: the kernel polls for its data
        torch.cuda.synchronize()
    else:
        store.wait(["never-set"], timedelta(seconds=60))  # a host-side wait, no kernel


if __name__ == "__main__":
    main()
