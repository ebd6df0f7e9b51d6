"""``nccl-doctor run -- CMD``: run a launch command with cheap diagnostics on, keep everything.

The run folder is claimed for this run alone (see ``setup.claim_run_dir``).
The job runs in its own process group, its stdout and stderr on two pipes
that :mod:`nccl_doctor.run.tee` copies to ``console.log`` and to the
wrapper's own stdout and stderr, so every byte that reached the wrapper is on
disk even when the job is SIGKILLed mid-line. SIGINT, SIGTERM and SIGHUP sent
to the wrapper are forwarded to the job's group; after a grace period the
group is SIGKILLed. Once the job's main process exits, what it left running
(its group, and helpers that escaped with ``setsid``: the wrapper is their
subreaper, :mod:`nccl_doctor.run.reap`) gets SIGTERM, then SIGKILL after the
grace; a pipe a leftover holds open is not waited for. The wrapper returns
the job's exit status (a death by signal N as 128+N, like a shell), also
when the run folder cannot be written (a full disk: said once on stderr),
and, when it is not 0, prints the diagnosis of the run folder, which
``nccl-doctor diagnose DIR`` reads the same way later.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO

from nccl_doctor import __version__
from nccl_doctor.errors import UsageError
from nccl_doctor.redact import redact
from nccl_doctor.run import reap
from nccl_doctor.run.history import RunHistory
from nccl_doctor.run.setup import (
    CONSOLE_LOG,
    child_env,
    claim_run_dir,
    command_text,
    env_text,
    job_torch,
    launcher_of,
    torch_version_tuple,
    write_manifest,
)
from nccl_doctor.run.stacks import StackHook
from nccl_doctor.run.tee import ConsoleLog, Tee, note
from nccl_doctor.run.watch import PIPE_STEM, STALL_S, Result, Watcher

if TYPE_CHECKING:
    from nccl_doctor.report import Report

#: Seconds between a forwarded signal and SIGKILL of the job's group.
GRACE_S = 10.0
#: After the job exited, stop reading a pipe some leftover process holds open
#: once it has been quiet this long.
DRAIN_QUIET_S = 1.0
#: ... or once this long has passed since the exit, whatever it prints.
DRAIN_MAX_S = 5.0
#: Deadline of each read of a node snapshot.
SNAPSHOT_TIMEOUT_S = 2.0
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: torch's switch for a flight-recorder dump on demand (a named pipe per rank).
PIPE_ENV = "TORCH_NCCL_DEBUG_INFO_PIPE_FILE"
#: How long a capture still in progress when the job ends may take to finish.
WATCH_JOIN_S = 30.0


@dataclass(slots=True)
class _Job:
    """The running child and what happened to it."""

    grace_s: float
    proc: subprocess.Popen[bytes] | None = None
    signals: list[str] = field(default_factory=list)
    kill_at: float | None = None
    killed: bool = False
    ended_by: str | None = None

    def on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self.signals.append(signal.Signals(signum).name)
        if self.kill_at is None:
            self.kill_at = time.monotonic() + self.grace_s
        self.forward(signum)

    def terminate(self, why: str) -> None:
        """End the job on the wrapper's own decision: SIGTERM now, SIGKILL after the grace."""
        self.ended_by = why
        if self.kill_at is None:
            self.kill_at = time.monotonic() + self.grace_s
        self.forward(signal.SIGTERM)

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


def _copy_until_exit(
    job: _Job, proc: subprocess.Popen[bytes], tee: Tee, watcher: Watcher | None
) -> None:
    """Copy the pipes until EOF, or until the job exited and its pipes went quiet."""
    exited_at: float | None = None
    while tee.open:
        job.check_deadline()
        tee.pump(0.1)
        if watcher is not None and exited_at is None and watcher.tick(tee.last_data):
            job.terminate("on-hang kill")
        now = time.monotonic()
        if exited_at is None and proc.poll() is not None:
            exited_at = now
        if exited_at is not None and (
            now - tee.last_data >= DRAIN_QUIET_S or now - exited_at >= DRAIN_MAX_S
        ):
            return  # something the job started holds a pipe open: it is ended next


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


