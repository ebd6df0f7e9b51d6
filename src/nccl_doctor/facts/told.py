"""How a person's sentence tells what it names: said, denied before it, or over after it.

"We no longer see 'Too many open files'", "the Duplicate GPU error is gone since we fixed
LOCAL_RANK", "there is no more 'illegal memory access'": a reporter quotes a failure to say
it does not happen (now). Every reader of sentences asks the same two questions of the words
it found, here: whether a denial comes just before them (:func:`denied`), and whether their
sentence says, after them, that the failure is over (:func:`over`) — not under a condition
or a setting, which makes it a workaround and leaves the failure standing.
"""

from __future__ import annotations

import functools
import re

from nccl_doctor.facts.base import SENTENCE_END

#: The flags of every pattern read over a person's words. ASCII word boundaries: in
#: "gloo出现connection refused" the Chinese characters are word characters to Unicode, which
#: would hide the boundary before "connection".
FLAGS = re.IGNORECASE | re.ASCII


@functools.cache
def _re(pattern: str) -> re.Pattern[str]:
    """``pattern`` compiled (:data:`FLAGS`) when first used: a log of machine output never
    asks."""
    return re.compile(pattern, FLAGS)


def sentence_of(text: str, match: re.Match[str]) -> tuple[int, int]:
    """Where the sentence that holds ``match`` starts and ends in ``text``."""
    return sentence_at(text, match.start(), match.end())


def sentence_at(text: str, start: int, end: int) -> tuple[int, int]:
    """Where the sentence that holds ``text[start:end]`` starts and ends."""
    begin = max((m.end() for m in SENTENCE_END.finditer(text, 0, start)), default=0)
    end_at = SENTENCE_END.search(text, end)
    return begin, end_at.end() if end_at is not None else len(text)


#: What, said just before a failure word, says there was none ("no errors", "did not crash",
#: "0 files failed", "without any error", "we no longer see 'Too many open files'").
_NONE_BEFORE = (
    # (not a doubt about the words: "no idea what 'X' means", "not sure why X shows up")
    r"(?:\bno(?! (?:idea|clue)\b)|\bnot(?! (?:sure|certain|clear)\b)|n't(?! (?:know|understand)\b)"
    r"|\bnever|\bwithout(?: any)?|(?<!non-)(?<!non )\bzero|\bnone of the"
    r"|\bnothing"
    # a count of none ("0 stalls"), not an index ("process 0 waits forever", "GPU 0 hangs")
    r"|(?<!process )(?<!rank )(?<!gpu )(?<!node )(?<!device )(?<!worker )(?<!card )\b0)"
    # (a word or two between: "no process was killed", "we never see a deadlock"; and the
    # quote mark a message is quoted in: "never saw 'unhandled system error'")
    r" (?:[\w-]{1,30} ){0,2}[\"'`\u201c\u2018]?$"
)


#: A quote mark that opens a quotation (at a word's start, so not the apostrophe of "don't"),
#: and no mark that closes one after it (up to the words it quotes).
_OPENING = r"(?:(?<=\s)|^|(?<=\())[\"'`\u201c\u2018](?=\S)(?=[^\"`\u201d\u2019]*$)"


def quotation_start(text: str, start: int) -> int:
    """Where the quotation that holds ``text[start:]`` opens (a quote mark at most 40
    characters before, not closed since), else ``start``: "we don't get \"NCCL WARN NET/IB :
    Got completion ..." quotes the message from the mark on."""
    begin = max(0, start - 40)
    opened = _re(_OPENING).search(text[begin:start])
    return begin + opened.start() if opened is not None else start


#: "Never seen ... before": what is new, not what does not happen.
_NEW = (
    r"\bnever (?:have |had |ever )?(?:seen|saw|encountered|met|had|got)\b[^.!?;\n]{0,160}"
    r"\b(?:before|so far|until now|till now)\b"
)


