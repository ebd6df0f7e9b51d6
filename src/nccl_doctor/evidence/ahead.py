"""Reads the coming files of a folder in other processes while this one reads the first of them.

A source's read depends on its bytes and on the budgets of the read when it
begins (:meth:`.budgets.Budgets.state`), nothing else. A folder of per-rank
logs spends those budgets in its first files; from then on each file leaves
them as it found them. So once the last files read here spent nothing, the
files still to come (:meth:`.intake.Intake.coming`) are cut into parts, and a
forked process reads each part but the first, in order, from the budgets as
they are now. The read here goes on with the first part; at each file of a
later part it takes the other process's result only when the budgets it has
reached are those that file's read began from and the file is the one that
was read (same inode, size and time of change). Anything else (an archive,
a file another source's budgets differ for, a file changed since, a process
that failed) is read here, as before. The result is always the one reading
in order gives; a wrong guess costs time, never a fact.

Only on Linux (fork), with more than one CPU, with no other thread running,
and for at least :data:`MIN_BYTES` of files still to come.
``NCCL_DOCTOR_READ_PROCESSES`` sets how many processes read (1: this one
only).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nccl_doctor.evidence import archives
from nccl_doctor.evidence.archives import Limits
from nccl_doctor.evidence.budgets import Budgets, Spent
from nccl_doctor.evidence.intake import Intake, Note, Opened
from nccl_doctor.evidence.sections import Section, SourceSummary

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess

#: The setting that says how many processes read (this one included).
PROCESSES_SETTING = "NCCL_DOCTOR_READ_PROCESSES"
#: At most this many processes read.
MAX_PROCESSES = 8
#: Files to come below this many bytes in all are read here (a fork costs more than they do).
MIN_BYTES = 32 << 20
#: The sources read in a row that spent none of the budgets before reading ahead.
STEADY = 2

#: How one source is read: opened, the read's notes and budgets -> its sections and summary.
ReadOne = Callable[[Opened, list[Note], Budgets], tuple[list[Section], SourceSummary]]
#: A file as the file system tells it apart: device, inode, size, time of change.
Identity = tuple[int, int, int, int]


@dataclass(frozen=True, slots=True)
class Done:
    """One file read by another process, and what it needs to stand for a read here."""

    path: str
    identity: Identity
    #: the budgets' state its read began from
    state: tuple[int, ...]
    sections: list[Section]
    summary: SourceSummary
    notes: list[Note]
    spent: Spent
    #: the bytes its stream gave (the path's budget counts them)
    consumed: int


def processes() -> int:
    """How many processes may read: :data:`PROCESSES_SETTING`, else the CPUs this one may use."""
    setting = os.environ.get(PROCESSES_SETTING, "").strip()
    if setting.isdecimal():
        return max(1, min(MAX_PROCESSES, int(setting)))
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(MAX_PROCESSES, cpus))


def _identity(path: str) -> Identity | None:
    try:
        st = os.stat(path)  # noqa: PTH116 -- as the intake's own
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def read_part(paths: Sequence[str], budgets: Budgets, limits: Limits, read: ReadOne) -> list[Done]:
    """Read ``paths`` in order from ``budgets``, each alone as the intake opens it, up to the
    first that is not one plain source read without a note of the intake (what follows it
    depends on how the read in order takes it)."""
    done: list[Done] = []
    for path in paths:
        identity = _identity(path)
        if identity is None:
            break
        intake = Intake(limits)
        streams = intake.streams([path])
        opened = next(streams, None)
        if opened is None or intake.notes:
            break
        state, before, notes = budgets.state(), budgets.copy(), list[Note]()
        sections, summary = read(opened, notes, budgets)
        consumed = archives.counted_bytes(opened.stream)
        if consumed is None or next(streams, None) is not None or intake.notes:
            break
        spent = budgets.spent_since(before)
        done.append(Done(path, identity, state, sections, summary, notes, spent, consumed))
    return done


def _work(
    conn: Connection, paths: list[str], budgets: Budgets, limits: Limits, read: ReadOne
) -> None:
    """A reading process: its part's results, or an empty list when anything went wrong."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # an interrupt ends it without a traceback
    try:
        done = read_part(paths, budgets, limits, read)
    except Exception:  # noqa: BLE001 -- the read here then reads the part itself
        done = []
    with contextlib.suppress(OSError, ValueError):
        conn.send(done)
    conn.close()


