"""The reader: streams of bytes -> sections of typed facts, in bounded memory.

A source is read in chunks cut at line ends. A multi-pattern prefilter finds
the lines that hold any parser's anchor; all other lines are skipped without
being decoded, which is what makes a gigabyte of NCCL_DEBUG=INFO cheap. While
a block (a tool's table) or a multi-line construct (a traceback) is open,
every line is looked at.

Every line that is decoded passes one gate first (:class:`LineGate`): control
characters and terminal escapes are stripped and secrets redacted, so no fact,
citation or output format ever holds them; source names and notes are
cleaned the same way.

Which parsers' anchors a line holds comes from the prefilter's scan itself
(one group of anchors per parser), never from testing the line in Python.

Budgets bound what a read costs whatever its size or number of files: the
informational lines of each kind (``info_anchors``) and the free text of
small sources are shared by all the sources of one read (see :class:`Budgets`);
past its kind's budget, a source reads only the lines that say who its
processes are (``floor_anchors``: NCCL's communicator init line), the first
of each process.

Sections: each block is a section of its own kind. Stream lines (logs) form
one section per kind within a *segment*, the stretch between blocks and
Markdown code fences, so a pasted issue splits into its pieces while a
gigabyte log of one kind stays one section.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO, TypeVar

from nccl_doctor.evidence.intake import Intake, Note, Opened
from nccl_doctor.evidence.lines import Attributor, Line
from nccl_doctor.evidence.prefilter import Prefilter, Tagged, make_prefilter
from nccl_doctor.facts.attribution import assign_ranks, process_ranks
from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.store import is_prose
from nccl_doctor.facts.text import TextLine
from nccl_doctor.parse import BLOCK_PARSERS, FILE_PARSERS, STREAM_PARSERS
from nccl_doctor.parse.base import INFO_BUDGET, INFO_FLOOR, BlockParser, StreamParser
from nccl_doctor.redact import LineGate, safe_line, scrub

T = TypeVar("T")

#: Bytes read at a time.
CHUNK_BYTES = 512 << 10
#: Files up to this size are read into memory shared by all sources (see :func:`_reads`).
SHARED_BUFFER_MAX = 8 << 20
#: Newlines are counted in pieces of this many bytes (see :func:`newlines`).
_COUNT_PIECE = 32 << 10
#: Longer lines are cut to this many bytes (with a coverage note): no message needs more,
#: and it bounds what one line costs the parsers, whatever their patterns.
LINE_MAX_BYTES = 64 << 10
#: Sources up to this size (or of unknown size, up to this many bytes read)
#: keep their unclaimed lines as free text.
TEXT_MAX_BYTES = 1 << 20
#: Small sources are read as free text until this many bytes of them, in all, were (a folder
#: of a thousand small per-rank logs is read for its evidence, not line by line).
TEXT_TOTAL_BYTES = 4 << 20
#: At most this many free-text lines are kept per source.
TEXT_MAX_LINES = 5_000
#: The evidence kind of free text.
TEXT_KIND = "text"
#: The note on a source in which nothing was recognised.
UNKNOWN = "no known evidence kind recognised"
#: Markdown code fences separate the pieces of a pasted issue.
_FENCES = ("```", "~~~")
#: A fence line: the fence and at most an info string (not Python's ``~~~^^^`` carets).
_FENCE = re.compile(r"\s*(?:```+|~~~+)\s*(?:[\w+.-]+\s*)?$")
#: A run of blank lines (one character class: matched without backtracking marks).
_BLANKS = re.compile(rb"[ \t\r\n]*\n")
#: A line NCCL printed at INFO level, its prefix as :mod:`.lines` strips it: never free text.
_NCCL_INFO = re.compile(rb"[\w.-]+:\d+:\d+ \[\d+\] NCCL INFO ")
#: Who printed an NCCL INFO line: its host and pid, and its CUDA device (not the thread).
_NCCL_WHO = re.compile(rb"([\w.-]+:\d+):\d+ (\[\d+\]) NCCL INFO ")

#: The anchor groups, one bit each: every block parser's, every stream parser's, the code
#: fences, then every stream parser's info anchors (:data:`_INFO`, scanned while budgeted),
#: then every stream parser's floor anchors (:data:`_FLOOR`, scanned up to its floor).
_GROUPS: tuple[tuple[str, ...], ...] = (
    *(p.anchors for p in BLOCK_PARSERS),
    *(p.anchors for p in STREAM_PARSERS),
    _FENCES,
    *(p.info_anchors for p in STREAM_PARSERS),
    *(p.floor_anchors for p in STREAM_PARSERS),
)
_STREAM = len(BLOCK_PARSERS)
_INFO = _STREAM + len(STREAM_PARSERS) + 1
_FLOOR = _INFO + len(STREAM_PARSERS)
_BLOCK_BITS = (1 << _STREAM) - 1
_ALWAYS_BITS = (1 << _INFO) - 1
_FLOOR_BITS = ((1 << len(STREAM_PARSERS)) - 1) << _FLOOR
#: each stream parser's bits: its anchors', its info anchors' and its floor anchors'
_PARSER_BITS = tuple(
    (1 << (_STREAM + j)) | (1 << (_INFO + j)) | (1 << (_FLOOR + j))
    for j in range(len(STREAM_PARSERS))
)


@dataclass(slots=True)
class Section:
    """A stretch of one source holding one kind of evidence, and its facts."""

    kind: str
    source: str
    start: int
    end: int
    facts: list[Fact] = field(default_factory=list)
    line_count: int = 0
    ranks: set[int] = field(default_factory=set)
    hosts: set[str] = field(default_factory=set)


@dataclass(slots=True)
class SourceSummary:
    """What was read from one source: size, lines, kinds, and what went wrong."""

    source: str
    bytes_read: int = 0
    lines: int = 0
    recognised_lines: int = 0
    kinds: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ReadResult:
    """Everything read from the user's inputs."""

    sections: list[Section]
    sources: list[SourceSummary]
    notes: list[Note]

    @property
    def facts(self) -> list[Fact]:
        """All facts of all sections, in reading order."""
        return [fact for section in self.sections for fact in section.facts]


