"""``nccl-doctor run -- CMD``: run a launch command with cheap diagnostics on, keep everything.

The job runs in its own process group with its combined stdout and stderr
on a pipe. The wrapper reads the pipe in binary chunks and writes each chunk
unbuffered to ``console.log`` before copying it to the terminal, so every
byte that reached the wrapper is on disk even when the job is SIGKILLed
mid-line or prints faster than the terminal shows. SIGINT, SIGTERM and
SIGHUP sent to the wrapper are forwarded to the job's group; after a grace
period the group is SIGKILLed. The wrapper returns the job's exit status
(a death by signal N as 128+N, like a shell) and, when it is not 0,
prints the diagnosis of the run folder, which ``nccl-doctor diagnose DIR``
reads the same way later.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, BinaryIO, TextIO

from nccl_doctor import __version__
from nccl_doctor.errors import UsageError
from nccl_doctor.redact import redact
from nccl_doctor.run.setup import (
    child_env,
    command_text,
    default_run_dir,
    env_text,
    launcher_of,
    write_manifest,
)

#: Seconds between a forwarded signal and SIGKILL of the job's group.
GRACE_S = 10.0
#: After the job exited, stop reading a pipe some leftover process holds open
#: once it has been quiet this long.
DRAIN_QUIET_S = 1.0
#: ... or once this long has passed since the exit, whatever it prints.
DRAIN_MAX_S = 5.0
#: Deadline of each read of a node snapshot.
SNAPSHOT_TIMEOUT_S = 2.0
_CHUNK = 1 << 16
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@dataclass(slots=True)
class _Job:
    """The running child and what happened to it."""

    grace_s: float
    proc: subprocess.Popen[bytes] | None = None
    signals: list[str] = field(default_factory=list)
    kill_at: float | None = None
    killed: bool = False

    def on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self.signals.append(signal.Signals(signum).name)
        if self.kill_at is None:
            self.kill_at = time.monotonic() + self.grace_s
        self.forward(signum)

    def forward(self, signum: int) -> None:
        """Send ``signum`` to the job's process group (once it has one)."""
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signum)

    def check_deadline(self) -> None:
        if self.kill_at is not None and not self.killed and time.monotonic() >= self.kill_at:
            self.killed = True
            self.forward(signal.SIGKILL)


def exit_status(returncode: int) -> int:
    """A shell's view of a child's status: 128+N for a death by signal N."""
    return 128 - returncode if returncode < 0 else returncode


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _tee(
    job: _Job, proc: subprocess.Popen[bytes], pipe: int, log_fd: int, terminal: BinaryIO | None
) -> tuple[int, int]:
    """Copy the pipe to the log and the terminal until EOF; returns (bytes, newlines)."""
    total = lines = 0
    exited_at: float | None = None
    last_data = time.monotonic()
    while True:
        job.check_deadline()
        ready, _, _ = select.select([pipe], [], [], 0.1)
        now = time.monotonic()
        if ready:
            data = os.read(pipe, _CHUNK)
            if not data:
                break
            _write_all(log_fd, data)
            total += len(data)
            lines += data.count(b"\n")
            last_data = now
            if terminal is not None:
                try:
                    terminal.write(data)
                    terminal.flush()
                except (OSError, ValueError):
                    terminal = None  # the terminal went away; the log keeps everything
            continue
        if exited_at is None and proc.poll() is not None:
            exited_at = now
        if exited_at is not None and (
            now - last_data >= DRAIN_QUIET_S or now - exited_at >= DRAIN_MAX_S
        ):
            break
    return total, lines


def _wait(job: _Job, proc: subprocess.Popen[bytes]) -> int:
    while True:
        job.check_deadline()
        try:
            return proc.wait(timeout=0.1)
        except subprocess.TimeoutExpired:
            continue


def _snapshot(folder: Path, env: dict[str, str]) -> dict[str, Any]:
    """A node capture under its own deadlines; a failure is recorded, never raised."""
    from nccl_doctor import live_check  # noqa: PLC0415 -- only when a snapshot is taken

    begin = time.monotonic()
    try:
        cap = live_check.capture(
            folder,
            timeout_s=SNAPSHOT_TIMEOUT_S,
            nvml_module=live_check.nvml_module_name(),
            environ=env,
        )
    except Exception as exc:  # noqa: BLE001 -- a snapshot must never stop the job
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    return {
        "ok": True,
        "folder": folder.name,
        "failed": cap.manifest.get("failed", []),
        "elapsed_s": round(time.monotonic() - begin, 3),
    }


