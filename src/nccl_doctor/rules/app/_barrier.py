"""The ranks a failed ``monitored_barrier()`` names (ProcessGroupGloo::monitoredBarrier).

The barrier's root (rank 0) waits for every other rank to check in. With
``wait_all_ranks=True`` it lists the ranks that never did (``[Rank 0]: Ranks
2, 3 failed to pass monitoredBarrier in 1800000 ms``); without, it waits on
ranks 1, 2, ... in order and gives up at the first that does not answer
(``Rank 0 timed out in monitoredBarrier after 1800000 ms.`` then
``Successfully processed ranks: 1, 2``): that rank is the one after the last
processed. PyTorch's debug wrapper runs the same barrier before every
collective; its failures carry ``ProcessGroupWrapper: Monitored Barrier
encountered error`` and belong to the mismatch rule, not here.
"""

from __future__ import annotations

from dataclasses import dataclass

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.ranks import ranks_listed
from nccl_doctor.facts.store import Facts
from nccl_doctor.signs.app import (
    BARRIER_MISSED_BY,
    BARRIER_PROCESSED,
    BARRIER_TIMED_OUT,
    MONITORED_BARRIER,
)


@dataclass(frozen=True, slots=True)
class BarrierMiss:
    """Who a failed monitored barrier names, after how long, and the lines that say it.

    ``in_order``: the root waited on the ranks one by one, so ``late`` is the one
    it was waiting on (ranks after it were never asked), not every late rank.
    """

    late: tuple[int, ...]
    waited_ms: int | None
    in_order: bool
    cites: tuple[Cite, ...]


def barrier_miss(facts: Facts) -> BarrierMiss | None:
    """The failed monitored barrier the job called itself, or ``None``."""
    if facts.seen(MONITORED_BARRIER):
        return None
    missed = facts.seen(BARRIER_MISSED_BY, prose=False)
    if missed:
        late = ranks_listed(" ".join(h.match["ranks"] for h in missed))
        ms = next((int(h.match["ms"]) for h in missed if h.match["ms"]), None)
        return BarrierMiss(late, ms, False, tuple(h.cite for h in missed[:2]))
    timed = facts.seen(BARRIER_TIMED_OUT, prose=False)
    if not timed:
        return None
    root = int(timed[0].match["rank"])
    # torch's own words on a line of their own, which read like a sentence: any line counts
    processed = facts.seen(BARRIER_PROCESSED)
    heard = set(ranks_listed(" ".join(h.match["ranks"] or "" for h in processed)))
    nxt = next((r for r in range(len(heard) + 2) if r != root and r not in heard), None)
    late = (nxt,) if processed and nxt is not None else ()
    cites = (timed[0].cite, *(h.cite for h in processed[:1]))
    return BarrierMiss(late, int(timed[0].match["ms"]), True, cites)