_PREFILTERS: dict[str, Prefilter] = {}


def _prefilter(key: str) -> Prefilter:
    """A compiled prefilter: ``""`` for every always-anchor, a parser's kind for its info
    anchors, ``floor:`` and its kind for its floor anchors.

    The first has one group per parser (and the fences), so its spans say
    which parsers a line is for. Info and floor anchors get prefilters of
    their own so that, when a parser's budget is spent, the reader simply
    stops scanning with that one: no recompiling.
    """
    found = _PREFILTERS.get(key)
    if found is None:
        if key.startswith("floor:"):
            anchors = [a for p in STREAM_PARSERS if p.kind == key[6:] for a in p.floor_anchors]
            found = make_prefilter(anchors, cache=True)
        elif key:
            anchors = [a for p in STREAM_PARSERS if p.kind == key for a in p.info_anchors]
            found = make_prefilter(anchors, cache=True)
        else:
            found = make_prefilter((), cache=True, groups=_GROUPS[:_INFO])
        _PREFILTERS[key] = found
    return found


def _mask_of(text: str) -> int:
    """The groups whose anchors ``text`` holds (what the prefilter tells of bytes, for a str)."""
    mask = 0
    for bit, group in enumerate(_GROUPS):
        if any(a in text for a in group):
            mask |= 1 << bit
    return mask


@functools.lru_cache(maxsize=64)
def _any_of(anchors: tuple[str, ...]) -> re.Pattern[bytes]:
    """One pattern over bytes for any of ``anchors`` (the same few sets in every source)."""
    words = sorted({a.encode() for a in anchors}, key=len, reverse=True)
    return re.compile(b"|".join(map(re.escape, words)))


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 and not n % (1 << 20) else f"{n} bytes"


def info_floor(parser: StreamParser) -> int:
    """The lines holding its floor anchors each source looks at, past the budget too."""
    return INFO_FLOOR if parser.info_floor is None else parser.info_floor


