"""A small gloo job that fails on purpose, one mechanism per scenario.

Launched by tests/zoo/cpu/scenarios.py the way users launch (torchrun);
the scenario comes from ZOO_SCENARIO. Runs on the CPU.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

SCENARIO = os.environ["ZOO_SCENARIO"]
TIMEOUT = dt.timedelta(seconds=float(os.environ.get("ZOO_TIMEOUT_S", "20")))


def _train(rank: int) -> None:
    model = nn.Linear(8, 8)
    if SCENARIO == "param_mismatch" and rank == 1:
        model = nn.Linear(8, 9)
    ddp = DistributedDataParallel(model)
    for step in range(3):
        x = torch.randn(4, 8)
        ddp(x).sum().backward()
        if SCENARIO == "rank_raises" and rank == 1 and step == 1:
            raise ValueError(f"rank {rank}: bad batch at step {step}")
        if SCENARIO == "sigsegv" and rank == 1 and step == 1:
            os.kill(os.getpid(), signal.SIGSEGV)
        if SCENARIO == "sigkill" and rank == 1 and step == 1:
            os.kill(os.getpid(), signal.SIGKILL)


def _hold_until_all_failed(rank: int) -> None:
    """Keep a failed rank alive until every rank has reported its error, then let it out.

    Without it, the launcher could stop the slower rank before it printed
    where it was (it stops the others once one exits).
    """
    sync = Path(os.environ["ZOO_SYNC_DIR"])
    (sync / f"failed.{rank}").touch()
    world = dist.get_world_size()
    deadline = time.monotonic() + 3 * TIMEOUT.total_seconds() + 30
    while len(list(sync.glob("failed.*"))) < world and time.monotonic() < deadline:
        time.sleep(0.1)


def _collectives(rank: int) -> None:
    t = torch.ones(16) * (rank + 1)
    if SCENARIO == "collective_mismatch":
        try:
            if rank == 1:
                dist.broadcast(torch.ones(32), src=0)
            else:
                dist.all_reduce(t)
        except Exception:
            _hold_until_all_failed(rank)
            raise
    elif SCENARIO == "stall":
        if rank == 1:
            time.sleep(TIMEOUT.total_seconds() * 3)
        dist.all_reduce(t)
    elif SCENARIO == "monitored_barrier":
        if rank == 2:
            time.sleep(TIMEOUT.total_seconds() * 3)
        dist.monitored_barrier(timeout=TIMEOUT, wait_all_ranks=True)
    else:
        dist.all_reduce(t)


def _many_files() -> None:
    held = [Path(os.devnull).open() for _ in range(4096)]  # noqa: SIM115 -- held on purpose
    del held


def _spawned(local: int, nprocs: int) -> None:
    """A worker of mp.spawn inside a torchrun worker: tutorials' rank arithmetic."""
    rank = int(os.environ.get("NODE_RANK", "0")) * nprocs + local
    # start all four processes' init together, so the two sets of ranks 0 and 1
    # meet in the store (a late set would find the first one already connected)
    time.sleep(3 - time.time() % 3)
    dist.init_process_group("gloo", rank=rank, world_size=nprocs, timeout=TIMEOUT)
    t = torch.ones(4) * rank
    dist.all_reduce(t)
    dist.destroy_process_group()


def main() -> None:
    if SCENARIO == "nested_spawn":
        # the launcher inside a launcher: torchrun starts 2 workers, each spawns 2 more
        torch.multiprocessing.spawn(_spawned, args=(2,), nprocs=2)
        return
    rank = int(os.environ.get("RANK", "0"))
    if SCENARIO == "too_many_files":
        _many_files()
    timeout = TIMEOUT
    if SCENARIO == "collective_mismatch" and rank == 0:
        # Deterministic order: rank 1 (in broadcast) always gives up first and gloo
        # closes its connections, so rank 0 (in all_reduce) sees "Connection closed by
        # peer". With equal timeouts, which rank times out first (and which sees the
        # other go) depends on scheduling; the both-timed-out form is kept as a case
        # (tests/cases/app/collective_mismatch/gloo_broadcast_vs_allreduce_timeout).
        timeout = TIMEOUT * 6
    if SCENARIO == "monitored_barrier" and rank != 0:
        # The root (rank 0) gives up on rank 2 first, by design: the others wait for its
        # answer under the group's timeout (gloo's recv), and with equal timeouts rank 1 could
        # give up and exit first on a busy machine; they now see the root go instead.
        timeout = TIMEOUT * 3
    dist.init_process_group("gloo", timeout=timeout)
    if SCENARIO in ("collective_mismatch", "stall", "monitored_barrier"):
        _collectives(rank)
    else:
        _train(rank)
        dist.barrier()
    time.sleep(float(os.environ.get("ZOO_HOLD_S", "0")))
    print(f"rank {rank} done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
    sys.exit(0)
