"""DDP's reducer found parameters that received no gradient (unused or rank-dependent graph).

What it means
-------------
DistributedDataParallel waits for a gradient of every parameter before it
all-reduces a bucket. Some parameters took no part in the loss in the last
iteration - a branch not taken, a head used only by some ranks or some
batches, a frozen layer still marked ``requires_grad`` - so the reduction of
the previous iteration never finished when the next one began.

Why it matters
--------------
Training stops with an error on the first iteration after the unused one;
with rank-dependent graphs the ranks can also desynchronise and hang.

Evidence
--------
``Expected to have finished reduction in the prior iteration before starting
a new one``, with torch >= 1.9 or ``TORCH_DISTRIBUTED_DEBUG=INFO/DETAIL``
the list ``Parameters which did not receive grad for rank 3: ...`` and their
indices; ``Expected to mark a variable ready only once`` for parameters used
twice in reentrant backward passes.

Fix
---
Make every parameter contribute to the loss on every rank and step (or set
``requires_grad=False`` on unused ones), or pass
``find_unused_parameters=True`` to DDP (slower); for activation
checkpointing use ``use_reentrant=False`` or ``static_graph=True``.
"""

from __future__ import annotations

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.run import DistributedError
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.rules.base import Rule, first_distinct
from nccl_doctor.signs.app import (
    NO_GRAD_INDICES,
    NO_GRAD_NAMES,
    READY_TWICE,
    REDUCTION_UNFINISHED,
)

RULE = Rule(
    id="app.unused_params",
    title="DDP parameters received no gradient",
    severity=Severity.CRITICAL,
    explains=("launch.rank_crash", "app.hang"),
)


def check(facts: Facts) -> list[Finding]:
    """The reducer's unfinished-reduction or marked-twice errors."""
    cites: list[Cite] = [
        d.cite for d in facts.of(DistributedError) if d.category == "ddp_unused_params"
    ]
    hits = facts.seen(REDUCTION_UNFINISHED)
    cites = first_distinct([*cites, *(h.cite for h in hits)])
    twice = facts.seen(READY_TWICE)
    if not cites and not twice:
        return []
    ranks: list[int] = []
    detail = ""
    for hit in facts.seen(NO_GRAD_NAMES):
        rank = int(hit.match["rank"])
        ranks.append(rank)
        detail += f"; on rank {rank} no gradient reached {hit.match['names'].strip()[:200]}"
        cites.append(hit.cite)
    for hit in facts.seen(NO_GRAD_INDICES):
        detail += f" (parameter indices {hit.match['indices'].strip()})"
        cites.append(hit.cite)
        break
    fix = [
        (
            "Make the listed parameters contribute to the loss on every rank and iteration, or set "
            "requires_grad=False on them if they are not meant to train."
        ),
        (
            "Or pass find_unused_parameters=True to DistributedDataParallel (costs an extra graph "
            "traversal per step)."
        ),
        (
            "If the set of used parameters depends on the rank or the batch, make that decision "
            "identical on all ranks."
        ),
    ]
    if not ranks:
        fix.insert(
            0, "Rerun with TORCH_DISTRIBUTED_DEBUG=DETAIL to get the names of the parameters."
        )
    if cites:
        summary = (
            "DDP's reducer had not finished the previous iteration's gradient reduction: some "
            "parameters took no part in producing the loss" + detail + "."
        )
    else:
        cites = [twice[0].cite]
        summary = (
            "DDP marked a parameter ready twice in one backward pass: a parameter is used in "
            "several reentrant backward passes (activation checkpointing) or outside forward."
        )
        fix = [
            "Use torch.utils.checkpoint with use_reentrant=False, or DDP(static_graph=True).",
            *fix[1:2],
        ]
    prose_only = all(h.prose for h in (*hits, *twice)) and not facts.of(DistributedError)
    return [
        RULE.finding(
            summary=summary,
            fix=fix,
            evidence=cites[:4],
            ranks=ranks,
            confidence=Confidence.MEDIUM if prose_only else Confidence.HIGH,
        )
    ]
