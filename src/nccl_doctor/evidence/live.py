"""The one runner of live reads: commands and files, each under a deadline.

Every read of the live node (a command such as ``dmesg``, a sysfs or /proc
file) goes through :func:`run_command` or :func:`read_file`. Neither raises
nor hangs: a missing tool, a permission error, a read that does not come back
within its timeout all become a :class:`Outcome` with a plain message. Each
read is also logged in a :class:`ReadLog` (what was read, how long it took,
what failed) that the bundle's MANIFEST.json reports.

This module and :mod:`nccl_doctor.evidence.nvml` are the only homes of
``subprocess``.
"""

from __future__ import annotations

import os
import re
import selectors
import shutil
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

#: The default deadline of one live read, in seconds.
DEFAULT_TIMEOUT_S = 5.0
#: The most bytes one read keeps (kernel logs of busy hosts are large).
MAX_BYTES = 4 * 1024 * 1024
#: The most bytes read from one command's output: past that it is stopped (a flood).
MAX_READ_BYTES = 64 * 1024 * 1024
#: The most bytes kept of a command's stderr (its last lines say why it failed).
MAX_ERR_BYTES = 64 * 1024
#: The longest line kept whole when output is kept by line.
MAX_LINE_BYTES = 64 * 1024
#: How long a command's pipes may stay open after it exited (something it started holds them).
LINGER_S = 0.5
_CHUNK = 1 << 16


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one live read gave.

    ``status``: ``ok``, ``missing`` (no such file or command), ``denied``
    (permission), ``timeout`` (did not answer within the deadline), ``failed``
    (a command's non-zero exit or another OS error). ``text`` is what was
    read (stdout for commands), possibly cut to :data:`MAX_BYTES`.
    """

    what: str
    status: str
    text: str = ""
    message: str = ""
    elapsed_s: float = 0.0
    returncode: int | None = None

    @property
    def ok(self) -> bool:
        """Whether the read gave its text."""
        return self.status == "ok"


@dataclass(slots=True)
class ReadLog:
    """Every live read of one capture, in order."""

    entries: list[Outcome] = field(default_factory=list)

    def add(self, outcome: Outcome) -> Outcome:
        """Record ``outcome`` and return it."""
        self.entries.append(outcome)
        return outcome

    def manifest(self) -> list[dict[str, object]]:
        """The reads as MANIFEST.json lists them."""
        return [
            {
                "what": o.what,
                "status": o.status,
                "elapsed_s": round(o.elapsed_s, 4),
                **({"message": o.message} if o.message else {}),
            }
            for o in self.entries
        ]


def _decode(data: bytes) -> str:
    return data[-MAX_BYTES:].decode("utf-8", errors="replace")


def matching_lines(block: bytes, keep: re.Pattern[bytes]) -> bytes:
    """The whole lines of ``block`` that ``keep`` finds something in (linear: no backtracking)."""
    out: list[bytes] = []
    taken = -1
    for m in keep.finditer(block):
        if m.start() < taken:
            continue  # a second hit in a line already kept
        begin = block.rfind(b"\n", 0, m.start()) + 1
        stop = block.find(b"\n", m.end())
        taken = len(block) if stop < 0 else stop + 1
        out.append(block[begin:taken])
    return b"".join(out)


class Kept:
    """What is kept of one output stream: its last ``limit`` bytes, or only the lines ``keep``
    matches (their last ``limit`` bytes), so a flood costs time, never memory."""

    def __init__(self, limit: int, keep: re.Pattern[bytes] | None = None) -> None:
        self.limit, self.keep = limit, keep
        self.chunks: deque[bytes] = deque()
        self.size = 0
        self.partial = b""  # the unfinished last line, when filtering by line

    def add(self, data: bytes) -> None:
        """Take the next bytes of the stream."""
        if self.keep is None:
            self._push(data)
            return
        data = self.partial + data
        end = data.rfind(b"\n") + 1
        self.partial = data[end:][-MAX_LINE_BYTES:]
        if end:
            self._push(matching_lines(data[:end], self.keep))

    def _push(self, data: bytes) -> None:
        if not data:
            return
        self.chunks.append(data)
        self.size += len(data)
        while self.size - len(self.chunks[0]) >= self.limit:
            self.size -= len(self.chunks.popleft())

    def value(self) -> bytes:
        """The kept bytes (a cut first line dropped)."""
        data = b"".join(self.chunks)
        if self.keep is not None and self.partial:
            data += matching_lines(self.partial, self.keep)
        if len(data) > self.limit:
            data = data[-self.limit :]
            data = data[data.find(b"\n") + 1 :] if b"\n" in data else data
        return data


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the command's whole process group (its session: helpers it started too)."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _pump(
    proc: subprocess.Popen[bytes], sinks: dict[int, Kept], deadline: float
) -> tuple[str, int]:
    """Read the pipes into ``sinks`` until EOF, the deadline, a flood, or a leftover holding them.

    Returns why it stopped (``eof``, ``deadline``, ``flood``, ``held``) and the bytes read.
    """
    total = 0
    exited_at: float | None = None
    with selectors.DefaultSelector() as selector:
        for fd in sinks:
            os.set_blocking(fd, False)
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            now = time.monotonic()
            if now >= deadline:
                return "deadline", total
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at >= LINGER_S:
                return "held", total  # the command exited; something it started holds the pipe
            for key, _ in selector.select(min(deadline - now, 0.1)):
                try:
                    data = os.read(key.fd, _CHUNK)
                except BlockingIOError:
                    continue
                if not data:
                    selector.unregister(key.fd)
                    continue
                sinks[key.fd].add(data)
                total += len(data)
                if total >= MAX_READ_BYTES:
                    return "flood", total
    return "eof", total


def run_command(
    argv: Sequence[str],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    *,
    env: Mapping[str, str] | None = None,
    what: str | None = None,
    keep: re.Pattern[bytes] | None = None,
) -> Outcome:
    """Run ``argv`` (never through a shell) and return its outcome.

    The command runs in a session of its own; at the deadline, once it exited
    while something it started still holds its output open, or once it wrote
    :data:`MAX_READ_BYTES`, the whole session is SIGKILLed. Output is read as
    it comes and at most :data:`MAX_BYTES` of it is kept (the last bytes, or
    with ``keep`` only the lines that pattern finds something in).
    """
    name = what or " ".join(argv)
    start = time.monotonic()
    if not argv or shutil.which(argv[0]) is None:
        return Outcome(name, "missing", message=f"{argv[0] if argv else '?'}: command not found")
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env) if env is not None else None,
            start_new_session=True,
        )
    except PermissionError as exc:
        return Outcome(name, "denied", message=str(exc), elapsed_s=time.monotonic() - start)
    except OSError as exc:
        return Outcome(name, "failed", message=str(exc), elapsed_s=time.monotonic() - start)
    if proc.stdout is None or proc.stderr is None:  # pragma: no cover -- PIPE gives both
        raise RuntimeError("the command has no output pipes")
    out, err = Kept(MAX_BYTES, keep), Kept(MAX_ERR_BYTES)
    exited = False
    try:
        why, total = _pump(
            proc, {proc.stdout.fileno(): out, proc.stderr.fileno(): err}, start + timeout_s
        )
        exited = proc.poll() is not None
    finally:
        _kill_group(proc)
        proc.stdout.close()
        proc.stderr.close()
        with suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=1.0)  # one stuck in the kernel is abandoned
    elapsed = time.monotonic() - start
    if why == "deadline" and not exited:
        return Outcome(
            name, "timeout", message=f"did not answer within {timeout_s:g} s", elapsed_s=elapsed
        )
    text, errors = _decode(out.value()), _decode(err.value()).strip()
    if why == "flood":
        note = f"output cut after {total >> 20} MiB; the command was stopped"
        return Outcome(name, "ok", text, note, elapsed, proc.returncode if exited else None)
    if proc.returncode != 0:
        status = "denied" if "ermission" in errors or "not permitted" in errors else "failed"
        message = errors.splitlines()[-1] if errors else f"exit status {proc.returncode}"
        return Outcome(name, status, text, message, elapsed, proc.returncode)
    note = "a process it started held its output open and was stopped" if why == "held" else ""
    return Outcome(name, "ok", text, note, elapsed, 0)


def call(what: str, fn: Callable[[], T], timeout_s: float) -> tuple[Outcome, T | None]:
    """``fn()`` in a helper thread under the deadline (a stat of a stuck mount, a library scan).

    Returns the outcome (``ok``, ``missing``, ``denied``, ``failed``, ``timeout``:
    the thread is abandoned) and ``fn``'s value when it returned in time.
    """
    start = time.monotonic()
    box: list[tuple[T | None, BaseException | None]] = []

    def work() -> None:
        try:
            box.append((fn(), None))
        except BaseException as exc:  # noqa: BLE001 -- handed to the waiting thread
            box.append((None, exc))

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(timeout_s)
    elapsed = time.monotonic() - start
    if not box:
        message = f"did not answer within {timeout_s:g} s"
        return Outcome(what, "timeout", message=message, elapsed_s=elapsed), None
    value, exc = box[0]
    if isinstance(exc, FileNotFoundError | NotADirectoryError):
        return Outcome(what, "missing", message="no such file", elapsed_s=elapsed), None
    if isinstance(exc, PermissionError):
        return Outcome(what, "denied", message="permission denied", elapsed_s=elapsed), None
    if exc is not None:
        return Outcome(what, "failed", message=str(exc), elapsed_s=elapsed), None
    return Outcome(what, "ok", elapsed_s=elapsed), value


def read_file(path: str | Path, timeout_s: float = DEFAULT_TIMEOUT_S) -> Outcome:
    """Read a (sysfs, /proc) file in a helper thread; a read that hangs is abandoned."""
    path = Path(path)

    def read() -> bytes:
        with path.open("rb") as handle:
            return handle.read(MAX_BYTES)

    done, data = call(str(path), read, timeout_s)
    return replace(done, text=_decode(data)) if data is not None else done


def read_kmsg(
    timeout_s: float = DEFAULT_TIMEOUT_S, keep: re.Pattern[bytes] | None = None
) -> Outcome:
    """The kernel ring buffer from ``/dev/kmsg``, read without blocking.

    Like a command's output, at most :data:`MAX_READ_BYTES` are read and at most
    :data:`MAX_BYTES` kept (the last records, or those ``keep`` finds something in).
    """
    start = time.monotonic()
    kept = Kept(MAX_BYTES, keep)
    try:
        fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return Outcome("/dev/kmsg", "missing", message="no such file")
    except PermissionError:
        return Outcome("/dev/kmsg", "denied", message="permission denied")
    except OSError as exc:
        return Outcome("/dev/kmsg", "failed", message=str(exc))
    message = ""
    try:
        size = 0
        while time.monotonic() - start < timeout_s:
            if size >= MAX_READ_BYTES:
                message = f"read only the first {size >> 20} MiB"
                break
            try:
                record = os.read(fd, 8192)
            except BlockingIOError:
                break  # the end of the buffer
            except BrokenPipeError:
                continue  # the ring overwrote records under us: read on
            except PermissionError:
                return Outcome("/dev/kmsg", "denied", message="permission denied")
            except OSError as exc:
                return Outcome("/dev/kmsg", "failed", message=str(exc))
            if not record:
                break
            kept.add(record if record.endswith(b"\n") else record + b"\n")
            size += len(record)
    finally:
        os.close(fd)
    elapsed = time.monotonic() - start
    return Outcome("/dev/kmsg", "ok", _decode(kept.value()), message, elapsed_s=elapsed)
