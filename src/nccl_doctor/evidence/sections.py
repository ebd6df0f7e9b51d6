"""What a read yields: sections of typed facts, a summary per source, and the read's result.

A section is a stretch of one source holding one kind of evidence: each block
(a tool's table) is a section of its own kind; stream lines (logs) form one
section per kind within a *segment*, the stretch between blocks and Markdown
code fences, so a pasted issue splits into its pieces while a gigabyte log of
one kind stays one section.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nccl_doctor.evidence.intake import Note
from nccl_doctor.facts.base import Fact

#: The evidence kind of free text.
TEXT_KIND = "text"


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
    #: ``None``: not counted past the last line read (see ``read_paths(line_totals=False)``)
    lines: int | None = 0
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
