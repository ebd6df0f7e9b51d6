"""Which parsers want a line: the anchor groups the prefilter's scan reports, one bit each.

Every block parser's anchors, every stream parser's, the lines the dispatch
reads itself (Markdown code fences, the first line of nccl-doctor's own
output), then every stream parser's informational anchors and its floor
anchors (see :mod:`nccl_doctor.parse.base`) are one group each; the reader's scan tells,
for each line, the bit mask of the groups it holds, so no line is tested
against each parser's anchors in Python. The informational and floor groups
are scanned with the rest while a source still reads them (:func:`scan_of`); the floor
groups on their own, up to a source's floor (:func:`floor_of`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from nccl_doctor.evidence.own_output import STRETCH_ANCHORS
from nccl_doctor.evidence.prefilter import Prefilter, make_prefilter
from nccl_doctor.parse import BLOCK_PARSERS, STREAM_PARSERS
from nccl_doctor.redact import TRIGGERS

#: Markdown code fences separate the pieces of a pasted issue.
FENCES = ("```", "~~~")
#: What the dispatch reads itself: the fences and where nccl-doctor's own output begins.
MARKS = (*FENCES, *STRETCH_ANCHORS)

#: The anchor groups, one bit each: every block parser's, every stream parser's, the
#: dispatch's own marks, then every stream parser's info anchors (:data:`INFO`, scanned
#: while budgeted), then every stream parser's floor anchors (:data:`FLOOR`, scanned up to
#: its floor).
GROUPS: tuple[tuple[str, ...], ...] = (
    *(p.anchors for p in BLOCK_PARSERS),
    *(p.anchors for p in STREAM_PARSERS),
    MARKS,
    *(p.info_anchors for p in STREAM_PARSERS),
    *(p.floor_anchors for p in STREAM_PARSERS),
)
STREAM = len(BLOCK_PARSERS)
INFO = STREAM + len(STREAM_PARSERS) + 1
FLOOR = INFO + len(STREAM_PARSERS)
BLOCK_BITS = (1 << STREAM) - 1
ALWAYS_BITS = (1 << INFO) - 1
FLOOR_BITS = ((1 << len(STREAM_PARSERS)) - 1) << FLOOR
#: The reader's scan also says which lines hold a word a secret follows (the gate's triggers,
#: :data:`nccl_doctor.redact.TRIGGERS`, in any case): a line it found without one needs no
#: looking for them again (:class:`~nccl_doctor.redact.LineGate`). Its group is the last of
#: the scan's, after :data:`GROUPS`, and no parser's.
TRIGGER_BIT = 1 << len(GROUPS)
#: each stream parser's bits: its anchors', its info anchors' and its floor anchors'
PARSER_BITS = tuple(
    (1 << (STREAM + j)) | (1 << (INFO + j)) | (1 << (FLOOR + j)) for j in range(len(STREAM_PARSERS))
)


_SCANS: dict[tuple[int, ...], Prefilter] = {}
_FIRSTS: dict[tuple[str, ...], Prefilter] = {}
_FLOORS: dict[str, Prefilter] = {}


def scan_of(extra: Iterable[int] = ()) -> Prefilter:
    """The reader's scan: every always-anchor group and the info groups ``extra``
    (their indices in :data:`GROUPS`), with the bits of :data:`GROUPS`, and the gate's
    triggers (:data:`TRIGGER_BIT`).

    One scan of a chunk tells, for each line, which parsers want it and which
    budgeted groups it holds; a source scans with the groups whose budget
    it still reads, so a spent budget costs no scan (one database
    per set of groups, compiled once and kept on disk).
    """
    key = tuple(sorted(set(extra)))
    found = _SCANS.get(key)
    if found is None:
        groups = [g if i < INFO or i in key else () for i, g in enumerate(GROUPS)]
        groups.append(TRIGGERS)  # TRIGGER_BIT
        found = _SCANS[key] = make_prefilter((), cache=True, groups=groups, caseless=(len(GROUPS),))
    return found


def floor_of(kind: str) -> Prefilter:
    """The prefilter of ``kind``'s floor anchors, scanned on its own: a source looks at the
    first few lines holding them, and a scan stopped at the last costs nothing past it (in
    the reader's scan, every later one in the chunk would be reported)."""
    found = _FLOORS.get(kind)
    if found is None:
        anchors = [a for p in STREAM_PARSERS if p.kind == kind for a in p.floor_anchors]
        found = _FLOORS[kind] = make_prefilter(anchors, cache=True)
    return found


def first_of(kinds: tuple[str, ...]) -> Prefilter:
    """A prefilter with one group per kind of ``kinds``: its info anchors (to tell whether a
    source holds any, :meth:`~nccl_doctor.evidence.prefilter.Prefilter.groups_in`)."""
    found = _FIRSTS.get(kinds)
    if found is None:
        info = {p.kind: p.info_anchors for p in STREAM_PARSERS}
        groups = [info[kind] for kind in kinds]
        found = _FIRSTS[kinds] = make_prefilter((), cache=True, groups=groups)
    return found


def mask_of(text: str) -> int:
    """The groups whose anchors ``text`` holds (what the prefilter tells of bytes, for a str)."""
    mask = 0
    for bit, group in enumerate(GROUPS):
        if any(a in text for a in group):
            mask |= 1 << bit
    return mask


@functools.lru_cache(maxsize=64)
def any_of(anchors: tuple[str, ...]) -> re.Pattern[bytes]:
    """One pattern over bytes for any of ``anchors`` (the same few sets in every source)."""
    words = sorted({a.encode() for a in anchors}, key=len, reverse=True)
    return re.compile(b"|".join(map(re.escape, words)))
