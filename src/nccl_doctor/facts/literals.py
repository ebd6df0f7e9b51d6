"""The words a regular expression cannot match without: a prefilter for hot searches.

Rules search all evidence lines with a hundred patterns, most of them
alternations of phrases (``Cannot allocate memory|\\[Errno 12\\]|...``),
case-insensitive. Python's ``re`` tries such a pattern at every position of
the text, a few megabytes a second; ``in`` and ``str.find`` look for a word
at memory speed. :func:`required_words` reads the pattern's syntax tree and
returns clauses of lower-case words: every match holds a word of each clause.
A line that holds none of a clause's words cannot match, and the pattern
need not run on it.

How the clauses come: a run of literal characters is a word; in a sequence
each part that must match gives its clause (an alternation gives one clause,
a word from each branch, or none if a branch has none); optional parts and
character classes give none. Words are compared in lower case, a superset of
any case rule. Case folding is exact only for ASCII (``ſ`` matches ``s``
under IGNORECASE), so only ASCII lines may be skipped: a line that is not
ASCII is always a candidate, and a word with a non-ASCII character (which only
such a line can hold) needs no looking for.
"""

from __future__ import annotations

import functools
import hashlib
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nccl_doctor.cache import JsonCache

if sys.version_info >= (3, 11):
    from re import _constants as _sre
    from re import _parser as _sre_parse
else:  # pragma: no cover -- Python 3.10
    import sre_constants as _sre
    import sre_parse as _sre_parse

#: ASCII words shorter than this find too many lines to be worth a clause.
MIN_WORD = 3
#: At most this many clauses are kept, the most selective first.
MAX_CLAUSES = 4

_REPEATS = tuple(
    getattr(_sre, name)
    for name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")
    if hasattr(_sre, name)
)
_ATOMIC = getattr(_sre, "ATOMIC_GROUP", None)

Clause = tuple[str, ...]


@functools.lru_cache(maxsize=4096)
def required_words(pattern: str, flags: int = 0) -> tuple[Clause, ...] | None:
    """Clauses of words; every match holds a word of each. ``None``: no clause worth it.

    Kept between runs with the rest of the pattern's :func:`analysis` (the
    signature catalogue's thousand patterns cost ~0.1 s to read each run); a
    pattern that does not compile is read each time.
    """
    if _kept() is None:
        return _required_words(pattern, flags)
    try:
        return analysis(pattern, flags)[0]
    except (re.error, RecursionError, OverflowError):
        return _required_words(pattern, flags)


def _required_words(pattern: str, flags: int) -> tuple[Clause, ...] | None:
    """:func:`required_words`, read from the pattern's syntax tree."""
    try:
        tree = _sre_parse.parse(pattern, flags)
    except (re.error, RecursionError, OverflowError):
        return None
    clauses = sorted(set(_sequence(tree.data)), key=_selectivity, reverse=True)
    kept = tuple(c for c in clauses if _worth(c))[:MAX_CLAUSES]
    return kept or None


def prefiltered(regex: re.Pattern[str]) -> Callable[[str], re.Match[str] | None]:
    """``regex.search``, answering ``None`` at once for an ASCII text without its words."""
    clauses = required_words(regex.pattern, regex.flags)
    search = regex.search
    if clauses is None:
        return search

    def quick(text: str) -> re.Match[str] | None:
        if text.isascii() and not holds(text.lower(), clauses):
            return None
        return search(text)

    return quick


@functools.lru_cache(maxsize=2048)
def shape_blind(pattern: str, flags: int = 0) -> bool:
    """Whether the pattern matches an ASCII line's *shape* wherever it matches the line.

    The shape is the line in lower case with the digits ``1``-``9`` as ``0``
    (how :class:`~nccl_doctor.facts.store.Facts` groups the lines that differ
    in numbers only). So it is when the pattern ignores case throughout, tells
    no digit from ``0`` (no literal ``1``-``9``, no class holding one of them
    without ``0``, nothing that holds a ``0`` out), has no backreference and
    no ``\\A``/``\\Z`` and no newline (a shape holds a line's newlines as
    spaces): a shape that does not match then rules out all its lines.
    ``False`` when unsure.
    """
    if not flags & re.IGNORECASE or "\n" in pattern or "\\n" in pattern:
        return False
    try:
        tree = _sre_parse.parse(pattern, flags)
    except (re.error, RecursionError, OverflowError):
        return False
    return _blind(list(tree.data), negated=False)