def _start(cmd: Sequence[str], env: dict[str, str], log_fd: int) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(
            list(cmd),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # its own process group: signals reach the whole job
        )
    except OSError as exc:
        _write_all(log_fd, f"nccl-doctor run: cannot start {cmd[0]}: {exc}\n".encode())
        raise


def run(
    cmd: Sequence[str],
    run_dir: str | Path | None = None,
    *,
    fmt: str = "text",
    grace_s: float = GRACE_S,
    snapshots: bool = True,
    terminal: BinaryIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Run ``cmd`` with diagnostics on; returns its exit status (128+N for signal N)."""
    if not cmd:
        raise UsageError("no command to run", "nccl-doctor run -- torchrun ... train.py")
    err = err if err is not None else sys.stderr
    terminal = terminal if terminal is not None else sys.stdout.buffer
    folder = Path(run_dir) if run_dir is not None else default_run_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create {folder}: {exc.strerror or exc}", "pick --dir") from exc
    env, added = child_env(folder, os.environ)
    (folder / "command.txt").write_text(command_text(cmd) + "\n", encoding="utf-8")
    user_env = dict(os.environ)
    (folder / "environment.txt").write_text(env_text(user_env), encoding="utf-8")
    manifest: dict[str, Any] = {
        "tool": "nccl-doctor run",
        "version": __version__,
        "command": command_text(cmd),
        "launcher": launcher_of(cmd),
        "env_added": {k: redact(v) for k, v in sorted(added.items())},
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "status": "running",
    }
    if snapshots:
        manifest["node_before"] = _snapshot(folder / "node-before", user_env)
    write_manifest(folder / "MANIFEST.json", manifest)
    err.write(f"nccl-doctor run: run folder {folder}\n")
    err.flush()
    job = _Job(grace_s)
    previous = {s: signal.signal(s, job.on_signal) for s in _FORWARDED}
    log_fd = os.open(folder / "console.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    begin = time.monotonic()
    try:
        try:
            proc = job.proc = _start(cmd, env, log_fd)
        except OSError as exc:
            code = 127 if isinstance(exc, FileNotFoundError) else 126
            err.write(f"nccl-doctor run: cannot start {cmd[0]}: {exc.strerror or exc}\n")
        else:
            for name in job.signals:  # arrived before the job had a pid
                job.forward(signal.Signals[name])
            if proc.stdout is None:  # pragma: no cover -- stdout=PIPE always gives one
                raise RuntimeError("the job has no output pipe")
            manifest["pid"] = proc.pid
            write_manifest(folder / "MANIFEST.json", manifest)
            total, lines = _tee(job, proc, proc.stdout.fileno(), log_fd, terminal)
            code = exit_status(_wait(job, proc))
            proc.stdout.close()
            manifest.update(console_bytes=total, console_lines=lines)
            if job.signals:
                job.forward(signal.SIGKILL)  # leftovers of a job that was asked to stop
    finally:
        os.close(log_fd)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    manifest.update(
        status="exited",
        exit_code=code,
        signal=signal.Signals(code - 128).name if 128 < code < 128 + 65 else None,
        signals_forwarded=job.signals,
        sigkilled_after_grace=job.killed,
        elapsed_s=round(time.monotonic() - begin, 3),
    )
    if code != 0 and snapshots:
        manifest["node_after"] = _snapshot(folder / "node-after", user_env)
    write_manifest(folder / "MANIFEST.json", manifest)
    if code != 0 and job.proc is not None:
        _diagnose(folder, fmt, code, err)
    return code


def _diagnose(folder: Path, fmt: str, code: int, err: TextIO) -> None:
    """Print the diagnosis of the run folder; an interrupt or a bug only costs the report."""
    from nccl_doctor.pipeline import diagnose_paths  # noqa: PLC0415 -- loads the rules
    from nccl_doctor.render import render_report  # noqa: PLC0415

    err.write(f"nccl-doctor run: the job exited with status {code}; diagnosis of {folder}:\n")
    try:
        report = diagnose_paths([str(folder)])
        err.write(render_report(report, fmt))
    except KeyboardInterrupt:
        err.write("nccl-doctor run: diagnosis interrupted\n")
    except Exception as exc:  # noqa: BLE001 -- the job's status matters more than the report
        err.write(f"nccl-doctor run: diagnosis failed ({type(exc).__name__}: {exc})\n")
    err.write(f"nccl-doctor run: later: nccl-doctor diagnose {folder}\n")
    err.flush()