def _start(cmd: Sequence[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        list(cmd),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,  # its own process group: signals reach the whole job
    )


class _Record:
    """The run folder's bookkeeping files; a write that fails is said once, never raised."""

    def __init__(self, folder: Path, err: TextIO) -> None:
        self.folder, self.err = folder, err
        self.error: str | None = None

    def write(self, name: str, text: str) -> None:
        self.guard(lambda: (self.folder / name).write_text(text, encoding="utf-8"))

    def manifest(self, data: dict[str, Any]) -> None:
        self.guard(lambda: write_manifest(self.folder / "MANIFEST.json", data))

    def guard(self, write: Callable[[], object]) -> None:
        try:
            write()
        except OSError as exc:
            if self.error is None:
                self.error = exc.strerror or str(exc)
                note(
                    self.err,
                    f"cannot write the run folder {self.folder} ({self.error}); "
                    "the job runs on, its record may be incomplete",
                )


def _run_job(
    job: _Job,
    cmd: Sequence[str],
    env: dict[str, str],
    *,
    log: ConsoleLog,
    terminals: tuple[BinaryIO | None, BinaryIO | None],
    on_start: Callable[[int], None],
    watcher: Watcher | None = None,
) -> tuple[int, dict[str, Any]]:
    """Start the job, copy its output, end what it leaves; (exit status, what was ended)."""
    subreaper = reap.set_subreaper(True)
    try:
        proc = job.proc = _start(cmd, env)
    except OSError:
        reap.set_subreaper(False)
        raise
    try:
        since = reap.start_ticks(proc.pid)
        for name in job.signals:  # arrived before the job had a pid
            job.forward(signal.Signals[name])
        on_start(proc.pid)
        if proc.stdout is None or proc.stderr is None:  # pragma: no cover -- PIPE gives both
            raise RuntimeError("the job has no output pipes")
        tee = Tee({proc.stdout.fileno(): terminals[0], proc.stderr.fileno(): terminals[1]}, log)
        try:
            _copy_until_exit(job, proc, tee, watcher)
            code = exit_status(_wait(job, proc))
            grace = job.grace_s
            if job.kill_at is not None:
                grace = max(0.0, job.kill_at - time.monotonic())
            ended = reap.end(proc.pid, since, grace, tick=lambda: tee.pump(0))
            tee.drain()
        finally:
            tee.close()
            proc.stdout.close()
            proc.stderr.close()
    finally:
        reap.set_subreaper(False)
    left = {"terminated": ended.terminated, "killed": ended.killed} if ended.terminated else {}
    return code, {"subreaper": subreaper, **left}


def run(
    cmd: Sequence[str],
    run_dir: str | Path | None = None,
    *,
    fmt: str = "text",
    grace_s: float = GRACE_S,
    snapshots: bool = True,
    stall_s: float = STALL_S,
    on_hang: str = "wait",
    terminal: BinaryIO | None = None,
    terminal_err: BinaryIO | None = None,
    err: TextIO | None = None,
    history: RunHistory | None = None,
) -> int:
    """Run ``cmd`` with diagnostics on; returns its exit status (128+N for signal N).

    ``history`` records the run in the fleet history (``None``: not recorded).
    """
    if not cmd:
        raise UsageError("no command to run", "nccl-doctor run -- torchrun ... train.py")
    err = err if err is not None else sys.stderr
    terminal = terminal if terminal is not None else sys.stdout.buffer
    terminal_err = terminal_err if terminal_err is not None else sys.stderr.buffer
    folder, log_fd = claim_run_dir(run_dir)
    record = _Record(folder, err)
    python, torch_version = job_torch(cmd, os.environ)
    env, added = child_env(folder, os.environ, torch_version_tuple(torch_version))
    hook = _hook(err) if stall_s > 0 else None
    if hook is not None:
        extra = hook.env(env)
        if launcher_of(cmd) in ("torchrun", "python") and PIPE_ENV not in os.environ:
            extra[PIPE_ENV] = str(hook.dir / PIPE_STEM)  # local ranks only: its folder is here
        env.update(extra)
        added.update(extra)
    record.write("command.txt", command_text(cmd) + "\n")
    user_env = dict(os.environ)
    record.write("environment.txt", env_text(user_env))
    manifest: dict[str, Any] = {
        "tool": "nccl-doctor run",
        "version": __version__,
        "command": command_text(cmd),
        "launcher": launcher_of(cmd),
        "env_added": {k: redact(v) for k, v in sorted(added.items())},
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "status": "running",
        "torch": {"python": python, "version": torch_version},
        "stall_s": stall_s if hook is not None else None,
        "on_hang": on_hang,
    }
    if history is not None:
        history.check(err)
    if snapshots:
        manifest["node_before"] = _snapshot(folder / "node-before", user_env)
    record.manifest(manifest)
    note(err, f"run folder {folder}")
    job = _Job(grace_s)
    previous = {s: signal.signal(s, job.on_signal) for s in _FORWARDED}
    log = ConsoleLog(log_fd, str(folder / CONSOLE_LOG), err)
    begin = time.monotonic()

    def started(pid: int) -> None:
        manifest["pid"] = pid
        record.manifest(manifest)

    def hang(result: Result) -> None:
        manifest.setdefault("hangs", []).append(result.manifest())
        record.manifest(manifest)

    watcher = None
    if hook is not None:
        watcher = Watcher(folder, stall_s, hook, env, kill=on_hang == "kill", err=err, record=hang)

    try:
        try:
            code, ended = _run_job(
                job,
                cmd,
                env,
                log=log,
                terminals=(terminal, terminal_err),
                on_start=started,
                watcher=watcher,
            )
        except OSError as exc:
            code = 127 if isinstance(exc, FileNotFoundError) else 126
            log.write(f"nccl-doctor run: cannot start {cmd[0]}: {exc}\n".encode())
            note(err, f"cannot start {cmd[0]}: {exc.strerror or exc}")
            ended = {}
        else:
            manifest.update(console_bytes=log.bytes, console_lines=log.lines)
            if log.error:
                manifest.update(console_log_error=log.error, console_unsaved_bytes=log.unsaved)
            if ended.get("terminated"):
                manifest["leftovers"] = ended
                note(err, _leftover_line(ended))
    finally:
        with contextlib.suppress(OSError):
            os.close(log_fd)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if watcher is not None:
            watcher.join(WATCH_JOIN_S)
            watcher.tick(time.monotonic())  # a capture that finished meanwhile is printed
        if hook is not None:
            hook.close()
    manifest.update(
        status="exited",
        exit_code=code,
        signal=signal.Signals(code - 128).name if 128 < code < 128 + 65 else None,
        signals_forwarded=job.signals,
        ended_by=job.ended_by,
        sigkilled_after_grace=job.killed,
        elapsed_s=round(time.monotonic() - begin, 3),
    )
    recording = history is not None and history.on
    if snapshots and (code != 0 or recording):  # recording: the counters' "after", also on success
        manifest["node_after"] = _snapshot(folder / "node-after", user_env)
    record.manifest(manifest)
    report = None
    if code != 0 and job.proc is not None:
        report = _diagnose(folder, fmt, code, err)
    elif recording:
        report = _quiet_diagnosis(folder, err)
    if history is not None and report is not None:
        run_id = history.record(report, folder, err)
        if run_id is not None:
            manifest["history"] = {"run_id": run_id, "db": history.shown}
            record.manifest(manifest)
    return code


def _hook(err: TextIO) -> StackHook | None:
    """The stack hook's folder, or ``None`` (said once) when it cannot be made."""
    try:
        return StackHook()
    except OSError as exc:
        note(err, f"no pre-mortem: cannot create its folder ({exc.strerror or exc})")
        return None


def _leftover_line(ended: dict[str, Any]) -> str:
    pids = ended["terminated"]
    shown = ", ".join(map(str, pids[:8])) + (" ..." if len(pids) > 8 else "")
    killed = f"; {len(ended['killed'])} needed SIGKILL" if ended["killed"] else ""
    return f"the job left {len(pids)} process(es) running ({shown}): ended them{killed}"


def _diagnose(folder: Path, fmt: str, code: int, err: TextIO) -> Report | None:
    """Print the diagnosis of the run folder; an interrupt or a bug only costs the report."""
    from nccl_doctor.pipeline import diagnose_paths  # noqa: PLC0415 -- loads the rules
    from nccl_doctor.render import render_report  # noqa: PLC0415

    err.write(f"nccl-doctor run: the job exited with status {code}; diagnosis of {folder}:\n")
    report = None
    try:
        report = diagnose_paths([str(folder)])
        err.write(render_report(report, fmt))
    except KeyboardInterrupt:
        err.write("nccl-doctor run: diagnosis interrupted\n")
    except Exception as exc:  # noqa: BLE001 -- the job's status matters more than the report
        err.write(f"nccl-doctor run: diagnosis failed ({type(exc).__name__}: {exc})\n")
    err.write(f"nccl-doctor run: later: nccl-doctor diagnose {folder}\n")
    err.flush()
    return report


def _quiet_diagnosis(folder: Path, err: TextIO) -> Report | None:
    """The diagnosis of a run that succeeded, for the history only (nothing printed)."""
    from nccl_doctor.pipeline import diagnose_paths  # noqa: PLC0415 -- loads the rules

    try:
        return diagnose_paths([str(folder)])
    except KeyboardInterrupt:
        return None
    except Exception as exc:  # noqa: BLE001 -- the job's status matters more than the history
        note(err, f"not recorded: the diagnosis failed ({type(exc).__name__}: {exc})")
        return None