#: What :func:`analysis` answers: :func:`required_words` and :func:`shape_blind`.
Analysis = tuple[tuple[Clause, ...] | None, bool]


@functools.lru_cache(maxsize=1)
def _kept() -> JsonCache | None:
    """The analyses of earlier runs, in a file named by this module's code and the Python
    version (a changed rule of analysis or syntax never reads an old one)."""
    try:
        source = Path(__file__).read_bytes()
    except OSError:
        return None
    key = hashlib.sha256(source + sys.version.encode()).hexdigest()[:32]
    # the signs, the signature catalogue's patterns and a thousand more
    return JsonCache(f"patterns-{key}", most=4096)


def _decoded(value: object) -> Analysis | None:
    """An analysis as kept in JSON, or ``None`` when it is not one."""
    if not isinstance(value, list) or len(value) != 2 or not isinstance(value[1], bool):
        return None
    clauses = value[0]
    if clauses is None:
        return None, value[1]
    if not isinstance(clauses, list) or not all(
        isinstance(c, list) and c and all(isinstance(w, str) for w in c) for c in clauses
    ):
        return None
    return tuple(tuple(c) for c in clauses), value[1]


def known(pattern: str, flags: int = 0) -> bool:
    """Whether an earlier run analysed ``pattern`` (which then compiled: only a compiled
    pattern is analysed)."""
    kept = _kept()
    return kept is not None and _decoded(kept.get(f"{flags}\0{pattern}")) is not None


def analysis(pattern: str, flags: int = 0) -> Analysis:
    """:func:`required_words` and :func:`shape_blind` of a pattern (``re.error`` if it does
    not compile).

    Reading a pattern's syntax tree costs about as much as compiling it; the
    answers are kept between runs (:mod:`nccl_doctor.cache`), so a run that
    searches for two hundred signs, most absent from the evidence, neither
    parses nor compiles those. Only a pattern that compiled is kept.
    """
    key = f"{flags}\0{pattern}"
    kept = _kept()
    found = _decoded(kept.get(key)) if kept is not None else None
    if found is not None:
        return found
    re.compile(pattern, flags)  # raises for a pattern that does not compile (re caches it)
    found = _required_words(pattern, flags), shape_blind(pattern, flags)
    if kept is not None:
        clauses = None if found[0] is None else [list(c) for c in found[0]]
        kept.put(key, [clauses, found[1]])  # as JSON reads it back
    return found


_DIGITS = tuple(range(ord("0"), ord("9") + 1))
#: Anchors a search of shapes joined by newlines does not keep.
_STRING_ENDS = frozenset({_sre.AT_BEGINNING_STRING, _sre.AT_END_STRING})


def _digit_set(op: Any, av: Any) -> tuple[bool, ...] | None:
    """Which of ``0``-``9`` one character item matches (``None``: not a character item)."""
    if op is _sre.LITERAL:
        return tuple(d == av for d in _DIGITS)
    if op is _sre.NOT_LITERAL:
        return tuple(d != av for d in _DIGITS)
    if op is _sre.ANY:
        return (True,) * 10
    if op is _sre.CATEGORY:  # \d, \w, \s, \S...: every digit alike
        name = str(av)
        return (("NOT" in name) != ("DIGIT" in name or "WORD" in name),) * 10
    if op is _sre.IN:
        negate = False
        hits = [False] * 10
        for item_op, item_av in av:
            if item_op is _sre.NEGATE:
                negate = True
                continue
            if item_op is _sre.RANGE:
                low, high = item_av
                found: tuple[bool, ...] = tuple(low <= d <= high for d in _DIGITS)
            else:  # an item not known: taken as one that tells digits apart
                found = _digit_set(item_op, item_av) or (False,) + (True,) * 9
            hits = [a or b for a, b in zip(hits, found, strict=True)]
        return tuple(h != negate for h in hits)
    return None


