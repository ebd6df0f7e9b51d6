"""The reporter's words: the prose signatures, weighed below machine output.

People describe what a log would show ("it hangs", "just says killed",
"bandwidth is only 33 GB/s", "7 extra processes on GPU0") and what they
tried ("works with NCCL_P2P_DISABLE=1", "works with gloo", "fine with NCCL
2.18"). Two tables hold those words, each row with its reason:

- :data:`PROSE_SYMPTOMS`, here: sentences that name a failure's class. They
  open a symptom only where no machine output (a typed failure, a catalogued
  message) does: a log outranks a paraphrase of it.
- :data:`.cues.CUES`: sentences that discriminate between causes (a
  workaround that worked, where and when it fails); :mod:`.context` turns
  them into shifts.

Both are written with this module's vocabulary (:func:`rx`, :data:`FLAGS`,
:data:`NOT_SAID`).

Only prose lines (:func:`nccl_doctor.facts.store.is_prose`) are read here;
machine output is never matched against these words.
"""

from __future__ import annotations

import re

from nccl_doctor.differential.prose.behaviour import BEHAVIOUR
from nccl_doctor.differential.prose.failure import FAILURE
from nccl_doctor.differential.prose.messages import MESSAGES
from nccl_doctor.differential.prose.words import (
    GPU_THROTTLED,
    NO_GPU_SEEN,
    NOT_SAID,
    NUM,
    NVLINK_UNUSED,
    ONE_GPU_DOES_ALL,
    PARAMS_DIFFER,
    UNDENIED,
    UPDATE_WORDS,
    ProseSymptom,
    rx,
    says_failure,
)
from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.catalogue import harmless_message
from nccl_doctor.facts.notices import notices_of
from nccl_doctor.facts.store import Facts
from nccl_doctor.facts.told import FLAGS, not_negated, sentence_at
from nccl_doctor.knowledge import cuda_errors
from nccl_doctor.signs.cuda import CUDA_NUMBER_SAID

__all__ = [
    "FLAGS",
    "GPU_THROTTLED",
    "NOT_SAID",
    "NO_GPU_SEEN",
    "NUM",
    "NVLINK_UNUSED",
    "ONE_GPU_DOES_ALL",
    "PARAMS_DIFFER",
    "PROSE_SYMPTOMS",
    "UNDENIED",
    "UPDATE_WORDS",
    "ProseSymptom",
    "Said",
    "not_negated",
    "prose_symptom",
    "rx",
]

#: In order: the first class whose words appear opens the symptom (a named message before
#: what the job did, a failure in any words last).
PROSE_SYMPTOMS: tuple[ProseSymptom, ...] = (*MESSAGES, *BEHAVIOUR, FAILURE)


#: A title's label ("Title:", "[Issue title: ...]") before the reporter's words.
_TITLE = re.compile(r"^\W*(?:issue )?title:\s*", re.IGNORECASE)


#: The words people call any alarming line by ("this error", "报错", "エラーが出"): said of
#: a notice, or of a job that completes, they name no failure of the job's own.
_ERROR_WORDS = ("error", "报错", "错误", "エラー")
#: Where a sentence quotes a message: its parts between quotes, brackets and semicolons.
_QUOTE_BREAKS = re.compile(r"[;\"'`\[\]()\u201c\u201d]+")


def _only_error_words(text: str) -> bool:
    """Whether every failure the line says is a word for an alarming line ("error"), none
    an event of the job ("fails", "crashed", "cannot start", an exception)."""
    return all(
        m.group().lower().startswith(_ERROR_WORDS)
        for m in FAILURE.pattern.finditer(text)
        if says_failure(text, m)
    )


def _quotes_a_notice(text: str, notices: list[str]) -> bool:
    """Whether the line is the reporter repeating a notice the evidence shows: a title that
    is the notice's words without the library's prefix, or a part of one ("how to fix this
    error; errno: 97 - Address family not supported by protocol") with no failure of its
    own beside it."""
    own = text.lower()
    notices = [line for line in notices if line != own]  # (a line repeats another's notice)
    words = _TITLE.sub("", text).strip(" \t[]().:;\"'`").lower()
    if len(words.split()) >= 3 and any(words in line for line in notices):
        return True
    parts = (p.strip(" \t.:,").lower() for p in _QUOTE_BREAKS.split(text))
    quoted = any(len(p.split()) >= 4 and any(p in line for line in notices) for p in parts)
    return quoted and _only_error_words(text)


#: The reporter says the job does its work anyway ("the training completes but ...", "works
#: fine, uses all 8 GPUs", "training proceeds correctly, but emits these messages"). Not a
#: condition of it ("works fine with NCCL_P2P_DISABLE=1", "runs fine till the end", "runs
#: fine on one GPU"): that is a workaround or a contrast, a cue for a cause.
_RUNS_ANYWAY = rx(
    r"(?:\b(?:training|the job|the run|the program|everything|it)(?: still)? |^\W*)"
    r"(?:completes|finish(?:es)? as expected|(?:works?|runs?|proceeds?) (?:fine|correctly"
    r"|normally|as expected)|runs? to completion)\b"
    r"(?! (?:with|when|if|on|using|after|under|for|in|without|only|at|by|once|except|until"
    r"|till|as long)\b)"
)