class _Part:
    """A forked process reading some of the files to come, and what it gave."""

    def __init__(self, paths: list[str], budgets: Budgets, limits: Limits, read: ReadOne) -> None:
        # imported here: 11 ms a start-up that reads no large folder need not pay
        from multiprocessing import get_context  # noqa: PLC0415

        for stream in (sys.stdout, sys.stderr):  # else the copy would write what they hold
            with contextlib.suppress(OSError, ValueError, AttributeError):
                stream.flush()
        context = get_context("fork")
        self._conn, child = context.Pipe(duplex=False)
        self.process: BaseProcess = context.Process(
            target=_work, args=(child, paths, budgets, limits, read), daemon=True
        )
        self.process.start()
        child.close()
        self._done: dict[str, Done] | None = None

    def result(self, path: str) -> Done | None:
        """What the process read of ``path`` (waiting for it to finish), else ``None``."""
        if self._done is None:
            try:
                got = self._conn.recv()
            except (EOFError, OSError):
                got = []
            self._done = {d.path: d for d in got}
            self.close()
        return self._done.get(path)

    def close(self) -> None:
        """End the process (if still reading) and forget it."""
        self._conn.close()
        if self.process.is_alive():
            self.process.terminate()
        self.process.join()


class Ahead:
    """The files read ahead in other processes for one read (see the module docstring)."""

    def __init__(self, budgets: Budgets, limits: Limits, read: ReadOne) -> None:
        self.budgets = budgets
        self.limits = limits
        self.read = read
        self.processes = processes() if sys.platform == "linux" else 1
        self.steady = 0
        #: each path to come and the part reading it
        self._parts: dict[str, _Part] = {}
        #: the files whose result was taken, and those read here though another process had
        self.taken = self.missed = 0

    def take(self, opened: Opened) -> Done | None:
        """Another process's read of ``opened``, if it stands for a read here now."""
        part = self._parts.pop(opened.name, None)
        if part is None:
            return None
        done = part.result(opened.name)
        if (
            done is None
            or done.state != self.budgets.state()
            or _identity(opened.name) != done.identity
        ):
            self.missed += 1
            return None
        self.taken += 1
        self.budgets.spend(done.spent)
        archives.settle(opened.stream, done.consumed)
        return done

    def read_here(self, spent_nothing: bool, coming: Callable[[], list[str]]) -> None:
        """A source was read here (``spent_nothing``: it left the budgets as they were);
        ``coming``: the paths to come after it. Starts reading ahead when it may."""
        self.steady = self.steady + 1 if spent_nothing else 0
        if self.processes < 2 or self._parts or self.steady < STEADY:
            return
        if threading.active_count() > 1:
            return  # forking a process with threads copies locks held by them
        paths = coming()
        if len(paths) < 2:
            return
        sizes = [(_identity(p) or (0, 0, 0, 0))[2] for p in paths]
        if sum(sizes) < MIN_BYTES:
            return
        # parts of about equal bytes; the first is read here
        share, acc = sum(sizes) / self.processes, 0
        parts: list[list[str]] = [[]]
        for path, size in zip(paths, sizes, strict=True):
            if acc >= share * len(parts) and len(parts) < self.processes:
                parts.append([])
            parts[-1].append(path)
            acc += size
        for later in parts[1:]:
            part = _Part(later, self.budgets.copy(), self.limits, self.read)
            self._parts.update(dict.fromkeys(later, part))

    def close(self) -> None:
        """End every process still reading ahead."""
        for part in set(self._parts.values()):
            part.close()
        self._parts.clear()
