"""The DDP/FSDP model differs across ranks: parameter counts, shapes or strides.

What it means
-------------
When DistributedDataParallel is constructed it checks that every rank holds
the same parameters (``_verify_params_across_processes``). Here that check
found a difference: a rank built the model with another config, vocabulary
size or number of classes, loaded a different checkpoint, or created
parameters conditionally on its rank.

Why it matters
--------------
DDP averages gradients bucket by bucket assuming identical models; it
refuses to start rather than silently corrupt training.

Evidence
--------
``params[0] in this process with sizes [512, 10] appears not to match sizes
of the same param in process 0`` and ``DDP expects same model across all
ranks, but Rank 1 has 2 params, while rank 0 has inconsistent 3 params``.
A communicator failure raised inside that same check (an NCCL error during
``_verify_params_across_processes``, the first collective of the job) is not
a model difference and does not count. A peer counted with 0 parameters is
rarely a model: the counts arrive by an all-gather (c10d comm.cpp), and a rank
with no trainable parameter stops earlier ("DistributedDataParallel is not
needed when a module doesn't have any parameter that requires a gradient"),
so a 0 is the gather's buffer never filled: the job's first collective moved
no data (P2P between PCIe GPUs that do not carry it, a network that does
not). That reading is a warning of low confidence, and the transport's
causes rank beside it.

Fix
---
Build the model identically on every rank (same config, same seed for
shape-affecting choices, no rank-dependent modules), load checkpoints before
wrapping in DDP on every rank, and print ``sum(p.numel() for p in
model.parameters())`` and the parameter shapes per rank to find the
difference.
"""

from __future__ import annotations

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.run import DistributedError
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.rules.base import Rule, first_distinct
from nccl_doctor.signs.app import PARAM_COUNT, PARAM_MISMATCH, PARAM_SHAPES, unfilled_gathers

RULE = Rule(
    id="app.param_mismatch",
    title="The model differs across ranks",
    severity=Severity.CRITICAL,
    explains=("launch.rank_crash",),
)


def check(facts: Facts) -> list[Finding]:
    """DDP's cross-rank parameter check reporting a real difference."""
    cites: list[Cite] = [
        d.cite for d in facts.of(DistributedError) if d.category == "ddp_param_mismatch"
    ]
    hits = facts.seen(PARAM_MISMATCH)
    cites = first_distinct([*cites, *(h.cite for h in hits)])
    if not cites:
        return []
    ranks: list[int] = []
    unfilled = False  # the gathered count of a peer is 0: no data arrived
    summary = "DDP's cross-rank check found different model parameters on different ranks"
    for hit in facts.seen(PARAM_SHAPES):
        m = hit.match
        own = int(m["own"]) if m["own"] else hit.rank
        summary = (
            f"Parameter {m['index']} has {m['what']} [{m['dims']}] on "
            f"{'rank ' + str(own) if own is not None else 'one rank'}, which do not "
            f"match the same parameter in process {m['peer']}: the models differ"
        )
        ranks = [r for r in (own, int(m["peer"])) if r is not None]
        break
    else:
        # (the line that read a 0 says it, where one did)
        zeros = unfilled_gathers(facts)
        unfilled = bool(zeros)
        for hit in zeros or facts.seen(PARAM_COUNT):
            m = hit.match
            if unfilled:
                summary = (
                    f"Rank {m['rank']} has {m['count']} parameters but DDP read 0 from rank "
                    f"{m['other']}: a 0 is what its all-gather of the counts leaves when no data "
                    "arrived (a transport that moved nothing), more often than a model"
                )
            else:
                summary = (
                    f"Rank {m['rank']} has {m['count']} parameters but rank {m['other']} has "
                    f"{m['other_count']}: the models differ"
                )
            ranks = [int(m["rank"]), int(m["other"])]
            break
    prose_only = all(h.prose for h in hits) and not facts.of(DistributedError)
    return [
        RULE.finding(
            summary=summary + ".",
            fix=[
                (
                    "Print the parameter count and shapes on every rank before wrapping in DDP "
                    "and compare them."
                ),
                (
                    "Build the model from the same config on every rank; create no modules "
                    "conditionally on the rank; load checkpoints before DDP(...) on all ranks."
                ),
                (
                    "If only strides differ, make the memory format consistent "
                    "(model.to(memory_format=...) on every rank, or .contiguous())."
                ),
            ],
            evidence=cites[:3],
            ranks=ranks,
            severity=Severity.WARNING if prose_only or unfilled else None,
            confidence=Confidence.LOW if unfilled else Confidence.HIGH,
        )
    ]