#: Said before it in the sentence, a success is a contrast with the failure: at a smaller
#: scale ("I checked single node training and it works fine"), elsewhere, with another
#: backend or a setting changed.
_CONTRAST_BEFORE = rx(
    r"\b(?:single|one|1|a) (?:node|machine|gpu|card|process|host|server|rank)s?\b"
    r"|\blocal(?:ly)?\b|\bgloo\b|\bon cpu\b|\b[A-Z]+_[A-Z_]+=|\bwithout\b"
    r"|\b(?:another|other|a different|old|older|previous) (?:\w+ )?(?:node|machine|server"
    r"|host|instance|cluster|version|release|image)s?\b"
)


def _succeeds(text: str, match: re.Match[str]) -> bool:
    """Whether the success a line states is the job's own: not denied, not a contrast."""
    start = max(text.rfind(".", 0, match.start()), text.rfind("!", 0, match.start())) + 1
    before = text[start : match.start()]
    return not_negated(text, match) and not _CONTRAST_BEFORE.search(before)


def _runs_anyway(facts: Facts) -> bool:
    """Whether the reporter says the job completes, and every failure they name is a line
    they call an error: they ask what a message means, and no failure is said."""
    if not any(
        _succeeds(h.cite.text, m)
        for h in facts.prose_search(_RUNS_ANYWAY.pattern, FLAGS)
        for m in _RUNS_ANYWAY.finditer(h.cite.text)
    ):
        return False
    return all(
        _only_error_words(h.cite.text) for h in facts.prose_search(FAILURE.pattern.pattern, FLAGS)
    )


#: What the reporter's words name: the class, its line, why, and the ids the words point at.
Said = tuple[str, Cite, str, tuple[str, ...]]


#: A denial between "CUDA" and the number ("CUDA no longer returns error 803").
_DENIED_WITHIN = rx(r"\b(?:no longer|not|never|no)\b|n't\b")


def _cuda_number(facts: Facts) -> Said | None:
    """A CUDA error the reporter names by its number: its enum row's class and cause."""
    for hit in facts.seen(CUDA_NUMBER_SAID):
        code = hit.match["code"] or hit.match["code2"]
        err = cuda_errors.by_code(code) if code else None
        if err is None or err.code in cuda_errors.NOT_FAILURES or not hit.prose:
            continue
        if _DENIED_WITHIN.search(hit.match.group()) or hit.told_over:
            continue
        hints = (err.diagnosis_id,) if err.diagnosis_id else ()
        why = f"the reporter names CUDA error {err.code} ({err.name})"
        return cuda_errors.symptom_class(err), hit.cite, why, hints
    return None


def _within_harmless(text: str, match: re.Match[str]) -> bool:
    """Whether the words ``match`` found are about a catalogued harmless message the line
    holds: in it, or before it in its sentence (the label a reporter gives it: "报错：Detected
    kernel version ..."). A paragraph may quote NCCL's "Using network IB" and retell a
    failure after it."""
    sig = harmless_message(text)
    if sig is None:
        return False
    spans = [_quoted(text, *m.span()) for m in sig.compiled().finditer(text)]
    return not spans or any(
        sentence_at(text, a, a)[0] < match.end() and match.start() < b for a, b in spans
    )


#: Quotation marks and the marks that close them.
_CLOSING = {'"': '"', "'": "'", "`": "`", "\u201c": "\u201d", "\u2018": "\u2019"}


def _quoted(text: str, start: int, end: int) -> tuple[int, int]:
    """Where a message stands in a line: to the quotation mark that closes it when a mark
    opens it (a message whose last field runs to the line's end stops where the quote does:
    '... says "Using network IB" and lists mlx5_0'), else to its sentence's end (the
    program's own line: what follows is the message's detail)."""
    close = _CLOSING.get(text[start - 1]) if start else None
    at = text.find(close, start) if close else -1
    return (start, at) if at >= 0 else (start, max(end, sentence_at(text, start, end)[1]))


def prose_symptom(facts: Facts) -> Said | None:
    """The first class the reporter's words name, its line, why, and the ids they point at
    (``None`` when none): a CUDA error by its number first, then the table's rows."""
    number = _cuda_number(facts)
    if number is not None:
        return number
    notices = [n.cite.text.lower() for n in notices_of(facts)]
    for row in PROSE_SYMPTOMS:
        if row is FAILURE and _runs_anyway(facts):
            return None
        hits = facts.prose_search(row.pattern.pattern, FLAGS)
        cite = next(
            (
                h.cite
                for h in hits
                if row.said_in(h.cite.text)
                and not _within_harmless(h.cite.text, h.match)
                and not _quotes_a_notice(h.cite.text, notices)
            ),
            None,
        )
        if cite is not None:
            return row.cls, cite, row.why, ()
    return None
