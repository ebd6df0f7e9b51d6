"""Helpers of the cuda.* rules: which rank hit an error, and how to name it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.run import (
    ChildFailure,
    CppException,
    CudaError,
    DistributedError,
    NcclErrorReport,
    PythonTraceback,
)
from nccl_doctor.facts.signs import Sign
from nccl_doctor.facts.store import Facts, Hit
from nccl_doctor.rules.base import first_distinct
from nccl_doctor.signs.cuda import NO_GPU

#: Facts that carry an error's text in their message or traceback lines.
_CARRIERS = (PythonTraceback, CppException, NcclErrorReport, ChildFailure)


def matching_errors(
    facts: Facts, sign: Sign, errors: Iterable[CudaError] | None = None
) -> list[CudaError]:
    """The CUDA error facts (of ``errors``, else all) whose error text shows ``sign``.

    The sign is read on each error's line; the hit counts where what it
    matched is part of the error the parser took from that line.
    """
    errors = tuple(facts.of(CudaError) if errors is None else errors)
    shown: dict[tuple[str, int], set[str]] = {}
    for hit in facts.seen_on(sign, errors):
        shown.setdefault((hit.cite.source, hit.cite.line), set()).add(hit.match.group(0).lower())
    return [
        e
        for e in errors
        if e.error and any(m in e.error for m in shown.get((e.cite.source, e.cite.line), ()))
    ]


def hits(facts: Facts, sign: Sign) -> tuple[tuple[Hit, ...], bool]:
    """Lines where ``sign`` shows, and whether any of them is machine output."""
    found = facts.seen(sign)
    return found, any(not h.prose for h in found)


def no_gpu_errors(facts: Facts) -> list[Fact]:
    """The errors of a process that found no GPU at all: CUDA error 100 (or an error whose
    text says so) and ProcessGroupNCCL's 'only supported with GPUs, no GPUs found'. The lines
    that say so are ``hits(facts, NO_GPU)``."""
    named = set(matching_errors(facts, NO_GPU))
    errors: list[Fact] = [e for e in facts.of(CudaError) if e.code == 100 or e in named]
    return [*errors, *(d for d in facts.of(DistributedError) if d.category == "no_gpus")]


def ranks_of(
    facts: Facts, sign: Sign, direct: Sequence[Fact] = (), lines: Sequence[Hit] = ()
) -> list[int]:
    """The ranks that hit the error, earliest first.

    Read from the error facts themselves, then from the sign's hits, then
    from the exceptions and launcher summaries whose lines show the sign,
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
        carriers = [f for f in facts.all if isinstance(f, _CARRIERS)]
        shown = {(h.cite.source, h.cite.line) for h in facts.seen_on(sign, carriers)}
        for fact in carriers:
            if (fact.cite.source, fact.cite.line) in shown:
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


def nccl_saw(facts: Facts, sign: Sign) -> NcclErrorReport | None:
    """An NCCL error report whose last error shows ``sign`` (NCCL hit that CUDA error)."""
    reports = facts.of(NcclErrorReport)
    shown: dict[tuple[str, int], set[str]] = {}
    for hit in facts.seen_on(sign, reports):
        shown.setdefault((hit.cite.source, hit.cite.line), set()).add(hit.said.text)
    for report in reports:
        source, line = report.cite.source, report.cite.line
        said = shown.get((source, line), set())
        if any(Cite.of(source, line, t.rstrip()).text in said for t in report.last_error):
            return report
    return None


def cascade(others: Sequence[int]) -> str:
    """``; rank 0's errors are the cascade`` for the ranks that did not hit the error."""
    if not others:
        return ""
    if len(others) == 1:
        return f"; rank {others[0]}'s errors are the cascade"
    return f"; the errors of ranks {', '.join(map(str, others[:8]))} are the cascade"
