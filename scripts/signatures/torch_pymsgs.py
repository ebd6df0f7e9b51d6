"""PyTorch's Python messages (torch.distributed, torch.multiprocessing, torch.cuda, DDP): the
table ``mine_torch.py`` reads. See :mod:`torch_entries` for the fields.

``Py`` finds a message by a regex over the strings of one file at each release;
``Exc`` an exception class that PyTorch raises without a message (the traceback's
last line is its name alone). ``SIGNALS`` splits a message that names the signal a
process died of into one entry per signal: the signal is the mechanism (SIGKILL the
OOM killer or a scheduler, SIGSEGV a native crash, SIGBUS a mapped file gone, SIGABRT
an abort), so each gets the class the differential gives that signal.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch_entries import Py

EP = "torch/distributed/elastic/"
C10D_PY = "torch/distributed/distributed_c10d.py"
DDP_PY = "torch/nn/parallel/distributed.py"
CUDA_PY = "torch/cuda/__init__.py"
SPAWN = "torch/multiprocessing/spawn.py"
CRASH = ("launch.rank_crash",)
VISIBILITY = ("cuda.device_visibility",)


@dataclass(frozen=True)
class Exc:
    id: str
    file: str
    name: str
    symptom: str
    hints: tuple[str, ...] = ()
    note: str = ""


PY: tuple[Py, ...] = (
    # --- torchrun / the elastic agent
    Py("torch.elastic.worker_failed", EP + "multiprocessing/api.py",
       r"^failed \(exitcode: %s\) local_rank: %s \(pid: %s\) of binary", "failure", CRASH),
    Py("torch.elastic.worker_failed_fn", EP + "multiprocessing/api.py",
       r"^failed \(exitcode: %s\) local_rank: %s \(pid: %s\) of fn", "failure", CRASH),
    Py("torch.elastic.signal_exception", EP + "multiprocessing/api.py", r"got signal: ", "killed",
       ("launch.rank_crash", "host.resources")),
    Py("torch.elastic.closing_signal", EP + "multiprocessing/api.py", r"^Sending process %s closing signal",
       "info", CRASH),
    Py("torch.elastic.death_signal", EP + "agent/server/api.py", r"death signal, shutting down workers",
       "killed", CRASH),
    Py("torch.elastic.restart_group", EP + "agent/server/api.py", r"attempts left; will restart worker group",
       "failure", CRASH),
    Py("torch.elastic.exit_barrier_error", EP + "agent/server/api.py", r"^Error waiting on exit barrier",
       "store_timeout", ("launch.rendezvous",)),
    Py("torch.elastic.rendezvous_complete", EP + "agent/server/api.py", r"Rendezvous complete for workers",
       "info"),
    Py("torch.elastic.child_failed_root_cause", EP + "multiprocessing/errors/__init__.py",
       r"Root Cause \(first observed failure\)", "failure", CRASH),
    Py("torch.elastic.child_failed_exitcode", EP + "multiprocessing/errors/__init__.py",
       r"^  exitcode  : ", "failure", CRASH),
    Py("torch.elastic.child_failed_rank", EP + "multiprocessing/errors/__init__.py",
       r"^  rank      : ", "failure", CRASH),
    Py("torch.elastic.child_failed_signal", EP + "multiprocessing/errors/__init__.py",
       r"^Signal \{.*received by PID", "killed", ("launch.rank_crash", "host.resources")),
    Py("torch.elastic.rdzv_store_connection_failed", EP + "rendezvous/c10d_rendezvous_backend.py",
       r"The connection to the C10d store has failed", "store_timeout",
       ("net.unreachable", "launch.rendezvous")),
    Py("torch.elastic.rdzv_state_corrupt", EP + "rendezvous/dynamic_rendezvous.py",
       r"The rendezvous state is corrupt", "store_timeout", ("launch.duplicate_launch",)),
    Py("torch.elastic.members_join_timeout", EP + "utils/distributed.py",
       r"timed out waiting for all .* members to join", "store_timeout", ("launch.rendezvous",)),
    Py("torch.elastic.store_create", EP + "utils/distributed.py", r"^Creating c10d store on", "info"),
    Py("torch.c10d.store_barrier_timeout", C10D_PY,
       r"Timed out initializing process group in store based barrier", "store_timeout",
       ("launch.rendezvous", "launch.duplicate_launch")),
    Py("torch.c10d.store_barrier_done", C10D_PY, r"Completed store-based barrier for key", "info"),
    Py("torch.c10d.no_nccl_built", C10D_PY, r"Distributed package doesn't have NCCL built in",
       "library_missing", VISIBILITY),
)  # fmt: skip

#: messages naming the signal a process died of: (id, file, anchor, placeholder of the signal name)
SIGNALS: tuple[tuple[str, str, str, str], ...] = ()

EXC: tuple[Exc, ...] = ()
