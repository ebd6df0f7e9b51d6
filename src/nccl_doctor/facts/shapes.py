"""A pattern relaxed to line shapes: what rules out a shape's lines before any line is searched.

:class:`~nccl_doctor.facts.store.Facts` groups the ASCII lines by *shape*:
the line in lower case, with the digits ``1``-``9`` as ``0`` and newlines as
spaces. Four thousand ranks print one message four thousand times, one shape.
A pattern that cannot tell a shape's lines apart
(:func:`~nccl_doctor.facts.literals.shape_blind`) is matched once per shape;
one that can (``NCCL 2\\.\\d``: the ``2`` is a ``0`` in the shape) had to be
matched on every line of every shape holding its words.

:func:`relaxed` rewrites such a pattern so that it matches the shape of every
ASCII line the pattern matches: case is ignored; a literal digit ``1``-``9``
also takes ``0``, a newline also takes a space; a character class gains the
shape of each character it holds; a negated class or character becomes any
character; a negative lookaround and the anchors but word boundaries (a
line's inner newlines are spaces in its shape, and shapes are searched joined
by newlines) are dropped. The result matches more, never
less: a shape it does not match rules out all the shape's lines, and the lines
of the shapes it matches are matched with the pattern itself, so a search
finds exactly what a line-by-line search finds. A backreference becomes the
relaxed group it repeats. A pattern with what no such rewrite keeps
(conditionals, atomic groups and possessive repeats, whose matches can shrink
when their parts grow) has none.
"""

from __future__ import annotations

import bisect
import functools
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nccl_doctor.facts.base import ELLIPSIS

if TYPE_CHECKING:
    from nccl_doctor.facts.store import Said

if sys.version_info >= (3, 11):
    from re import _compiler as _sre_compile
    from re import _constants as _sre
    from re import _parser as _sre_parse
else:  # pragma: no cover -- Python 3.10
    import sre_compile as _sre_compile
    import sre_constants as _sre
    import sre_parse as _sre_parse

_ZERO, _SPACE, _NEWLINE = ord("0"), ord(" "), ord("\n")
#: Anchors that hold at the same place of a line and of its shape, and of shapes joined by
#: newlines (word boundaries: the shape map keeps word characters word characters)
_SAME_AT = frozenset(
    getattr(_sre, name)
    for name in (
        "AT_BOUNDARY",
        "AT_NON_BOUNDARY",
        "AT_UNI_BOUNDARY",
        "AT_UNI_NON_BOUNDARY",
    )
)
#: Anchors newlines decide (a line's are spaces in its shape; shapes are joined by them): dropped
_LINE_AT = frozenset(
    getattr(_sre, name)
    for name in (
        "AT_BEGINNING",
        "AT_END",
        "AT_BEGINNING_LINE",
        "AT_END_LINE",
        "AT_BEGINNING_STRING",
        "AT_END_STRING",
    )
)
_REPEATS = (_sre.MAX_REPEAT, _sre.MIN_REPEAT)


class _NotRelaxableError(Exception):
    """The pattern holds what :func:`relaxed` cannot rewrite."""


@functools.lru_cache(maxsize=512)
def relaxed(pattern: str, flags: int = 0) -> re.Pattern[str] | None:
    """The pattern rewritten to match the shape of every ASCII line it matches (see the
    module docstring), compiled; ``None`` when it cannot be."""
    try:
        tree = _sre_parse.parse(pattern, flags)
        _relax(tree, {})
        # widths are kept (a character becomes a class, assertions and anchors are zero wide)
        compiled: re.Pattern[str] = _sre_compile.compile(tree, flags | re.IGNORECASE)
    except (_NotRelaxableError, re.error, RecursionError, OverflowError):
        return None
    return compiled


def _shape_of(code: int) -> int | None:
    """The shape of one character, where it is not the character itself (case aside)."""
    if ord("1") <= code <= ord("9"):
        return _ZERO
    if code == _NEWLINE:
        return _SPACE
    return None


