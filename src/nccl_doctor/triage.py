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

from nccl_doctor.differential import Hypothesis, differential
from nccl_doctor.evidence.reader import ReadResult
from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.report import Coverage, FirstFailure, Report, Verdict
from nccl_doctor.rules import CATALOGUE
from nccl_doctor.triage_coverage import coverage_of
from nccl_doctor.triage_failures import Failure, failures_of, launcher_root

_ORDER = {rule_id: index for index, rule_id in enumerate(CATALOGUE)}


def first_failure(facts: Facts) -> tuple[Failure | None, str | None]:
    """The earliest real failure, and a note when it corrects the launcher."""
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
    chosen: Failure | None = None
    clocks = Counter(f.fact.clock for f in ranked if f.fact.time_s is not None)
    if clocks:
        clock = clocks.most_common(1)[0][0]
        timed = [f for f in ranked if f.fact.time_s is not None and f.fact.clock == clock]
        chosen = min(timed, key=lambda f: (f.fact.time_s or 0.0, f.order))
    elif launcher is not None and launcher.rank is not None:
        chosen = next((f for f in ranked if f.rank == launcher.rank), None)
    if chosen is None:
        chosen = min(ranked, key=lambda f: f.order)
    if chosen.rank is None and launcher is not None and all(f.rank is None for f in ranked):
        # nothing on the ranks says whose it is (an error before the rank prefixes
        # start): the launcher's root cause is the best attribution there is
        chosen = replace(chosen, launcher_rank=launcher.rank)
    note = None
    if (
        launcher is not None
        and launcher.rank is not None
        and chosen.rank is not None
        and chosen.rank != launcher.rank
    ):
        note = (
            f"the launcher's Root Cause names rank {launcher.rank} (the first to exit); "
            f"the logs show rank {chosen.rank} failed first"
        )
    return chosen, note


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


def verdict_of(
    findings: Sequence[Finding],
    failure: Failure | None,
    facts: Facts,
    unchecked: Sequence[str] = (),
) -> Verdict:
    """The one-word answer: failed, inconclusive, incomplete, degraded, healthy, in that order."""
    severities = {f.severity for f in findings}
    if Severity.CRITICAL in severities:
        return Verdict.FAILED
    if failure is not None:
        return Verdict.INCONCLUSIVE
    if unchecked:
        return Verdict.INCOMPLETE
    if Severity.WARNING in severities:
        return Verdict.DEGRADED
    machine = [f for f in facts.all if not _is_text(f)]
    return Verdict.HEALTHY if machine else Verdict.INCONCLUSIVE


def _is_text(fact: Fact) -> bool:
    return type(fact).__name__ == "TextLine"


def hypotheses_of(
    standing: Sequence[Finding], facts: Facts, failure: Failure | None
) -> tuple[Hypothesis, ...]:
    """The differential, unless a finding is already decisive (critical, high confidence)."""
    lead = standing[0] if standing else None
    if lead and lead.severity is Severity.CRITICAL and lead.confidence is Confidence.HIGH:
        return ()
    others = [f.fact for f in failures_of(facts) if not f.cascade and not f.launcher]
    first = [failure.fact] if failure is not None else []
    rest = [f for f in others if not first or f is not first[0]]
    launcher = [f.fact for f in failures_of(facts) if f.launcher]
    known = {f.id for f in standing if f.severity is not Severity.INFO}
    return differential(facts, (*first, *rest, *launcher), known)


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
    hypotheses = hypotheses_of(standing, facts, failure)
    verdict = verdict_of(standing, failure, facts, coverage.unchecked)
    if hypotheses and verdict is Verdict.HEALTHY:
        verdict = Verdict.INCONCLUSIVE  # the reporter says it hangs: not healthy
    return Report(
        verdict=verdict,
        findings=tuple(standing),
        first_failure=first,
        coverage=coverage,
        folded=tuple((k, tuple(v)) for k, v in folded.items()),
        hosts=facts.hosts,
        hypotheses=hypotheses,
    )
