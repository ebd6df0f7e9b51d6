"""Ranks issued different collectives (op, order, shape or dtype): the job desynchronised.

What it means
-------------
Every rank of a process group must issue the same collectives in the same
order with matching shapes and dtypes. With ``TORCH_DISTRIBUTED_DEBUG=DETAIL``
PyTorch wraps the group (``ProcessGroupWrapper``) and compares a fingerprint
of each collective across ranks before running it; here the fingerprints or
the monitored barrier before them did not agree. Typical causes: a collective
inside ``if rank == 0:`` (rank-0-only evaluation on the DDP-wrapped model,
checkpoint code with a barrier), decisions taken from a rank-local clock or
data length, different tensor shapes per rank.

Why it matters
--------------
Without the debug wrapper the same bug shows as a hang and a watchdog
timeout after 30 minutes, or as silently wrong results when the shapes
happen to be compatible.

Evidence
--------
``Detected mismatch between collectives on ranks. Rank 0 is running
inconsistent collective: CollectiveFingerPrint(OpType=BROADCAST,
TensorShape=[4], ...)``, ``ProcessGroupWrapper: Monitored Barrier
encountered error running collective`` (the wrapper's barrier before each
collective; a ``monitored_barrier()`` the job called itself names late ranks,
a hang); flight-recorder dumps that differ at one sequence id, or torch's
analyser of them (fr_trace, torchfrtrace) naming culprit ranks of a
``COLLECTIVE_TYPE_MISMATCH``, ``SIZE_OR_SYNTAX_MISMATCH`` or
``COLLECTIVE_DTYPE_MISMATCH``; a desync
report whose snapshot shows different collectives started under one number
(``[0] started BROADCAST`` beside ``[1, 2, 3] started ALLREDUCE``), or
the watchdogs of two ranks timing out at one ``SeqNum`` in different ops (or
input sizes, for collectives whose input is the same size on every rank);
without either, the ranks' tracebacks stuck in different collective calls
(``broadcast`` on one, ``all_reduce`` on another), one of them timed out and
the others timed out too or saw their peer go, no rank with an error of its
own.

Fix
---
Find the code path only some ranks take (the fingerprint names the
collective), and make every rank run it, or none: evaluate with
``model.module`` on rank 0 only, follow rank-0-only work with a barrier
that all ranks reach, decide time- or data-based actions on rank 0 and
broadcast the decision.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.failures import failures_of
from nccl_doctor.facts.flight import FlightEntry, culprit_ranks, entry_text
from nccl_doctor.facts.messages import fingerprint_fields
from nccl_doctor.facts.ranks import ranks_listed, ranks_text
from nccl_doctor.facts.run import CollectiveTimeout, DistributedError
from nccl_doctor.facts.stacks import frame_text, issued_at
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.rules.app._common import issued_text
from nccl_doctor.rules.app._desync import mismatches
from nccl_doctor.rules.app._recorders import flight_state
from nccl_doctor.rules.base import Rule
from nccl_doctor.rules.launch._common import collective_calls
from nccl_doctor.signs.app import (
    BARRIER_MISSED_BY,
    COLLECTIVE_MISMATCH,
    FINGERPRINT,
    FR_MATCH_ERROR,
    MISMATCH_CONTEXT,
    MONITORED_BARRIER,
)

RULE = Rule(
    id="app.collective_mismatch",
    title="Ranks issued mismatched collectives",
    severity=Severity.CRITICAL,
    explains=("app.hang", "launch.rank_crash"),
)


#: The repair for collectives that differ, wherever the evidence shows them differ.
_SAME_COLLECTIVES = (
    "Make every rank issue the same collectives in the same order with the same shapes and "
    "dtypes (no collectives under rank checks)."
)


def _fingerprints(facts: Facts) -> tuple[list[str], list[int], list[Cite]]:
    parts: list[str] = []
    ranks: list[int] = []
    cites: list[Cite] = []
    for hit in facts.seen(FINGERPRINT):
        rank = int(hit.match["rank"])
        if rank in ranks:
            continue
        fields = ", ".join(f"{k}={v}" for k, v in fingerprint_fields(hit.match["fields"]))
        parts.append(f"rank {rank} ran {fields or 'another collective'}")
        ranks.append(rank)
        cites.append(hit.cite)
    return parts, ranks, cites


def _different_waits(facts: Facts) -> Finding | None:
    """Ranks stuck in different collective calls, at least one of them timed out waiting.

    Whichever rank gives up first, the other sees its own timeout or the peer
    closing the connection: both say where the rank was. A rank whose error
    names a fault of its own (not a timeout, not the cascade) is the cause
    instead, and no mismatch is inferred.
    """
    calls = collective_calls(facts)
    if len({fn for fn, _, _ in calls.values()}) < 2 or not any(w for _, _, w in calls.values()):
        return None
    if any(f.tier == 0 and not f.launcher for f in failures_of(facts)):
        return None
    parts = [f"rank {r} in {fn}()" for r, (fn, _, _) in sorted(calls.items())]
    waited = sorted(r for r, (_, _, w) in calls.items() if w)
    if len(waited) == len(calls):
        how = "The ranks timed out waiting in different collectives ("
        tail = ""
    else:
        how = "The ranks were in different collectives ("
        tail = (
            f"; rank {', '.join(map(str, waited))} timed out waiting there, the others saw "
            "their peer give up"
        )
    summary = (
        how
        + ", ".join(parts)
        + ")"
        + tail
        + ": they issued mismatched collectives, so none of them could complete."
    )
    return RULE.finding(
        summary=summary,
        fix=[
            (
                "Make every rank issue the same sequence of collectives: find the branch that "
                "sends one rank into the other call (rank checks, data-dependent code paths)."
            ),
            (
                "Rerun with TORCH_DISTRIBUTED_DEBUG=DETAIL: the wrapper then names the "
                "mismatching collectives (op, shape, dtype) instead of timing out."
            ),
        ],
        evidence=[cite for _, cite, _ in calls.values()][:4],
        ranks=list(calls),
        confidence=Confidence.MEDIUM,
    )


_Entry = TypeVar("_Entry")


def _split(
    by_rank: dict[int, _Entry], kind: Callable[[_Entry], Hashable]
) -> tuple[list[list[int]], list[int]]:
    """The ranks of one collective number grouped by what each ran, the largest group first
    (a single group: they agree), and the ranks outside that group."""
    kinds: dict[Hashable, list[int]] = {}
    for rank, entry in sorted(by_rank.items()):
        kinds.setdefault(kind(entry), []).append(rank)
    groups = sorted(kinds.values(), key=len, reverse=True)
    return groups, sorted(r for ranks in groups[1:] for r in ranks)


#: Collectives whose input has one size on every rank (an all-to-all's splits may differ).
_SAME_SIZE_OPS = frozenset(
    {
        "ALLREDUCE",
        "BROADCAST",
        "REDUCE",
        "ALLGATHER",
        "_ALLGATHER_BASE",
        "ALLGATHER_INTO_TENSOR_COALESCED",
        "REDUCE_SCATTER",
        "_REDUCE_SCATTER_BASE",
        "REDUCE_SCATTER_TENSOR_COALESCED",
    }
)


def _timeout_kind(t: CollectiveTimeout) -> tuple[str | None, int | None]:
    """What the watchdog says a rank was running: its op, and its input size where every
    rank's must be the same."""
    return t.op_type, t.numel_in if (t.op_type or "") in _SAME_SIZE_OPS else None