@dataclass(slots=True)
class Budgets:
    """What all the sources of one read share, so a thousand files cost what one large one does.

    ``text_bytes``: bytes of small sources still to be read as free text.
    ``info``: informational lines still to be read, per parser kind; a source
    reads up to :data:`INFO_BUDGET` of a kind while the read has them left
    (past it, only the first line of each process holding the parser's
    ``floor_anchors``). ``floored`` counts, per kind, the sources holding
    such lines that began past the budget, and ``texts_skipped`` the small
    sources read without free text, for one coverage note each.
    :meth:`buffer` is the memory small sources are read into.
    """

    text_bytes: int = field(default_factory=lambda: TEXT_TOTAL_BYTES)
    info: dict[str, int] = field(default_factory=dict)
    floored: dict[str, int] = field(default_factory=dict)
    texts_skipped: int = 0
    _buffer: bytearray = field(default_factory=bytearray, repr=False)

    def buffer(self) -> bytearray:
        """The memory small sources are read into, one after the other (see :func:`_reads`)."""
        if len(self._buffer) != CHUNK_BYTES:
            self._buffer = bytearray(CHUNK_BYTES)
        return self._buffer

    def info_limit(self, parser: StreamParser) -> int:
        """The informational lines of ``parser``'s kind the next source may read."""
        return min(INFO_BUDGET, self.info.get(parser.kind, INFO_BUDGET))

    def notes(self) -> list[Note]:
        """The coverage notes of the whole read."""
        floors = {p.kind: p.floor_anchors for p in STREAM_PARSERS}
        out = [
            Note(
                "(all inputs)",
                f"{kind}: {count} more source(s) read none of its informational lines (the "
                f"{INFO_BUDGET} lines of the whole read were spent)"
                + (
                    f" but the first of each process holding {', '.join(floors[kind])}"
                    if floors.get(kind)
                    else ""
                )
                + "; warnings and errors were read in full",
            )
            for kind, count in self.floored.items()
        ]
        if self.texts_skipped:
            out.append(
                Note(
                    "(all inputs)",
                    f"free text: {self.texts_skipped} small source(s) past the first "
                    f"{_size(TEXT_TOTAL_BYTES)} of free text were read for known evidence "
                    "only (lines no parser claims were not kept)",
                )
            )
        return out


def newlines(data: bytes | bytearray, start: int, stop: int) -> int:
    """The newlines in ``data[start:stop]``, counted at ``memchr`` speed.

    ``bytes.count`` of one byte is a byte-by-byte loop in CPython (about
    1.3 GB/s, half of ``grep``'s whole time on a large log); deleting the
    newlines with ``replace`` finds them with ``memchr``, several times
    faster. The copies are made in pieces small enough to come from the
    allocator's free lists, not from fresh pages.
    """
    if stop - start <= _COUNT_PIECE:
        return data.count(b"\n", start, stop)
    found = 0
    for at in range(start, stop, _COUNT_PIECE):
        piece = data[at : min(at + _COUNT_PIECE, stop)]
        found += len(piece) - len(piece.replace(b"\n", b""))
    return found


def _reads(stream: BinaryIO, buffer: bytearray | None) -> Iterator[bytes | bytearray]:
    """The bytes of ``stream``, a chunk at a time: into ``buffer`` when one is given (each
    chunk valid until the next), else fresh bytes.

    A folder of a thousand 1 MiB logs read into fresh bytes costs a page fault
    per 4 KiB (the allocator gives the pages back between files): more than
    reading them. Reading a large file into the same memory is slower than
    into fresh bytes (measured: ~0.15 s a 512 MiB log), so large files do not.
    """
    readinto = getattr(stream, "readinto", None)
    if buffer is None or readinto is None:
        while data := stream.read(CHUNK_BYTES):
            yield data
        return
    view = memoryview(buffer)
    while n := readinto(view):
        yield buffer if n == len(buffer) else bytes(view[:n])


def _line_chunks(
    stream: BinaryIO,
    summary: SourceSummary,
    cut: Callable[[], None],
    buffer: bytearray | None = None,
) -> Iterator[tuple[bytes | bytearray, int, int]]:
    """Windows ``(data, start, stop)`` where ``data[start:stop]`` is a run of whole lines.

    Most windows lie in the bytes as read (no copy; with a ``buffer``, valid
    until the next window); a line that spans two reads is joined into a
    window of its own. A line longer than LINE_MAX_BYTES is cut there, and
    ``cut`` called.
    """
    tail = b""  # the start of a line whose end is not read yet
    skipping = False  # inside the rest of an over-long line
    for data in _reads(stream, buffer):
        summary.bytes_read += len(data)
        start = 0
        if skipping:
            nl = data.find(b"\n")
            if nl < 0:
                continue
            start, skipping = nl + 1, False
        if tail:
            nl = data.find(b"\n", start)
            piece = bytes(data[start:] if nl < 0 else data[start : nl + 1])
            if len(tail) + len(piece) > LINE_MAX_BYTES:
                line = (tail + piece)[:LINE_MAX_BYTES] + b"\n"
                cut()
                tail, skipping = b"", nl < 0
                yield line, 0, len(line)
                if nl < 0:
                    continue
                start = nl + 1
            elif nl < 0:
                tail += piece
                continue
            else:
                line, tail = tail + piece, b""
                yield line, 0, len(line)
                start = nl + 1
        last = data.rfind(b"\n", start)
        if last < 0:
            tail = bytes(data[start:])
        else:
            if last >= start:
                yield data, start, last + 1
            tail = bytes(data[last + 1 :])
        if len(tail) > LINE_MAX_BYTES:
            line = tail[:LINE_MAX_BYTES] + b"\n"
            cut()
            tail, skipping = b"", True
            yield line, 0, len(line)
    if tail:
        yield tail, 0, len(tail)


