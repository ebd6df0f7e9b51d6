"""Free text: what no tool-specific parser claims, from pastes and small files.

A reporter's sentences ("hangs when evaluating", "works with
NCCL_P2P_DISABLE=1", "inside docker") and error lines of programs nccl-doctor
has no parser for are evidence too, weaker than machine output. The reader
keeps them as :class:`TextLine` facts for small sources (a pasted issue, a
short log), never for gigabyte logs.
"""

from __future__ import annotations

from dataclasses import dataclass

from nccl_doctor.facts.base import Fact

#: Chinese, Japanese and Korean characters, as a regex character class's body: CJK
#: punctuation, kana and ideographs (U+3000-U+9FFF), Hangul syllables (U+AC00-U+D7AF).
#: Libraries print English, so a line holding one is a person's; and its words have no
#: spaces (nor word boundaries) between them.
CJK = r"\u3000-\u9fff\uac00-\ud7af"


@dataclass(frozen=True, slots=True, kw_only=True)
class TextLine(Fact):
    """One unclaimed, non-blank line; ``fenced`` when inside a Markdown code fence.

    ``claimed``: a person's paragraph a parser also read (it quotes an error), kept for the
    rest of its sentences past what a citation holds; its first part stays the parser's.
    """

    text: str
    fenced: bool = False
    claimed: bool = False