def _different_timeouts(facts: Facts) -> Finding | None:
    """The watchdogs of two ranks timed out on the same collective (group and SeqNum) with
    different ops or input sizes: each rank issued its own collective under that number."""
    at: dict[tuple[str | None, int], dict[int, CollectiveTimeout]] = {}
    for t in facts.of(CollectiveTimeout):
        if t.seq is not None and t.rank is not None:
            at.setdefault((t.pg, t.seq), {}).setdefault(t.rank, t)
    for (_, seq), by_rank in sorted(at.items(), key=lambda item: item[0][1]):
        groups, odd = _split(by_rank, _timeout_kind)
        if len(groups) < 2 or any(by_rank[ranks[0]].op_type is None for ranks in groups):
            continue
        parts = []
        for ranks in groups:
            t = by_rank[ranks[0]]
            n = t.numel_in
            size = f" of {n} element{'' if n == 1 else 's'}" if n is not None else ""
            parts.append(f"rank(s) {', '.join(map(str, ranks))} in {t.op_type}{size}")
        issued, issued_cites = issued_text(facts)
        return RULE.finding(
            summary=(
                f"The ranks' watchdogs timed out on collective SeqNum={seq} with different "
                "collectives under that number (" + "; ".join(parts) + "): the ranks issued "
                f"different collectives (op or size), so none of them could complete{issued}."
            ),
            fix=[
                (
                    f"Find the code path rank(s) {', '.join(map(str, odd))} took: the collective "
                    "numbered differently on them is issued under a rank- or data-dependent "
                    "condition, or with a per-rank size."
                ),
                (
                    "Rerun with TORCH_DISTRIBUTED_DEBUG=DETAIL: the wrapper then names the "
                    "mismatching collectives (op, shape, dtype) instead of timing out."
                ),
            ],
            evidence=[*[by_rank[ranks[0]].cite for ranks in groups][:4], *issued_cites],
            ranks=odd,
            confidence=Confidence.HIGH,
        )
    return None


