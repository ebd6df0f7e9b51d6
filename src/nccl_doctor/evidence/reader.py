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

Sections: each block is a section of its own kind. Stream lines (logs) form
one section per kind within a *segment*, the stretch between blocks and
Markdown code fences, so a pasted issue splits into its pieces while a
gigabyte log of one kind stays one section.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO, TypeVar

from nccl_doctor.evidence.intake import Intake, Note, Opened
from nccl_doctor.evidence.lines import Attributor, Line
from nccl_doctor.evidence.prefilter import Prefilter, make_prefilter
from nccl_doctor.facts.attribution import assign_ranks, process_ranks
from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.text import TextLine
from nccl_doctor.parse import BLOCK_PARSERS, FILE_PARSERS, STREAM_PARSERS
from nccl_doctor.parse.base import INFO_BUDGET, BlockParser, StreamParser
from nccl_doctor.redact import LineGate, safe_line, scrub

T = TypeVar("T")

#: Bytes read at a time.
CHUNK_BYTES = 512 << 10
#: Longer lines are cut to this many bytes (with a coverage note): no message needs more,
#: and it bounds what one line costs the parsers, whatever their patterns.
LINE_MAX_BYTES = 64 << 10
#: Sources up to this size (or of unknown size, up to this many bytes read)
#: keep their unclaimed lines as free text.
TEXT_MAX_BYTES = 1 << 20
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
    """A compiled prefilter: ``""`` for every always-anchor, a parser's kind for its info anchors.

    Info anchors get prefilters of their own so that, when a parser's budget
    is spent, the reader simply stops scanning with that one: no recompiling.
    """
    found = _PREFILTERS.get(key)
    if found is None:
        if key:
            anchors = [a for p in STREAM_PARSERS if p.kind == key for a in p.info_anchors]
        else:
            anchors = [a for p in BLOCK_PARSERS for a in p.anchors]
            anchors.extend(a for p in STREAM_PARSERS for a in p.anchors)
            anchors.extend(_FENCES)
        found = _PREFILTERS[key] = make_prefilter(anchors, cache=True)
    return found


def _merge(spans: list[list[tuple[int, int]]]) -> list[tuple[int, int]]:
    """The union of several prefilters' line spans, in order, each line once."""
    if len(spans) == 1:
        return spans[0]
    return sorted(set().union(*spans))


def _line_chunks(
    stream: BinaryIO, summary: SourceSummary, cut: Callable[[], None]
) -> Iterator[tuple[bytes, int, int]]:
    """Windows ``(data, start, stop)`` where ``data[start:stop]`` is a run of whole lines.

    Most windows lie in the bytes as read (no copy); a line that spans two
    reads is joined into a window of its own. A line longer than
    LINE_MAX_BYTES is cut there, and ``cut`` called.
    """
    tail = b""  # the start of a line whose end is not read yet
    skipping = False  # inside the rest of an over-long line
    while True:
        data = stream.read(CHUNK_BYTES)
        if not data:
            break
        summary.bytes_read += len(data)
        start = 0
        if skipping:
            nl = data.find(b"\n")
            if nl < 0:
                continue
            start, skipping = nl + 1, False
        if tail:
            nl = data.find(b"\n", start)
            piece = data[start:] if nl < 0 else data[start : nl + 1]
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
            tail = data[start:]
        else:
            if last >= start:
                yield data, start, last + 1
            tail = data[last + 1 :]
        if len(tail) > LINE_MAX_BYTES:
            line = tail[:LINE_MAX_BYTES] + b"\n"
            cut()
            tail, skipping = b"", True
            yield line, 0, len(line)
    if tail:
        yield tail, 0, len(tail)


_MATCHERS: dict[tuple[str, ...], re.Pattern[str]] = {}


def _matcher(anchors: tuple[str, ...]) -> re.Pattern[str]:
    """One compiled alternation of literal anchors, to test a line in a single call."""
    found = _MATCHERS.get(anchors)
    if found is None:
        words = sorted(set(anchors), key=len, reverse=True) or ["\x00\x00never"]
        found = _MATCHERS[anchors] = re.compile("|".join(map(re.escape, words)))
    return found


