"""The ``traceback`` kind: Python tracebacks, bare exception lines and C++ terminate reports.

A traceback is ``Traceback (most recent call last):``, ``  File "f", line N,
in fn`` frames with their code and caret lines, then the exception line
``module.Type: message`` and its continuation lines (NCCL and torch messages
are multi-line: ``ncclUnhandledCudaError: ...``, ``Last error:``, ...). A
chain (``During handling of the above exception ...`` / ``The above exception
was the direct cause ...``) folds into the last exception's fact as
``causes``. The message ends at a blank line, at a line that clearly starts
something else (a glog or logging prefix, an NCCL line, a ``====`` border,
a table's ``+----`` border or ``| ... |`` row such as nvidia-smi's, a shell
prompt, a new timestamp), or at a new ``Traceback``.

Tracebacks of different ranks interleave line by line in one log: one
construct is kept per ``line.rank`` (``None`` for unattributed lines), and
while one is open only lines of its rank are taken; other lines are left
for other parsers. A construct that sees no line of its rank for a while is
closed, so a cut-off paste does not keep the reader looking at every line.

A paste that starts at its first frame (``File "...", line N, in fn``, the
``Traceback`` header left out, as people often copy it) is a traceback too:
a frame line of that exact form (with ``, in``; faulthandler's ``line N in
fn`` dumps of live threads are not) opens one. A code line is indented
further than its ``File`` line; a line indented no further is the exception
(torchrun's error file indents the whole report).

Bare exception lines (``torch.distributed.DistBackendError: ...`` printed
without a traceback) are taken when the type is a known error class of the
distributed stack, not prose such as ``Error: blah``. C++ reports
(``terminate called after throwing an instance of 'c10::DistBackendError'`` +
``what():``) become :class:`CppException`. Messages are also read by the
shared c10d classifier, so a watchdog timeout or an NCCL error quoted in an
exception yields the same typed facts as when glog prints it, plus an
:class:`NcclErrorReport` built from the whole multi-line message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.run import CppException, PythonTraceback
from nccl_doctor.facts.text import CJK
from nccl_doctor.parse._c10d import classify, nccl_report
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._runtext import body, clip, to_int
from nccl_doctor.parse._values import cite
from nccl_doctor.parse.base import StreamParser

_HEADER = "Traceback (most recent call last)"
_FRAME = LazyPattern(
    r'File "(?P<file>[^"]{0,1000})", line (?P<line>\d{1,9})(?:, in (?P<func>.{1,300}))?'
)
_EXC = LazyPattern(
    r"(?P<type>[A-Za-z_][\w.]{0,200}?(?:\.<locals>\.[\w.]{1,100})?)"
    # TensorFlow 1.x's session re-raises as 'AbortedError (see above for traceback): msg'
    r"(?P<tf> \(see above for traceback\))?"
    r"(?::(?: (?P<msg>.*)|\s*)|\s*)"
)
_TF_RERAISE = " (see above for traceback):"
#: What stands for frames cut out of a pasted traceback.
_CUT_MARKS = frozenset({"[...]", "[…]", "...", "…", "File"})
_CHAIN = (
    "During handling of the above exception",
    "The above exception was the direct cause",
)
_TERMINATE = LazyPattern(r"terminate called after throwing an instance of '(?P<type>[^']{1,200})'")
_WHAT = LazyPattern(r"^\s*what\(\):\s*(?P<msg>.*)$")
_STOP = LazyPattern(
    r"(?:[IWEF]\d{4} \d\d:\d\d|\[[IWEF]\d{0,4}[ \]]|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]*:"
    r"|\[\d{4}-\d\d-\d\d|-- Process \d+ terminated|={4,}|\*{4,}|-{10,}|NCCL (?:INFO|WARN) "
    r"|terminate called|Traceback \(most recent call last\)"
    # a tool's table pasted right below (nvidia-smi's borders and rows), a shell prompt
    r"|\+[-=+]{10}|\|.{0,400}\|$|\$ \w|[\w.-]{1,64}@[\w.-]{1,64}:\S{0,200}[$#] )"
)
#: A line in the reporter's own voice: a sentence in the first person, or one in Chinese,
#: Japanese or Korean (the libraries' messages are English and never say "I" or "we"). Right
#: after an exception line it is what the reporter wrote next ("RuntimeError: Address already
#: in use" / "I tried another port, same error"), not more of the message.
_REPORTER = LazyPattern(rf"(?:I|I'm|I've|I'd|I'll|We|We've|We're|My|Our)\s|[{CJK}]")
#: a bare exception line is taken for these type names, or for these modules
_KNOWN = frozenset(
    {
        "RuntimeError", "DistError", "DistBackendError", "DistStoreError", "DistNetworkError",
        "DistQueueEmptyError", "OutOfMemoryError", "AcceleratorError", "ChildFailedError",
        "ProcessRaisedException", "ProcessExitedException", "SignalException",
        "RendezvousError", "RendezvousTimeoutError", "RendezvousClosedError",
        "RendezvousConnectionError", "RendezvousStateError", "RendezvousGracefulExitError",
        "TimeoutError", "ConnectionError", "ConnectionResetError", "ConnectionRefusedError",
        "ConnectionAbortedError", "BrokenPipeError", "CalledProcessError", "CudaError",
    }
)  # fmt: skip
_MODULES = (
    "torch.", "c10", "deepspeed.", "accelerate.", "megatron.", "apex.", "transformers.",
    "lightning.", "pytorch_lightning.", "lightning_fabric.", "vllm.", "ray.", "cupy.",
    "triton.", "subprocess.", "multiprocessing.", "nccl",
    # the other frameworks NCCL runs under: TensorFlow (tf.distribute), Horovod, JAX, Paddle
    "tensorflow.", "horovod.", "jax.", "jaxlib.", "paddle.", "mxnet.",
)  # fmt: skip
_GENERIC = frozenset(
    {"ValueError", "AssertionError", "OSError", "ImportError", "KeyError", "TypeError",
     "AttributeError", "Exception", "SystemError", "MemoryError", "PermissionError"}
)  # fmt: skip
_TOPICAL = ("torch", "NCCL", "nccl", "CUDA", "cuda", "rendezvous", "distributed", "process group")
_CUDA_STARTS = (
    "CUDA error:",
    "CUDA kernel errors might be asynchronously reported",
    "CUDA out of memory",
)
_MAX_FRAMES = 200
_MAX_MESSAGE = 64
_MAX_OPEN = 4096
#: lines without one of its rank after which a construct is closed, by state
_REACH = {"frames": 2000, "message": 200, "cpp": 200, "gap": 20, "chain": 50, "what": 20}


@dataclass(slots=True)
class _Report:
    """One exception report being read (for one rank)."""

    last: int
    start_line: int | None = None
    state: str = "frames"
    frames: list[tuple[str, int | None, str | None]] = field(default_factory=list)
    causes: list[tuple[str, str]] = field(default_factory=list)
    exc: Line | None = None
    exc_type: str | None = None
    message: str = ""
    lines: list[tuple[Line, str]] = field(default_factory=list)
    cpp: bool = False
    cpp_stack: bool = False
    truncated: bool = False
    blanks: int = 0
    timed: bool = False
    tail: Line | None = None
    #: how far the last ``File`` line was indented: a code line is indented further
    frame_indent: int | None = None


class TracebackParser(StreamParser):
    """Reads Python tracebacks, bare exception lines and C++ terminate reports."""

    kind: ClassVar[str] = "traceback"
    anchors: ClassVar[tuple[str, ...]] = (
        _HEADER,
        'File "',
        "Error:",
        "Exception:",
        _TF_RERAISE.lstrip(),
        "terminate called after throwing",
        *_CUDA_STARTS,
        "Assertion `",
    )

    def __init__(self) -> None:
        super().__init__()
        self._open: dict[int | None, _Report] = {}
        self._swept = 0

    @property
    def open(self) -> bool:
        """Whether any rank's report is in progress."""
        return bool(self._open)

    def feed(self, line: Line) -> bool:
        """Take a line of a report in progress, or one that starts a report."""
        if line.number - self._swept > 32:
            self._sweep(line.number)
        text = body(line.text)
        report = self._open.get(line.rank)
        if report is not None:
            if self._continue(report, line, text):
                report.last = line.number
                return True
            self._close(line.rank)
        return self._start(line, text)

    def finish(self) -> list[Fact]:
        """Close every report still open."""
        return self.boundary()

    def boundary(self) -> list[Fact]:
        """A fence ends a pasted traceback: the sentence after it is the reporter's, not more
        of the exception's message."""
        for key in sorted(self._open, key=lambda k: self._open[k].last):
            self._close(key)
        return self.take()

    # -- starting ----------------------------------------------------------
    def _start(self, line: Line, text: str) -> bool:
        stripped = text.strip()
        if stripped.startswith(_HEADER):
            self._begin(line, _Report(last=line.number, start_line=line.number))
            return True
        if stripped.startswith('File "') and (m := _FRAME.match(stripped)) and m["func"]:
            report = _Report(last=line.number, start_line=line.number)
            self._begin(line, report)
            return self._frames(report, line, text, stripped)
        if "terminate called" in stripped and (m := _TERMINATE.search(stripped)):
            report = _Report(last=line.number, state="what", cpp=True, exc=line)
            report.exc_type = m["type"]
            self._begin(line, report)
            return True
        if ("Error:" in stripped or "Exception:" in stripped or _TF_RERAISE in stripped) and (
            m := _EXC.fullmatch(stripped)
        ):
            exc_type, message = m["type"], (m["msg"] or "").strip()
            if m["tf"] or _bare(exc_type, message):
                report = _Report(last=line.number, state="message")
                self._exception(report, line, exc_type, message)
                self._begin(line, report)
                return True
        if stripped.startswith(_CUDA_STARTS) or ("Assertion `" in stripped and ".cu" in stripped):
            facts = classify(line, stripped)
            for fact in facts:
                self.emit(fact)
            return bool(facts)
        return False

    def _begin(self, line: Line, report: _Report) -> None:
        if len(self._open) >= _MAX_OPEN:
            oldest = min(self._open, key=lambda k: self._open[k].last)
            self._close(oldest)
        report.timed = line.time_s is not None
        self._open[line.rank] = report
        if report.state == "message":
            self._after_exception(line.rank, report)

    def _exception(self, report: _Report, line: Line, exc_type: str, message: str) -> None:
        report.exc, report.exc_type, report.message = line, exc_type, clip(message, 1000)
        report.lines = [(line, line.text)]
        report.state = "message"
        for fact in classify(line, body(line.text).strip(), nccl=False):
            self.emit(fact)

    def _after_exception(self, key: int | None, report: _Report) -> None:
        """A ChildFailedError's message is the summary block: leave it to torchrun."""
        if report.exc_type is not None and report.exc_type.endswith("ChildFailedError"):
            self._close(key)

    # -- continuing ----------------------------------------------------------
    def _continue(self, report: _Report, line: Line, text: str) -> bool:
        stripped = text.strip()
        state = report.state
        if state == "frames":
            return self._frames(report, line, text, stripped)
        if state in ("message", "what"):
            return self._message(report, line, stripped)
        if state == "cpp":
            if stripped.startswith(("frame #", "Exception raised from")) or (
                stripped and text[:1].isspace()
            ):
                return True
            if not stripped:
                report.state = "gap"
                return True
            return False
        if not stripped:
            report.blanks += 1
            return report.blanks <= 3
        if state == "gap" and stripped.startswith(_CHAIN) and not report.cpp:
            report.causes.append((report.exc_type or "", report.message))
            report.causes = report.causes[-16:]
            report.state, report.blanks = "chain", 0
            return True
        if state == "chain" and stripped.startswith(_HEADER):
            report.frames, report.state, report.exc = [], "frames", None
            report.lines, report.message, report.cpp_stack = [], "", False
            return True
        return False

    def _frames(self, report: _Report, line: Line, text: str, stripped: str) -> bool:
        if not stripped:
            report.blanks += 1
            return report.blanks <= 2
        if stripped in _CUT_MARKS:
            # the person who pasted it cut frames here ("[...]", a frame cut at "File"):
            # the exception line after the cut still ends this report
            report.truncated = True
            return True
        indent = len(text) - len(text.lstrip())
        code = report.frame_indent is None or indent > report.frame_indent
        if (text[:1].isspace() and code) or stripped.startswith("File "):
            report.tail = line  # a report cut before its exception is cited at its last line
            if stripped.startswith("File ") and (m := _FRAME.match(stripped)):
                func = m["func"].strip() if m["func"] else None
                report.frame_indent = indent
                report.frames.append((m["file"], to_int(m["line"]), func))
                if len(report.frames) > _MAX_FRAMES:
                    del report.frames[_MAX_FRAMES // 4]
                    report.truncated = True
            return True
        m = _EXC.fullmatch(stripped)
        if m is None or _STOP.match(stripped):
            report.truncated = True
            return False
        self._exception(report, line, m["type"], (m["msg"] or "").strip())
        self._after_exception(line.rank, report)
        return True

    def _message(self, report: _Report, line: Line, stripped: str) -> bool:
        if report.state == "what":
            if m := _WHAT.match(stripped):
                report.exc = report.exc or line
                report.message = clip(m["msg"], 1000)
                report.lines = [(line, m["msg"])]
                report.state = "message"
                for fact in classify(line, m["msg"], nccl=False):
                    self.emit(fact)
                return True
            return False
        if not stripped:
            report.state, report.blanks = "gap", 0
            return True
        if (
            _STOP.match(stripped)
            or line.pid is not None
            or (line.time_s is not None and not report.timed)
        ):
            return False
        if stripped.startswith("Exception raised from"):
            report.state, report.cpp_stack = "cpp", True
            return True
        if _REPORTER.match(stripped):
            return False
        if len(report.lines) >= _MAX_MESSAGE:
            report.truncated = True
            return True
        report.lines.append((line, stripped))
        for fact in classify(line, stripped, nccl=False):
            self.emit(fact)
        return True

    # -- closing ----------------------------------------------------------------
    def _sweep(self, number: int) -> None:
        self._swept = number
        stale = [k for k, r in self._open.items() if number - r.last > _REACH.get(r.state, 200)]
        for key in stale:
            self._close(key)

    def _close(self, key: int | None) -> None:
        report = self._open.pop(key, None)
        if report is None:
            return
        if report.exc is None:
            if report.frames and report.tail is not None and not report.cpp:
                self.emit(_traceback(report, report.tail, truncated=True))
            return
        exc = report.exc
        if report.cpp:
            self.emit(
                CppException(
                    cite=cite(exc),
                    rank=exc.rank,
                    host=exc.host,
                    exc_type=report.exc_type,
                    message=report.message,
                    message_lines=tuple(clip(t) for _, t in report.lines[1:]),
                    cpp_stack=report.cpp_stack,
                )
            )
        else:
            self.emit(_traceback(report, exc, truncated=report.truncated))
        texts = [t for _, t in report.lines]
        for i, (line, text) in enumerate(report.lines):
            if "NCCL" in text and (found := nccl_report(line, text, texts[i + 1 :])):
                self.emit(found)
                break


def _traceback(report: _Report, at: Line, truncated: bool) -> PythonTraceback:
    exc_type = report.exc_type
    return PythonTraceback(
        cite=cite(at),
        rank=at.rank,
        host=at.host,
        exc_type=exc_type,
        exc_name=exc_type.rsplit(".", 1)[-1] if exc_type else None,
        message=report.message,
        message_lines=tuple(clip(t) for _, t in report.lines[1:]),
        frames=tuple(report.frames),
        innermost=report.frames[-1] if report.frames else None,
        causes=tuple(report.causes),
        start_line=report.start_line,
        has_traceback=report.start_line is not None,
        cpp_stack=report.cpp_stack,
        truncated=truncated,
    )


def _bare(exc_type: str, message: str) -> bool:
    """Whether an exception line without a traceback is worth a fact."""
    name = exc_type.rsplit(".", 1)[-1]
    if name.startswith("nccl") or not name[:1].isupper():
        return False
    if not name.endswith(("Error", "Exception", "Failure", "Timeout")):
        return False
    if name in _KNOWN or (exc_type != name and exc_type.startswith(_MODULES)):
        return True
    return name in _GENERIC and any(t in message for t in _TOPICAL)
