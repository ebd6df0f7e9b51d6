"""Reads one source: the byte loop, the prefilter's spans, and the budgets as they are spent.

A source is read in chunks cut at line ends (:mod:`.chunks`). The prefilter's
scan finds the lines that hold any parser's anchor (:mod:`.anchors`); all
other lines are skipped without being decoded, which is what makes a
gigabyte of NCCL_DEBUG=INFO cheap. While a block (a tool's table) or a
multi-line construct (a traceback) is open, every line is looked at; so is
every line of a small source, whose unclaimed lines are kept as free text.

A kind's informational lines are budgeted as they are scanned (:mod:`.budgets`):
the same scan finds them with the anchors, a window reads as many as the kind
has left, and its group leaves the scan when none are left; past the budget, a
source reads only the first line of each of its processes that says who it is
(the parser's ``floor_anchors``, a scan of their own stopped at the last).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import BinaryIO

from nccl_doctor.evidence import chunks
from nccl_doctor.evidence.anchors import (
    ALWAYS_BITS,
    FLOOR,
    GROUPS,
    INFO,
    TRIGGER_BIT,
    any_of,
    first_of,
    floor_of,
    scan_of,
)
from nccl_doctor.evidence.budgets import Budgets, info_floor, is_small
from nccl_doctor.evidence.dispatch import LineDispatch
from nccl_doctor.evidence.intake import Note, Opened
from nccl_doctor.evidence.prefilter import Prefilter, Tagged
from nccl_doctor.parse import STREAM_PARSERS
from nccl_doctor.redact import safe_line

#: A run of blank lines (one character class: matched without backtracking marks).
_BLANKS = re.compile(rb"[ \t\r\n]*\n")
#: A line NCCL printed at INFO level, its prefix as :mod:`.lines` strips it: never free text.
_NCCL_INFO = re.compile(rb"[\w.-]+:\d+:\d+ \[\d+\] NCCL INFO ")


@functools.lru_cache(maxsize=4)
def _info_run(line_max: int) -> re.Pattern[bytes]:
    """Consecutive lines that free text never keeps: NCCL INFO lines (see :data:`_NCCL_INFO`),
    none longer than ``line_max`` bytes (a longer one is decoded, to be cut)."""
    return re.compile(
        rb"(?:(?=[^\n]{0,%d}\n)[\w.-]+:\d+:\d+ \[\d+\] NCCL INFO [^\n]*\n)+" % line_max
    )


#: Who printed an NCCL INFO line: its host and pid, and its CUDA device (not the thread).
_NCCL_WHO = re.compile(rb"([\w.-]+:\d+):\d+ (\[\d+\]) NCCL INFO ")


class SourceReader(LineDispatch):
    """Reads one source; see the module docstring for the model."""

    def __init__(
        self, opened: Opened, notes: list[Note], budgets: Budgets, *, line_total: bool = True
    ) -> None:
        super().__init__(safe_line(opened.name), opened.default_rank, notes)
        self.budgets = budgets
        self.lineno = 1
        #: the lines past the last one read, not counted yet (see :class:`.chunks.Uncounted`)
        self.uncounted = chunks.Uncounted()
        #: whether the source's line total is counted to its end (else only as far as needed)
        self.line_total = line_total
        self.info_used: dict[str, int] = {}
        self.info_off: set[str] = set()
        #: ``spent_output`` as one pattern over bytes, for lines not decoded yet
        self.spent_bytes: re.Pattern[bytes] | None = None
        self.info_limit = {p.kind: budgets.info_limit(p) for p in self.streams}
        self.info_left = dict(self.info_limit)
        #: where a budget ends: the offset of its last line in the chunk, its kind and bit
        self.closing: dict[int, tuple[str, int]] = {}
        self.text_limit = budgets.text_limit()
        small = is_small(opened.size)
        #: where its bytes are read (a file of a few chunks: the memory shared by the read)
        self.buffer = (
            budgets.buffer()
            if opened.size is not None and opened.size <= chunks.SHARED_BUFFER_MAX
            else None
        )
        self.text = small and (opened.size is None or opened.size <= self.text_limit)
        self.was_text = self.text
        if small and not self.text:
            budgets.texts_skipped += 1
        #: the info groups still read, each kind's bit (see :meth:`_budgeted`)
        self.info_open = {
            p.kind: 1 << (INFO + j) for j, p in enumerate(self.streams) if p.info_anchors
        }
        #: the floor groups still read, each kind's bit, the lines each may still find, and
        #: the processes whose line was read (see :meth:`_budgeted`)
        self.floor_left = {p.kind: info_floor(p) for p in self.streams if p.floor_anchors}
        self.floor_open = {
            p.kind: 1 << (FLOOR + j)
            for j, p in enumerate(self.streams)
            if p.floor_anchors and self.floor_left[p.kind] > 0
        }
        self.floor_seen: set[tuple[str, bytes]] = set()
        #: the groups still read: a chunk's spans are found before its lines spend a budget,
        #: and a line held only for a spent one is then passed undecoded like the rest
        self.wanted = (
            ALWAYS_BITS
            | sum(self.info_open.values())
            | sum(1 << (FLOOR + j) for j, p in enumerate(self.streams) if p.floor_anchors)
        )
        #: the kinds that begin past their budget, each looked for until its first line:
        #: whether the source held any (for the coverage note of all such sources)
        self.past_budget: list[str] = []
        for kind, bit in list(self.info_open.items()):
            if self.info_limit[kind] <= 0:
                del self.info_open[kind]
                self.past_budget.append(kind)
                self._spend(kind, bit)
        self.scan = self._scan_of()

    def _scan_of(self) -> Prefilter:
        """The scan of the always-anchors and the info groups this source still reads."""
        return scan_of(bit.bit_length() - 1 for bit in self.info_open.values())

    # -- the byte loop -------------------------------------------------
    def read(self, stream: BinaryIO) -> None:
        try:
            windows = chunks.line_chunks(stream, self.summary, self._cut, self.buffer)
            for data, start, stop in windows:
                if self.text and self.summary.bytes_read > self.text_limit:
                    self.text = False  # a large stream: free text only from its start
                self._chunk(data, start, stop, self._spans(data, start, stop))
        finally:
            self._spent()
        if self.uncounted and self.line_total:
            self.lineno += self.uncounted.count()
        # a last line without a newline counts too
        self.summary.lines = None if self.uncounted else self.lineno - 1
        if self.cut_lines:
            self.notes.append(
                Note(
                    self.name,
                    f"{self.cut_lines} line(s) longer than {chunks.LINE_MAX_BYTES} bytes were cut",
                )
            )
        self._close_block()
        for parser in self.streams:
            if parser.kind not in self.broken:
                self._attach(parser.kind, self._safe(parser, parser.finish))
        self.own_note()

    def _spans(self, data: bytes | bytearray, start: int, stop: int) -> list[Tagged]:
        """The lines of ``data[start:stop]`` holding an anchor, each with its groups' mask: one
        scan, with the info groups still read (see :meth:`_budgeted`)."""
        if self.past_budget:
            kinds = tuple(self.past_budget)
            present = first_of(kinds).groups_in(data, start, stop)
            for i, kind in enumerate(kinds):
                if present >> i & 1:
                    self.past_budget.remove(kind)
                    self.budgets.floored[kind] = self.budgets.floored.get(kind, 0) + 1
        spans = self.scan.tagged_spans(data, start, stop)
        if not self.info_open and not self.floor_open:
            return spans
        return self._budgeted(data, start, stop, spans)

    def _budgeted(
        self, data: bytes | bytearray, start: int, stop: int, spans: list[Tagged]
    ) -> list[Tagged]:
        """``spans`` with the info bits a source may still read, the others cleared (a line
        left with none is dropped), and the floor lines it reads (see :meth:`_floor_spans`).

        A kind's informational lines are budgeted here: the first of them, as many
        as it has left; when none are left its group leaves the scan.
        """
        info = [(kind, bit, self.info_left[kind]) for kind, bit in self.info_open.items()]
        used = [0] * len(info)
        last = [0] * len(info)
        merged: dict[int, tuple[int, int]] = {}
        for a, b, mask in spans:
            keep = mask & ALWAYS_BITS
            for i, (_, bit, left) in enumerate(info):
                if mask & bit and used[i] < left:
                    used[i] += 1
                    last[i] = a
                    keep |= bit
            if keep:
                merged[a] = (b, keep | mask & TRIGGER_BIT)
        for i, (kind, bit, left) in enumerate(info):
            if used[i]:
                self.info_used[kind] = self.info_used.get(kind, 0) + used[i]
                self.info_left[kind] = left - used[i]
                if used[i] == left:
                    del self.info_open[kind]
                    self.closing[last[i]] = (kind, bit)
                    self.scan = self._scan_of()
        if self.floor_open:
            self._floor_spans(data, start, stop, merged)
        return [(a, b, m) for a, (b, m) in sorted(merged.items())]

    def _floor_spans(
        self, data: bytes | bytearray, start: int, stop: int, merged: dict[int, tuple[int, int]]
    ) -> None:
        """Add to ``merged`` the lines of ``data[start:stop]`` that say who a process is (a
        parser's floor anchors): of the first ``info_floor`` a source holds, the first of each
        process (NCCL's host, pid and device), unless read already for another group.

        A per-rank log prints an init line per communicator, hundreds; its first tells the
        rank, device and bus id. A log of a node's eight ranks tells eight.
        """
        for kind, bit in list(self.floor_open.items()):
            left = self.floor_left[kind]
            found = floor_of(kind).tagged_spans(data, start, stop, left)
            if not found:
                continue
            self.floor_left[kind] = left - len(found)
            if len(found) == left:
                del self.floor_open[kind]
            for a, b, _ in found:
                who = _NCCL_WHO.search(data, a, b)
                key = (kind, who[1] + who[2]) if who is not None else None
                seen = merged.get(a)
                if seen is not None:  # read for another group
                    merged[a] = (b, seen[1] | bit)
                elif key is None or key not in self.floor_seen:
                    merged[a] = (b, bit | TRIGGER_BIT)  # not read for triggers: the gate looks
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
            budgets.spend_info(kind, used)

    def _chunk(self, buf: bytes | bytearray, pos: int, size: int, spans: Sequence[Tagged]) -> None:
        """Read the lines of ``buf[pos:size]``; ``spans`` are those holding an anchor."""
        n, si = self.lineno, 0
        if self.uncounted and (
            spans or self.text or self.block is not None or self.any_open or self.own is not None
        ):
            n += self.uncounted.count()  # a line of this window may be read: number it
        read_at = -1  # where the next line read for its anchors starts (see _next_read)
        while pos < size:
            while si < len(spans) and spans[si][0] < pos:
                si += 1
            in_block = self.block is not None or self.any_open or self.own is not None
            if self.text and not in_block:
                # free text: blank lines are read by nothing (a blank line and a skipped one
                # end the attributor's context alike), so a run of them is passed at once;
                # so is a run of NCCL's INFO lines up to the next one read for an anchor
                if read_at < pos:
                    read_at = self._next_read(spans, si, size)
                skip = _BLANKS.match(buf, pos, size) or _info_run(chunks.LINE_MAX_BYTES).match(
                    buf, pos, read_at
                )
                if skip:
                    n += chunks.newlines(buf, pos, skip.end())
                    pos = skip.end()
                    continue
            if in_block or self.text:
                end = buf.find(b"\n", pos, size)
                if end < 0:
                    end = size
                found = spans[si][2] if si < len(spans) and spans[si][0] == pos else TRIGGER_BIT
                mask = found & self.wanted
                if (
                    mask
                    or in_block
                    or end - pos > chunks.LINE_MAX_BYTES
                    or (
                        not _NCCL_INFO.match(buf, pos, end)
                        and not (self.spent_bytes and self.spent_bytes.search(buf, pos, end))
                    )
                ):
                    self._line(n, buf[pos:end], mask, not found & TRIGGER_BIT)
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
                n += chunks.newlines(buf, pos, start)
                self._line(n, buf[start:end], mask & self.wanted, not mask & TRIGGER_BIT)
                if self.closing and start in self.closing:
                    self._close_info(self.closing.pop(start), n)
            else:  # no line left to read: the rest is counted if a later line is read
                n += self.uncounted.hold(buf, pos, size)
                break
            n += 1
            pos = end + 1
        self.lineno = n

    def _next_read(self, spans: Sequence[Tagged], si: int, size: int) -> int:
        """Where the first of ``spans[si:]`` read for its anchors starts (else ``size``): no
        line before it is read for its anchors, now or after (budgets only end)."""
        wanted = self.wanted
        for start, _, mask in spans[si:]:
            if mask & wanted:
                return start
        return size

    def _spend(self, kind: str, bit: int) -> None:
        """No more informational lines of ``kind`` (its group's ``bit``) in this source."""
        self.info_off.add(kind)
        self.wanted &= ~bit
        j = bit.bit_length() - 1 - INFO
        if STREAM_PARSERS[j].info_in_prose:
            self.spent_prose += GROUPS[INFO + j]
        else:
            self.spent_output += GROUPS[INFO + j]
            self.spent_bytes = any_of(self.spent_output)

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