def denied(text: str, start: int) -> bool:
    """Whether a denial comes just before ``text[start:]``, or before the quotation that holds
    it ("it does not hang", "no stalls", "we never saw 'unhandled system error' again"), and
    the sentence does not say it is new ("I have never seen 'X' before")."""
    quoted = quotation_start(text, start)
    if not any(
        _re(_NONE_BEFORE).search(text[max(0, at - 40) : at]) is not None for at in {start, quoted}
    ):
        return False
    begin, end = sentence_at(text, start, start)
    return _re(_NEW).search(text, begin, end) is None


def not_negated(text: str, match: re.Match[str]) -> bool:
    """Whether a word of a sentence is said, not denied ("it does not hang", "no stalls")."""
    return not denied(text, match.start())


#: Said of a failure after it, in its sentence: it is over ("the OOM we saw is gone", "the
#: segfault was fixed by upgrading", "the hang does not reproduce anymore", "the error went
#: away", Chinese "yi jing jie jue", Japanese "sai gen shinaku narimashita", Korean "hae gyeol
#: dwaet").
_OVER_AFTER = (
    r"\b(?:is|are|was|were|has been|have been|got|gets|seems(?: to be)?) (?:now |finally "
    r"|completely |all )?(?:gone|fixed|resolved|solved)\b"
    r"|\b(?:does ?n[o']t|did ?n[o']t|has ?n[o']t|have ?n[o']t|never|no longer) "
    r"(?:happen|occur|reproduce|c[oa]mes? back|return|shows? up|showed up|appear)"
    r"\w{0,3}\b"
    r"(?: (?:any ?more|again|since))?"
    r"|\b(?:went|goes|go|has gone|have gone) away\b|\bdisappear(?:ed|s)\b"
    r"|已(?:经)?(?:解决|修复|好了)|(?<![没未])解决了|(?:再現|発生)しなくな|出なくなりました"
    r"|解決しました|直りました|해결(?:됐|되었|했)"
)
#: Said of a failure just before it: it has not come back (Chinese "mei you zai", "bu zai",
#: "zai ye mei": no longer, not again).
_OVER_BEFORE = r"(?:没有再|没再|不再|再也没(?:有)?)\s?\S{0,4}$"
#: Said after "it is gone": the condition it is gone under, a workaround ("the hang is gone
#: when I set NCCL_P2P_DISABLE=1", "... with --ipc=host"): the failure stands without it.
_UNDER = (
    r"^\W{0,3}(?:with|when|if|once|using|under|on|after (?:I|we|you|setting|exporting))\b"
    r"|\b[A-Z][A-Z0-9_]{3,}=\S|--[\w-]{2,40}"
)
#: A turn in the sentence: what follows it is another matter ("the hang was fixed, but now it
#: runs out of memory").
_CONTRAST = r"\b(?:but|however|though|yet)\b|但是|但|可是|然而|しかし|けど|하지만"


def over(text: str, start: int, end: int) -> bool:
    """Whether the sentence that holds ``text[start:end]`` says the failure it names is over:
    words that say so after it (before any turn of the sentence, and not under a condition or
    a setting: that is a workaround), or a "not again" just before."""
    if _re(_OVER_BEFORE).search(text[max(0, start - 12) : start]):
        return True
    rest = text[end : sentence_at(text, start, end)[1]]
    turn = _re(_CONTRAST).search(rest)
    said = _re(_OVER_AFTER).search(rest[: turn.start()] if turn is not None else rest)
    return said is not None and not _re(_UNDER).search(rest[said.end() :])


def resolved(text: str, match: re.Match[str]) -> bool:
    """:func:`over`, of the words ``match`` found."""
    return over(text, match.start(), match.end())


def told_over(text: str, start: int, end: int) -> bool:
    """Whether a sentence tells the failure at ``text[start:end]`` as not happening: denied
    just before it, or over after it."""
    return denied(text, start) or over(text, start, end)
