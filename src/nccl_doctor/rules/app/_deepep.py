"""What DeepEP's timeouts say about each rank of a hang.

DeepEP's kernels wait ~100 s for a peer's tokens, then print which rank gave up and trap
(``scripts/signatures/mine_deepep.py``). The low-latency kernels also name the rank they
waited for (``src_rank``): its tokens never came, so it is the **origin** (stuck elsewhere,
dead, or its path to the waiting rank broken); the rank that printed waits on it:
**lagging**. The other kernels name only the rank that waited.
"""

from __future__ import annotations

from nccl_doctor.facts.run import DistributedError
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import LAGGING, ORIGIN
from nccl_doctor.rules.app._labels import RAS_COUNTS, WAITING, Found, Label

#: the failure category the c10d reader gives DeepEP's timeout lines
CATEGORY = "deepep_timeout"


def deepep_timeouts(facts: Facts) -> list[DistributedError]:
    """DeepEP's timeout lines, as the c10d reader keeps them."""
    return [e for e in facts.of(DistributedError) if e.category == CATEGORY]


def from_deepep(facts: Facts, world: int | None) -> Found:
    """The ranks DeepEP's timeouts name: those waited for, and those that waited."""
    out: list[Label] = []
    for timeout in deepep_timeouts(facts):
        sent = timeout.peer_rank
        if sent is not None and (world is None or sent < world):
            waiter = f"rank {timeout.rank}'s" if timeout.rank is not None else "a rank's"
            why = f"its tokens never reached {waiter} DeepEP kernel within ~100 s (src_rank)"
            out.append(Label(sent, ORIGIN, why, timeout.cite, RAS_COUNTS))
        if timeout.rank is not None:
            whom = f" for rank {sent}" if sent is not None else " for a peer"
            why = f"its DeepEP kernel waited ~100 s{whom} and gave up"
            out.append(Label(timeout.rank, LAGGING, why, timeout.cite, WAITING))
    return out, None
