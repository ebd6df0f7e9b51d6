"""The reader: files, folders, archives and stdin -> sections of typed facts, in bounded memory.

:func:`read_paths` opens what the user named (:mod:`.intake`) and reads each
source in one pass (:mod:`.source`): chunks of whole lines (:mod:`.chunks`),
the lines holding a parser's anchor found by one multi-pattern scan
(:mod:`.anchors`, :mod:`.prefilter`), each decoded line through the gate, the
attributor and the parsers into sections (:mod:`.dispatch`,
:mod:`.sections`). Budgets shared by all the sources of a read bound what it
costs, in one file or a thousand (:mod:`.budgets`); a large folder's files to
come are read ahead in other processes where that gives the same result
(:mod:`.ahead`). Whole-file kinds (a
flight-recorder dump, a JSON RAS report) are parsed at once. Facts then get
their cited line's timestamp, and ranks the processes' identities tell.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

from nccl_doctor.evidence.ahead import Ahead
from nccl_doctor.evidence.budgets import TEXT_MAX_BYTES, Budgets
from nccl_doctor.evidence.chunks import LINE_MAX_BYTES
from nccl_doctor.evidence.intake import Intake, Note, Opened
from nccl_doctor.evidence.sections import TEXT_KIND, ReadResult, Section, SourceSummary
from nccl_doctor.evidence.source import SourceReader
from nccl_doctor.facts.attribution import assign_ranks, process_ranks
from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.parse import FILE_PARSERS
from nccl_doctor.redact import safe_line, scrub

__all__ = [
    "LINE_MAX_BYTES",
    "TEXT_KIND",
    "TEXT_MAX_BYTES",
    "UNKNOWN",
    "Budgets",
    "ReadResult",
    "Section",
    "SourceSummary",
    "read_opened",
    "read_paths",
]

#: The note on a source in which nothing was recognised.
UNKNOWN = "no known evidence kind recognised"


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
    opened: Opened, notes: list[Note], budgets: Budgets | None = None, *, line_total: bool = True
) -> tuple[list[Section], SourceSummary]:
    """Read one opened stream into sections (``budgets``: those of the whole read;
    ``line_total``: see :func:`read_paths`)."""
    if opened.file_kind is not None:
        return _read_whole(opened, notes)
    budgets = budgets if budgets is not None else Budgets()
    reader = SourceReader(opened, notes, budgets, line_total=line_total)
    try:
        reader.read(opened.stream)
    except OSError as exc:
        notes.append(Note(reader.name, f"read failed part way: {exc}"))
    sections = sorted(reader.sections, key=lambda s: s.start)
    if reader.times:
        for section in sections:
            section.facts = [_timed(f, reader.times) for f in section.facts]
    reader.summary.kinds = sorted({s.kind for s in sections})
    if not sections and reader.summary.bytes_read and not reader.owns:
        notes.append(Note(reader.name, UNKNOWN))  # (else its note says what it held)
    return sections, reader.summary


def read_paths(paths: Sequence[str], *, line_totals: bool = True) -> ReadResult:
    """Read every file, folder, archive or ``-`` (stdin) named.

    ``line_totals=False``: a source's lines are counted as far as its last
    line read, not to its end (its summary's ``lines`` is then ``None``): a
    diagnosis cites lines, it never shows how many a log holds.
    """
    intake = Intake()
    sections: list[Section] = []
    summaries: list[SourceSummary] = []
    notes: list[Note] = []
    budgets = Budgets()
    ahead = Ahead(budgets, intake.limits, functools.partial(read_opened, line_total=line_totals))
    try:
        for opened in intake.streams(paths):
            done = ahead.take(opened)
            if done is not None:
                found, summary = done.sections, done.summary
                notes.extend(done.notes)
            else:
                state = budgets.state()
                found, summary = read_opened(opened, notes, budgets, line_total=line_totals)
                ahead.read_here(budgets.state() == state, intake.coming)
            sections.extend(found)
            summaries.append(summary)
    finally:
        ahead.close()
    notes.extend(budgets.notes())
    ranks = process_ranks([f for s in sections for f in s.facts])
    if ranks:
        for section in sections:
            section.facts = assign_ranks(section.facts, ranks)
    gated = [Note(safe_line(n.source), safe_line(n.message)) for n in intake.notes + notes]
    return ReadResult(sections, summaries, gated)
