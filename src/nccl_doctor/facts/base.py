"""The base of every fact: a citation back into the evidence.

Facts are frozen, slotted, keyword-only dataclasses. Units live in field
names (``memory_used_mib``); unknown is ``None``, never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The longest citation text kept; real lines can be megabytes long.
CITE_TEXT_MAX = 400
#: What ends a citation text that was cut.
ELLIPSIS = "…"


@dataclass(frozen=True, slots=True)
class Cite:
    """Where a fact was read: source name, 1-based line number, the line as read."""

    source: str
    line: int
    text: str

    @classmethod
    def of(cls, source: str, line: int, text: str) -> Cite:
        """A citation whose text is cut to :data:`CITE_TEXT_MAX` characters."""
        text = text.rstrip("\r\n")
        if len(text) > CITE_TEXT_MAX:
            text = text[: CITE_TEXT_MAX - 1] + ELLIPSIS
        return cls(source, line, text)


@dataclass(frozen=True, slots=True, kw_only=True)
class Fact:
    """Something the evidence says, with the line that says it.

    ``rank`` and ``host`` carry the attribution of the cited line where the
    log prefixes told it (``[rank3]:``, ``host:pid:tid``, ...), else ``None``.
    ``time_s`` and ``clock`` are the cited line's timestamp, filled in by the
    reader: seconds, comparable only within one clock family (``iso``,
    ``glog`` and ``syslog`` lack the year, ``uptime`` counts from boot).
    """

    cite: Cite
    rank: int | None = None
    host: str | None = None
    time_s: float | None = None
    clock: str | None = None
