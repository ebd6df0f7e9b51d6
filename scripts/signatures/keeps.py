"""What a miner keeps of a library's messages, and the catalogue rows it writes for them.

A miner that reads a library's formats at several release tags (``mine_hpc.py``,
``mine_ofi.py``) names the messages it keeps in a table of :class:`Keep`: the words a
format starts with, the symptom class and the catalogue ids it points to. Each format
found is a :class:`Seen`, with where each tag prints it; :func:`rows` turns them into
catalogue rows (the newest wording keeps the id, an older one gets the release it was
last seen), one per signal where the message ends in the signal a process died of, one
per :class:`Fill` where a value of it tells the causes apart.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from common import PRINTF, escape, pattern_for

#: The ids a transport's error points to when the peer at its other end is gone (it failed or
#: exited): its rank, then the fabric path
PEER_GONE = ("launch.rank_crash", "net.ib_transport")
#: A literal message shorter than this (``Out of memory``, ``Endpoint timeout``) says nothing
#: only its library says: other libraries' lines would match it.
SPECIFIC = 24

#: A signal a process died of: the class it opens and the ids it points to (strsignal's text).
SIGNALS = (
    (9, "Killed", "killed", "killed", ("host.resources", "launch.rank_crash")),
    (7, "Bus error", "bus_error", "bus_error", ("nccl.shm", "host.resources")),
    (11, "Segmentation fault", "segfault", "crashed", ("launch.rank_crash",)),
    (6, "Aborted", "aborted", "aborted", ("launch.rank_crash", "app.hang")),
)


@dataclass(frozen=True)
class Fill:
    """Values of a kept message that tell its causes apart: the part of the format they
    fill (``span``, a regex over the format) and the text printed for each conversion in
    it (``values``, in order), with the class and ids those values open."""

    suffix: str
    span: str
    values: tuple[str, ...]
    symptom: str
    hints: tuple[str, ...]
    note: str


@dataclass(frozen=True)
class Keep:
    """One message kept: its id, the words its format starts with (a regex over the format),
    its class and ids, and what to say of it. ``by_signal`` names the conversion that holds
    the signal's number (``%d``) or name (``%s``): one entry per :data:`SIGNALS` row."""

    id: str
    anchor: str
    symptom: str
    hints: tuple[str, ...]
    note: str
    level: str = "error"
    by_signal: str = ""
    #: where the pattern stops, for a format whose value holds a line break (a regex over it)
    upto: str = ""
    #: what the program's log prints before the message (``srun: error: ``), for a format
    #: that starts with its values: the pattern starts at it
    after: str = ""
    #: a line of the message's shape (values made up), for a pattern that covers part of what
    #: the format prints; ``{n}`` and ``{text}`` stand for the signal's number and strsignal
    example: str = ""
    #: the entries this one reads more narrowly (the lookup tries it just before them)
    refines: tuple[str, ...] = ()
    #: values of the message that tell its causes apart: one more entry each, which
    #: refines this one
    fills: tuple[Fill, ...] = ()


@dataclass
class Seen:
    """One kept message's format and where each tag prints it."""

    keep: Keep
    format: str
    args: list[str]
    where: dict[str, list[str]]  # tag -> ["path:line", ...]


def _specialised(pattern: str, fields: list[str], by: str, value: str) -> tuple[str, list[str]]:
    """``pattern`` with its signal capture (the last ``%d``, or the ``%s`` before the core
    note) replaced by ``value``'s literal text."""
    captures = list(re.finditer(r"\(\?P<(\w+)>", pattern))
    names = [m.group(1) for m in captures]
    if by == "d":  # the last integer conversion
        at = max(i for i, m in enumerate(captures) if pattern.startswith(r"-?\d", m.end()))
    else:
        at = len(names) - 1  # strsignal's text and ' (core dumped)' are one capture
    m = captures[at]
    depth, end = 0, m.start()
    for end in range(m.start(), len(pattern)):
        depth += {"(": 1, ")": -1}.get(pattern[end], 0) * (pattern[end - 1] != "\\")
        if depth == 0:
            break
    literal = value if by == "d" else escape(value) + r"(?: \(core dumped\))?"
    return pattern[: m.start()] + literal + pattern[end + 1 :], [n for n in names if n != names[at]]


