"""The prefilter: which lines of a buffer hold at least one anchor.

The reader hands a chunk of whole lines (a few MiB of bytes) to
:meth:`Prefilter.line_spans` and gets back the ``(start, end)`` byte offsets
of the lines that contain any parser's anchor; every other line is skipped
without being decoded. Anchors are literal, case-sensitive substrings, matched
as their UTF-8 bytes; lines are split on ``\\n`` only, ``end`` excludes the
``\\n`` and the last line may lack one.

Three implementations return identical spans:

* :class:`HyperscanPrefilter` (Intel Hyperscan, an optional dependency on some
  platforms): one compiled expression ``(?:a|b|...)[^\\n]*\\n``, so the engine
  reports each matching line exactly once, at its newline, however many
  anchors the line holds; the scan runs at near memory speed.
* :class:`Re2Prefilter` (google-re2, when installed; not a dependency): each
  match of ``[^\\n]*(?:a|b|...)[^\\n]*`` is a whole line; about 3x slower.
* :class:`RePrefilter` (stdlib ``re``): the anchors as one trie-shaped
  alternation; after each hit the search resumes at the next line; about
  15x slower than Hyperscan, the fallback of last resort.

:func:`make_prefilter` picks the first that imports and compiles, in that
order (``bench/prefilter.py`` measures them). An empty anchor is in every
line (as ``"" in line`` is); an anchor holding ``\\n`` is in none, and is
dropped.

Anchors may come in *groups* (one per parser): :meth:`Prefilter.tagged_spans`
then also says, for each line, which groups' anchors it holds, as a bit mask
(bit ``g`` for ``groups[g]``). Hyperscan reports this from the same scan (one
expression per group, matches at one line end merged), so the reader never
tests a line against each parser's anchors in Python. A group may be
*caseless* (its anchors found in any ASCII case; the reader's scan asks where
the words a secret follows are, see :data:`~nccl_doctor.evidence.anchors.TRIGGER_BIT`).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import platform
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any, ClassVar

from nccl_doctor.cache import cache_dir, touch, write_atomic

__all__ = [
    "HyperscanPrefilter",
    "Prefilter",
    "Re2Prefilter",
    "RePrefilter",
    "Tagged",
    "available",
    "literals",
    "make_prefilter",
]


def literals(anchors: Sequence[str]) -> tuple[tuple[bytes, ...], bool]:
    """The anchors as the byte strings worth searching for, and whether one is empty.

    An anchor that contains another is dropped (a line holding it holds the
    other), as are anchors with a newline; the result is sorted, so two
    anchor lists with the same meaning build the same matcher.
    """
    return _literals(tuple(anchors))


@functools.lru_cache(maxsize=256)
def _literals(anchors: tuple[str, ...]) -> tuple[tuple[bytes, ...], bool]:
    """:func:`literals`, kept: the reader's scans share their parsers' groups."""
    found: set[bytes] = set()
    empty = False
    for anchor in anchors:
        data = anchor.encode("utf-8", "surrogatepass")
        if not data:
            empty = True
        elif b"\n" not in data:
            found.add(data)
    by_length = sorted(found, key=len)
    kept: list[bytes] = []
    for data in by_length:
        if not any(shorter in data for shorter in kept):
            kept.append(data)
    return tuple(sorted(kept)), empty


def _all_lines(buf: bytes | bytearray) -> list[tuple[int, int]]:
    """Every line of ``buf``."""
    spans: list[tuple[int, int]] = []
    find, size, pos = buf.find, len(buf), 0
    while pos < size:
        end = find(b"\n", pos)
        if end < 0:
            end = size
        spans.append((pos, end))
        pos = end + 1
    return spans


#: A line's span ``(start, end)`` and the bit mask of the anchor groups it holds.
Tagged = tuple[int, int, int]


class Prefilter(ABC):
    """Finds the lines of a buffer that contain at least one anchor.

    ``groups``, when given, replace ``anchors``: the anchors are their union,
    and :meth:`tagged_spans` tells which groups each line holds.
    """

    #: a short name, for benchmarks and diagnostics
    name: ClassVar[str]

    def __init__(
        self,
        anchors: Sequence[str],
        *,
        groups: Sequence[Sequence[str]] = (),
        caseless: Collection[int] = (),
    ) -> None:
        self.groups: tuple[tuple[str, ...], ...] = tuple(map(tuple, groups)) or (tuple(anchors),)
        #: the groups whose anchors are found in any ASCII case (given in lower case)
        self.caseless = frozenset(caseless)
        if any(a != a.lower() for i in self.caseless for a in self.groups[i]):
            raise ValueError("a caseless group's anchors are given in lower case")
        self.anchors: tuple[str, ...] = tuple(a for g in self.groups for a in g)
        self._group_literals = [literals(g) for g in self.groups]
        # what the union of the groups' literals tells, from the groups' own (the union's
        # reduction is quadratic in the anchors, ~3 ms a scan: only re and re2 need it)
        self._every_line = any(every for _, every in self._group_literals)
        self._any_literal = any(words for words, _ in self._group_literals)

    @functools.cached_property
    def _literals(self) -> tuple[bytes, ...]:
        """The literals of the anchors of the groups not caseless (see :func:`literals`)."""
        return literals(
            [a for i, g in enumerate(self.groups) if i not in self.caseless for a in g]
        )[0]

    @functools.cached_property
    def _folded_literals(self) -> tuple[bytes, ...]:
        """The literals of the caseless groups' anchors (in lower case)."""
        return literals([a for i in sorted(self.caseless) for a in self.groups[i]])[0]

    def line_spans(self, buf: bytes | bytearray) -> list[tuple[int, int]]:
        """``(start, end)`` of each line of ``buf`` holding an anchor, in order, each once.

        ``end`` is the offset of the line's ``\\n`` (or ``len(buf)`` for a last
        line without one), so ``buf[start:end]`` is the line.
        """
        if self._every_line:
            return _all_lines(buf)
        if not self._any_literal or not buf:
            return []
        return self._spans(buf)

    def window_spans(self, data: bytes | bytearray, start: int, stop: int) -> list[tuple[int, int]]:
        """:meth:`line_spans` of ``data[start:stop]``, as offsets into ``data``.

        The reader's chunks are windows of whole lines in the bytes it read, so
        the scan need not copy them out first.
        """
        if start == 0 and stop == len(data):
            return self.line_spans(data)
        return [(a + start, b + start) for a, b in self.line_spans(data[start:stop])]

    def tagged_spans(
        self, data: bytes | bytearray, start: int, stop: int, limit: int | None = None
    ) -> list[Tagged]:
        """:meth:`window_spans` with the mask of the groups each line holds.

        ``limit``: at most that many lines, the first ones.
        """
        spans = self.window_spans(data, start, stop)
        if limit is not None:
            spans = spans[:limit]
        if len(self.groups) == 1:
            return [(a, b, 1) for a, b in spans]
        out: list[Tagged] = []
        caseless = self.caseless
        for a, b in spans:
            line = data[a:b]
            folded = line.lower() if caseless else line
            mask = 0
            for bit, (words, every) in enumerate(self._group_literals):
                text = folded if bit in caseless else line
                if every or any(w in text for w in words):
                    mask |= 1 << bit
            out.append((a, b, mask))
        return out

    def groups_in(self, data: bytes | bytearray, start: int, stop: int) -> int:
        """The mask of the groups whose anchors some line of ``data[start:stop]`` holds (the
        bits of :meth:`tagged_spans`, or'ed); Hyperscan stops once every group was found."""
        every = (1 << len(self.groups)) - 1
        found = 0
        for _, _, mask in self.tagged_spans(data, start, stop):
            found |= mask
            if found == every:
                break
        return found

    @abstractmethod
    def _spans(self, buf: bytes | bytearray) -> list[tuple[int, int]]:
        """:meth:`line_spans` for a non-empty buffer and at least one literal."""


