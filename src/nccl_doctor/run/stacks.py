"""Python stacks of every job process, taken from outside while the job runs.

The wrapper gives the job a private folder with a ``sitecustomize.py``
(:mod:`nccl_doctor.run.stackhook`) at the front of ``PYTHONPATH``: each
Python process of the job registers a faulthandler dump on one real-time
signal and writes a header (pid, start time, rank) into its own file there.
:meth:`StackHook.dump` then, per registered process:

* ``gone`` when it has exited (its pid is gone or was reused);
* with ``py-spy dump`` when py-spy is on PATH and may attach (ptrace);
* otherwise sends the signal, but only when ``/proc/PID/status`` shows the
  signal is caught (a process that replaced its image, or that never had
  the hook, is never sent a signal whose default action would end it), and
  reads what faulthandler appended;
* ``silent`` when neither gave a stack in time.

Each result becomes ``stacks.rank<R>.<host>.<pid>.txt`` in the capture
folder, with a header line the ``py-stacks`` parser reads.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from nccl_doctor.evidence.live import run_command
from nccl_doctor.run import stackhook

#: The signal the hook registers (see :mod:`nccl_doctor.run.stackhook`).
SIGNAL = int(signal.SIGRTMIN) + stackhook.SIGNAL_OFFSET
#: How long to wait for all faulthandler dumps of one capture.
DUMP_WAIT_S = 5.0
#: Deadline of one ``py-spy dump``.
PYSPY_TIMEOUT_S = 10.0
_HEADER = "# nccl-doctor stacks:"


@dataclass(frozen=True, slots=True)
class Registered:
    """One job process that loaded the hook."""

    pid: int
    start: str
    host: str
    rank: str
    local_rank: str
    world_size: str
    path: Path


@dataclass(frozen=True, slots=True)
class Dumped:
    """What one capture got from one process."""

    proc: Registered
    state: str
    tool: str
    file: Path


class StackHook:
    """The hook folder of one run: created at start, removed at the end."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="nccl-doctor-hook-"))
        source = Path(stackhook.__file__).read_text(encoding="utf-8")
        (self.dir / "sitecustomize.py").write_text(source, encoding="utf-8")

    def env(self, base: dict[str, str]) -> dict[str, str]:
        """The variables the job needs: the folder, and ``PYTHONPATH`` with it in front."""
        path = base.get("PYTHONPATH", "")
        return {
            stackhook.ENV_DIR: str(self.dir),
            "PYTHONPATH": str(self.dir) + (os.pathsep + path if path else ""),
        }

    def registered(self) -> list[Registered]:
        """Every process that registered, in pid order."""
        out = []
        for path in sorted(self.dir.glob("*.stacks")):
            try:
                with path.open("r", encoding="utf-8", errors="replace") as handle:
                    head = handle.readline(4096)
            except OSError:
                continue
            if not head.startswith(_HEADER):
                continue
            fields = dict(f.split("=", 1) for f in head[len(_HEADER) :].split() if "=" in f)
            if not fields.get("pid", "").isdigit():
                continue
            out.append(
                Registered(
                    int(fields["pid"]),
                    fields.get("start", "?"),
                    fields.get("host", socket.gethostname()),
                    fields.get("rank", ""),
                    fields.get("local_rank", ""),
                    fields.get("world_size", ""),
                    path,
                )
            )
        return sorted(out, key=lambda r: r.pid)

    def dump(self, into: Path, capture: int, stalled_s: float) -> list[Dumped]:
        """Stacks of every registered process into ``into``; never raises for one process."""
        procs = self.registered()
        results: dict[int, tuple[str, str, bytes]] = {}
        pending: dict[int, tuple[Registered, int]] = {}
        spy = shutil.which("py-spy")
        for proc in procs:
            if not _alive(proc):
                results[proc.pid] = ("gone", "faulthandler", b"")
                continue
            if spy is not None:
                out = run_command([spy, "dump", "--pid", str(proc.pid)], PYSPY_TIMEOUT_S)
                if out.ok and out.text.strip():
                    results[proc.pid] = ("dumped", "py-spy", out.text.encode())
                    continue
            if not _catches(proc.pid, SIGNAL):
                results[proc.pid] = ("silent", "faulthandler", b"")
                continue
            size = _size(proc.path)
            try:
                os.kill(proc.pid, SIGNAL)
            except OSError:
                results[proc.pid] = ("gone", "faulthandler", b"")
                continue
            pending[proc.pid] = (proc, size)
        results.update(_collect(pending))
        into.mkdir(parents=True, exist_ok=True)
        written = []
        for proc in procs:
            state, tool, data = results[proc.pid]
            name = f"stacks.rank{proc.rank}." if proc.rank.isdigit() else "stacks."
            path = into / f"{name}{_safe(proc.host)}.{proc.pid}.txt"
            header = (
                f"{_HEADER} capture={capture} state={state} tool={tool} pid={proc.pid} "
                f"rank={proc.rank} local_rank={proc.local_rank} world_size={proc.world_size} "
                f"host={_safe(proc.host)} stalled_s={stalled_s:.0f}\n"
            )
            with contextlib.suppress(OSError):
                path.write_bytes(header.encode() + data)
                written.append(Dumped(proc, state, tool, path))
        return written

    def close(self) -> None:
        """Remove the folder (the job has ended)."""
        shutil.rmtree(self.dir, ignore_errors=True)


def _collect(pending: dict[int, tuple[Registered, int]]) -> dict[int, tuple[str, str, bytes]]:
    """Wait (bounded) until each signalled process's file stopped growing; read what it added."""
    out: dict[int, tuple[str, str, bytes]] = {}
    seen: dict[int, tuple[int, float]] = {}
    end = time.monotonic() + DUMP_WAIT_S
    while pending and time.monotonic() < end:
        time.sleep(0.05)
        now = time.monotonic()
        for pid, (proc, start) in list(pending.items()):
            size = _size(proc.path)
            last = seen.get(pid)
            if size > start and last is not None and last[0] == size and now - last[1] >= 0.2:
                out[pid] = ("dumped", "faulthandler", _read(proc.path, start, size))
                del pending[pid]
            elif last is None or last[0] != size:
                seen[pid] = (size, now)
    for pid, (proc, start) in pending.items():
        size = _size(proc.path)
        state = "dumped" if size > start else "silent"
        out[pid] = (state, "faulthandler", _read(proc.path, start, size) if size > start else b"")
    return out


def _read(path: Path, start: int, end: int) -> bytes:
    try:
        with path.open("rb") as handle:
            handle.seek(start)
            return handle.read(min(end - start, 4 << 20))
    except OSError:
        return b""


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in text)[:64] or "host"


def _alive(proc: Registered) -> bool:
    """Whether the registered process still runs (same pid, same start time, not a zombie)."""
    try:
        raw = Path(f"/proc/{proc.pid}/stat").read_bytes().decode("ascii", "replace")
    except OSError:
        return False
    fields = raw.rpartition(")")[2].split()
    if len(fields) < 20 or fields[0] in ("Z", "X"):
        return False
    return proc.start in ("?", fields[19])


def _catches(pid: int, signum: int) -> bool:
    """Whether ``pid`` has a handler for ``signum`` (``SigCgt`` of /proc/PID/status)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text(encoding="ascii", errors="replace")
    except OSError:
        return False
    for line in text.splitlines():
        if line.startswith("SigCgt:"):
            try:
                return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
            except (IndexError, ValueError):
                return False
    return False
