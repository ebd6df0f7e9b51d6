"""The pre-mortem: notice a stalled job, capture it, and say why - while it still hangs.

Progress is what the wrapper can see without touching the job: bytes on its
stdout/stderr pipes and growth of the per-rank NCCL files
(``nccl.<host>.<pid>.log``) in the run folder. The flight recorder is not
polled: torch offers no cheap way to read it from outside (a dump through
its pipe always symbolizes stack traces: seconds per 2,000 entries).

After ``--stall S`` seconds without progress, one capture runs in a thread
(the job's output keeps flowing meanwhile) into ``hang-<n>/``:

* every job process's Python stacks (:mod:`nccl_doctor.run.stacks`);
* a flight-recorder dump of every NCCL rank, requested through
  ``TORCH_NCCL_DEBUG_INFO_PIPE_FILE`` when the wrapper set it (torchrun and
  python launches, ProcessGroupNCCL only), moved from ``fr_rank<N>``;
* NCCL RAS status (NCCL >= 2.24) asked through its socket by
  :mod:`nccl_doctor.run.ras` (``ncclras.json`` where the job's NCCL speaks
  JSON, from 2.28.7, else ``ncclras.txt``), the ``ncclras`` binary when the
  socket does not answer;
* ``nvidia-smi``.

Then the run folder is diagnosed (the pipeline every ``diagnose`` uses) and
the stacks are compared rank by rank (:func:`nccl_doctor.facts.stacks.verdict`);
both are printed on stderr. The job is left alone, or with ``--on-hang
kill`` ended like a forwarded SIGTERM - only when the capture shows a hang
(a rank waits in a collective, a rank is gone, or the flight recorder has a
collective that never completed), never for a job that is only quiet. One
capture per stall: the next needs progress first, and what the capture
itself makes the job print (its echo, up to ECHO_S after it) is no progress -
only where the capture asked the job for something (a flight-recorder dump,
NCCL RAS status): after one that asked nothing, the job's next line is its own.
"""

from __future__ import annotations

import contextlib
import linecache
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from nccl_doctor.evidence.live import run_command
from nccl_doctor.facts.stacks import Frame
from nccl_doctor.run import ras
from nccl_doctor.run.setup import FR_PREFIX
from nccl_doctor.run.stacks import StackHook

#: Default of ``--stall``: well under the usual 10-minute watchdog.
STALL_S = 120.0
#: After a capture, output within this many seconds is its echo, not the job's progress.
ECHO_S = 2.0
#: How often the run folder is looked at for progress.
SCAN_S = 1.0
#: The most captures of one run (each is a folder of files).
MAX_CAPTURES = 5
#: How long a capture waits for the flight-recorder dumps it asked for.
FR_WAIT_S = 20.0
#: Deadline of ``ncclras`` and ``nvidia-smi``.
TOOL_TIMEOUT_S = 10.0
#: The pipe stem the wrapper gives torch, inside the hook folder.
PIPE_STEM = "fr_pipe_rank"


@dataclass(slots=True)
class Result:
    """One capture: where, what it found, and the text to print."""

    number: int
    folder: Path
    stalled_s: float
    hung: bool = False
    named: tuple[int, ...] = ()
    summary: str = ""
    text: str = ""
    notes: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    #: the capture asked the job for something it answers in its output (a flight-recorder
    #: dump through its pipe, NCCL RAS status through its socket)
    asked_job: bool = False

    def manifest(self) -> dict[str, Any]:
        """This capture as MANIFEST.json lists it."""
        return {
            "folder": self.folder.name,
            "stalled_s": round(self.stalled_s, 1),
            "hung": self.hung,
            "named_ranks": list(self.named),
            "summary": self.summary,
            "notes": self.notes,
            "elapsed_s": round(self.elapsed_s, 2),
        }


