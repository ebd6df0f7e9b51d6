"""Join attribution across facts: NCCL lines name host and PID, not the rank.

A process's ``ncclCommInitRank ... rank R nranks N`` line ties its
(host, pid) to rank R of a communicator. The communicator with the most
ranks a process joined is taken as the world (sub-communicators renumber
ranks); every other fact of that process without a rank gets that rank.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.nccl import NcclCommInit, NcclLogFact


def process_ranks(facts: Sequence[Fact]) -> dict[tuple[str | None, int], int]:
    """(host, pid) -> world rank, from communicator init lines."""
    best: dict[tuple[str | None, int], tuple[int, int]] = {}
    for fact in facts:
        if not isinstance(fact, NcclCommInit) or fact.pid is None or fact.comm_rank is None:
            continue
        key = (fact.host, fact.pid)
        size = fact.nranks or 0
        if key not in best or size > best[key][0]:
            best[key] = (size, fact.comm_rank)
    return {key: rank for key, (_, rank) in best.items()}


def assign_ranks(
    facts: Sequence[Fact], ranks: dict[tuple[str | None, int], int] | None = None
) -> list[Fact]:
    """``facts`` with the rank filled in where a process's rank is known."""
    if ranks is None:
        ranks = process_ranks(facts)
    out: list[Fact] = []
    for fact in facts:
        rank = None
        if fact.rank is None and isinstance(fact, NcclLogFact) and fact.pid is not None:
            rank = ranks.get((fact.host, fact.pid))
        out.append(fact if rank is None else dataclasses.replace(fact, rank=rank))
    return out