def _relax(sub: Any, groups: dict[int, Any]) -> None:
    """Rewrite a parsed (sub)pattern in place; ``groups``: the groups rewritten so far."""
    out: list[tuple[Any, Any]] = []
    for op, av in sub.data:
        if op is _sre.LITERAL:
            shape = _shape_of(av)
            out.append((op, av) if shape is None else (_sre.IN, [(op, av), (op, shape)]))
        elif op is _sre.NOT_LITERAL:
            out.append((_sre.ANY, None))
        elif op is _sre.ANY or op is _sre.CATEGORY:  # \d \w \s and their negations: closed
            out.append((op, av))
        elif op is _sre.IN:
            out.append(_relaxed_class(av))
        elif op is _sre.SUBPATTERN:
            group, add_flags, del_flags, inner = av
            _relax(inner, groups)
            if group is not None:
                groups[group] = inner
            out.append((op, (group, add_flags, del_flags & ~re.IGNORECASE, inner)))
        elif op is _sre.BRANCH:
            for branch in av[1]:
                _relax(branch, groups)
            out.append((op, av))
        elif op in _REPEATS:
            _relax(av[2], groups)
            out.append((op, av))
        elif op is _sre.ASSERT:
            _relax(av[1], groups)
            out.append((op, av))
        elif op is _sre.GROUPREF and av in groups:
            # the text the group took, again: what the relaxed group matches of its shape
            out.append((_sre.SUBPATTERN, (None, 0, 0, _uncaptured(groups[av]))))
        elif op is _sre.ASSERT_NOT or (op is _sre.AT and av in _LINE_AT):
            continue  # always true, in the relaxed pattern
        elif op is _sre.AT and av in _SAME_AT:
            out.append((op, av))
        else:  # backreferences, conditionals, atomic groups, possessive repeats...
            raise _NotRelaxableError(op)
    sub.data[:] = out


def _uncaptured(sub: Any) -> Any:
    """A copy of a parsed (sub)pattern whose groups capture nothing."""
    data: list[tuple[Any, Any]] = []
    for op, av in sub.data:
        if op is _sre.SUBPATTERN:
            data.append((op, (None, av[1], av[2], _uncaptured(av[3]))))
        elif op is _sre.BRANCH:
            data.append((op, (av[0], [_uncaptured(b) for b in av[1]])))
        elif op in _REPEATS:
            data.append((op, (av[0], av[1], _uncaptured(av[2]))))
        elif op is _sre.ASSERT:
            data.append((op, (av[0], _uncaptured(av[1]))))
        else:
            data.append((op, av))
    return _sre_parse.SubPattern(sub.state, data)


def _relaxed_class(items: list[tuple[Any, Any]]) -> tuple[Any, Any]:
    """A character class with the shape of each character it holds (any character, negated)."""
    out = list(items)
    for op, av in items:
        if op is _sre.NEGATE:
            return _sre.ANY, None
        if op is _sre.LITERAL:
            shape = _shape_of(av)
            if shape is not None:
                out.append((op, shape))
        elif op is _sre.RANGE:
            low, high = av
            if low <= ord("9") and high >= ord("1"):
                out.append((_sre.LITERAL, _ZERO))
            if low <= _NEWLINE <= high:
                out.append((_sre.LITERAL, _SPACE))
        elif op is not _sre.CATEGORY:
            return _sre.ANY, None  # an item not known: any character
    return _sre.IN, out


#: Digits do not tell lines apart when looking for words: ``rank 12`` and ``rank 7`` are one shape.
DIGITS_AS_ZERO = str.maketrans("123456789", "000000000")
DIGIT_BYTES_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")


