"""Copy the job's stdout and stderr to the terminal and to ``console.log``, losing nothing.

Each stream is read in binary chunks from its own pipe and written, unbuffered,
first to ``console.log`` (both streams, line by line in the order they
arrived) and then to the wrapper's own stdout or stderr, so the job's stderr
stays on stderr and each stream keeps its order. A log that cannot be written (a full
disk) is said once on stderr and the copying to the terminal goes on; a
terminal that goes away leaves the log complete.
"""

from __future__ import annotations

import os
import selectors
import time
from typing import BinaryIO, TextIO

_CHUNK = 1 << 16
#: An unfinished line held back from console.log: at most this many bytes ...
PARTIAL_MAX = 1 << 16
#: ... for at most this long.
PARTIAL_S = 0.2


class ConsoleLog:
    """``console.log``: every byte read from the job, until the disk refuses one.

    Both streams go to the one file whole line by whole line, so a line of
    stdout is never cut by a line of stderr: a stream's unfinished last line
    waits (in memory, at most :data:`PARTIAL_MAX` bytes and :data:`PARTIAL_S`
    seconds) until its newline, its stream's end, or :meth:`flush`.
    """

    def __init__(self, fd: int, path: str, err: TextIO) -> None:
        self.fd, self.path, self.err = fd, path, err
        self.bytes = self.lines = self.unsaved = 0
        self.error: str | None = None
        self.partial: dict[int, tuple[bytes, float]] = {}

    def write(self, data: bytes, stream: int = 0) -> None:
        """Append ``data`` of ``stream``: its whole lines now, the rest when it ends."""
        held, since = self.partial.pop(stream, (b"", time.monotonic()))
        data = held + data
        cut = data.rfind(b"\n") + 1
        if cut < len(data) and len(data) - cut < PARTIAL_MAX:
            self.partial[stream] = (data[cut:], since if held else time.monotonic())
            data = data[:cut]
        self._append(data)

    def flush(self, stream: int | None = None, *, stale_only: bool = False) -> None:
        """Write the unfinished lines held back (of ``stream``; older than PARTIAL_S)."""
        now = time.monotonic()
        for key, (held, since) in list(self.partial.items()):
            if stream in (None, key) and (not stale_only or now - since >= PARTIAL_S):
                del self.partial[key]
                self._append(held)

    def _append(self, data: bytes) -> None:
        if not data:
            return
        if self.error is None:
            view = memoryview(data)
            try:
                while view:
                    n = os.write(self.fd, view)
                    self.bytes += n
                    self.lines += view[:n].tobytes().count(b"\n")
                    view = view[n:]
            except OSError as exc:
                self.error = exc.strerror or str(exc)
                note(
                    self.err,
                    f"cannot write {self.path} ({self.error}); the job's output still "
                    "shows here but is no longer saved",
                )
            data = view.tobytes()
        self.unsaved += len(data)


def note(err: TextIO, text: str) -> None:
    """One line of the wrapper's own on stderr (a stderr that is gone is not an error)."""
    try:
        err.write(f"nccl-doctor run: {text}\n")
        err.flush()
    except (OSError, ValueError):
        pass


class Tee:
    """The job's pipes, each copied to the log and to its terminal stream."""

    def __init__(self, pipes: dict[int, BinaryIO | None], log: ConsoleLog) -> None:
        self.log = log
        self.out: dict[int, BinaryIO | None] = dict(pipes)
        self.selector = selectors.DefaultSelector()
        for fd in pipes:
            os.set_blocking(fd, False)
            self.selector.register(fd, selectors.EVENT_READ)
        self.last_data = time.monotonic()

    @property
    def open(self) -> bool:
        """Whether a pipe is still open (no EOF yet)."""
        return bool(self.selector.get_map())

    def pump(self, timeout_s: float) -> bool:
        """Copy what arrives within ``timeout_s``; whether anything did."""
        got = False
        for key, _ in self.selector.select(timeout_s):
            try:
                data = os.read(key.fd, _CHUNK)
            except BlockingIOError:
                continue
            if not data:
                self.selector.unregister(key.fd)
                self.log.flush(key.fd)
                continue
            got = True
            self.log.write(data, key.fd)
            self._show(key.fd, data)
        if got:
            self.last_data = time.monotonic()
        self.log.flush(stale_only=True)
        return got

    def _show(self, fd: int, data: bytes) -> None:
        terminal = self.out.get(fd)
        if terminal is None:
            return
        try:
            terminal.write(data)
            terminal.flush()
        except (OSError, ValueError):
            self.out[fd] = None  # the terminal went away; the log keeps everything

    def drain(self, budget_s: float = 1.0) -> None:
        """Copy what is already in the pipes (bounded: a writer may still be going)."""
        end = time.monotonic() + budget_s
        while self.open and time.monotonic() < end and self.pump(0):
            pass

    def close(self) -> None:
        """Stop watching the pipes (the caller closes them); the log gets what was held."""
        self.log.flush()
        self.selector.close()
