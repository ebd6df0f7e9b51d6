"""The stack of the collective a watchdog gave up on, read into one :class:`CollectiveTrace`.

When ProcessGroupNCCL's watchdog catches a timeout it prints, from the
flight-recorder entry of that collective, the Python stack that enqueued it
(``WorkNCCL::printTraceback``; the entry's ``getTraceback``: one
``#<i> <function> from <file>:<line>`` per frame, innermost first; torch 2.4
and later)::

    [rank0]:[E1203 11:29:41.245 ProcessGroupNCCL.cpp:733] Stack trace of the failed collective:
    #0 all_reduce from .../torch/distributed/distributed_c10d.py:3068
    #1 wrapper from .../torch/distributed/c10d_logger.py:83
    #2 train_step from /work/train.py:31

Only the heading carries the rank's prefix: the frames follow it at once, in
the one message, and the block ends at the first line that is not a frame.
With the flight recorder off it prints ``Stack trace of the failed collective
not found, ...`` instead, which starts nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.stacks import CollectiveTrace, Frame
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._runtext import to_int
from nccl_doctor.parse._values import cite

#: the heading's words (the ``not found`` variant has no colon after them)
HEAD = "Stack trace of the failed collective:"
_FRAME = LazyPattern(r"#\d{1,4} (?P<fn>\S.{0,300}?) from (?P<file>\S.{0,1000}?):(?P<line>\d{1,7})")
#: frames kept of one stack (a Python stack deeper than this is cut at its outer end)
_MAX_FRAMES = 64


@dataclass(slots=True)
class TraceBlock:
    """One rank's printed stack being read."""

    head: Line
    #: innermost first, as printed
    frames: list[Frame] = field(default_factory=list)

    def take(self, text: str) -> bool:
        """Read one frame line; ``False`` at the first line that is not one."""
        m = _FRAME.fullmatch(text.strip())
        if m is None:
            return False
        if len(self.frames) < _MAX_FRAMES:
            self.frames.append((m["file"], to_int(m["line"]), m["fn"]))
        return True

    def trace(self) -> CollectiveTrace | None:
        """The stack read, outermost first, cited at its heading; ``None`` without frames."""
        if not self.frames:
            return None
        return CollectiveTrace(
            cite=cite(self.head),
            rank=self.head.rank,
            host=self.head.host,
            frames=tuple(reversed(self.frames)),
        )
