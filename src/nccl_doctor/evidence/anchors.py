"""Which parsers want a line: the anchor groups the prefilter's scan reports, one bit each.

Every block parser's anchors, every stream parser's, the Markdown code fences,
then every stream parser's informational anchors and its floor anchors (see
:mod:`nccl_doctor.parse.base`) are one group each; the reader's scan tells,
for each line, the bit mask of the groups it holds, so no line is tested
against each parser's anchors in Python. The informational and floor groups
get prefilters of their own, dropped when a budget is spent.
"""

from __future__ import annotations

import functools
import re

from nccl_doctor.evidence.prefilter import Prefilter, make_prefilter
from nccl_doctor.parse import BLOCK_PARSERS, STREAM_PARSERS

#: Markdown code fences separate the pieces of a pasted issue.
FENCES = ("```", "~~~")

#: The anchor groups, one bit each: every block parser's, every stream parser's, the code
#: fences, then every stream parser's info anchors (:data:`INFO`, scanned while budgeted),
#: then every stream parser's floor anchors (:data:`FLOOR`, scanned up to its floor).
GROUPS: tuple[tuple[str, ...], ...] = (
    *(p.anchors for p in BLOCK_PARSERS),
    *(p.anchors for p in STREAM_PARSERS),
    FENCES,
    *(p.info_anchors for p in STREAM_PARSERS),
    *(p.floor_anchors for p in STREAM_PARSERS),
)
STREAM = len(BLOCK_PARSERS)
INFO = STREAM + len(STREAM_PARSERS) + 1
FLOOR = INFO + len(STREAM_PARSERS)
BLOCK_BITS = (1 << STREAM) - 1
ALWAYS_BITS = (1 << INFO) - 1
FLOOR_BITS = ((1 << len(STREAM_PARSERS)) - 1) << FLOOR
#: each stream parser's bits: its anchors', its info anchors' and its floor anchors'
PARSER_BITS = tuple(
    (1 << (STREAM + j)) | (1 << (INFO + j)) | (1 << (FLOOR + j)) for j in range(len(STREAM_PARSERS))
)


_PREFILTERS: dict[str, Prefilter] = {}


def prefilter_of(key: str) -> Prefilter:
    """A compiled prefilter: ``""`` for every always-anchor, a parser's kind for its info
    anchors, ``floor:`` and its kind for its floor anchors.

    The first has one group per parser (and the fences), so its spans say
    which parsers a line is for. Info and floor anchors get prefilters of
    their own so that, when a parser's budget is spent, the reader simply
    stops scanning with that one: no recompiling.
    """
    found = _PREFILTERS.get(key)
    if found is None:
        if key.startswith("floor:"):
            anchors = [a for p in STREAM_PARSERS if p.kind == key[6:] for a in p.floor_anchors]
            found = make_prefilter(anchors, cache=True)
        elif key:
            anchors = [a for p in STREAM_PARSERS if p.kind == key for a in p.info_anchors]
            found = make_prefilter(anchors, cache=True)
        else:
            found = make_prefilter((), cache=True, groups=GROUPS[:INFO])
        _PREFILTERS[key] = found
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