def _trie(words: Sequence[bytes]) -> bytes:
    """A regex matching any of ``words`` (distinct, none a prefix of another), as their trie."""
    if len(words) == 1:
        return re.escape(words[0])
    low, high = min(words), max(words)
    n = 0
    while n < len(low) and low[n] == high[n]:
        n += 1
    prefix = low[:n]
    if prefix:
        return re.escape(prefix) + _trie([w[len(prefix) :] for w in words])
    groups: dict[int, list[bytes]] = {}
    for word in words:
        groups.setdefault(word[0], []).append(word[1:])
    branches = [
        re.escape(bytes((first,))) + (_trie(rest) if rest != [b""] else b"")
        for first, rest in sorted(groups.items())
    ]
    return b"(?:" + b"|".join(branches) + b")"


class RePrefilter(Prefilter):
    """The stdlib ``re`` prefilter: a trie-shaped alternation, one search per matching line."""

    name = "re"

    def __init__(
        self,
        anchors: Sequence[str],
        *,
        groups: Sequence[Sequence[str]] = (),
        caseless: Collection[int] = (),
    ) -> None:
        super().__init__(anchors, groups=groups, caseless=caseless)
        # no literal contains another, so none is a prefix of another: the trie is exact
        alternatives = [_trie(self._literals)] if self._literals else []
        if self._folded_literals:  # ASCII letters in either case (a bytes pattern's IGNORECASE)
            alternatives.append(b"(?i:" + _trie(self._folded_literals) + b")")
        self._search = re.compile(b"|".join(alternatives) or b"(?!)").search

    def _spans(self, buf: bytes | bytearray) -> list[tuple[int, int]]:
        spans: list[tuple[int, int]] = []
        search, find, rfind, size = self._search, buf.find, buf.rfind, len(buf)
        pos = 0
        while True:
            hit = search(buf, pos)
            if hit is None:
                return spans
            start = rfind(b"\n", pos, hit.start()) + 1 or pos
            end = find(b"\n", hit.end())
            if end < 0:
                spans.append((start, size))
                return spans
            spans.append((start, end))
            pos = end + 1