def _poke_pipes(hook_dir: Path) -> list[str]:
    """Ask every local NCCL rank for a flight-recorder dump; the pipes written."""
    poked = []
    for pipe in sorted(hook_dir.glob(f"{PIPE_STEM}*.pipe")):
        try:
            fd = os.open(pipe, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            continue  # no reader: that rank's process group is gone
        try:
            os.write(fd, b"1")
            poked.append(pipe.name)
        except OSError:
            pass
        finally:
            os.close(fd)
    return poked


def _take_dumps(folder: Path, into: Path, since: float, want: int) -> int:
    """Move the flight-recorder dumps written since ``since`` into ``into`` (bounded wait)."""
    end = time.monotonic() + FR_WAIT_S
    sizes: dict[Path, int] = {}
    moved = 0
    while time.monotonic() < end:
        fresh = {}
        for path in folder.glob(f"{FR_PREFIX}*"):
            with contextlib.suppress(OSError):
                st = path.stat()
                if st.st_mtime >= since - 1:
                    fresh[path] = st.st_size
        stable = [p for p, s in fresh.items() if s > 0 and sizes.get(p) == s]
        if len(stable) >= want or (stable and time.monotonic() > end - FR_WAIT_S / 2):
            for path in stable:
                with contextlib.suppress(OSError):
                    path.replace(into / path.name)
                    moved += 1
            return moved
        sizes = fresh
        time.sleep(0.5)
    return moved


def _ras_addr(env: dict[str, str]) -> tuple[str, int]:
    """The RAS socket the job's NCCL listens on (``NCCL_RAS_ADDR`` host:port, else the default)."""
    host, _, port = env.get("NCCL_RAS_ADDR", "").rpartition(":")
    if port.isdigit():
        return host.strip("[]") or ras.DEFAULT_ADDR[0], int(port)
    return ras.DEFAULT_ADDR


def _ras(into: Path, env: dict[str, str]) -> tuple[str | None, bool]:
    """NCCL RAS status through its socket (JSON where the job's NCCL has it), else ``ncclras``:
    a note where it fell short, and whether the job's RAS socket answered."""
    if env.get("NCCL_RAS_ENABLE") == "0":
        return "NCCL RAS: off in the job (NCCL_RAS_ENABLE=0)", False
    try:
        reply = ras.query(_ras_addr(env), fmt="json", timeout_s=TOOL_TIMEOUT_S)
    except ras.RasError as exc:
        fallback = _tool(into, "ncclras.txt", [["ncclras", "-v"]], env)
        return (None if fallback is None else f"NCCL RAS: {exc}; {fallback}"), False
    name = "ncclras.json" if reply.format == "json" else "ncclras.txt"
    with contextlib.suppress(OSError):
        (into / name).write_text(reply.text, encoding="utf-8")
    return ("NCCL RAS: report cut at 32 MiB" if reply.truncated else None), True


def _tool(into: Path, name: str, argvs: list[list[str]], env: dict[str, str]) -> str | None:
    """Run the first of ``argvs`` that works into ``into/name``; a note when none did."""
    why = ""
    for argv in argvs:
        out = run_command(argv, TOOL_TIMEOUT_S, env=env)
        if out.ok and out.text.strip():
            with contextlib.suppress(OSError):
                (into / name).write_text(out.text, encoding="utf-8")
            return None
        why = out.message or out.status
        if out.status == "missing":
            break
    return f"{argvs[0][0]}: {why}"


def capture(
    folder: Path, number: int, stalled_s: float, hook: StackHook, env: dict[str, str]
) -> Result:
    """One pre-mortem into ``folder/hang-<number>`` (never raises for a missing tool)."""
    begin = time.monotonic()
    into = folder / f"hang-{number}"
    into.mkdir(parents=True, exist_ok=True)
    result = Result(number, into, stalled_s)
    since = time.time()
    poked = _poke_pipes(hook.dir)
    dumped = hook.dump(into, number, stalled_s)
    states = [d.state for d in dumped]
    result.notes.append(
        f"stacks: {states.count('dumped')} dumped, {states.count('gone')} gone, "
        f"{states.count('silent')} silent of {len(dumped)} registered Python processes"
    )
    note, answered = _ras(into, env)
    result.asked_job = bool(poked) or answered
    if note:
        result.notes.append(note)
    for argvs, name in (([["nvidia-smi"]], "nvidia-smi.txt"),):
        note = _tool(into, name, argvs, env)
        if note:
            result.notes.append(note)
    if poked:
        moved = _take_dumps(folder, into, since, len(poked))
        result.notes.append(f"flight recorder: {moved} dump(s) of {len(poked)} rank(s) asked")
    else:
        result.notes.append(
            "flight recorder: not asked (no NCCL process group with a dump pipe on this node)"
        )
    _diagnose(folder, result)
    result.elapsed_s = time.monotonic() - begin
    return result


def _diagnose(folder: Path, result: Result) -> None:
    """The stacks compared rank by rank, then the whole run folder's diagnosis."""
    from nccl_doctor.evidence.reader import read_paths  # noqa: PLC0415 -- loads the parsers
    from nccl_doctor.facts.flight import FlightEntry  # noqa: PLC0415
    from nccl_doctor.facts.stacks import (  # noqa: PLC0415
        StackCapture,
        ThreadStack,
        positions,
        verdict,
    )
    from nccl_doctor.pipeline import diagnose_with_facts  # noqa: PLC0415
    from nccl_doctor.render import render_report  # noqa: PLC0415

    try:
        report, facts = diagnose_with_facts(read_paths([str(folder)], line_totals=False))
    except Exception as exc:  # noqa: BLE001 -- the capture stays on disk; say what failed
        result.text = f"diagnosis failed ({type(exc).__name__}: {exc})\n"
        return
    found = verdict(positions([*facts.of(StackCapture), *facts.of(ThreadStack)]))
    pending = [e for e in facts.of(FlightEntry) if e.state in ("scheduled", "started")]
    result.hung = found.hung or bool(pending)
    result.named, result.summary = found.named, found.summary
    hang = next((f for f in report.findings if f.id == "app.hang"), None)
    roles = hang.roles if hang else ()
    origin = sorted({r for role in roles if role.role == "origin" for r in role.ranks})
    if origin and not result.named:  # held below Python: the flight recorder or RAS named it
        result.named = tuple(origin)
    lines = [f"where each rank is (Python stacks in {result.folder}):"]
    for pos, line in zip(found.positions, found.lines, strict=True):
        lines.append(f"  {line}")
        code = _code(pos.call if pos.kind == "collective" else pos.user or pos.at)
        if code:
            lines.append(f"      {code}")
    if not found.lines:
        lines.append("  no stacks were captured")
    if found.hung or not pending:
        lines.append(f"=> {found.summary}")
    if pending:
        first = pending[0]
        ranks = sorted({e.rank for e in pending if e.rank is not None})
        text = (
            f"the flight recorder of rank(s) {', '.join(map(str, ranks)) or '?'} has "
            f"{len(pending)} collective(s) issued and not completed, first {first.op} seq "
            f"{first.seq} ({first.state})"
        )
        if not found.hung:
            text += (
                ": no rank waits for it in Python, so what holds it is below Python - GPU work "
                "queued before it on the rank's stream, or a peer that never joined"
            )
            result.summary = text
        lines.append(f"=> {text}")
    lines += [f"  ({note})" for note in result.notes]
    try:
        rendered = render_report(report, "text")
    except Exception as exc:  # noqa: BLE001 -- the verdict above still stands
        rendered = f"report failed ({type(exc).__name__}: {exc})\n"
    result.text = "\n".join(lines) + "\ndiagnosis of the run folder so far:\n" + rendered


def _code(frame: Frame | None) -> str:
    """The source line of ``frame`` when its file is readable here (the job's own code)."""
    if frame is None or frame[1] is None:
        return ""
    return linecache.getline(frame[0], frame[1]).strip()[:160]


class Watcher:
    """Watches one running job for a stall; called from the wrapper's copy loop."""

    def __init__(
        self,
        folder: Path,
        stall_s: float,
        hook: StackHook,
        env: dict[str, str],
        *,
        kill: bool,
        err: TextIO,
        record: Callable[[Result], None],
    ) -> None:
        self.folder, self.stall_s, self.hook, self.env = folder, stall_s, hook, env
        self.kill, self.err, self.record = kill, err, record
        self.progress = time.monotonic()
        self.sizes: dict[str, int] = {}
        self.next_scan = 0.0
        self.fired = False
        self.count = 0
        #: Output before this (monotonic) time is the capture's own echo, not progress.
        self.echo_until = 0.0
        self.thread: threading.Thread | None = None
        self.result: Result | None = None

    def _scan(self, now: float) -> None:
        """Progress in the run folder: a per-rank NCCL file that grew or appeared."""
        sizes = {}
        with contextlib.suppress(OSError), os.scandir(self.folder) as entries:
            for entry in entries:
                if entry.name.startswith("nccl.") and entry.is_file():
                    with contextlib.suppress(OSError):
                        sizes[entry.name] = entry.stat().st_size
        if sizes != self.sizes:
            self.sizes = sizes
            if self.thread is None and now > self.echo_until:
                self.progress = now

    def tick(self, last_output: float) -> bool:
        """Look for a stall, print a finished capture; ``True``: end the job (--on-hang kill)."""
        now = time.monotonic()
        if now >= self.next_scan:
            self.next_scan = now + SCAN_S
            self._scan(now)
        if last_output > self.progress and self.thread is None and last_output > self.echo_until:
            self.progress = last_output
            self.fired = False  # progress again: the next stall gets its own capture
        if self.thread is not None:
            return self._finished()
        stalled = now - self.progress
        if stalled >= self.stall_s and not self.fired and self.count < MAX_CAPTURES:
            self.fired = True
            self.count += 1
            self._say(
                f"no output from the job for {stalled:.0f} s (--stall {self.stall_s:g}): "
                f"capturing stacks into {self.folder / f'hang-{self.count}'}"
            )
            self.thread = threading.Thread(
                target=self._run,
                args=(self.count, stalled),
                name="nccl-doctor-premortem",
                daemon=True,
            )
            self.thread.start()
        return False

    def _run(self, number: int, stalled: float) -> None:
        try:
            self.result = capture(self.folder, number, stalled, self.hook, self.env)
        except Exception as exc:  # noqa: BLE001 -- a capture bug must not stop the job
            self.result = Result(number, self.folder / f"hang-{number}", stalled)
            self.result.text = f"capture failed ({type(exc).__name__}: {exc})\n"

    def _finished(self) -> bool:
        if self.thread is None or self.thread.is_alive() or self.result is None:
            return False
        result, self.thread, self.result = self.result, None, None
        # what the capture made the job print (a flight-recorder dump's log lines, NCCL's
        # answer to RAS) is not progress: only output after a short grace re-arms the watch.
        # A capture that asked the job nothing has no echo: on the H200 the job's own line
        # just after such a capture was taken for one, and the real stall went uncaptured
        if result.asked_job:
            self.echo_until = time.monotonic() + ECHO_S
        self.record(result)
        self._say(f"the job still runs; pre-mortem {result.folder.name}:")
        with contextlib.suppress(OSError, ValueError):
            self.err.write(result.text)
            self.err.flush()
        if self.kill and result.hung:
            self._say("--on-hang kill: ending the job (SIGTERM, then SIGKILL after the grace)")
            return True
        if self.kill:
            self._say("--on-hang kill: not ending it - the capture shows no rank waiting")
        return False

    def join(self, timeout_s: float) -> None:
        """Let a capture in progress finish (bounded) before the run folder is closed."""
        if self.thread is not None:
            self.thread.join(timeout_s)

    def _say(self, text: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.err.write(f"nccl-doctor run: {text}\n")
            self.err.flush()