class _SourceReader:
    """Reads one source; see the module docstring for the model."""

    def __init__(self, opened: Opened, notes: list[Note], budgets: Budgets) -> None:
        self.name = safe_line(opened.name)
        self.notes = notes
        self.budgets = budgets
        self.summary = SourceSummary(self.name)
        self.attributor = Attributor(self.name, opened.default_rank)
        self.gate = LineGate()
        self.blocks: list[BlockParser] = [cls() for cls in BLOCK_PARSERS]
        self.streams: list[StreamParser] = [cls() for cls in STREAM_PARSERS]
        self.broken: set[str] = set()
        self.sections: list[Section] = []
        self.segment: dict[str, Section] = {}
        self.block: list[Line] | None = None
        self.block_parser: BlockParser | None = None
        self.block_cut = False
        self.any_open = False
        #: the stream parsers with a construct open (only feeding one changes whether it is)
        self.open_kinds: set[str] = set()
        self.lineno = 1
        self.info_used: dict[str, int] = {}
        self.info_off: set[str] = set()
        #: the info anchors of the kinds whose budget ended: never kept as free text, or only
        #: in a person's sentence (see StreamParser.info_in_prose)
        self.spent_output: tuple[str, ...] = ()
        self.spent_prose: tuple[str, ...] = ()
        #: ``spent_output`` as one pattern over bytes, for lines not decoded yet
        self.spent_bytes: re.Pattern[bytes] | None = None
        self.info_limit = {p.kind: budgets.info_limit(p) for p in self.streams}
        self.info_left = dict(self.info_limit)
        #: where a budget ends: the offset of its last line in the chunk, its kind and bit
        self.closing: dict[int, tuple[str, int]] = {}
        self.times: dict[int, tuple[float, str | None]] = {}
        self.text_limit = min(TEXT_MAX_BYTES, budgets.text_bytes)
        small = opened.size is None or opened.size <= TEXT_MAX_BYTES
        #: where its bytes are read (a file of a few chunks: the memory shared by the read)
        self.buffer = (
            budgets.buffer()
            if opened.size is not None and opened.size <= SHARED_BUFFER_MAX
            else None
        )
        self.text = small and (opened.size is None or opened.size <= self.text_limit)
        self.was_text = self.text
        if small and not self.text:
            budgets.texts_skipped += 1
        self.text_lines = 0
        self.cut_lines = 0
        self.fenced = False
        self.prefilter = _prefilter("")
        #: the info prefilters still scanned, each with its group's bit
        self.info_prefilters = {
            p.kind: (1 << (_INFO + j), _prefilter(p.kind))
            for j, p in enumerate(self.streams)
            if p.info_anchors
        }
        #: the floor prefilters still scanned, each with its group's bit, the lines each may
        #: still find, and the processes whose line was read (see :meth:`_floor_spans`)
        self.floor_prefilters = {
            p.kind: (1 << (_FLOOR + j), _prefilter("floor:" + p.kind))
            for j, p in enumerate(self.streams)
            if p.floor_anchors
        }
        self.floor_left = {p.kind: info_floor(p) for p in self.streams if p.floor_anchors}
        self.floor_seen: set[tuple[str, bytes]] = set()
        #: the groups still read: a chunk's spans are found before its lines spend a budget,
        #: and a line held only for a spent one is then passed undecoded like the rest
        self.wanted = (
            _ALWAYS_BITS
            | sum(bit for bit, _ in self.info_prefilters.values())
            | sum(bit for bit, _ in self.floor_prefilters.values())
        )
        #: the kinds that begin past their budget, each scanned for its first line only: whether
        #: the source held any (for the coverage note of all such sources)
        self.past_budget: dict[str, Prefilter] = {}
        for kind, (bit, prefilter) in list(self.info_prefilters.items()):
            if self.info_limit[kind] <= 0:
                del self.info_prefilters[kind]
                self.past_budget[kind] = prefilter
                self._spend(kind, bit)

    # -- the byte loop -------------------------------------------------
    def read(self, stream: BinaryIO) -> None:
        try:
            chunks = _line_chunks(stream, self.summary, self._cut, self.buffer)
            for data, start, stop in chunks:
                if self.text and self.summary.bytes_read > self.text_limit:
                    self.text = False  # a large stream: free text only from its start
                self._chunk(data, start, stop, self._spans(data, start, stop))
        finally:
            self._spent()
        self.summary.lines = self.lineno - 1  # a last line without a newline counts too
        if self.cut_lines:
            self.notes.append(
                Note(
                    self.name,
                    f"{self.cut_lines} line(s) longer than {LINE_MAX_BYTES} bytes were cut",
                )
            )
        self._close_block()
        for parser in self.streams:
            if parser.kind not in self.broken:
                self._attach(parser.kind, self._safe(parser, parser.finish))

    def _spans(self, data: bytes | bytearray, start: int, stop: int) -> list[Tagged]:
        """The lines of ``data[start:stop]`` holding an anchor, each with its groups' mask.

        A kind's informational lines are budgeted here: its scan stops at the
        lines it has left, and the prefilter is dropped when none are left.
        """
        spans = self.prefilter.tagged_spans(data, start, stop)
        for kind, prefilter in list(self.past_budget.items()):
            if prefilter.tagged_spans(data, start, stop, 1):
                del self.past_budget[kind]
                self.budgets.floored[kind] = self.budgets.floored.get(kind, 0) + 1
        if not self.info_prefilters and not self.floor_prefilters:
            return spans
        merged = {a: (b, m) for a, b, m in spans}
        for kind, (bit, prefilter) in list(self.info_prefilters.items()):
            left = self.info_left[kind]
            found = prefilter.tagged_spans(data, start, stop, left)
            if not found:
                continue
            self.info_used[kind] = self.info_used.get(kind, 0) + len(found)
            self.info_left[kind] = left - len(found)
            if len(found) == left:
                del self.info_prefilters[kind]
                self.closing[found[-1][0]] = (kind, bit)
            for a, b, _ in found:
                seen = merged.get(a)
                merged[a] = (b, bit) if seen is None else (b, seen[1] | bit)
        if self.floor_prefilters:
            self._floor_spans(data, start, stop, merged)
        return [(a, b, m) for a, (b, m) in sorted(merged.items())]

    def _floor_spans(
        self, data: bytes | bytearray, start: int, stop: int, merged: dict[int, tuple[int, int]]
    ) -> None:
        """Add to ``merged`` the lines of ``data[start:stop]`` that say who a process is (a
        parser's floor anchors): of the first ``info_floor`` a source holds, the first of each
        process (NCCL's host, pid and device), unless the budget read it already.

        A per-rank log prints an init line per communicator, hundreds; its first tells the
        rank, device and bus id. A log of a node's eight ranks tells eight.
        """
        for kind, (bit, prefilter) in list(self.floor_prefilters.items()):
            left = self.floor_left[kind]
            found = prefilter.tagged_spans(data, start, stop, left)
            if not found:
                continue
            self.floor_left[kind] = left - len(found)
            if len(found) == left:
                del self.floor_prefilters[kind]
            for a, b, _ in found:
                who = _NCCL_WHO.search(data, a, b)
                key = (kind, who[1] + who[2]) if who is not None else None
                seen = merged.get(a)
                if seen is not None:  # read for the budget
                    merged[a] = (b, seen[1] | bit)
                elif key is None or key not in self.floor_seen:
                    merged[a] = (b, bit)
                else:
                    continue
                if key is not None:
                    self.floor_seen.add(key)

    def _spent(self) -> None:
        """Give back to the read what this source did not use of the shared budgets."""
        budgets = self.budgets
        if self.was_text:
            budgets.text_bytes -= min(self.summary.bytes_read, self.text_limit)
        for kind, used in self.info_used.items():
            budgets.info[kind] = max(0, budgets.info.get(kind, INFO_BUDGET) - used)

    def _chunk(self, buf: bytes | bytearray, pos: int, size: int, spans: Sequence[Tagged]) -> None:
        """Read the lines of ``buf[pos:size]``; ``spans`` are those holding an anchor."""
        n, si = self.lineno, 0
        while pos < size:
            while si < len(spans) and spans[si][0] < pos:
                si += 1
            in_block = self.block is not None or self.any_open
            if self.text and not in_block and (blank := _BLANKS.match(buf, pos, size)):
                # free text: blank lines are read by nothing (a blank line and a skipped one
                # end the attributor's context alike), so a run of them is passed at once
                n += newlines(buf, pos, blank.end())
                pos = blank.end()
                continue
            if in_block or self.text:
                end = buf.find(b"\n", pos, size)
                if end < 0:
                    end = size
                mask = spans[si][2] & self.wanted if si < len(spans) and spans[si][0] == pos else 0
                if (
                    mask
                    or in_block
                    or end - pos > LINE_MAX_BYTES
                    or (
                        not _NCCL_INFO.match(buf, pos, end)
                        and not (self.spent_bytes and self.spent_bytes.search(buf, pos, end))
                    )
                ):
                    self._line(n, buf[pos:end], mask)
                    if self.closing and pos in self.closing:
                        self._close_info(self.closing.pop(pos), n)
                # else: an INFO line of NCCL's no parser asked for, which free text never
                # keeps (see _unclaimed), or an informational line past its kind's budget
                # (see _past_budget); skipped undecoded, as in a large source
            elif si < len(spans):
                start, end, mask = spans[si]
                si += 1
                if not mask & self.wanted:
                    continue  # only for a spent budget: passed with the lines around it
                n += newlines(buf, pos, start)
                self._line(n, buf[start:end], mask & self.wanted)
                if self.closing and start in self.closing:
                    self._close_info(self.closing.pop(start), n)
            else:
                n += newlines(buf, pos, size)
                if buf[size - 1] != 10:
                    n += 1
                break
            n += 1
            pos = end + 1
        self.lineno = n

    # -- one line --------------------------------------------------------
    def _cut(self) -> None:
        self.cut_lines += 1

    def _line(self, number: int, data: bytes | bytearray, mask: int) -> None:
        """Read one line; ``mask`` has the bits of the anchor groups it holds (0: none)."""
        if len(data) > LINE_MAX_BYTES:  # one that fit in a chunk (longer ones are cut there)
            data = data[:LINE_MAX_BYTES]
            self._cut()
        decoded = data.decode("utf-8", "replace")
        decoded = decoded.removesuffix("\r")
        if "\r" in decoded:
            decoded = decoded.replace("\r", " ")
        raw = self.gate(number, decoded)
        if mask and raw != decoded:
            # the gate took something out: what is left (a floor line only as the scan found it)
            mask = _mask_of(raw) & self.wanted & (mask | ~_FLOOR_BITS)
        line = self.attributor.line(number, raw)
        if line.time_s is not None:
            self.times[number] = (line.time_s, line.clock)
        if _FENCE.match(line.text):
            self._close_block()
            self.segment = {}
            self.fenced = not self.fenced
            return
        if self.block is not None and self.block_parser is not None:
            if len(self.block) >= self.block_parser.max_lines:
                self.block_cut = True
            elif self._accepts(self.block_parser, line, self.block):
                self.block.append(line)
                return
            self._close_block()
        tried: set[str] = set()
        if self.any_open:
            for parser in self.streams:
                if parser.open and parser.kind not in self.broken:
                    tried.add(parser.kind)
                    if self._feed(parser, line):
                        return
        if not mask:
            self._unclaimed(line)
            return
        if mask & _BLOCK_BITS:
            for bit, block_parser in enumerate(self.blocks):
                if block_parser.kind in self.broken:
                    continue
                if mask & (1 << bit) and self._starts(block_parser, line):
                    self.segment = {}
                    self.block, self.block_parser, self.block_cut = [line], block_parser, False
                    return
        for j, parser in enumerate(self.streams):
            if parser.kind in tried or parser.kind in self.broken:
                continue
            # its anchors, or its informational ones while budgeted (see self.wanted)
            if mask & _PARSER_BITS[j] and self._feed(parser, line):
                return
        self._unclaimed(line)

    def _past_budget(self, line: Line) -> bool:
        """Whether ``line`` is an informational line of a kind whose budget ended (its coverage
        note says the later ones were skipped): a small source is read line by line, and such
        lines are not kept as free text either (a sentence naming a variable still is)."""
        raw = line.raw
        if any(a in raw for a in self.spent_output):
            return True
        return any(a in raw for a in self.spent_prose) and not is_prose(line.text)

    def _unclaimed(self, line: Line) -> None:
        """Keep a line no parser claimed as free text, while the source is small."""
        if not self.text or not line.text.strip() or line.text.startswith("NCCL INFO"):
            return  # NCCL's INFO lines no parser wanted are detail, not free text
        if self._past_budget(line):
            return
        if self.text_lines >= TEXT_MAX_LINES:
            self.text = False
            self.notes.append(
                Note(self.name, f"free text: kept the first {TEXT_MAX_LINES} unclaimed lines")
            )
            return
        self.text_lines += 1
        section = self.segment.get(TEXT_KIND)
        if section is None:
            section = self.segment[TEXT_KIND] = Section(
                TEXT_KIND, self.name, line.number, line.number
            )
            self.sections.append(section)
        section.end = line.number
        section.line_count += 1
        if line.rank is not None:
            section.ranks.add(line.rank)
        if line.host is not None:
            section.hosts.add(line.host)
        section.facts.append(
            TextLine(
                cite=Cite.of(line.source, line.number, line.raw),
                rank=line.rank,
                host=line.host,
                text=line.text.strip(),
                fenced=self.fenced,
            )
        )

    def _spend(self, kind: str, bit: int) -> None:
        """No more informational lines of ``kind`` (its group's ``bit``) in this source."""
        self.info_off.add(kind)
        self.wanted &= ~bit
        j = bit.bit_length() - 1 - _INFO
        if STREAM_PARSERS[j].info_in_prose:
            self.spent_prose += _GROUPS[_INFO + j]
        else:
            self.spent_output += _GROUPS[_INFO + j]
            self.spent_bytes = _any_of(self.spent_output)

    def _close_info(self, closing: tuple[str, int], number: int) -> None:
        """A kind's informational budget ended at line ``number``: no more of its lines."""
        kind, bit = closing
        limit = self.info_limit[kind]
        self._spend(kind, bit)
        self.notes.append(
            Note(
                self.name,
                f"{kind}: read the first {limit} informational lines (to line "
                f"{number}); later ones of that kind were skipped, warnings and errors were not",
            )
        )

    # -- blocks ----------------------------------------------------------
    def _close_block(self) -> None:
        block, parser = self.block, self.block_parser
        self.block, self.block_parser = None, None
        if block is None or parser is None:
            return
        end = self._guarded(parser, lambda: parser.trim(block), len(block))
        keep = block[: max(1, end if isinstance(end, int) else len(block))]
        section = Section(parser.kind, self.name, keep[0].number, keep[-1].number)
        section.line_count = len(keep)
        section.ranks.update(x.rank for x in keep if x.rank is not None)
        section.hosts.update(x.host for x in keep if x.host is not None)
        section.facts = self._safe(parser, lambda: parser.parse(keep))
        if not section.facts:
            return  # looked like the tool's output but held nothing readable
        self.summary.recognised_lines += len(keep)
        self.sections.append(section)
        if self.block_cut:
            self.notes.append(
                Note(
                    self.name,
                    f"{parser.kind} block at line {keep[0].number} cut at {parser.max_lines} lines",
                )
            )

    def _accepts(self, parser: BlockParser, line: Line, block: list[Line]) -> bool:
        return self._guarded(parser, lambda: parser.accepts(line, block), False, line.number)

    def _starts(self, parser: BlockParser, line: Line) -> bool:
        return self._guarded(parser, lambda: parser.starts(line), False, line.number)

    # -- streams ---------------------------------------------------------
    def _feed(self, parser: StreamParser, line: Line) -> bool:
        try:
            taken = parser.feed(line)
            opened = parser.open
        except Exception as exc:  # noqa: BLE001 -- a parser bug must not end the read
            self._broke(parser.kind, line.number, exc)
            self.open_kinds.discard(parser.kind)
            self.any_open = bool(self.open_kinds)
            return False
        if taken:
            section = self.segment.get(parser.kind)
            if section is None:
                section = Section(parser.kind, self.name, line.number, line.number)
                self.segment[parser.kind] = section
                self.sections.append(section)
            section.end = line.number
            section.line_count += 1
            if line.rank is not None:
                section.ranks.add(line.rank)
            if line.host is not None:
                section.hosts.add(line.host)
            self.summary.recognised_lines += 1
        self._attach(parser.kind, self._safe(parser, parser.take))
        if opened:
            self.open_kinds.add(parser.kind)
        else:
            self.open_kinds.discard(parser.kind)
        self.any_open = bool(self.open_kinds)
        return taken

    def _attach(self, kind: str, facts: list[Fact]) -> None:
        for fact in facts:
            self._section_for(kind, fact.cite.line).facts.append(fact)

    def _section_for(self, kind: str, number: int) -> Section:
        for section in reversed(self.sections):
            if section.kind == kind and section.start <= number:
                return section
        for section in self.sections:
            if section.kind == kind:
                return section
        section = Section(kind, self.name, number, number)
        self.sections.append(section)
        return section

    # -- safety ----------------------------------------------------------
    def _guarded(
        self,
        parser: BlockParser | StreamParser,
        call: Callable[[], T],
        default: T,
        number: int | None = None,
    ) -> T:
        """``call()``, or ``default`` when the parser raises (it is then set aside)."""
        try:
            return call()
        except Exception as exc:  # noqa: BLE001 -- a parser bug must not end the read
            self._broke(parser.kind, number, exc)
            return default

    def _safe(
        self, parser: BlockParser | StreamParser, call: Callable[[], list[Fact]]
    ) -> list[Fact]:
        """The facts ``call`` returns, keeping only facts, or none when it raises."""
        found: list[Fact] = self._guarded(parser, call, [])
        return [f for f in found if isinstance(f, Fact)]

    def _broke(self, kind: str, number: int | None, exc: Exception) -> None:
        self.broken.add(kind)
        where = f" at line {number}" if number is not None else ""
        self.notes.append(
            Note(
                self.name,
                f"internal error in the {kind} parser{where} "
                f"({type(exc).__name__}: {exc}); the rest of this source was read without it",
            )
        )


