"""A gloo job that hangs on purpose, one way per HANG_SCENARIO; a 10-minute group timeout.

* ``sleep``: rank 1 sleeps in Python before the all_reduce the others wait in;
* ``other``: rank 1 calls broadcast while the others call all_reduce;
* ``dead``: rank 1 exits before joining the group (launched without a
  supervising launcher: a plain ``&``/``wait`` shell), the others wait in
  ``init_process_group``;
* ``crash``: rank 1 raises in Python after the warm-up while the others
  all_reduce (they see the connection to it close);
* ``healthy``: every rank all_reduces for HANG_SECONDS and prints every fifth step.

The group timeout is 10 minutes, or HANG_TIMEOUT_S seconds (a job that is
meant to time out on its own, for the post-mortem captures).

Until a rank reaches the point where it hangs it prints a heartbeat every
second (a real job logs as it starts), so the stall the wrapper sees starts
at the hang itself, however long importing torch takes on a busy machine.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
import threading
import time

SCENARIO = os.environ["HANG_SCENARIO"]
RANK = int(os.environ["RANK"])
TIMEOUT = dt.timedelta(seconds=float(os.environ.get("HANG_TIMEOUT_S", "600")))
_BEATING = threading.Event()


def _heartbeat() -> None:
    while not _BEATING.wait(1.0):
        print(f"rank {RANK} starting", flush=True)


threading.Thread(target=_heartbeat, daemon=True).start()

import torch  # noqa: E402 -- after the heartbeat started: importing torch is slow
import torch.distributed as dist  # noqa: E402


def _hang() -> None:
    t = torch.ones(16)
    _BEATING.set()  # from here on, silence
    if SCENARIO == "sleep":
        if RANK == 1:
            time.sleep(3600)  # the stall: Python work before the collective
        dist.all_reduce(t)
    elif SCENARIO == "other":
        if RANK == 1:
            dist.broadcast(torch.ones(32), src=1)
        else:
            dist.all_reduce(t)
    elif SCENARIO == "crash":
        if RANK == 1:
            time.sleep(2)  # the others are in the all_reduce by now
            raise RuntimeError("rank 1: bad batch (the job's own error)")
        dist.all_reduce(t)


def _healthy() -> None:
    end = time.monotonic() + float(os.environ.get("HANG_SECONDS", "60"))
    x = torch.randn(256, 256)
    step = 0
    while True:
        # the ranks stop together: each rank's own clock would end its loop after a different
        # number of all_reduces on a busy box, and a rank left in one more would see its
        # peer's socket close (a collective mismatch of the test's own making)
        go = torch.tensor([1.0 if time.monotonic() < end else 0.0])
        dist.all_reduce(go, op=dist.ReduceOp.MIN)
        if go.item() == 0.0:
            break
        y = x @ x
        dist.all_reduce(y)
        step += 1
        if step % 5 == 0:  # a line every ~0.3 s: far inside the stall even on a loaded box
            print(f"rank {RANK} step {step}", flush=True)
        time.sleep(0.05)


def main() -> None:
    if SCENARIO == "dead" and RANK == 1:
        print("rank 1 dies before joining the group", flush=True)
        os._exit(3)
    if SCENARIO == "dead":
        _BEATING.set()
    dist.init_process_group("gloo", timeout=TIMEOUT)
    dist.all_reduce(torch.ones(4))  # warm-up: every rank is in the group
    print(f"rank {RANK} ready", flush=True)
    if SCENARIO == "healthy":
        _BEATING.set()
        _healthy()
    else:
        _hang()
    print(f"rank {RANK} done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
    sys.exit(0)
