"""Budgets: what all the sources of one read share, so a thousand files cost what one does.

The informational lines of each kind (a stream parser's ``info_anchors``) and
the free text of small sources are shared by all the sources of a read; past
its kind's budget, a source reads only the lines that say who its processes
are (``floor_anchors``: NCCL's communicator init line), the first of each
process.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nccl_doctor.evidence import chunks
from nccl_doctor.evidence.intake import Note
from nccl_doctor.parse import STREAM_PARSERS
from nccl_doctor.parse.base import INFO_BUDGET, INFO_FLOOR, StreamParser

#: Sources up to this size (or of unknown size, up to this many bytes read)
#: keep their unclaimed lines as free text.
TEXT_MAX_BYTES = 1 << 20
#: Small sources are read as free text until this many bytes of them, in all, were (a folder
#: of a thousand small per-rank logs is read for its evidence, not line by line).
TEXT_TOTAL_BYTES = 4 << 20
#: At most this many free-text lines are kept per source.
TEXT_MAX_LINES = 5_000


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 and not n % (1 << 20) else f"{n} bytes"


def is_small(size: int | None) -> bool:
    """Whether a source of ``size`` bytes (``None``: not known) is small: its lines no parser
    claims are kept as free text, while the read's :data:`TEXT_TOTAL_BYTES` last."""
    return size is None or size <= TEXT_MAX_BYTES


def info_floor(parser: StreamParser) -> int:
    """The lines holding its floor anchors each source looks at, past the budget too."""
    return INFO_FLOOR if parser.info_floor is None else parser.info_floor


@dataclass(frozen=True, slots=True)
class Spent:
    """What one source's read spent of the budgets: each kind's informational lines left where
    they changed, the change of the free text left, and the counts its coverage notes add."""

    info_left: dict[str, int]
    text_bytes: int
    floored: dict[str, int]
    texts_skipped: int


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
        """The memory small sources are read into, one after the other (see
        :func:`~nccl_doctor.evidence.chunks.reads`)."""
        if len(self._buffer) != chunks.CHUNK_BYTES:
            self._buffer = bytearray(chunks.CHUNK_BYTES)
        return self._buffer

    def info_limit(self, parser: StreamParser | type[StreamParser]) -> int:
        """The informational lines of ``parser``'s kind the next source may read."""
        return min(INFO_BUDGET, self.info.get(parser.kind, INFO_BUDGET))

    def text_limit(self) -> int:
        """The bytes of the next small source that may be read as free text."""
        return min(TEXT_MAX_BYTES, self.text_bytes)

    def spend_info(self, kind: str, used: int) -> None:
        """A source read ``used`` informational lines of ``kind``."""
        self.info[kind] = max(0, self.info.get(kind, INFO_BUDGET) - used)

    def state(self) -> tuple[int, ...]:
        """What the next source's read depends on: the free text and each kind's informational
        lines it may read (two reads of one file from equal states give one result)."""
        return (self.text_limit(), *(self.info_limit(p) for p in STREAM_PARSERS))

    def spent_since(self, before: Budgets) -> Spent:
        """What was spent since ``before`` (a copy of these budgets, see :meth:`copy`)."""
        return Spent(
            {k: v for k, v in self.info.items() if before.info.get(k) != v},
            self.text_bytes - before.text_bytes,
            {k: v - before.floored.get(k, 0) for k, v in self.floored.items()},
            self.texts_skipped - before.texts_skipped,
        )

    def spend(self, spent: Spent) -> None:
        """Spend what a read of the same source from the same :meth:`state` spent elsewhere."""
        self.info.update(spent.info_left)
        self.text_bytes += spent.text_bytes
        for kind, count in spent.floored.items():
            self.floored[kind] = self.floored.get(kind, 0) + count
        self.texts_skipped += spent.texts_skipped

    def copy(self) -> Budgets:
        """These budgets as they are now (the shared buffer is not copied)."""
        return Budgets(self.text_bytes, dict(self.info), dict(self.floored), self.texts_skipped)

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
