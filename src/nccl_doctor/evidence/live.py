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
import shutil
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

#: The default deadline of one live read, in seconds.
DEFAULT_TIMEOUT_S = 5.0
#: The most bytes one read keeps (kernel logs of busy hosts are large).
MAX_BYTES = 4 * 1024 * 1024


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
    return data[:MAX_BYTES].decode("utf-8", errors="replace")


def run_command(
    argv: Sequence[str],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    *,
    env: Mapping[str, str] | None = None,
    what: str | None = None,
) -> Outcome:
    """Run ``argv`` (never through a shell) and return its outcome; kills it at the deadline."""
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
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        with suppress(subprocess.TimeoutExpired, OSError):
            proc.communicate(timeout=1.0)  # one stuck in the kernel is abandoned
        return Outcome(
            name,
            "timeout",
            message=f"did not answer within {timeout_s:g} s",
            elapsed_s=time.monotonic() - start,
        )
    elapsed = time.monotonic() - start
    text, errors = _decode(out), _decode(err).strip()
    if proc.returncode != 0:
        status = "denied" if "ermission" in errors or "not permitted" in errors else "failed"
        message = errors.splitlines()[-1] if errors else f"exit status {proc.returncode}"
        return Outcome(name, status, text, message, elapsed, proc.returncode)
    return Outcome(name, "ok", text, "", elapsed, 0)


def _read_bytes(path: Path, box: list[bytes | BaseException]) -> None:
    try:
        with path.open("rb") as handle:
            box.append(handle.read(MAX_BYTES))
    except BaseException as exc:  # noqa: BLE001 -- handed to the waiting thread
        box.append(exc)


def read_file(path: str | Path, timeout_s: float = DEFAULT_TIMEOUT_S) -> Outcome:
    """Read a (sysfs, /proc) file in a helper thread; a read that hangs is abandoned."""
    path = Path(path)
    start = time.monotonic()
    box: list[bytes | BaseException] = []
    worker = threading.Thread(target=_read_bytes, args=(path, box), daemon=True)
    worker.start()
    worker.join(timeout_s)
    elapsed = time.monotonic() - start
    if not box:
        return Outcome(
            str(path),
            "timeout",
            message=f"did not answer within {timeout_s:g} s",
            elapsed_s=elapsed,
        )
    got = box[0]
    if isinstance(got, FileNotFoundError | NotADirectoryError):
        return Outcome(str(path), "missing", message="no such file", elapsed_s=elapsed)
    if isinstance(got, PermissionError):
        return Outcome(str(path), "denied", message="permission denied", elapsed_s=elapsed)
    if isinstance(got, BaseException):
        return Outcome(str(path), "failed", message=str(got), elapsed_s=elapsed)
    return Outcome(str(path), "ok", _decode(got), elapsed_s=elapsed)


def read_kmsg(timeout_s: float = DEFAULT_TIMEOUT_S) -> Outcome:
    """The kernel ring buffer from ``/dev/kmsg``, read without blocking."""
    start = time.monotonic()
    chunks: list[bytes] = []
    try:
        fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return Outcome("/dev/kmsg", "missing", message="no such file")
    except PermissionError:
        return Outcome("/dev/kmsg", "denied", message="permission denied")
    except OSError as exc:
        return Outcome("/dev/kmsg", "failed", message=str(exc))
    try:
        size = 0
        while time.monotonic() - start < timeout_s and size < MAX_BYTES:
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
            chunks.append(record)
            size += len(record)
    finally:
        os.close(fd)
    return Outcome("/dev/kmsg", "ok", _decode(b"".join(chunks)), elapsed_s=time.monotonic() - start)