def _filled(
    name: str, base: dict[str, Any], covered: str, args: list[str], fill: Fill
) -> list[dict[str, Any]]:
    """The row for ``fill``'s values in the format ``covered``, if the format holds its span."""
    span = re.search(fill.span, covered)
    if span is None:
        return []
    conversions = [m for m in PRINTF.finditer(covered) if m.group("conv") != "%"]
    inside = [m for m in conversions if span.start() <= m.start() < span.end()]
    if len(inside) != len(fill.values):
        raise SystemExit(f"{name}.{fill.suffix}: {len(inside)} conversions in {span.group()!r}")
    text, at = "", 0
    for m, value in zip(inside, fill.values, strict=True):
        text += covered[at : m.start()] + value.replace("%", "%%")
        at = m.end()
    first = conversions.index(inside[0])
    rest = args[:first] + args[first + len(inside) :]
    filled = text + covered[at:]  # the format with those values printed
    pattern, fields = pattern_for(filled, "printf", rest)
    return [{"id": f"{name}.{fill.suffix}", **base, "format": filled, "pattern": pattern,
             "fields": fields,
             "symptom": fill.symptom, "hint_ids": list(fill.hints), "note": fill.note,
             "refines": [name]}]  # fmt: skip


def wording_id(ident: str, versions: list[str], taken: set[str]) -> str:
    """The id of one wording of a kept message, the newest wording asked first: it keeps
    ``ident``; an older one gets the release it was last seen in (``versions``: the releases
    that print it, oldest first), and its first where two end in one release. ``taken``
    holds the ids given so far."""
    name = ident
    if name in taken:
        name = f"{ident}_{_slug(versions[-1])}"
    if name in taken:
        name = f"{name}_from_{_slug(versions[0])}"
    taken.add(name)
    return name


def where_of(places: dict[str, list[str]], read: list[str]) -> list[str]:
    """Each place (``path:line``) a message is printed from, with the tags (of ``read``, in
    its order) that print it there: ``path:line@tag,tag``."""
    spots = dict.fromkeys(p for t in read for p in places[t])
    return [f"{p}@{','.join(t for t in read if p in places[t])}" for p in spots]


def placed(
    library: str,
    level: str,
    places: dict[str, list[str]],
    tags: tuple[str, ...],
    version: Callable[[str], str],
    fmt: str,
    style: str,
) -> tuple[list[str], dict[str, Any]]:
    """The releases (named by ``version``) of ``tags`` whose ``places`` print a message, and
    the part of its catalogue row that says where and in which releases it is printed."""
    read = [t for t in tags if places.get(t)]
    seen = [version(t) for t in read]
    return seen, {
        "library": library, "level": level, "where": where_of(places, read),
        "versions": {"first": seen[0], "last": seen[-1], "seen": seen},
        "format": fmt, "format_style": style,
    }  # fmt: skip


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text)


def _example(line: str) -> dict[str, str]:
    return {"example": line} if line else {}


def rows(
    library: str,
    seen: dict[tuple[str, str], Seen],
    tags: tuple[str, ...],
    version: Callable[[str], str],
    printed: Callable[[str], str] = str,
) -> list[dict[str, Any]]:
    """The catalogue rows of the kept messages ``seen`` at ``tags`` (oldest first).

    ``version`` names a tag's release; ``printed`` turns a format into the printf
    conversions it prints like (a library's own conversions as text).
    """
    by_id: dict[str, list[Seen]] = {}
    for item in seen.values():
        by_id.setdefault(item.keep.id, []).append(item)
    out: list[dict[str, Any]] = []
    taken: set[str] = set()
    for ident, items in by_id.items():
        # the newest format keeps the id; an older wording gets the release it was last seen
        items.sort(key=lambda s: max(tags.index(t) for t in s.where), reverse=True)
        for item in items:
            keep = item.keep
            versions, base = placed(
                library, keep.level, item.where, tags, version, item.format, "printf"
            )
            name = wording_id(ident, versions, taken)
            covered = keep.after + printed(item.format)
            if keep.upto and (cut := re.search(keep.upto, covered)):
                covered = covered[: cut.end()]
            pattern, fields = pattern_for(covered, "printf", item.args)
            if not keep.by_signal:
                out.append({"id": name, **base, "pattern": pattern, "fields": fields,
                             "symptom": keep.symptom, "hint_ids": list(keep.hints),
                             "note": keep.note, **_example(keep.example),
                             **({"refines": list(keep.refines)} if keep.refines else {})})  # fmt: skip
                for fill in keep.fills:
                    out.extend(_filled(name, base, covered, item.args, fill))
                continue
            for number, text, suffix, symptom, hints in SIGNALS:
                value = str(number) if keep.by_signal == "d" else text
                special, kept = _specialised(pattern, fields, keep.by_signal, value)
                out.append({"id": f"{name}.{suffix}", **base, "pattern": special,
                             "fields": kept, "symptom": symptom, "hint_ids": list(hints),
                             "note": f"{keep.note}: signal {number} ({text})",
                             **_example(keep.example.format(n=number, text=text)),
                             **({"refines": list(keep.refines)} if keep.refines else {})})  # fmt: skip
    return out