def _from_flight(facts: Facts) -> Finding | None:
    """Flight-recorder dumps whose entries at one sequence id differ in op, sizes or dtypes."""
    at: dict[tuple[str, int], dict[int, FlightEntry]] = {}
    _, entries = flight_state(facts)  # each rank's latest dump
    for e in entries:
        if e.rank is not None and e.seq is not None and e.pg_id is not None and not e.is_p2p:
            at.setdefault((e.pg_id, e.seq), {}).setdefault(e.rank, e)
    for (pg, seq), by_rank in sorted(at.items(), key=lambda item: item[0][1]):
        groups, odd = _split(by_rank, lambda e: (e.op, e.input_sizes, e.input_dtypes))
        if len(groups) < 2:
            continue
        parts = []
        for ranks in groups:
            entry = by_rank[ranks[0]]
            site = issued_at(entry.frames)
            called = f", issued at {frame_text(site)}" if site is not None else ""
            parts.append(f"rank(s) {', '.join(map(str, ranks))} ran {entry_text(entry)}{called}")
        return RULE.finding(
            summary=(
                f"Flight-recorder dumps disagree at collective seq {seq} of process group {pg}: "
                + "; ".join(parts)
                + ". The ranks issued different collectives, so none of them can complete."
            ),
            fix=[
                (
                    f"Find the code path rank(s) {', '.join(map(str, odd))} took: the dump's "
                    "frames name where each rank issued its collective."
                ),
                _SAME_COLLECTIVES,
            ],
            evidence=[by_rank[ranks[0]].cite for ranks in groups][:4],
            ranks=odd,
            confidence=Confidence.HIGH,
        )
    return None


def _from_fr_analysis(facts: Facts) -> Finding | None:
    """torch's flight-recorder analyser (fr_trace) naming ranks whose collective differs in
    type, sizes or dtypes from the one the others issued."""
    hits = facts.seen(FR_MATCH_ERROR)
    if not hits:
        return None
    culprits = sorted({r for h in hits for r in culprit_ranks(h.cite.text)})
    first = hits[0]
    detail = (first.match["detail"] or "").strip()
    said = f" ({detail})" if detail else ""
    return RULE.finding(
        summary=(
            f"torch's flight-recorder analyser found {ranks_text(culprits)} issuing a "
            f"different collective from the others: {first.match['kind']}{said}. The ranks "
            "took different code paths, so none of them can complete it."
        ),
        fix=[
            (
                "Read the analyser's 'collective stack trace' for where the expected collective "
                "was issued, and find the path the culprit ranks took instead."
            ),
            _SAME_COLLECTIVES,
        ],
        evidence=[h.cite for h in hits[:3]],
        ranks=culprits,
        confidence=Confidence.MEDIUM if all(h.prose for h in hits) else Confidence.HIGH,
    )


