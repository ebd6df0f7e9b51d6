"""The two shapes of parser, and the contract every parser keeps.

Evidence comes in two shapes:

* **Blocks** — a tool's whole output in consecutive lines (an nvidia-smi
  table, ``ibstatus``, ``collect_env``). A :class:`BlockParser` says where a
  block starts and whether a line continues it, then parses the block.
* **Streams** — log lines that arrive one at a time, interleaved with other
  ranks and other tools (NCCL lines, tracebacks, launcher lines, Xid). A
  :class:`StreamParser` is fed the lines of one source in order, keeps what
  state it needs (a traceback spans lines), and emits facts.

A third shape, :class:`FileParser`, reads a whole file at once: a binary
flight-recorder dump, a JSON report whose structure is the evidence.

All are pure: no I/O, no imports of torch/NVML/subprocess, and they never
raise on odd input. Unknown values are ``None``.

``anchors`` are literal substrings, at least one of which every line the
parser cares about contains (case-sensitive). The reader uses them to skip
the rest of a large log at the speed of a multi-pattern matcher, so an
anchor list that misses a form the parser handles loses that form silently.

A stream parser may also declare ``info_anchors``: anchors of informational
lines that repeat by the thousand in verbose logs (NCCL's per-channel
transport lines, init lines of every communicator). The lines holding them
are offered up to a budget (:data:`INFO_BUDGET` lines of each kind for all
the sources of one read); after that the reader stops looking for them and
says so in a coverage note, so a gigabyte of ``NCCL_DEBUG=INFO``, in one file
or a thousand, costs what its warnings and errors cost. What tells who a
process is (NCCL's communicator init line: rank, CUDA device, bus id, comm id)
is read from every source past the budget too: a parser's ``floor_anchors``
name those lines, and each source reads the first of them of each process
among its first ``info_floor`` (:data:`INFO_FLOOR`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.base import Fact


class BlockParser(ABC):
    """Parses one tool's output that arrives as consecutive lines."""

    kind: ClassVar[str]
    #: literals one of which a block's first line contains
    anchors: ClassVar[tuple[str, ...]]
    #: a block longer than this is cut (with a coverage note) to bound memory
    max_lines: ClassVar[int] = 50_000

    @abstractmethod
    def starts(self, line: Line) -> bool:
        """Whether ``line`` begins a block of this kind."""

    @abstractmethod
    def accepts(self, line: Line, block: Sequence[Line]) -> bool:
        """Whether ``line`` continues ``block`` (the lines taken so far)."""

    @abstractmethod
    def parse(self, block: Sequence[Line]) -> list[Fact]:
        """Facts of one block. Never raises; unknown is ``None``."""

    def trim(self, block: Sequence[Line]) -> int:
        """How many lines of ``block`` belong to it (trailing blanks excluded)."""
        end = len(block)
        while end > 1 and not block[end - 1].text.strip():
            end -= 1
        return end


#: Lines offered per stream parser through ``info_anchors`` alone, for all sources of a read.
INFO_BUDGET = 1_000
#: Lines holding a ``floor_anchors`` word each source looks at past the budget (the first of
#: each process is read: a node's eight ranks print theirs together), unless the parser says
#: otherwise (``StreamParser.info_floor``).
INFO_FLOOR = 16


class StreamParser(ABC):
    """Parses log lines of one source, fed in order; one instance per source."""

    kind: ClassVar[str]
    #: literals one of which every line this parser consumes contains
    anchors: ClassVar[tuple[str, ...]]
    #: anchors of repetitive informational lines, read up to INFO_BUDGET (see above)
    info_anchors: ClassVar[tuple[str, ...]] = ()
    #: anchors of the informational lines that say who a process is: past the budget, each
    #: source still reads the first of each process among its first ``info_floor`` of them
    floor_anchors: ClassVar[tuple[str, ...]] = ()
    #: how many ``floor_anchors`` lines each source looks at (``None``: INFO_FLOOR)
    info_floor: ClassVar[int | None] = None
    #: whether people write the info anchors in sentences too (variable names): past the
    #: budget, a line holding one is still kept as free text when it reads like prose
    info_in_prose: ClassVar[bool] = False

    def __init__(self) -> None:
        self._out: list[Fact] = []

    @abstractmethod
    def feed(self, line: Line) -> bool:
        """Offer a line; ``True`` when it is this kind's (consumed)."""

    @property
    def open(self) -> bool:
        """Whether a multi-line construct is in progress and wants every next line.

        While any parser is open the reader offers it each following line
        first, whether or not the line holds an anchor.
        """
        return False

    def emit(self, fact: Fact) -> None:
        """Record a fact; the reader collects them with :meth:`take`."""
        self._out.append(fact)

    def take(self) -> list[Fact]:
        """The facts emitted since the last call."""
        out, self._out = self._out, []
        return out

    def finish(self) -> list[Fact]:
        """Close open constructs at the end of the source and return the last facts."""
        return self.take()

    def boundary(self) -> list[Fact]:
        """A code fence passed (a pasted block began or ended): a construct that a fence
        cannot be inside ends here, and the facts it made are returned. Most constructs span
        fences (a log cut into blocks); the default keeps them open."""
        return self.take()


class FileParser(ABC):
    """Parses one whole file (binary, or a JSON document) that the line reader does not read."""

    kind: ClassVar[str]
    #: larger files are not read (a coverage note says so)
    max_bytes: ClassVar[int]

    @classmethod
    @abstractmethod
    def sniff(cls, head: bytes) -> bool:
        """Whether a file whose first bytes are ``head`` is this kind's."""

    @abstractmethod
    def parse(self, data: bytes, source: str, rank: int | None) -> tuple[list[Fact], list[str]]:
        """Facts of the file and coverage notes. Never raises."""
