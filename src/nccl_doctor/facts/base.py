"""The base of every fact: a citation back into the evidence.

Facts are frozen, slotted, keyword-only dataclasses. Units live in field
names (``memory_used_mib``); unknown is ``None``, never a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

#: The longest citation text kept; real lines can be megabytes long.
CITE_TEXT_MAX = 400
#: What ends a citation text that was cut.
ELLIPSIS = "…"
#: The most of one free-text line that is read (a paragraph pasted as one line: past a
#: citation's length it is read in pieces, :func:`pieces`).
PARAGRAPH_MAX = 4000
#: Where a sentence ends, in English and Chinese punctuation (a dot only before a space or the
#: line's end: "NCCL 2.18.1" and "torch.cuda" are words). A piece of a long line is cut after
#: one where it can be; the facts store finds the sentence that holds a match by them.
SENTENCE_END = re.compile(r"\.(?=\s|$)|[!?;\n\u3002\uff01\uff1f\uff1b]")


def _cut(text: str, start: int, limit: int) -> int:
    """Where the piece of ``text`` from ``start`` ends: after the last sentence end (else the
    last space) before ``start + limit``, else at it."""
    end = start + limit
    if end >= len(text):
        return len(text)
    window = text[start:end]
    # (one character past the window, so that a dot's next character is the text's own)
    ends = SENTENCE_END.finditer(text, start, end + 1)
    at = max((m.end() - start for m in ends if m.end() <= end), default=0)
    if at <= limit // 4:
        at = window.rfind(" ") + 1
    return start + at if at > limit // 4 else end


def pieces(text: str) -> tuple[str, ...]:
    """The rest of a line longer than a citation holds, past what its citation shows, in
    pieces a citation holds whole (cut at sentence ends), up to :data:`PARAGRAPH_MAX`
    characters of the line; empty for a line a citation holds whole.

    A reporter's paragraph is often one line of a thousand characters, and the
    message it quotes or the sentence that tells causes apart is as often past
    the first 400 as before them.
    """
    text = text.strip()[:PARAGRAPH_MAX]
    if len(text) <= CITE_TEXT_MAX:
        return ()
    limit = CITE_TEXT_MAX - 1
    out = []
    start = _cut(text, 0, limit)  # what the citation shows whole
    while start < len(text):
        end = _cut(text, start, limit)
        if piece := text[start:end].strip():
            out.append(piece)
        start = end
    return tuple(out)


#: Names a program prints for the machine it runs on, not a host of the job (torchrun's failure
#: summary says ``host: localhost`` on the node its other lines name).
_LOCAL_HOSTS = frozenset({"localhost", "localhost.localdomain", "127.0.0.1", "::1", "", "unknown"})


def local_alias(host: str) -> bool:
    """Whether a host name only says "this machine" (``localhost``, ``127.0.0.1``)."""
    return host.lower() in _LOCAL_HOSTS


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

    #: Whether a person's sentence may hold this fact's line (a command named in a report:
    #: "all_reduce_perf -g 8 dies during setup"): its line then stays prose where it reads
    #: as a sentence (:attr:`nccl_doctor.facts.store.Facts.lines`).
    in_sentences: ClassVar[bool] = False
