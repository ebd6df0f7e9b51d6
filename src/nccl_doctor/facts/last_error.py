"""What PyTorch quotes after ``Last error:``: NCCL's own last WARN, without the line's prefixes.

The parser puts these lines on the :class:`~nccl_doctor.facts.run.NcclErrorReport`
they follow (``last_error``). A ``Last error:`` that no report claims (a
report cut off, a quote in an issue) is still NCCL's reason; this reads the
line after it from the cited lines.
"""

from __future__ import annotations

import re

from nccl_doctor.facts.store import Facts

_HEAD = re.compile(r"Last error:\s*$", re.IGNORECASE)
#: Prefixes that wrap a message line: ``(pid=1)``, ``[rank3]:``, vLLM ``ERROR 04-07 .. x.py:45]``.
_PREFIX = re.compile(
    r"^(?:\([^)]*\)\s*)?(?:\[rank\d+\]:\s*)?(?:[A-Z]+ \d\d-\d\d [\d:.]+ \S+?:\d+\]\s*)?"
)


def last_error_lines(facts: Facts) -> list[str]:
    """The line after each ``Last error:`` of the evidence, without its prefixes, once each.

    Read once per diagnosis: the differential and nccl.internal both ask.
    """
    return list(facts.derived("last_error_lines", _last_error_lines))


def _last_error_lines(facts: Facts) -> tuple[str, ...]:
    hits = facts.search(_HEAD)
    if not hits:
        return ()
    by_place = {(s.cite.source, s.cite.line): s.text for s in facts.lines}
    out: dict[str, None] = {}
    for hit in hits:
        nxt = by_place.get((hit.cite.source, hit.cite.line + 1))
        if nxt:
            text = _PREFIX.sub("", nxt.strip())
            if text:
                out[text] = None
    return tuple(out)
