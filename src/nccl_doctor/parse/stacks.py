"""The ``py-stacks`` kind: Python stack dumps of live processes (faulthandler, py-spy).

faulthandler (``faulthandler.dump_traceback``, ``faulthandler.register``, a
crash with ``PYTHONFAULTHANDLER=1``) prints, per thread::

    Thread 0x00007f3b2a7fc640 (most recent call first):
      File "/x/job.py", line 52 in _collectives
      File "/x/job.py", line 90 in main

(``Current thread 0x...`` for the thread that printed, ``Stack (most recent
call first):`` for one thread, ``<no Python frame>``, ``...`` when cut).
``py-spy dump --pid N`` prints::

    Thread 12345 (idle): "MainThread"
        _collectives (job.py:52)
        main (job.py:90)

Each thread becomes a :class:`~nccl_doctor.facts.stacks.ThreadStack`
(frames outermost first, like a traceback). ``nccl-doctor run`` writes one
file per process, ``hang-<n>/stacks.rank<R>.<host>.<pid>.txt``, that begins
with a header line ``# nccl-doctor stacks: capture=1 state=dumped pid=...
rank=... host=... world_size=... tool=...``; it becomes a
:class:`~nccl_doctor.facts.stacks.StackCapture` and attributes the threads
below it (``state=gone``: the process had exited; ``silent``: no dump came).
Dumps of several ranks interleaved in one log are kept apart by rank.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.stacks import Frame, StackCapture, ThreadStack
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._runtext import body, to_float, to_int
from nccl_doctor.parse._values import cite
from nccl_doctor.parse.base import StreamParser

KIND = "py-stacks"
_HEADER = "# nccl-doctor stacks:"
_FH_THREAD = LazyPattern(
    r"^(?P<current>Current thread|Thread) (?P<tid>0x[0-9a-fA-F]{1,20})"
    r"(?: \[(?P<name>[^\]]{0,200})\])? \(most recent call first\):\s*$"
)
_FH_STACK = LazyPattern(r"^Stack \(most recent call first\):\s*$")
_FH_FRAME = LazyPattern(
    r'^\s+File "(?P<file>[^"]{0,1000})", line (?P<line>\d{1,9}) in (?P<func>\S.{0,300})$'
)
_SPY_THREAD = LazyPattern(
    r"^Thread (?P<tid>0x[0-9a-fA-F]{1,20}|\d{1,12}) \((?P<state>[\w+]{1,40})\)"
    r'(?:: "(?P<name>[^"]{0,200})")?\s*$'
)
_SPY_FRAME = LazyPattern(
    r"^\s+(?P<func>\S.{0,300}?) \((?P<file>[^()]{1,1000}?):(?P<line>\d{1,9})\)\s*$"
)
_SPY_DETAIL = LazyPattern(r"^\s{6,}\S")  # --locals / Arguments: lines under a frame
_FIELD = LazyPattern(r"(?<!\w)(\w+)=(\S*)")
_MAX_FRAMES = 300
_MAX_OPEN = 1024


@dataclass(slots=True)
class _Thread:
    """One thread's dump being read."""

    line: Line
    tool: str
    tid: str | None
    name: str | None
    current: bool
    frames: list[Frame] = field(default_factory=list)
    truncated: bool = False


@dataclass(slots=True)
class _Context:
    """What a wrapper header said about the dump below it."""

    pid: int | None = None
    rank: int | None = None
    host: str | None = None
    capture: int | None = None


class StacksParser(StreamParser):
    """Reads faulthandler and py-spy stack dumps."""

    kind: ClassVar[str] = KIND
    anchors: ClassVar[tuple[str, ...]] = (
        "(most recent call first)",
        _HEADER,
        " (idle)",
        " (active",
        " (gil)",
    )

    def __init__(self) -> None:
        super().__init__()
        self._open: dict[int | None, _Thread] = {}
        self._context: dict[int | None, _Context] = {}

    @property
    def open(self) -> bool:
        """Whether a thread's frames are being read."""
        return bool(self._open)

    def feed(self, line: Line) -> bool:
        """Take a header, a thread line, or a frame of the thread in progress."""
        text = body(line.text).rstrip()
        thread = self._open.get(line.rank)
        if thread is not None:
            if self._frame(thread, text):
                return True
            self._close(line.rank)
        if text.startswith(_HEADER):
            self._header(line, text)
            return True
        return self._start(line, text)

    def finish(self) -> list[Fact]:
        """Close every thread still open."""
        for key in list(self._open):
            self._close(key)
        return self.take()

    def _header(self, line: Line, text: str) -> None:
        values = dict(_FIELD.findall(text[len(_HEADER) :]))
        ctx = _Context(
            pid=to_int(values.get("pid")),
            rank=to_int(values.get("rank")) if values.get("rank") else line.rank,
            host=values.get("host") or line.host,
            capture=to_int(values.get("capture")),
        )
        self._context[line.rank] = ctx
        if "state" in values:
            self.emit(
                StackCapture(
                    cite=cite(line),
                    rank=ctx.rank,
                    host=ctx.host,
                    pid=ctx.pid,
                    local_rank=to_int(values.get("local_rank")),
                    world_size=to_int(values.get("world_size")),
                    state=values["state"],
                    tool=values.get("tool", "faulthandler"),
                    capture=ctx.capture,
                    stalled_s=to_float(values.get("stalled_s")),
                )
            )

    def _start(self, line: Line, text: str) -> bool:
        stripped = text.strip()
        if m := _FH_THREAD.match(stripped):
            thread = _Thread(line, "faulthandler", m["tid"], m["name"], m["current"] != "Thread")
        elif _FH_STACK.match(stripped):
            thread = _Thread(line, "faulthandler", None, None, True)
        elif m := _SPY_THREAD.match(stripped):
            thread = _Thread(line, "py-spy", m["tid"], m["name"], False)
        else:
            return False
        if len(self._open) >= _MAX_OPEN:
            self._close(next(iter(self._open)))
        self._open[line.rank] = thread
        return True

    def _frame(self, thread: _Thread, text: str) -> bool:
        if thread.tool == "faulthandler":
            if m := _FH_FRAME.match(text):
                self._add(thread, (m["file"], to_int(m["line"]), m["func"].strip()))
                return True
            stripped = text.strip()
            if stripped == "...":
                thread.truncated = True
                return True
            return stripped == "<no Python frame>"
        if m := _SPY_FRAME.match(text):
            self._add(thread, (m["file"], to_int(m["line"]), m["func"].strip()))
            return True
        return bool(_SPY_DETAIL.match(text))

    def _add(self, thread: _Thread, frame: Frame) -> None:
        if len(thread.frames) < _MAX_FRAMES:
            thread.frames.append(frame)
        else:
            thread.truncated = True

    def _close(self, key: int | None) -> None:
        thread = self._open.pop(key, None)
        if thread is None:
            return
        ctx = self._context.get(key) or _Context()
        line = thread.line
        self.emit(
            ThreadStack(
                cite=cite(line),
                rank=ctx.rank if ctx.rank is not None else line.rank,
                host=ctx.host or line.host,
                pid=ctx.pid if ctx.pid is not None else line.pid,
                thread_id=thread.tid,
                thread_name=thread.name,
                current=thread.current,
                frames=tuple(reversed(thread.frames)),  # printed innermost first
                truncated=thread.truncated,
                tool=thread.tool,
                capture=ctx.capture,
            )
        )
