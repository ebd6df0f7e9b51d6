"""Triage: from every rule's findings to the answer, root cause first.

Three jobs. Find the first failure across ranks (by time within one clock,
else the launcher's root cause, else log order), skipping what is only the
cascade. Fold each finding that another, higher finding explains under it.
Order what stands: severity, causes before context, findings that involve
the first failure, confidence, catalogue order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from nccl_doctor.evidence.reader import ReadResult
from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Finding, Severity
from nccl_doctor.report import Coverage, FirstFailure, Report, Verdict
from nccl_doctor.rules import CATALOGUE
from nccl_doctor.triage_coverage import coverage_of
from nccl_doctor.triage_failures import Failure, failures_of, launcher_root

_ORDER = {rule_id: index for index, rule_id in enumerate(CATALOGUE)}


def _by_time(ranked: Sequence[Failure]) -> Failure | None:
    """The earliest failure by time, when time can order them all, else ``None``.

    Time orders failures only when each one is placed on one clock: it has a
    timestamp on that clock, or its rank has a timed failure of this tier (the
    untimed traceback printed beside a timed watchdog line). A failure with no
    time of its own or of its rank could have come at any moment: it does not
    lose to a timed one by default.
    """
    clocks = Counter(f.fact.clock for f in ranked if f.fact.time_s is not None)
    if not clocks:
        return None
    clock = clocks.most_common(1)[0][0]
    when: dict[int | None, float] = {}
    for f in ranked:
        if f.fact.time_s is not None and f.fact.clock == clock:
            when[f.rank] = min(when.get(f.rank, f.fact.time_s), f.fact.time_s)
    if any(f.rank not in when or f.rank is None for f in ranked if f.fact.time_s is None):
        return None
    if any(f.fact.time_s is not None and f.fact.clock != clock for f in ranked):
        return None
    rank = min(when, key=lambda r: (when[r], min(f.order for f in ranked if f.rank == r)))
    timed = [f for f in ranked if f.rank == rank and f.fact.time_s is not None]
    return min(timed, key=lambda f: (f.fact.time_s or 0.0, f.order))


def first_failure(facts: Facts) -> tuple[Failure | None, str | None]:
    """The earliest real failure, and a note when it corrects the launcher.

    Causal precedence first (an error that names the fault, then a timeout,
    then the cascade), then time where time can order the failures of that
    tier, else the launcher's root cause, else log order.
    """
    failures = failures_of(facts)
    if not failures:
        return None, None
    launcher = launcher_root(facts)
    ranked = [f for f in failures if not f.cascade and not f.launcher]
    if not ranked:
        # only the survivors' cascade on the ranks: the launcher saw who died
        if launcher is not None:
            return launcher, None
        ranked = [f for f in failures if f.launcher and not f.cascade] or failures
    tier = min(f.tier for f in ranked)
    ranked = [f for f in ranked if f.tier == tier]
    how = "time"
    chosen = _by_time(ranked)
    if chosen is None and launcher is not None and launcher.rank is not None:
        how = "launcher"
        chosen = next((f for f in ranked if f.rank == launcher.rank), None)
    if chosen is None:
        how = "order"
        chosen = min(ranked, key=lambda f: f.order)
    if chosen.rank is None and launcher is not None and all(f.rank is None for f in ranked):
        # nothing on the ranks says whose it is (an error before the rank prefixes
        # start): the launcher's root cause is the best attribution there is
        chosen = replace(chosen, launcher_rank=launcher.rank)
    return chosen, _note(chosen, ranked, launcher, how)


def _note(
    chosen: Failure, ranked: Sequence[Failure], launcher: Failure | None, how: str
) -> str | None:
    """Say how the first failure was chosen where the evidence could be read another way."""
    ranks = sorted({f.rank for f in ranked if f.rank is not None})
    if (
        launcher is not None
        and launcher.rank is not None
        and chosen.rank is not None
        and chosen.rank != launcher.rank
    ):
        why = {
            "time": "the logs show rank {r} failed first",
            "order": "rank {r}'s error is the first that names a fault in the logs",
        }.get(how, "rank {r} failed first")
        if chosen.tier == 0 and launcher.rank not in ranks:
            why = "rank {r}'s error names the fault; rank {l}'s is its consequence"
        return (
            f"the launcher's Root Cause names rank {launcher.rank} (the first to exit); "
            + why.format(r=chosen.rank, l=launcher.rank)
        )
    if how != "time" and len(ranks) > 1:
        shown = ", ".join(map(str, ranks[:8])) + (" ..." if len(ranks) > 8 else "")
        by = "the launcher's Root Cause" if how == "launcher" else "the order of the logs"
        return (
            f"ranks {shown} failed with no timestamps on one clock to order them; "
            f"rank {chosen.rank} is taken as the first by {by}"
        )
    return None


def _involves(finding: Finding, failure: Failure | None) -> bool:
    if failure is None:
        return False
    if failure.fact.cite in finding.evidence:
        return True
    return failure.rank is not None and failure.rank in finding.subjects.ranks


def order(findings: Sequence[Finding], failure: Failure | None) -> list[Finding]:
    """Findings in report order (see the module doc)."""
    return sorted(
        findings,
        key=lambda f: (
            f.severity.rank,
            not f.cause,
            f.confidence.rank,
            not _involves(f, failure),
            _ORDER.get(f.id, len(_ORDER)),
        ),
    )


def _parents(ordered: Sequence[Finding]) -> list[list[int]]:
    """For each finding, the findings that explain it (and that it does not explain first)."""
    parents: list[list[int]] = []
    for i, child in enumerate(ordered):
        found = []
        for j, parent in enumerate(ordered):
            if j == i or parent.id == child.id or child.id not in parent.explains:
                continue
            if parent.severity.rank > child.severity.rank:
                continue  # a warning does not swallow a critical finding
            if parent.id in child.explains and j > i:
                continue  # each explains the other: the one placed first stands
            found.append(j)
        parents.append(found)
    return parents


def fold(ordered: Sequence[Finding]) -> tuple[list[Finding], dict[str, list[Finding]]]:
    """Fold every finding another explains under the standing finding at the top of its chain.

    A symptom may sort above its cause (a HIGH-confidence timeout, a MEDIUM
    guess at why); it folds all the same. Chains fold to their top; findings
    caught in a cycle stand.
    """
    parents = _parents(ordered)
    home: dict[int, int] = {}  # index -> the standing index it is folded under (itself: stands)
    changed = True
    while changed:
        changed = False
        for i in range(len(ordered)):
            if i in home:
                continue
            if not parents[i]:
                home[i] = i
                changed = True
            elif all(j in home for j in parents[i]):
                standing = [j for j in parents[i] if home[j] == j]
                home[i] = standing[0] if standing else home[parents[i][0]]
                changed = True
    for i in range(len(ordered)):
        home.setdefault(i, i)
    folded: dict[str, list[Finding]] = {}
    for i, finding in enumerate(ordered):
        if home[i] != i:
            folded.setdefault(ordered[home[i]].id, []).append(finding)
    out = []
    for i, finding in enumerate(ordered):
        if home[i] == i:
            kids = folded.get(finding.id, [])
            out.append(replace(finding, explains=tuple(dict.fromkeys(k.id for k in kids))))
    return out, folded


def _mark_roots(findings: list[Finding]) -> list[Finding]:
    """Root causes: the first finding, and every other critical cause."""
    marked = []
    for index, finding in enumerate(findings):
        root = finding.cause and (
            index == 0 or (finding.severity is Severity.CRITICAL and findings[0].cause)
        )
        root = root and finding.severity is not Severity.INFO
        marked.append(replace(finding, root_cause=root))
    return marked


def verdict_of(findings: Sequence[Finding], failure: Failure | None, facts: Facts) -> Verdict:
    """The one-word answer."""
    severities = {f.severity for f in findings}
    if Severity.CRITICAL in severities:
        return Verdict.FAILED
    if failure is not None:
        return Verdict.INCONCLUSIVE
    if Severity.WARNING in severities:
        return Verdict.DEGRADED
    machine = [f for f in facts.all if not _is_text(f)]
    return Verdict.HEALTHY if machine else Verdict.INCONCLUSIVE


def _is_text(fact: Fact) -> bool:
    return type(fact).__name__ == "TextLine"


def triage(findings: Sequence[Finding], facts: Facts, read: ReadResult) -> Report:
    """The report: ordered, folded findings, the first failure, coverage."""
    failure, note = first_failure(facts)
    standing, folded = fold(order(findings, failure))
    standing = _mark_roots(standing)
    coverage: Coverage = coverage_of(facts, read, standing, failure)
    if note:
        coverage = replace(coverage, notes=(note, *coverage.notes))
    first = None
    if failure is not None:
        first = FirstFailure(
            rank=failure.rank,
            host=failure.fact.host,
            time=failure.time_text,
            message=failure.message,
            cite=failure.fact.cite,
        )
    return Report(
        verdict=verdict_of(standing, failure, facts),
        findings=tuple(standing),
        first_failure=first,
        coverage=coverage,
        folded=tuple((k, tuple(v)) for k, v in folded.items()),
        hosts=facts.hosts,
    )