def _timed(fact: Fact, times: dict[int, tuple[float, str | None]]) -> Fact:
    """``fact`` with its cited line's timestamp, where the line had one."""
    if fact.time_s is not None:
        return fact
    found = times.get(fact.cite.line)
    if found is None:
        return fact
    return dataclasses.replace(fact, time_s=found[0], clock=found[1])


def _gated(fact: Fact) -> Fact:
    """``fact`` with every string in it through the gate (for facts not read line by line)."""
    changes: dict[str, Any] = {}
    for f in dataclasses.fields(fact):
        value = getattr(fact, f.name)
        clean: object
        if isinstance(value, str):
            clean = scrub(value)
        elif isinstance(value, tuple) and any(isinstance(v, str) for v in value):
            clean = tuple(scrub(v) if isinstance(v, str) else v for v in value)
        elif isinstance(value, Cite):
            clean = Cite(value.source, value.line, scrub(value.text))
        else:
            continue
        if clean != value:
            changes[f.name] = clean
    return dataclasses.replace(fact, **changes) if changes else fact


def _read_whole(opened: Opened, notes: list[Note]) -> tuple[list[Section], SourceSummary]:
    """A whole-file kind (a flight-recorder dump, a JSON RAS report): read at once, parsed."""
    name = safe_line(opened.name)
    summary = SourceSummary(name)
    parser = next(p for p in FILE_PARSERS if p.kind == opened.file_kind)()
    try:
        data = opened.stream.read(parser.max_bytes + 1)
    except OSError as exc:
        notes.append(Note(name, f"read failed part way: {exc}"))
        return [], summary
    summary.bytes_read = len(data)
    try:
        facts, messages = parser.parse(data, name, opened.default_rank)
    except Exception as exc:  # noqa: BLE001 -- a parser bug must not end the read
        facts, messages = [], [f"internal error in the {parser.kind} parser ({exc!r})"]
    notes.extend(Note(name, m) for m in messages)
    if not facts:
        return [], summary
    facts = [_gated(f) for f in facts]
    section = Section(parser.kind, name, 1, max(f.cite.line for f in facts), facts)
    section.line_count = section.end
    section.ranks.update(f.rank for f in facts if f.rank is not None)
    summary.lines = summary.recognised_lines = section.end
    summary.kinds = [parser.kind]
    return [section], summary