def _hs_escape(data: bytes) -> bytes:
    """``data`` as a Hyperscan literal: letters and digits as themselves, all else ``\\xHH``."""
    return b"".join(
        bytes((c,)) if (48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122) else b"\\x%02x" % c
        for c in data
    )


#: Compiled databases kept on disk (a few KiB each): the reader scans with one per set of
#: budgeted groups still read (:func:`~nccl_doctor.evidence.anchors.scan_of`), several a
#: read, and each version of the anchors has its own; fewer kept would compile some each run.
DATABASES_KEPT = 64


def _hs_database(
    hyperscan: Any, expressions: Sequence[bytes], *, cache: bool, flags: Sequence[int] = ()
) -> Any:
    """A compiled block-mode database of ``expressions`` (ids 0, 1, ...; each with its
    ``flags``, none by default), cached on disk.

    Compiling the reader's ~150 anchors takes about 0.1 s, a quarter of the
    start-up; a serialised database loads in microseconds. The cache key holds
    the expression and the engine's version, so a stale entry is never used;
    any problem with the cache (read-only home, corrupt file) falls back to
    compiling.
    """
    ids = list(range(len(expressions)))
    each = list(flags) or [0] * len(ids)
    key = hashlib.sha256(
        b"%s\0%s\0%s%s"
        % (
            b"\0\0".join(expressions),
            str(getattr(hyperscan, "__version__", "")).encode(),
            platform.machine().encode(),
            # flags change what matches: a set of expressions with any keeps them in its key
            b"\0%s" % ",".join(map(str, each)).encode() if any(each) else b"",
        )
    ).hexdigest()[:32]
    path = cache_dir() / f"prefilter-{key}.hsdb"

    def compiled() -> Any:
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        db.compile(expressions=list(expressions), ids=ids, flags=each)
        return db

    if not cache:
        return compiled()
    with contextlib.suppress(Exception):  # no cache, or an unusable one: compile instead
        db = hyperscan.loadb(path.read_bytes(), hyperscan.HS_MODE_BLOCK)
        db.scratch = hyperscan.Scratch(db)
        touch(path)  # in use: kept when other versions write theirs
        return db
    db = compiled()
    # one we cannot write costs the compile next time
    write_atomic(path, hyperscan.dumpb(db), keep=DATABASES_KEPT)
    return db