def _from_desync(facts: Facts) -> Finding | None:
    """A desync report whose snapshot shows different collectives started under one number."""
    found = next(mismatches(facts), None)
    if found is None:
        return None
    return RULE.finding(
        summary=(
            f"The desync report (the store's record of each rank's collectives) shows "
            f"{found.text()}. The ranks issued different collectives, so none of them can "
            "complete."
        ),
        fix=[
            (
                f"Find the code path {ranks_text(found.ranks)} took to its collective: code under "
                "'if rank == 0' / is_main_process, evaluation, logging or checkpoint code, a "
                "decision taken from a rank-local clock or data length."
            ),
            _SAME_COLLECTIVES,
        ],
        evidence=[found.report.cite],
        ranks=found.ranks,
        confidence=Confidence.HIGH,
    )


def check(facts: Facts) -> list[Finding]:
    """A fingerprint mismatch, a failed monitored barrier, dumps or a desync report that differ."""
    for step in (_from_flight, _from_fr_analysis, _from_desync):
        found = step(facts)
        if found is not None:
            return [found]
    mism = [d for d in facts.of(DistributedError) if d.category == "collective_mismatch"]
    hits = facts.seen(COLLECTIVE_MISMATCH)
    monitored = facts.seen(MONITORED_BARRIER)
    if not mism and not hits and not monitored:
        waits = _different_timeouts(facts) or _different_waits(facts)
        return [waits] if waits else []
    parts, ranks, cites = _fingerprints(facts)
    evidence: list[Cite] = [*(d.cite for d in mism), *(h.cite for h in hits), *cites]
    fix = [
        (
            "Find the collective only some ranks reach: the fingerprint names its op and shape; "
            "look for it under 'if rank == 0' / is_main_process, in evaluation, logging or "
            "checkpoint code."
        ),
        (
            "Make every rank run it or none: on rank-0-only evaluation use the unwrapped model "
            "(model.module) and put a barrier after it that all ranks reach."
        ),
        (
            "Take time- or data-dependent decisions (checkpoint every N minutes, stop when data "
            "runs out) on one rank and broadcast them, so all ranks act at the same step."
        ),
    ]
    if evidence:
        summary = "Ranks issued different collectives (PyTorch's debug wrapper compared them)"
        if parts:
            summary += ": " + "; ".join(parts)
        confidence = Confidence.HIGH
        if all(h.prose for h in hits) and not mism:
            confidence = Confidence.MEDIUM
    else:
        evidence = [h.cite for h in monitored]
        missed = " ".join(h.match["ranks"] for h in facts.seen(BARRIER_MISSED_BY))
        ranks = list(ranks_listed(missed))
        who = f"rank(s) {', '.join(map(str, ranks))}" if ranks else "some rank"
        summary = (
            "The debug wrapper's monitored barrier before a collective failed: "
            f"{who} never reached the collective the others ran, so the ranks are on "
            "different code paths"
        )
        confidence = Confidence.MEDIUM
    cue = [h.cite for h in facts.seen_prose(MISMATCH_CONTEXT)][:1]
    if cue:
        summary += f" (reported around: {cue[0].text.strip()[:120]})"
    return [
        RULE.finding(
            summary=summary + ".",
            fix=fix,
            evidence=[*evidence[:4], *cue],
            ranks=ranks,
            confidence=confidence,
        )
    ]