@dataclass(frozen=True, slots=True)
class Shapes:
    """The ASCII lines in lower case with digits as ``0``, each distinct shape once.

    Four thousand ranks print one error four thousand times, differing in
    numbers only: looking for a word among the shapes costs one line, not
    four thousand, and so does a pattern that cannot tell the lines of a shape
    apart (:func:`~nccl_doctor.facts.literals.shape_blind`). ``text`` joins
    the shapes by newlines, ``starts`` is where each begins, ``members`` the
    indexes (in :attr:`~nccl_doctor.facts.store.Facts.lines`) of the lines of
    each shape, and ``odd`` the lines that are not ASCII (always searched).
    """

    text: str
    starts: tuple[int, ...]
    members: tuple[list[int], ...]
    odd: tuple[int, ...]

    def shape(self, index: int) -> str:
        """The text of one shape."""
        end = self.starts[index + 1] - 1 if index + 1 < len(self.starts) else len(self.text)
        return self.text[self.starts[index] : end]

    def holding(self, words: tuple[str, ...]) -> set[int]:
        """The shapes that hold one of the ASCII ``words``."""
        found: set[int] = set()
        for word in words:
            if not word.isascii():
                continue  # only a non-ASCII line can hold it, and those are always searched
            pos = self.text.find(word)
            while pos >= 0:
                index = bisect.bisect_right(self.starts, pos) - 1
                found.add(index)
                if index + 1 >= len(self.starts):
                    break
                pos = self.text.find(word, self.starts[index + 1])
        return found

    def matching(self, regex: re.Pattern[str], among: Iterable[int] | None = None) -> set[int]:
        """The shapes (all, or those ``among``) in which a shape-blind ``regex`` matches."""
        if among is not None:
            return {index for index in among if regex.search(self.shape(index))}
        # a relaxed pattern (compiled from a tree: no source) has no anchor a newline decides
        joined = regex
        if regex.pattern is not None:
            joined = re.compile(regex.pattern, regex.flags | re.MULTILINE)
        found: set[int] = set()
        pos, size = 0, len(self.text)
        while pos <= size and (m := joined.search(self.text, pos)) is not None:
            index = bisect.bisect_right(self.starts, m.start()) - 1
            found.add(index)
            if index + 1 >= len(self.starts):
                break
            pos = self.starts[index + 1]
        return found


def shapes_of(lines: Sequence[Said], indexes: Sequence[int], joined: str | None = None) -> Shapes:
    """The distinct shapes of the ASCII lines among ``lines[i]`` for ``i`` in ``indexes``
    (``joined``: their texts joined by newlines, each with its newlines as spaces, when
    already made); the others are :attr:`Shapes.odd`.

    A line cut with its ellipsis counts as ASCII (no ASCII word or letter
    is the ellipsis) and keeps it in its shape, as a pattern sees it.
    """
    groups: dict[str, list[int]] = {}
    odd: list[int] = []
    if joined is None:
        joined = "\n".join(lines[i].text.replace("\n", " ") for i in indexes)
    # often only the ellipses of cut citations (_ascii_cut) are not ASCII
    uncut = joined if joined.isascii() else (joined + "\n").replace(ELLIPSIS + "\n", "\n")
    if uncut.isascii():  # the common case: one pass over all lines at C speed
        # as bytes, where lower() and translate() are table lookups (the ellipsis's UTF-8
        # bytes are none of the ASCII letters and digits they change)
        shaped = joined.encode().lower().translate(DIGIT_BYTES_AS_ZERO).decode()
        for index, shape in zip(indexes, shaped.split("\n") if indexes else (), strict=True):
            groups.setdefault(shape, []).append(index)
    else:
        for index in indexes:
            text = lines[index].text
            if _ascii_cut(text).isascii():
                shape = text.replace("\n", " ").lower().translate(DIGITS_AS_ZERO)
                groups.setdefault(shape, []).append(index)
            else:
                odd.append(index)
    starts: list[int] = []
    at = 0
    for shape in groups:
        starts.append(at)
        at += len(shape) + 1
    return Shapes("\n".join(groups), tuple(starts), tuple(groups.values()), tuple(odd))


def _ascii_cut(text: str) -> str:
    """A citation cut at :data:`CITE_TEXT_MAX` without its ``…``, which no ASCII word matches.

    Only a non-ASCII line must always be searched (case folding maps a few
    non-ASCII characters onto ASCII letters); the ellipsis folds to nothing
    ASCII, so a long ASCII line that was cut stays a line whose words decide.
    """
    return text[:-1] if text.endswith(ELLIPSIS) else text
