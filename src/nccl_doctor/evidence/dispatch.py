"""One source's lines, decoded, through the gate, the attributor and the parsers, into sections.

Every line that is decoded passes one gate first (:class:`LineGate`): control
characters and terminal escapes are stripped and secrets redacted, so no fact,
citation or output format ever holds them. The attributor peels the prefixes
that say who printed it; then a block in progress (a tool's table) or a
stream parser with a construct open (a traceback) is offered the line first,
then the parsers whose anchors the line holds (the bits of ``mask``, from the
prefilter's scan), then free text keeps it, while the source is small (see
:mod:`nccl_doctor.evidence.sections` for how lines make sections). A parser
that raises is set aside for the rest of the source, with a note.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from nccl_doctor.evidence import chunks
from nccl_doctor.evidence.anchors import BLOCK_BITS, FLOOR_BITS, PARSER_BITS, mask_of
from nccl_doctor.evidence.budgets import TEXT_MAX_LINES
from nccl_doctor.evidence.intake import Note
from nccl_doctor.evidence.lines import Attributor, Line
from nccl_doctor.evidence.own_output import NOT_EVIDENCE, STRETCH_OPENERS, Stretch, stretch_at
from nccl_doctor.evidence.sections import TEXT_KIND, Section, SourceSummary
from nccl_doctor.facts.base import CITE_TEXT_MAX, Cite, Fact
from nccl_doctor.facts.store import is_prose
from nccl_doctor.facts.text import TextLine
from nccl_doctor.parse import BLOCK_PARSERS, STREAM_PARSERS
from nccl_doctor.parse.base import BlockParser, StreamParser
from nccl_doctor.redact import LineGate

T = TypeVar("T")

#: A fence line: the fence and at most an info string (not Python's ``~~~^^^`` carets).
_FENCE = re.compile(r"\s*(?:```+|~~~+)\s*(?:[\w+.-]+\s*)?$")
#: No parser tried yet (the common case: none has a construct open).
_NONE: frozenset[str] = frozenset()


class LineDispatch:
    """The lines of one source -> parsers -> sections; :class:`~.source.SourceReader` reads
    the bytes and says which lines to decode."""

    def __init__(self, name: str, default_rank: int | None, notes: list[Note]) -> None:
        self.name = name
        self.notes = notes
        self.summary = SourceSummary(name)
        self.attributor = Attributor(name, default_rank)
        self.gate = LineGate()
        #: each block parser, made when a line first holds its anchors (most sources hold none)
        self.blocks: list[BlockParser | None] = [None] * len(BLOCK_PARSERS)
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
        #: the anchor groups whose lines are still read (the reader drops spent budgets' bits)
        self.wanted = -1
        #: the info anchors of the kinds whose budget ended: never kept as free text, or only
        #: in a person's sentence (see StreamParser.info_in_prose)
        self.spent_output: tuple[str, ...] = ()
        self.spent_prose: tuple[str, ...] = ()
        #: the timestamp of each line read that had one, by line number
        self.times: dict[int, tuple[float, str | None]] = {}
        #: whether unclaimed lines are kept as free text (a small source), and how many were
        self.text = False
        self.text_lines = 0
        self.cut_lines = 0
        self.fenced = False
        #: the stretch of nccl-doctor's own output being passed over, and those passed
        self.own: Stretch | None = None
        self.owns: list[Stretch] = []

    # -- one line --------------------------------------------------------
    def _cut(self) -> None:
        self.cut_lines += 1

    def _line(self, number: int, data: bytes | bytearray, mask: int, scanned: bool = False) -> None:
        """Read one line; ``mask`` has the bits of the anchor groups it holds (0: none),
        ``scanned`` says the scan found no word a secret follows in it (see the gate)."""
        if len(data) > chunks.LINE_MAX_BYTES:  # one that fit in a chunk (longer ones are cut there)
            data = data[: chunks.LINE_MAX_BYTES]
            self._cut()
        decoded = data.decode("utf-8", "replace")
        decoded = decoded.removesuffix("\r")
        if "\r" in decoded:
            decoded = decoded.replace("\r", " ")
        raw = self.gate(number, decoded, scanned)
        if mask and raw != decoded:
            # the gate took something out: what is left (a floor line only as the scan found it)
            mask = mask_of(raw) & self.wanted & (mask | ~FLOOR_BITS)
        line = self.attributor.line(number, raw)
        if line.time_s is not None:
            self.times[number] = (line.time_s, line.clock)
        text = line.text
        if self.own is not None:
            if self.own.takes(text, number):
                return
            self.own = None
        if text.startswith(STRETCH_OPENERS):
            self.own = stretch_at(text, number)
            if self.own is not None:  # nccl-doctor's own output, never evidence
                self.owns.append(self.own)
                self._boundary()
                return
        if ("```" in text or "~~~" in text) and _FENCE.match(text):  # (the match needs one)
            self._boundary()
            self.fenced = not self.fenced
            return
        if self.block is not None and self.block_parser is not None:
            if len(self.block) >= self.block_parser.max_lines:
                self.block_cut = True
            elif self._accepts(self.block_parser, line, self.block):
                self.block.append(line)
                return
            self._close_block()
        self._claim(line, mask)

    def _claim(self, line: Line, mask: int, *, replayed: bool = False) -> None:
        """Offer ``line`` to the open constructs, then to the parsers its anchors name, else keep
        it as free text; ``replayed``: a block's only line that held nothing readable, offered
        again to all but the block parsers (free text keeps it as a sentence only)."""
        tried: set[str] | frozenset[str] = _NONE
        if self.any_open:
            tried = set()
            for parser in self.streams:
                if parser.open and parser.kind not in self.broken:
                    tried.add(parser.kind)
                    if self._feed(parser, line):
                        self._paragraph(line)
                        return
        if not mask:
            self._unclaimed(line, replayed=replayed)
            return
        if mask & BLOCK_BITS and not replayed:
            for bit, cls in enumerate(BLOCK_PARSERS):
                if not mask & (1 << bit) or cls.kind in self.broken:
                    continue
                block_parser = self.blocks[bit]
                if block_parser is None:
                    block_parser = self.blocks[bit] = cls()
                if self._starts(block_parser, line):
                    self.segment = {}
                    self.block, self.block_parser, self.block_cut = [line], block_parser, False
                    return
        for j, parser in enumerate(self.streams):
            # its anchors, or its informational ones while budgeted (see self.wanted)
            if (
                mask & PARSER_BITS[j]
                and parser.kind not in tried
                and parser.kind not in self.broken
                and self._feed(parser, line)
            ):
                self._paragraph(line)
                return
        self._unclaimed(line, replayed=replayed)

    def _paragraph(self, line: Line) -> None:
        """Keep a person's paragraph a parser claimed (it quotes an error) as free text too,
        where it runs past what a citation holds: the rest of its sentences are the
        reporter's, and no fact of the parser's keeps them."""
        if not self.fenced and len(line.text) > CITE_TEXT_MAX and is_prose(line.text):
            self._unclaimed(line, claimed=True)

    def _boundary(self) -> None:
        """A stretch of the source ends (a code fence, nccl-doctor's own output): no table
        and no construct goes on across it, and a new segment begins."""
        self._close_block()
        for parser in self.streams:
            if parser.open and parser.kind not in self.broken:
                self._attach(parser.kind, self._safe(parser, parser.boundary))
                if not parser.open:
                    self.open_kinds.discard(parser.kind)
        self.any_open = bool(self.open_kinds)
        self.segment = {}

    def own_note(self) -> None:
        """Say which lines were nccl-doctor's own output and passed over (at the source's end)."""
        if not self.owns:
            return
        lines = sum(s.lines for s in self.owns)
        shown = ", ".join(f"{s.what} at line {s.first}" for s in self.owns[:3])
        more = f" and {len(self.owns) - 3} more" if len(self.owns) > 3 else ""
        self.notes.append(
            Note(
                self.name,
                f"{lines} line(s) of nccl-doctor's own output ({shown}{more}), {NOT_EVIDENCE}",
            )
        )

    def _past_budget(self, line: Line) -> bool:
        """Whether ``line`` is an informational line of a kind whose budget ended (its coverage
        note says the later ones were skipped): a small source is read line by line, and such
        lines are not kept as free text either (a sentence naming a variable still is)."""
        raw = line.raw
        if any(a in raw for a in self.spent_output):
            return True
        return any(a in raw for a in self.spent_prose) and not is_prose(line.text)

    def _unclaimed(self, line: Line, *, claimed: bool = False, replayed: bool = False) -> None:
        """Keep a line no parser claimed as free text, while the source is small (``claimed``:
        a paragraph a parser read too, see :meth:`_paragraph`; ``replayed``: a line of a block
        that held nothing readable, kept only when it is a person's sentence)."""
        if not self.text or not line.text.strip() or line.text.startswith("NCCL INFO"):
            return  # NCCL's INFO lines no parser wanted are detail, not free text
        if replayed and not is_prose(line.text):
            return  # a row of a tool's table is not a sentence
        if self._past_budget(line):
            return
        if self.text_lines >= TEXT_MAX_LINES:
            self.text = False
            self.notes.append(
                Note(self.name, f"free text: kept the first {TEXT_MAX_LINES} unclaimed lines")
            )
            return
        self.text_lines += 1
        section = self._segment_line(TEXT_KIND, line)
        section.facts.append(
            TextLine(
                cite=Cite.of(line.source, line.number, line.raw),
                rank=line.rank,
                host=line.host,
                text=line.text.strip(),
                fenced=self.fenced,
                claimed=claimed,
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
            # a block of the tool's output with nothing to tell (a manifest of a job that
            # ended well), or one line that only looked like its start: that line is read
            # again as any other (a person's sentence naming the command is not lost)
            if len(keep) == 1:
                self._claim(keep[0], mask_of(keep[0].raw) & self.wanted, replayed=True)
            return
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
            self._segment_line(parser.kind, line)
            self.summary.recognised_lines += 1
        self._attach(parser.kind, self._safe(parser, parser.take))
        if opened:
            self.open_kinds.add(parser.kind)
        else:
            self.open_kinds.discard(parser.kind)
        self.any_open = bool(self.open_kinds)
        return taken

    def _segment_line(self, kind: str, line: Line) -> Section:
        """The section of ``kind`` of the current segment, ``line`` counted in it."""
        section = self.segment.get(kind)
        if section is None:
            section = self.segment[kind] = Section(kind, self.name, line.number, line.number)
            self.sections.append(section)
        section.end = line.number
        section.line_count += 1
        if line.rank is not None:
            section.ranks.add(line.rank)
        if line.host is not None:
            section.hosts.add(line.host)
        return section

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
