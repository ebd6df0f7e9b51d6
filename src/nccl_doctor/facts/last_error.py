"""What PyTorch quotes after ``Last error:``: NCCL's own last WARN, without the line's prefixes.

The parser puts these lines on the :class:`~nccl_doctor.facts.run.NcclErrorReport`
they follow (``last_error``). A ``Last error:`` that no report claims (a
report cut off, a quote in an issue) is still NCCL's reason; this reads the
line after it from the cited lines.
"""

from __future__ import annotations

import re

from nccl_doctor.facts.catalogue import signature_of
from nccl_doctor.facts.nccl import error_chains
from nccl_doctor.facts.run import NcclErrorReport
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


#: NCCL's bootstrap receiving a message of another size than this rank's own structure.
_TRUNCATED = "nccl.warn.bootstrap.message_truncated"
#: Files of the set-up after init: a truncated message there came while transports connect.
_AFTER_INIT = ("transport.cc", "proxy.cc", "p2p.cc", "net.cc", "group.cc")


def truncated_at_init(facts: Facts) -> bool:
    """Whether NCCL's error is a bootstrap message truncated before any transport was set up.

    At init the ranks exchange their peer information, a structure whose size changes between
    NCCL releases ("received 96 bytes instead of 64": a peer runs another release); the same
    WARN while transports connect (``transport.cc``, ``group.cc`` in the ``-> N`` chain) came
    from a release's own bug (NVIDIA/nccl#1176: 2.19.3 on point-to-point set-up). Read once
    per diagnosis: nccl.internal and the differential both ask.
    """
    return facts.derived("truncated_at_init", _truncated_at_init)


def _truncated_at_init(facts: Facts) -> bool:
    chains = error_chains(facts)
    said = [c.warn_message for c in chains if c.warn_message]
    said += [r.last_error[0] for r in facts.of(NcclErrorReport) if r.last_error]
    said += last_error_lines(facts)
    if not any(
        (sig := signature_of(t)) is not None and sig.id.startswith(_TRUNCATED) for t in said
    ):
        return False
    return not any(f[0].endswith(_AFTER_INIT) for c in chains for f in c.frames)
