"""A one-rank NCCL job that sits in a collective long enough for NCCL RAS and the flight recorder.

Run under torchrun on the GPU machine by ras.sh. RAS_SLEEP_S seconds of
``torch.cuda._sleep`` are queued ahead of an all_reduce (group timeout
RAS_TIMEOUT_S, longer than the sleep, so the job ends healthy). While the
collective waits, a side thread dumps the flight recorder both ways torch
offers in process: JSON (``_dump_nccl_trace_json``) and pickle.
"""

from __future__ import annotations

import datetime as dt
import os
import threading
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch._C import _distributed_c10d as c10d

out = Path(os.environ["RAS_OUT"])
local = int(os.environ.get("LOCAL_RANK", "0"))
torch.cuda.set_device(local)
timeout = dt.timedelta(seconds=float(os.environ.get("RAS_TIMEOUT_S", "120")))
dist.init_process_group("nccl", timeout=timeout, device_id=torch.device("cuda", local))
t = torch.ones(1 << 20, device="cuda")
dist.all_reduce(t)
dist.broadcast(t, 0)
torch.cuda.synchronize()


def dump() -> None:
    time.sleep(float(os.environ.get("RAS_DUMP_AFTER_S", "10")))
    js = c10d._dump_nccl_trace_json(includeCollectives=True, onlyActive=False)
    (out / f"fr-{local}.json").write_bytes(js if isinstance(js, bytes) else js.encode())
    (out / f"fr-{local}.pkl").write_bytes(
        c10d._dump_nccl_trace(includeCollectives=True, includeStackTraces=False, onlyActive=False)
    )
    print(f"rank {local} flight recorder dumped", flush=True)


side = threading.Thread(target=dump, daemon=True)
side.start()
print(f"rank {dist.get_rank()} warm-up done; queueing the long kernel", flush=True)
torch.cuda._sleep(int(1.98e9 * float(os.environ.get("RAS_SLEEP_S", "45"))))
dist.all_reduce(t)
torch.cuda.synchronize()
side.join()
print(f"rank {dist.get_rank()} done", flush=True)
dist.destroy_process_group()
