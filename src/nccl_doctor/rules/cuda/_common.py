"""Helpers of the cuda.* rules: which rank hit an error, and how to name it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.run import (
    ChildFailure,
    CppException,
    CudaError,
    NcclErrorReport,
    PythonTraceback,
)
from nccl_doctor.facts.store import Facts, Hit
from nccl_doctor.rules.base import first_distinct


def _texts(fact: Fact) -> list[str]:
    out = [fact.cite.text]
    for name in ("message", "traceback"):
        value = getattr(fact, name, None)
        if isinstance(value, str):
            out.append(value)
    for name in ("message_lines", "last_error", "traceback_lines"):
        value = getattr(fact, name, None)
        if isinstance(value, tuple):
            out.extend(v for v in value if isinstance(v, str))
    return out


def matching_errors(facts: Facts, pattern: re.Pattern[str]) -> list[CudaError]:
    """CUDA error facts whose error text matches."""
    return [e for e in facts.of(CudaError) if e.error and pattern.search(e.error)]


def hits(facts: Facts, pattern: re.Pattern[str]) -> tuple[tuple[Hit, ...], bool]:
    """Lines matching, and whether any of them is machine output."""
    found = facts.search(pattern)
    return found, any(not h.prose for h in found)


def ranks_of(
    facts: Facts, pattern: re.Pattern[str], direct: Sequence[Fact] = (), lines: Sequence[Hit] = ()
) -> list[int]:
    """The ranks that hit the error, earliest first.

    Read from the error facts themselves, then from the search hits, then
    from the exceptions and launcher summaries that carry the error text,
    then from the launcher's root cause when the job had only that rank.
    """
    timed: list[tuple[float, int, int]] = []
    order = 0

    def add(rank: int | None, time_s: float | None) -> None:
        nonlocal order
        if rank is not None:
            timed.append((time_s if time_s is not None else float("inf"), order, rank))
            order += 1

    for fact in direct:
        add(fact.rank, fact.time_s)
    for hit in lines:
        add(hit.rank, None)
    if not timed:
        carriers = (PythonTraceback, CppException, NcclErrorReport, ChildFailure)
        for fact in facts.all:
            if isinstance(fact, carriers) and any(pattern.search(t) for t in _texts(fact)):
                add(fact.rank, fact.time_s)
    if not timed:
        roots = [c for c in facts.of(ChildFailure) if c.root_cause and c.rank is not None]
        if len(roots) == 1 and len(facts.ranks) <= 1:
            add(roots[0].rank, None)
    return list(dict.fromkeys(rank for _, _, rank in sorted(timed)))


def hosts_of(direct: Sequence[Fact], lines: Sequence[Hit] = ()) -> list[str]:
    """The hosts the error facts (else the matching lines) name."""
    hosts = [f.host for f in direct if f.host] or [h.said.host for h in lines if h.said.host]
    return list(dict.fromkeys(hosts))


def who(ranks: Sequence[int], hosts: Sequence[str] = ()) -> str:
    """``rank 3`` / ``ranks 1, 3`` / ``a rank on node7`` / ``an unidentified rank``."""
    if not ranks:
        return f"a rank on {hosts[0]}" if hosts else "an unidentified rank"
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    return "ranks " + ", ".join(str(r) for r in ranks[:8]) + (" ..." if len(ranks) > 8 else "")


def cite_of(item: Fact | Cite) -> Cite:
    """The citation of a fact or a citation."""
    return item.cite if isinstance(item, Fact) else item


def dedupe(items: Iterable[Fact | Cite], limit: int = 4) -> list[Fact | Cite]:
    """Items with distinct citations, the first ``limit``."""
    return first_distinct(items, limit, key=cite_of)


def nccl_saw(facts: Facts, pattern: re.Pattern[str]) -> NcclErrorReport | None:
    """An NCCL error report whose last error is this CUDA error (NCCL hit it)."""
    for report in facts.of(NcclErrorReport):
        if any(pattern.search(t) for t in report.last_error):
            return report
    return None


def cascade(others: Sequence[int]) -> str:
    """``; rank 0's errors are the cascade`` for the ranks that did not hit the error."""
    if not others:
        return ""
    if len(others) == 1:
        return f"; rank {others[0]}'s errors are the cascade"
    return f"; the errors of ranks {', '.join(map(str, others[:8]))} are the cascade"