class HyperscanPrefilter(Prefilter):
    """The Hyperscan prefilter: one match report per matching line, at the line's newline.

    The expression is ``(?:a|b|...)[^\\n]*\\n``, one per group of anchors
    (its id the group's index): however many anchors of a group a line
    holds, all their matches end at the same offset, which Hyperscan reports
    once per group; reports at one offset are merged into the line's mask. A
    buffer whose last line lacks a newline is scanned with one added (the
    Vectorscan 5.4 in python-hyperscan 0.9 misses end-of-data ``$`` matches
    of ``(?:::|or)[^\\n]*$`` once the buffer passes 16 bytes, so no ``$`` is
    used). Raises ``ImportError`` when hyperscan is missing, and hyperscan's
    own error when the database does not compile (e.g. on an unsupported CPU).
    """

    name = "hyperscan"

    def __init__(
        self,
        anchors: Sequence[str],
        *,
        cache: bool = False,
        groups: Sequence[Sequence[str]] = (),
        caseless: Collection[int] = (),
    ) -> None:
        super().__init__(anchors, groups=groups, caseless=caseless)
        import hyperscan  # noqa: PLC0415 -- optional dependency, absent on some platforms

        self._db: Any = None
        self._terminated: type[Exception] = hyperscan.ScanTerminated
        self._lock = threading.Lock()  # the database's scratch space serves one scan at a time
        #: each expression's group bit (groups without literals have no expression)
        self._bits: list[int] = []
        expressions: list[bytes] = []
        flags: list[int] = []
        for bit, (words, _) in enumerate(self._group_literals):
            if words:
                alternation = b"|".join(_hs_escape(w) for w in words)
                expressions.append(b"(?:" + alternation + b")[^\\n]*\\n")
                flags.append(hyperscan.HS_FLAG_CASELESS if bit in self.caseless else 0)
                self._bits.append(1 << bit)
        if expressions:
            self._db = _hs_database(hyperscan, expressions, cache=cache, flags=flags)
        self._made = (hyperscan, expressions, flags, cache)  # for _single (groups_in)

    def _scan(
        self, view: bytes | bytearray | memoryview, offset: int, limit: int | None = None
    ) -> tuple[list[int], list[int]]:
        """The offsets (plus ``offset``) of the newlines of matching lines, and their masks.

        ``limit``: the scan stops once that many lines are found (the engine
        then stops reading the buffer, which is what makes a spent budget cheap).
        """
        ends: list[int] = []
        masks: list[int] = []
        bits = self._bits
        unordered = False
        most = -1 if limit is None else limit

        def on_match(id_: int, _start: int, end: int, _flags: int, _ctx: object) -> bool:
            nonlocal unordered
            at = offset + end - 1  # the offset of the line's newline
            if ends and ends[-1] >= at:
                if ends[-1] == at:
                    masks[-1] |= bits[id_]
                    return False
                unordered = True  # not seen with Hyperscan; sorted below if ever
            if len(ends) == most:
                return True  # a line past the limit: stop the scan
            ends.append(at)
            masks.append(bits[id_])
            return False

        if most == 0:
            return ends, masks
        with self._lock, contextlib.suppress(self._terminated):  # stopped at the limit
            self._db.scan(view, match_event_handler=on_match)
        if unordered:
            merged: dict[int, int] = {}
            for at, mask in zip(ends, masks, strict=True):
                merged[at] = merged.get(at, 0) | mask
            ends, masks = sorted(merged), [merged[at] for at in sorted(merged)]
        return ends, masks

    def _spans(self, buf: bytes | bytearray) -> list[tuple[int, int]]:
        data = buf if buf.endswith(b"\n") else buf + b"\n"
        ends, _ = self._scan(data, 0)
        return _spans_of(buf, ends, 0)

    def window_spans(self, data: bytes | bytearray, start: int, stop: int) -> list[tuple[int, int]]:
        """Scans the window in place (a memoryview), when it ends at a newline."""
        if self._every_line or not self._any_literal or stop <= start or data[stop - 1] != 10:
            return super().window_spans(data, start, stop)
        ends, _ = self._scan(memoryview(data)[start:stop], start)
        return _spans_of(data, ends, start)

    def tagged_spans(
        self, data: bytes | bytearray, start: int, stop: int, limit: int | None = None
    ) -> list[Tagged]:
        """The masks come from the scan itself: one report per group and line."""
        if self._every_line or not self._any_literal or stop <= start or data[stop - 1] != 10:
            return super().tagged_spans(data, start, stop, limit)
        ends, masks = self._scan(memoryview(data)[start:stop], start, limit)
        spans = _spans_of(data, ends, start)
        return [(a, b, m) for (a, b), m in zip(spans, masks, strict=True)]

    def groups_in(self, data: bytes | bytearray, start: int, stop: int) -> int:
        """The mask from one scan that stops once every group with an expression was found."""
        if self._every_line or not self._any_literal or stop <= start or data[stop - 1] != 10:
            return super().groups_in(data, start, stop)
        bits, every = self._bits, sum(self._bits)
        found = 0

        def on_match(id_: int, _start: int, _end: int, _flags: int, _ctx: object) -> bool:
            nonlocal found
            found |= bits[id_]
            return found == every  # every group found: stop the scan

        with self._lock, contextlib.suppress(self._terminated):
            self._single.scan(memoryview(data)[start:stop], match_event_handler=on_match)
        return found

    @functools.cached_property
    def _single(self) -> Any:
        """The expressions again, each reporting its first match only (Hyperscan's
        SINGLEMATCH): what :meth:`groups_in` asks, a report per group, not one per line
        (the reader asks at the start of each per-rank log, whose first lines repeat one
        group for a while)."""
        hyperscan, expressions, flags, cache = self._made
        single = [f | hyperscan.HS_FLAG_SINGLEMATCH for f in flags]
        return _hs_database(hyperscan, expressions, cache=cache, flags=single)


