"""The ``torchrun`` kind: what the launcher and PyTorch's distributed layer print.

Single lines go through the shared c10d classifier (:mod:`._c10d`): elastic
agent exits and signals (stdlib-logging, ``[date] module: [LEVEL]`` and glog
forms alike, since patterns are searched), ProcessGroupNCCL option lists,
watchdog timeouts, flight-recorder, heartbeat and store messages. Three
constructs span lines and keep the parser ``open``:

* the ``ChildFailedError`` summary (``<script> FAILED``, ``Root Cause``,
  ``[0]:`` and its ``time/host/rank/exitcode/error_file/traceback`` fields,
  torch 1.9's ``Root Cause:``/``Other Failures:``/``msg:`` form too) ->
  :class:`ChildFailure` per entry; an error-file traceback inside an entry is
  read as a traceback of that rank;
* torch 1.x's ``ProcessGroupNCCL initialized with following options:`` with
  one ``KEY: value`` per line;
* an ``NCCL error ...`` line followed by ``ncclSystemError: ...`` / ``Last
  error:`` lines -> one :class:`NcclErrorReport`;
* ProcessGroupNCCL's desync report (``Timeout at collective: ...``, the ranks that
  never joined or lag, the snapshot of each rank's state) -> one :class:`DesyncReport`
  (:mod:`._desync`);
* the stack of the collective a watchdog gave up on (``Stack trace of the failed
  collective:`` then one ``#i function from file:line`` per line) -> one
  :class:`CollectiveTrace` (:mod:`._fr_trace`);
* PRRTE's (Open MPI 5's) ``... noticed that process rank N ... exited on`` whose
  ``signal 9 (Killed).`` is the next line (help-prun.txt breaks the sentence
  there; ORTE's mpirun prints it whole) -> one :class:`WorkerExit` with its signal.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import ClassVar

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.run import ChildFailure, WorkerExit
from nccl_doctor.parse import _desync, _fr_trace
from nccl_doctor.parse._c10d import classify, context, nccl_report, options_facts
from nccl_doctor.parse._cuda import CUDA_KEYWORDS
from nccl_doctor.parse._launcher import KEYWORDS as LAUNCHER_KEYWORDS
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._runtext import body, clip, signal_named, signal_of, to_int
from nccl_doctor.parse._values import cite
from nccl_doctor.parse.base import StreamParser
from nccl_doctor.parse.traceback import TracebackParser

_TITLE = LazyPattern(r"(?P<script>[^\s\[].{0,500}?) FAILED\s*")
_DELIM = LazyPattern(r"(?P<c>[-=*])(?P=c){3,}")
_ENTRY = LazyPattern(r"\[(?P<idx>\d{1,7})\]:")
_FIELD = LazyPattern(r"\s+(?P<k>time|host|rank|exitcode|error_file|traceback|msg)\s*: ?(?P<v>.*)")
_RANK_VALUE = LazyPattern(r"(?P<r>-?\d{1,9})(?: \(local_rank: (?P<lr>-?\d{1,9})\))?")
_EXIT_VALUE = LazyPattern(r"(?P<c>-?\d{1,9})(?: \(pid: (?P<pid>\d{1,9})\))?")
_OLD_OPTIONS = "ProcessGroupNCCL initialized with following options"
_OPTION_LINE = LazyPattern(r"(?P<k>[A-Za-z_][\w()]{0,60})\s*[:=]\s*(?P<v>\S.{0,200})")
_RESULT = LazyPattern(r"\s*nccl[A-Z]\w{2,40}: ")
#: the line PRRTE prints after ``exited on``: the signal's number, then strsignal's text
_SIGNAL_LINE = LazyPattern(r"signal (?P<n>\d{1,2})(?: \([^)]{0,60}\))?\.?")
_MAX_ENTRY_LINES = 300
_MAX_OPTION_LINES = 40
_REACH = 20


@dataclass(slots=True)
class _Entry:
    """One ``[N]:`` entry of a summary."""

    head: Line
    index: int | None
    root: bool
    fields: dict[str, str] = field(default_factory=dict)
    exit_line: Line | None = None
    tb_lines: list[tuple[Line, str]] = field(default_factory=list)
    collecting: bool = False


@dataclass(slots=True)
class _Summary:
    """A ChildFailedError summary being read."""

    rank: int | None
    script: str | None
    last: int
    section_char: str | None = None
    root: bool = False
    entry: _Entry | None = None


@dataclass(slots=True)
class _Pending:
    """A header waiting for its continuation lines (old options, NCCL error)."""

    head: Line
    text: str
    last: int
    items: list[tuple[str, str]] = field(default_factory=list)
    following: list[str] = field(default_factory=list)
    after_last_error: bool = False


class TorchrunParser(StreamParser):
    """Reads the launcher's and ProcessGroupNCCL/c10d's lines."""

    kind: ClassVar[str] = "torchrun"
    anchors: ClassVar[tuple[str, ...]] = (
        _OLD_OPTIONS,
        "WorkNCCL(",
        "NCCL work:",
        "atchdog",
        "eartbeat",
        "flight recorder",
        "FlightRecorder",
        "dump signal",
        "dump debug info",
        "signal dumping",
        "global timeout from another rank",
        "entire process down",
        "DeepEP",
        _fr_trace.HEAD,
        "communicator was aborted",
        "Connection closed by",
        "Connection was likely closed",
        "Connection reset by peer",
        "Broken pipe",
        "recvValue failed",
        "Failed to recv",
        "recvBytes failed",
        "Socket Timeout",
        "mismatch between collectives",
        "no GPUs found",
        "Duplicate GPU",
        "the same GPU",
        "appears not to match",
        "DDP expects same model",
        "finished reduction in the prior iteration",
        "Rendezvous",
        "socket has",
        "socket cannot",
        "network addresses of",
        "waiting for clients",
        "store based barrier",
        "Timeout waiting for key",
        "ait timeout after",
        "ncclUniqueId",
        "NCCL error",
        "NCCL Error",
        "Address already in use",
        "EADDRINUSE",
        "orker group",
        *LAUNCHER_KEYWORDS,
        "expected, but not set",
        "Default process group has not been initialized",
        "Could not acquire GIL",
        " FAILED",
        *_desync.STARTS,
        *CUDA_KEYWORDS,
    )
    #: every rank prints these for every process group it joins: 400,000 lines in a big job
    info_anchors: ClassVar[tuple[str, ...]] = (
        "ProcessGroupNCCL initialization options",
        "ProcessGroupNCCL environments",
    )

    def __init__(self) -> None:
        super().__init__()
        self._summary: _Summary | None = None
        self._options: dict[int | None, _Pending] = {}
        self._nccl: dict[int | None, _Pending] = {}
        #: per rank, a PRRTE worker exit whose signal is on the next line
        self._exited_on: dict[int | None, tuple[WorkerExit, int]] = {}
        #: per rank, a desync report being read
        self._desync: dict[int | None, _desync.DesyncBlock] = {}
        #: the stack of a failed collective being read (its frames follow its heading at once)
        self._trace: _fr_trace.TraceBlock | None = None
        self._swept = 0

    @property
    def open(self) -> bool:
        """Whether a summary, an old option list, an NCCL error report, a desync report, a
        failed collective's stack or a PRRTE exit waiting for its signal is in progress."""
        return (
            self._summary is not None
            or bool(self._options)
            or bool(self._nccl)
            or bool(self._exited_on)
            or bool(self._desync)
            or self._trace is not None
        )

    def feed(self, line: Line) -> bool:
        """Take a launcher/c10d line, or a line of a construct in progress."""
        if line.number - self._swept > 8:
            self._sweep(line.number)
        text = body(line.text)
        if line.rank in self._exited_on and self._signal_line(line, text):
            return True
        if self._summary is not None:
            if self._in_summary(self._summary, line, text):
                return True
            if self._summary is not None and self._summary.rank == line.rank:
                self._close_summary()
        if line.rank in self._options:
            if self._option_line(self._options[line.rank], line, text):
                return True
            self._close_options(line.rank)
        if line.rank in self._nccl:
            if self._nccl_line(self._nccl[line.rank], line, text):
                return True
            self._close_nccl(line.rank)
        if line.rank in self._desync:
            if self._desync[line.rank].take(line, text):
                return True
            self._close_desync(line.rank)
        if self._trace is not None:
            if self._trace.take(text):
                return True
            self._close_trace()
        return self._start(line, text)

    def finish(self) -> list[Fact]:
        """Close every construct still open."""
        for held, _ in self._exited_on.values():
            self.emit(held)
        self._exited_on.clear()
        self._close_summary()
        for key in list(self._options):
            self._close_options(key)
        for key in list(self._nccl):
            self._close_nccl(key)
        for key in list(self._desync):
            self._close_desync(key)
        self._close_trace()
        return self.take()

    # -- single lines ------------------------------------------------------------
    def _start(self, line: Line, text: str) -> bool:
        stripped = text.strip()
        if " FAILED" in stripped and (m := _TITLE.fullmatch(stripped)):
            self._close_summary()
            self._summary = _Summary(rank=line.rank, script=m["script"], last=line.number)
            return True
        if _OLD_OPTIONS in text:
            self._options[line.rank] = _Pending(head=line, text=text, last=line.number)
            return True
        if _fr_trace.HEAD in text:
            self._trace = _fr_trace.TraceBlock(head=line)
            return True
        if _desync.starts(text):
            block = _desync.DesyncBlock(head=line, last=line.number)
            if block.take(line, text):
                self._desync[line.rank] = block
                return True
        facts = classify(line, text, nccl=False)
        for fact in facts:
            if (
                isinstance(fact, WorkerExit)
                and fact.source == "mpirun"
                and fact.signal_name is None
                and text.rstrip().endswith("exited on")
            ):
                self._exited_on[line.rank] = (fact, line.number)
            else:
                self.emit(fact)
        if ("NCCL error" in text or "NCCL Error" in text) and nccl_report(line, text) is not None:
            self._close_nccl(line.rank)
            self._nccl[line.rank] = _Pending(head=line, text=text, last=line.number)
            return True
        return bool(facts)

    # -- continuation lines ---------------------------------------------------------
    def _signal_line(self, line: Line, text: str) -> bool:
        """PRRTE's ``signal N (text).`` right after its ``exited on``: the exit gains its
        signal and the line is consumed; any other line lets the exit go as it is."""
        held, number = self._exited_on.pop(line.rank)
        m = _SIGNAL_LINE.fullmatch(text.strip()) if line.number == number + 1 else None
        if m is None:
            self.emit(held)
            return False
        num, name = signal_named(m["n"])
        self.emit(replace(held, signal_number=num, signal_name=name))
        return True

    def _option_line(self, pending: _Pending, line: Line, text: str) -> bool:
        m = _OPTION_LINE.fullmatch(text.strip())
        if m is None or len(pending.items) >= _MAX_OPTION_LINES:
            return False
        pending.items.append((m["k"], m["v"].strip()))
        pending.last = line.number
        return True

    def _close_options(self, key: int | None) -> None:
        pending = self._options.pop(key, None)
        if pending is not None:
            ctx = context(pending.head, pending.text)
            for fact in options_facts(ctx, pending.items, False, init=True):
                self.emit(fact)

    def _nccl_line(self, pending: _Pending, line: Line, text: str) -> bool:
        stripped = text.strip()
        if not stripped or len(pending.following) >= 8:
            return False
        if _RESULT.match(stripped) or stripped.startswith("Last error:"):
            pending.after_last_error = (
                stripped.startswith("Last error:") and not stripped[11:].strip()
            )
        elif pending.after_last_error:
            pending.after_last_error = False
        else:
            return False
        pending.following.append(stripped)
        pending.last = line.number
        for fact in classify(line, stripped, nccl=False):
            self.emit(fact)
        return True

    def _close_nccl(self, key: int | None) -> None:
        pending = self._nccl.pop(key, None)
        if pending is not None:
            report = nccl_report(pending.head, pending.text, pending.following)
            if report is not None:
                self.emit(report)

    def _close_desync(self, key: int | None) -> None:
        block = self._desync.pop(key, None)
        if block is not None:
            self.emit(block.report())

    def _close_trace(self) -> None:
        block, self._trace = self._trace, None
        trace = block.trace() if block is not None else None
        if trace is not None:
            self.emit(trace)

    def _sweep(self, number: int) -> None:
        self._swept = number
        for key in [k for k, p in self._options.items() if number - p.last > _REACH]:
            self._close_options(key)
        for key in [k for k, p in self._nccl.items() if number - p.last > _REACH]:
            self._close_nccl(key)
        for key in [k for k, b in self._desync.items() if number - b.last > _REACH]:
            self._close_desync(key)
        for key in [k for k, (_, last) in self._exited_on.items() if number - last > 1]:
            self.emit(self._exited_on.pop(key)[0])
        if self._summary is not None and number - self._summary.last > 200:
            self._close_summary()

    # -- the ChildFailedError summary --------------------------------------------------
    def _in_summary(self, summary: _Summary, line: Line, text: str) -> bool:
        if line.rank != summary.rank:
            return False
        stripped = text.strip()
        entry = summary.entry
        if entry is not None and entry.collecting:
            if _FIELD.match(text) is None and (text.startswith("  ") or not stripped):
                if len(entry.tb_lines) < _MAX_ENTRY_LINES:
                    entry.tb_lines.append((line, text[2:]))
                summary.last = line.number
                return True
            entry.collecting = False
        if m := _DELIM.fullmatch(stripped):
            char = m["c"]
            if summary.section_char is None and char in "-=":
                summary.section_char = char
            elif char != summary.section_char:
                self._close_summary()
                return True
            summary.last = line.number
            return True
        if stripped in ("Failures:", "Other Failures:"):
            self._end_entry(summary)
            summary.root = False
        elif stripped.startswith("Root Cause"):
            self._end_entry(summary)
            summary.root = True
        elif stripped == "<NO_OTHER_FAILURES>":
            pass
        elif m := _ENTRY.fullmatch(stripped):
            self._end_entry(summary)
            summary.entry = _Entry(head=line, index=to_int(m["idx"]), root=summary.root)
        elif entry is not None and (f := _FIELD.fullmatch(text)):
            key, value = f["k"], f["v"].strip()
            entry.fields.setdefault(key, value)
            if key == "exitcode":
                entry.exit_line = line
            if key in ("traceback", "msg"):
                entry.collecting = True
                entry.tb_lines.append((line, value))
        else:
            return False
        summary.last = line.number
        return True

    def _close_summary(self) -> None:
        summary, self._summary = self._summary, None
        if summary is not None:
            self._end_entry(summary)

    def _end_entry(self, summary: _Summary) -> None:
        entry, summary.entry = summary.entry, None
        if entry is None:
            return
        values = entry.fields
        rank_m = _RANK_VALUE.match(values.get("rank", ""))
        exit_m = _EXIT_VALUE.match(values.get("exitcode", ""))
        rank = to_int(rank_m["r"]) if rank_m else None
        code = to_int(exit_m["c"]) if exit_m else None
        number, name = signal_of(code)
        host = values.get("host") or None
        error_file = values.get("error_file")
        tb = values.get("traceback", values.get("msg"))
        if tb is not None and tb.startswith('"') and tb.endswith('"') and len(tb) > 1:
            tb = tb[1:-1]
        at = entry.exit_line or entry.head
        self.emit(
            ChildFailure(
                cite=cite(at),
                rank=rank,
                host=host,
                index=entry.index,
                local_rank=to_int(rank_m["lr"]) if rank_m else None,
                exitcode=code,
                pid=to_int(exit_m["pid"]) if exit_m else None,
                signal_number=number,
                signal_name=name,
                time_text=values.get("time") or None,
                error_file=None if error_file in (None, "", "<N/A>") else error_file,
                traceback=clip(tb) if tb else None,
                traceback_lines=tuple(clip(t.rstrip()) for _, t in entry.tb_lines[1:] if t.strip()),
                root_cause=entry.root,
                script=summary.script,
            )
        )
        if entry.tb_lines and tb and tb.startswith("Traceback"):
            self._embedded(entry, rank, host)

    def _embedded(self, entry: _Entry, rank: int | None, host: str | None) -> None:
        """An error-file traceback inside an entry, read as that rank's traceback."""
        parser = TracebackParser()
        for line, text in entry.tb_lines:
            parser.feed(replace(line, text=text, rank=rank, host=host or line.host))
        for fact in parser.finish():
            self.emit(fact)
