"""The ``sitecustomize`` that ``nccl-doctor run`` puts in front of the job's Python path.

This file is copied, as ``sitecustomize.py``, into a private folder that the
wrapper prepends to the job's ``PYTHONPATH``; it is never imported by
nccl-doctor itself. It runs in every Python process of the job that reads
``PYTHONPATH`` (not under ``python -I`` or ``-S``), before the user's code,
and does three things, all with the standard library only (the job's
interpreter may be any Python >= 3.8 and need not have nccl-doctor):

1. registers :func:`faulthandler.register` on one real-time signal with
   ``all_threads=True``, writing to ``<dir>/<pid>.stacks`` in that folder. The
   dump is done by the C signal handler: it works while the main thread is
   blocked in C (a collective, a CUDA sync) or holds the GIL. Nothing runs
   until the wrapper sends the signal;
2. writes one header line in that file (pid, start time, host, rank,
   local rank, world size) so the wrapper signals only processes that
   registered, and knows which rank each one is;
3. imports the user's own ``sitecustomize`` (the next one on ``sys.path``),
   so that one still runs, and takes its folder off ``sys.path`` again.

The folder is named by ``NCCL_DOCTOR_HOOK_DIR``; a process on another node,
where that folder does not exist, does nothing. Any error is swallowed: the
hook must never stop the job.
"""

import os
import sys

#: The signal the wrapper sends for a stack dump: SIGRTMIN+6, a real-time
#: signal no common library uses (SIGUSR1/2 are often taken by the job).
SIGNAL_OFFSET = 6
ENV_DIR = "NCCL_DOCTOR_HOOK_DIR"
#: Kept alive for the life of the process (faulthandler writes to its fd).
_FILE: list = []  # type: ignore[type-arg]


def _start_ticks() -> str:
    try:
        with open("/proc/self/stat", "rb") as handle:
            raw = handle.read().decode("ascii", "replace")
        return raw.rpartition(")")[2].split()[19]
    except (OSError, IndexError):
        return "?"


def _register(folder: str) -> None:
    import faulthandler
    import signal
    import socket

    signum = int(signal.SIGRTMIN) + SIGNAL_OFFSET
    path = os.path.join(folder, "%d.stacks" % os.getpid())
    handle = open(path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 -- kept open
    fields = {
        "pid": str(os.getpid()),
        "start": _start_ticks(),
        "host": socket.gethostname(),
        "rank": os.environ.get("RANK", ""),
        "local_rank": os.environ.get("LOCAL_RANK", ""),
        "world_size": os.environ.get("WORLD_SIZE", ""),
        "signal": str(signum),
    }
    handle.write("# nccl-doctor stacks: " + " ".join("%s=%s" % kv for kv in fields.items()) + "\n")
    faulthandler.register(signum, file=handle, all_threads=True, chain=False)
    _FILE.append(handle)


def _chain(here: str) -> None:
    """Run the next ``sitecustomize`` on the path, as if this one were not there."""
    import importlib.machinery
    import importlib.util

    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", sys.path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


def _main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    folder = os.environ.get(ENV_DIR, "")
    if folder and os.path.isdir(folder) and sys.platform.startswith("linux"):
        try:
            _register(folder)
        except Exception:  # noqa: BLE001 -- the hook must never stop the job
            _FILE.append(None)
    _chain(here)  # the user's own sitecustomize: its errors are the user's, as without us


if __name__ == "sitecustomize":  # only as the job's sitecustomize, never when imported by name
    _main()
