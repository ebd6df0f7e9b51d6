"""What a job leaves running after its main process exits, found and ended.

A job's main process can exit while processes it started live on: in its
process group (a shell's background job, a data-loader worker), or escaped
into a session of their own with ``setsid`` (a daemonising helper) and
reparented away from the job. While the job runs, the wrapper is a *child
subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``, Linux 3.4+): an orphan of the
job is reparented to the wrapper instead of init, so every survivor stays a
descendant of the wrapper. After the main process exits, :func:`leftovers`
lists the job's process group and the wrapper's descendants started since the
job, and :func:`end` sends them SIGTERM, then SIGKILL after the grace, and
reaps them. Without a subreaper (another OS, a refused prctl) the process
group is still ended.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
_PROC = Path("/proc")


def set_subreaper(on: bool) -> bool:
    """Make this process a child subreaper (or stop); whether the kernel agreed."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


@dataclass(frozen=True, slots=True)
class Proc:
    """One line of /proc/PID/stat: the fields that place a process in the job."""

    pid: int
    ppid: int
    pgrp: int
    state: str
    start_ticks: int


def _stat(pid: int) -> Proc | None:
    try:
        raw = (_PROC / str(pid) / "stat").read_bytes().decode("ascii", "replace")
    except OSError:
        return None
    fields = raw.rpartition(")")[2].split()  # the name may hold spaces and ')'
    try:
        return Proc(pid, int(fields[1]), int(fields[2]), fields[0], int(fields[19]))
    except (IndexError, ValueError):
        return None


def start_ticks(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot (``None`` when gone or not Linux)."""
    found = _stat(pid)
    return found.start_ticks if found else None


def _table() -> list[Proc]:
    try:
        names = [entry.name for entry in _PROC.iterdir()]
    except OSError:
        return []
    return [p for p in (_stat(int(n)) for n in names if n.isdigit()) if p is not None]


def leftovers(job_pid: int, since_ticks: int | None) -> list[int]:
    """Live processes of the job's group, and the wrapper's descendants born since the job."""
    me = os.getpid()
    table = [p for p in _table() if p.pid not in (me, job_pid)]
    found = {p.pid for p in table if p.pgrp == job_pid and p.state != "Z"}
    if since_ticks is not None:
        found |= {
            p.pid
            for p in table
            if p.ppid in (me, job_pid) and p.start_ticks >= since_ticks and p.state != "Z"
        }
    children: dict[int, list[int]] = {}
    for p in table:
        if p.state != "Z":
            children.setdefault(p.ppid, []).append(p.pid)
    todo = list(found)
    while todo:
        for kid in children.get(todo.pop(), ()):
            if kid not in found:
                found.add(kid)
                todo.append(kid)
    return sorted(found)


def reap_orphans(since_ticks: int | None, job_pid: int) -> None:
    """Collect adopted orphans of the job that already exited (zombies of this process)."""
    if since_ticks is None:
        return
    me = os.getpid()
    _reap(
        [
            p.pid
            for p in _table()
            if p.ppid == me and p.pid != job_pid and p.state == "Z" and p.start_ticks >= since_ticks
        ]
    )


def _signal(pids: list[int], group: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, sig)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _reap(pids: list[int]) -> None:
    """Collect the exit of those that are this process's children (orphans it adopted)."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


def _alive(pid: int) -> bool:
    found = _stat(pid)
    return found is not None and found.state not in ("Z", "X")


@dataclass(slots=True)
class Ended:
    """What :func:`end` did: the processes sent SIGTERM, and those that needed SIGKILL."""

    terminated: list[int]
    killed: list[int]


def end(
    job_pid: int,
    since_ticks: int | None,
    grace_s: float,
    *,
    tick: Callable[[], object] = lambda: None,
) -> Ended:
    """SIGTERM what the job left running, SIGKILL it after ``grace_s``, reap it.

    ``tick`` runs while waiting (the caller keeps copying the job's output).
    """
    reap_orphans(since_ticks, job_pid)
    pids = leftovers(job_pid, since_ticks)
    if not pids:
        return Ended([], [])
    _signal(pids, job_pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while True:
        _reap(pids)
        alive = [p for p in pids if _alive(p)]
        late = leftovers(job_pid, since_ticks)  # started while being stopped
        if not alive and not late:
            reap_orphans(since_ticks, job_pid)
            return Ended(pids, [])
        if time.monotonic() >= deadline:
            break
        tick()
        time.sleep(0.05)
    killed = sorted(set(alive) | set(late))
    _signal(killed, job_pid, signal.SIGKILL)
    for _ in range(40):  # SIGKILL is not instant; wait briefly so the pipes close
        _reap(killed)
        if not any(_alive(p) for p in killed):
            break
        time.sleep(0.05)
    reap_orphans(since_ticks, job_pid)
    return Ended(sorted(set(pids) | set(late)), killed)