class _SourceReader:
    """Reads one source; see the module docstring for the model."""

    def __init__(self, opened: Opened, notes: list[Note]) -> None:
        self.name = safe_line(opened.name)
        self.notes = notes
        self.summary = SourceSummary(self.name)
        self.attributor = Attributor(self.name, opened.default_rank)
        self.gate = LineGate()
        self.blocks: list[BlockParser] = [cls() for cls in BLOCK_PARSERS]
        self.streams: list[StreamParser] = [cls() for cls in STREAM_PARSERS]
        self.any_block = _matcher(tuple(a for p in self.blocks for a in p.anchors)).search
        self.block_match = [_matcher(p.anchors).search for p in self.blocks]
        self.stream_match = [_matcher(p.anchors).search for p in self.streams]
        self.info_match = [_matcher(p.info_anchors).search for p in self.streams]
        self.broken: set[str] = set()
        self.sections: list[Section] = []
        self.segment: dict[str, Section] = {}
        self.block: list[Line] | None = None
        self.block_parser: BlockParser | None = None
        self.block_cut = False
        self.any_open = False
        self.lineno = 1
        self.info_used: dict[str, int] = {}
        self.info_off: set[str] = set()
        self.times: dict[int, tuple[float, str | None]] = {}
        self.text = opened.size is None or opened.size <= TEXT_MAX_BYTES
        self.text_lines = 0
        self.cut_lines = 0
        self.fenced = False
        self.prefilters = [_prefilter("")]
        self.prefilters.extend(_prefilter(p.kind) for p in self.streams if p.info_anchors)

    # -- the byte loop -------------------------------------------------
    def read(self, stream: BinaryIO) -> None:
        for data, start, stop in _line_chunks(stream, self.summary, self._cut):
            if self.text and self.summary.bytes_read > TEXT_MAX_BYTES:
                self.text = False  # a large stream: free text only from its start
            spans = _merge([p.window_spans(data, start, stop) for p in self.prefilters])
            self._chunk(data, start, stop, spans)
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

    def _chunk(self, buf: bytes, pos: int, size: int, spans: Sequence[tuple[int, int]]) -> None:
        """Read the lines of ``buf[pos:size]``; ``spans`` are those holding an anchor."""
        n, si = self.lineno, 0
        while pos < size:
            while si < len(spans) and spans[si][0] < pos:
                si += 1
            in_block = self.block is not None or self.any_open
            if self.text and not in_block and (blank := _BLANKS.match(buf, pos, size)):
                # free text: blank lines are read by nothing (a blank line and a skipped one
                # end the attributor's context alike), so a run of them is passed at once
                n += buf.count(b"\n", pos, blank.end())
                pos = blank.end()
                continue
            if in_block or self.text:
                end = buf.find(b"\n", pos, size)
                if end < 0:
                    end = size
                anchored = si < len(spans) and spans[si][0] == pos
                self._line(n, buf[pos:end], anchored)
            elif si < len(spans):
                start, end = spans[si]
                n += buf.count(b"\n", pos, start)
                self._line(n, buf[start:end], True)
                si += 1
            else:
                n += buf.count(b"\n", pos, size)
                if buf[size - 1] != 10:
                    n += 1
                break
            n += 1
            pos = end + 1
        self.lineno = n

    # -- one line --------------------------------------------------------
    def _cut(self) -> None:
        self.cut_lines += 1

    def _line(self, number: int, data: bytes, anchored: bool) -> None:
        if len(data) > LINE_MAX_BYTES:  # one that fit in a chunk (longer ones are cut there)
            data = data[:LINE_MAX_BYTES]
            self._cut()
        raw = data.decode("utf-8", "replace")
        raw = raw.removesuffix("\r")
        if "\r" in raw:
            raw = raw.replace("\r", " ")
        raw = self.gate(number, raw)
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
        if not anchored:
            self._unclaimed(line)
            return
        if self.any_block(raw):
            for block_parser, matches in zip(self.blocks, self.block_match, strict=True):
                if block_parser.kind in self.broken:
                    continue
                if matches(raw) and self._starts(block_parser, line):
                    self.segment = {}
                    self.block, self.block_parser, self.block_cut = [line], block_parser, False
                    return
        for parser, matches, info in zip(
            self.streams, self.stream_match, self.info_match, strict=True
        ):
            if parser.kind in tried or parser.kind in self.broken:
                continue
            if matches(raw):
                if self._feed(parser, line):
                    return
            elif parser.kind not in self.info_off and info(raw):
                self._spend_info(parser, number)
                if self._feed(parser, line):
                    return
        self._unclaimed(line)

    def _unclaimed(self, line: Line) -> None:
        """Keep a line no parser claimed as free text, while the source is small."""
        if not self.text or not line.text.strip() or line.text.startswith("NCCL INFO"):
            return  # NCCL's INFO lines no parser wanted are detail, not free text
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

    def _spend_info(self, parser: StreamParser, number: int) -> None:
        used = self.info_used[parser.kind] = self.info_used.get(parser.kind, 0) + 1
        if used < INFO_BUDGET:
            return
        self.info_off.add(parser.kind)
        self.prefilters.remove(_prefilter(parser.kind))
        self.notes.append(
            Note(
                self.name,
                f"{parser.kind}: read the first {INFO_BUDGET} informational lines (to line "
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
        self.any_open = opened or any(
            p.open for p in self.streams if p is not parser and p.kind not in self.broken
        )
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


def read_opened(opened: Opened, notes: list[Note]) -> tuple[list[Section], SourceSummary]:
    """Read one opened stream into sections."""
    if opened.file_kind is not None:
        return _read_whole(opened, notes)
    reader = _SourceReader(opened, notes)
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
    for opened in intake.streams(paths):
        found, summary = read_opened(opened, notes)
        sections.extend(found)
        summaries.append(summary)
    ranks = process_ranks([f for s in sections for f in s.facts])
    if ranks:
        for section in sections:
            section.facts = assign_ranks(section.facts, ranks)
    gated = [Note(safe_line(n.source), safe_line(n.message)) for n in intake.notes + notes]
    return ReadResult(sections, summaries, gated)