def read_opened(
    opened: Opened, notes: list[Note], budgets: Budgets | None = None
) -> tuple[list[Section], SourceSummary]:
    """Read one opened stream into sections (``budgets``: those of the whole read)."""
    if opened.file_kind is not None:
        return _read_whole(opened, notes)
    reader = _SourceReader(opened, notes, budgets if budgets is not None else Budgets())
    try:
        reader.read(opened.stream)
    except OSError as exc:
        notes.append(Note(reader.name, f"read failed part way: {exc}"))
    sections = sorted(reader.sections, key=lambda s: s.start)
    if reader.times:
        for section in sections:
            section.facts = [_timed(f, reader.times) for f in section.facts]
    reader.summary.kinds = sorted({s.kind for s in sections})
    if not sections and reader.summary.lines:
        notes.append(Note(reader.name, UNKNOWN))
    return sections, reader.summary


def read_paths(paths: Sequence[str]) -> ReadResult:
    """Read every file, folder, archive or ``-`` (stdin) named."""
    intake = Intake()
    sections: list[Section] = []
    summaries: list[SourceSummary] = []
    notes: list[Note] = []
    budgets = Budgets()
    for opened in intake.streams(paths):
        found, summary = read_opened(opened, notes, budgets)
        sections.extend(found)
        summaries.append(summary)
    notes.extend(budgets.notes())
    ranks = process_ranks([f for s in sections for f in s.facts])
    if ranks:
        for section in sections:
            section.facts = assign_ranks(section.facts, ranks)
    gated = [Note(safe_line(n.source), safe_line(n.message)) for n in intake.notes + notes]
    return ReadResult(sections, summaries, gated)