def _blind(items: list[Any], *, negated: bool) -> bool:
    """:func:`shape_blind` of a parsed sequence (``negated``: inside a negative lookaround,
    where every digit must be treated alike)."""
    for op, av in items:
        digits = _digit_set(op, av)
        if digits is not None:
            uniform = all(d == digits[0] for d in digits)
            if not (uniform if negated else digits[0] or not any(digits)):
                return False
        elif op is _sre.SUBPATTERN:
            if av[2] & re.IGNORECASE or not _blind(list(av[3]), negated=negated):
                return False
        elif op is _sre.BRANCH:
            if not all(_blind(list(branch), negated=negated) for branch in av[1]):
                return False
        elif op in _REPEATS:
            if not _blind(list(av[2]), negated=negated):
                return False
        elif _ATOMIC is not None and op is _ATOMIC:
            if not _blind(list(av), negated=negated):
                return False
        elif op is _sre.ASSERT:
            if not _blind(list(av[1]), negated=negated):
                return False
        elif op is _sre.ASSERT_NOT:
            if not _blind(list(av[1]), negated=True):
                return False
        elif op is _sre.AT:
            if av in _STRING_ENDS:
                return False
        else:  # backreferences, conditionals, anything not known to be safe
            return False
    return True


def holds(lowered: str, clauses: tuple[Clause, ...]) -> bool:
    """Whether a lower-case text holds a word of every clause: an ASCII text never holds a
    non-ASCII word; in another text such a word may hold under case folding that
    ``str.lower`` does not do, so it is never ruled out there."""
    plain = lowered.isascii()
    return all(
        any(w in lowered if w.isascii() else not plain for w in clause) for clause in clauses
    )


def _worth(clause: Clause) -> bool:
    return all(len(w) >= MIN_WORD or not w.isascii() for w in clause)


def _selectivity(clause: Clause) -> tuple[int, int]:
    """Longer shortest words, then fewer words, find fewer lines."""
    return min(len(w) for w in clause), -len(clause)


def _char(code: int) -> str | None:
    """The character of a literal as a word holds it, ``None`` if it cannot be in a word.

    A cased non-ASCII character that IGNORECASE can match with an ASCII one
    (``K``, the Kelvin sign, matches ``k``; ``ſ`` matches ``s``) is left out;
    another (Cyrillic, Greek) is kept: only a non-ASCII line can hold it.
    """
    c = chr(code)
    if c in "\r\n":
        return None
    if c.isascii():
        return c.lower()
    return None if any(f.isascii() for f in c.lower() + c.upper() + c.casefold()) else c


def _flatten(items: list[Any]) -> list[Any]:
    """The sequence with groups opened in place (a group does not change what matches)."""
    out: list[Any] = []
    for op, av in items:
        if op is _sre.SUBPATTERN:
            out.extend(_flatten(list(av[3])))
        elif _ATOMIC is not None and op is _ATOMIC:
            out.extend(_flatten(list(av)))
        else:
            out.append((op, av))
    return out


def _sequence(items: list[Any]) -> list[Clause]:
    clauses: list[Clause] = []
    run: list[str] = []
    for op, av in _flatten(items):
        char = _char(av) if op is _sre.LITERAL else None
        if char is not None:
            run.append(char)
            continue
        if run:
            clauses.append(("".join(run),))
            run = []
        clauses.extend(_node(op, av))
    if run:
        clauses.append(("".join(run),))
    return clauses


def _best(clauses: list[Clause]) -> Clause | None:
    usable = [c for c in clauses if _worth(c)]
    return max(usable, key=_selectivity) if usable else None


def _node(op: Any, av: Any) -> list[Clause]:
    if op is _sre.BRANCH:
        words: dict[str, None] = {}
        for alternative in av[1]:
            best = _best(_sequence(list(alternative)))
            if best is None:
                return []
            words.update(dict.fromkeys(best))
        return [tuple(words)]
    if op in _REPEATS and av[0] >= 1:
        return _sequence(list(av[2]))
    return []
