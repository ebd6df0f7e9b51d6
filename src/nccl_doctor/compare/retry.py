""" "The retry passed": what the passing run did differently, most plausible first.

When one of two runs of a job passed and the other failed, each difference
between them (:mod:`nccl_doctor.compare.diff`) is weighed against the failing
run's diagnosis: a difference counts for a finding when they share a topic
(:mod:`nccl_doctor.knowledge.topics`: a P2P finding and a P2P variable, an
Xid and other GPUs, an NCCL bug and another NCCL version), the more for the
finding that leads the report. A switch the passing run set that masks a
cause (:mod:`nccl_doctor.knowledge.workarounds`) counts double: it is the
classic answer, and the report says that the cause is still there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nccl_doctor.compare.diff import Change, Comparison, Reason, Retry
from nccl_doctor.knowledge.topics import id_topics

_GOOD = frozenset({"healthy", "degraded"})
_BAD = frozenset({"failed", "inconclusive"})
#: How many reasons a report names.
MAX_REASONS = 5
_SECTION_ORDER = {"environment": 0, "nodes": 1, "versions": 2, "nccl": 3}


def _failing_ids(report: Mapping[str, Any]) -> list[tuple[str, float]]:
    """The failing run's ids with their weights: the lead finding most, hypotheses least."""
    out: dict[str, float] = {}
    ranked = [
        f["id"]
        for f in report.get("findings") or []
        if isinstance(f, Mapping) and f.get("severity") in ("critical", "warning") and "id" in f
    ]
    for n, rule_id in enumerate(ranked):
        out.setdefault(rule_id, 1.0 / (1 + n))
    for h in report.get("hypotheses") or []:
        if isinstance(h, Mapping) and "id" in h:
            out.setdefault(h["id"], 0.5 * float(h.get("probability") or 0.0))
    return list(out.items())


def _weigh(change: Change, ids: list[tuple[str, float]], passed: str) -> tuple[float, list[str]]:
    score = 0.0
    related = []
    for rule_id, weight in ids:
        shared = set(change.topics) & set(id_topics(rule_id))
        if shared and weight > 0:
            score += weight * len(shared)
            related.append(rule_id)
    if related and change.masks and change.masked_in == passed:
        score *= 2
    return score, related


def _text(change: Change, related: list[str], labels: tuple[str, str], passed: str) -> str:
    ref, this = labels
    good = ref if passed == "reference" else this
    value = change.before if passed == "reference" else change.after
    ids = ", ".join(related)
    if change.masks and change.masked_in == passed:
        return (
            f"{good} had {change.key}={value}: a workaround that masks what {ids} is about "
            f"({change.masks})"
        )
    return f"{_lead(change)}: {change.phrase(ref, this)} (bears on {ids})"


def _lead(change: Change) -> str:
    """What kind of difference it is, in the words of "the retry avoided ..."."""
    if change.section == "nodes":
        return {"hosts": "other nodes", "GPUs": "other GPUs"}.get(change.key, "another layout")
    return {
        "environment": "a changed variable",
        "versions": "a different version",
        "nccl": "NCCL set up differently",
    }.get(change.section, "a difference")


def explain(
    comparison: Comparison, this: Mapping[str, Any], reference: Mapping[str, Any]
) -> Retry | None:
    """Why one run passed and the other failed, or ``None`` when not exactly one failed."""
    if comparison.verdict in _BAD and comparison.reference_verdict in _GOOD:
        passed, failing = "reference", this
        labels = ("the good run (the reference)", "this failed run")
    elif comparison.verdict in _GOOD and comparison.reference_verdict in _BAD:
        passed, failing = "this", reference
        labels = ("the failed run (the reference)", "this good run")
    else:
        return None
    ids = _failing_ids(failing)
    weighed = []
    for index, change in enumerate(comparison.changes):
        if change.section == "errors":
            continue
        score, related = _weigh(change, ids, passed)
        if score > 0:
            rank = (-score, _SECTION_ORDER.get(change.section, 9), index)
            weighed.append((rank, Reason(change, tuple(related), "", score)))
    weighed.sort(key=lambda item: item[0])
    reasons = tuple(
        Reason(r.change, r.relates_to, _text(r.change, list(r.relates_to), labels, passed), r.score)
        for _, r in weighed[:MAX_REASONS]
    )
    good, bad = (labels[0], labels[1]) if passed == "reference" else (labels[1], labels[0])
    found = [i for i, _ in _failing_ids({"findings": failing.get("findings") or []})]
    named = ", ".join(found[:3] or [i for i, _ in ids[:3]]) or "no finding"
    if reasons:
        summary = (
            f"{good[0].upper()}{good[1:]} passed where {bad} failed ({named}); what it did "
            "differently, most plausible first"
        )
    else:
        summary = (
            f"{good[0].upper()}{good[1:]} passed where {bad} failed ({named}), but nothing that "
            "differs between them bears on that: the cause is likely in what neither run's "
            "evidence shows (the job's own code, data or load), or the failure is intermittent"
        )
    return Retry(passed=passed, summary=summary, reasons=reasons)