def _spans_of(data: bytes | bytearray, ends: list[int], start: int) -> list[tuple[int, int]]:
    """The lines ending at ``ends`` (offsets of their newlines), none starting before ``start``."""
    spans: list[tuple[int, int]] = []
    rfind, prev = data.rfind, start
    for end in ends:
        line_start = rfind(b"\n", prev, end) + 1 or prev
        spans.append((max(line_start, prev), end))
        prev = end
    return spans


class Re2Prefilter(Prefilter):
    """The google-re2 prefilter: ``[^\\n]*(?:a|b|...)[^\\n]*``, each match a whole line.

    Used where hyperscan is missing but google-re2 is installed (it is not a
    dependency). The pattern is compiled as Latin-1, so any byte is a
    character and invalid UTF-8 cannot split a line. Raises ``ImportError``
    when google-re2 is missing.
    """

    name = "re2"

    def __init__(
        self,
        anchors: Sequence[str],
        *,
        groups: Sequence[Sequence[str]] = (),
        caseless: Collection[int] = (),
    ) -> None:
        super().__init__(anchors, groups=groups, caseless=caseless)
        re2 = importlib.import_module("re2")  # untyped, optional: no import-time dependency
        options = re2.Options()
        options.encoding = re2.Options.Encoding.LATIN1
        options.log_errors = False
        alternatives = [re.escape(w) for w in self._literals]
        if self._folded_literals:  # no Latin-1 letter folds to an ASCII one: as Hyperscan's
            alternatives.append(b"(?i:%s)" % b"|".join(re.escape(w) for w in self._folded_literals))
        alternation = b"|".join(alternatives) or b"x"  # unused if empty
        pattern = b"[^\\n]*(?:" + alternation + b")[^\\n]*"
        self._finditer: Callable[[bytes], Iterator[Any]] = re2.compile(
            pattern, options=options
        ).finditer

    def _spans(self, buf: bytes | bytearray) -> list[tuple[int, int]]:
        return [hit.span() for hit in self._finditer(bytes(buf))]


#: Implementations, fastest first.
_KINDS: tuple[type[Prefilter], ...] = (HyperscanPrefilter, Re2Prefilter, RePrefilter)


def _build(
    kind: type[Prefilter],
    anchors: Sequence[str],
    groups: Sequence[Sequence[str]] = (),
    caseless: Collection[int] = (),
) -> Prefilter | None:
    try:
        return kind(anchors, groups=groups, caseless=caseless)
    except Exception:  # noqa: BLE001 -- any failure of an optional engine means "not here"
        return None


def available() -> tuple[type[Prefilter], ...]:
    """The implementations that work here, fastest first."""
    return tuple(kind for kind in _KINDS if _build(kind, ("x",)) is not None)


def make_prefilter(
    anchors: Sequence[str],
    *,
    cache: bool = False,
    groups: Sequence[Sequence[str]] = (),
    caseless: Collection[int] = (),
) -> Prefilter:
    """The fastest prefilter that builds here for ``anchors``: Hyperscan, re2, else ``re``.

    ``cache`` keeps Hyperscan's compiled database on disk for the next run
    (for the reader's fixed anchor sets; not for arbitrary anchors, which
    would fill the cache). ``groups``, when given, replace ``anchors``, and
    ``caseless`` are those of them found in any case (see :class:`Prefilter`).
    """
    if cache:
        with contextlib.suppress(Exception):  # hyperscan missing or unusable here
            return HyperscanPrefilter(anchors, cache=True, groups=groups, caseless=caseless)
    for kind in _KINDS[:-1]:
        built = _build(kind, anchors, groups, caseless)
        if built is not None:
            return built
    return RePrefilter(anchors, groups=groups, caseless=caseless)
