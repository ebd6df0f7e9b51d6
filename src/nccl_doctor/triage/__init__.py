"""Triage: from every rule's findings to the answer, root cause first.

Three jobs. Take the first failure across ranks (``facts.failures``:
causal precedence, then time where time can order them, else the
launcher's root cause, else log order). Fold each finding that another,
higher finding explains under it. Order what stands: severity, causes
before context, findings that involve the first failure, confidence,
catalogue order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from nccl_doctor.compare.fingerprint import fingerprint_of
from nccl_doctor.differential import Hypothesis, differential
from nccl_doctor.evidence.reader import ReadResult
from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.failures import Failure, failures_of, first_failure, interruption
from nccl_doctor.facts.notices import notices_of
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.report import Coverage, FirstFailure, Report, Verdict
from nccl_doctor.rules import CATALOGUE
from nccl_doctor.triage.coverage import coverage_of, pictures_linked
from nccl_doctor.triage.inventory import inventory_of

#: How many hypotheses follow a decisive finding: the next candidates for the same symptom.
ALTERNATIVES = 2
_ORDER = {rule_id: index for index, rule_id in enumerate(CATALOGUE)}


def _involves(finding: Finding, failure: Failure | None) -> bool:
    if failure is None:
        return False
    if failure.fact.cite in finding.evidence:
        return True
    return failure.rank is not None and failure.rank in finding.subjects.ranks


def order(findings: Sequence[Finding], failure: Failure | None) -> list[Finding]:
    """Findings in report order (see the module doc); one that defers to another follows it."""
    present = {f.id for f in findings}
    return sorted(
        findings,
        key=lambda f: (
            f.severity.rank,
            not f.cause,
            bool(present.intersection(f.defers_to)),
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
    """Root causes: the first finding, and every other critical cause.

    A finding that defers to a root cause (it follows from it) is not one;
    its ``defers_to`` keeps only the root causes it follows.
    """
    marked: list[Finding] = []
    roots: set[str] = set()
    for index, finding in enumerate(findings):
        root = finding.cause and (
            index == 0 or (finding.severity is Severity.CRITICAL and findings[0].cause)
        )
        root = root and finding.severity is not Severity.INFO and not roots & set(finding.defers_to)
        if root:
            roots.add(finding.id)
        follows = tuple(d for d in finding.defers_to if d in roots)
        marked.append(replace(finding, root_cause=root, defers_to=follows))
    return marked


def verdict_of(
    findings: Sequence[Finding],
    failure: Failure | None,
    facts: Facts,
    unchecked: Sequence[str] = (),
    stopped: bool = False,
) -> Verdict:
    """The one-word answer: failed, inconclusive, incomplete, degraded, healthy, in that order.

    A job its user stopped is neither healthy nor failed.
    """
    severities = {f.severity for f in findings}
    if Severity.CRITICAL in severities:
        return Verdict.FAILED
    if failure is not None or stopped:
        return Verdict.INCONCLUSIVE
    if unchecked:
        return Verdict.INCOMPLETE
    if Severity.WARNING in severities:
        return Verdict.DEGRADED
    machine = [f for f in facts.all if not _is_text(f)]
    # a screenshot in place of the output: what it shows was not read, so not healthy
    return Verdict.HEALTHY if machine and not pictures_linked(facts) else Verdict.INCONCLUSIVE


def _is_text(fact: Fact) -> bool:
    return type(fact).__name__ == "TextLine"


def differential_order(failures: Sequence[Failure], failure: Failure | None) -> tuple[Fact, ...]:
    """The failures the differential reads: the first, the ranks' own, the launcher's, then
    the cascade.

    The cascade comes last: it speaks only where nothing before it classifies the
    failure. A survivor's ``ncclRemoteError`` (a peer or the network failed) is then
    still machine output, and says more than the reporter's words: a log of the one
    rank that survived holds nothing else.
    """
    first = failure.fact if failure is not None else None
    rest = [f for f in failures if f.fact is not first]
    own = [f.fact for f in rest if not f.cascade and not f.launcher]
    launcher = [f.fact for f in rest if f.launcher]
    cascade = [f.fact for f in rest if f.cascade and not f.launcher]
    return (*([first] if first is not None else []), *own, *launcher, *cascade)


def hypotheses_of(
    standing: Sequence[Finding], facts: Facts, failures: Sequence[Failure], failure: Failure | None
) -> tuple[Hypothesis, ...]:
    """The differential; after a decisive finding (critical, high confidence) its alternatives.

    A rule with decisive evidence can still be wrong about the cause (the same
    message has other causes); an expert names the next candidates, so a
    decisive finding is followed by at most :data:`ALTERNATIVES` hypotheses of
    the same symptom, where the finding is itself one of that symptom's causes.
    The first failure leads; the other ranks' own failures follow, the
    launcher's last.
    """
    lead = standing[0] if standing else None
    decisive = bool(
        lead and lead.severity is Severity.CRITICAL and lead.confidence is Confidence.HIGH
    )
    ordered = differential_order(failures, failure)
    # a warning the rule gives as context, not a cause (a leftover setting), leaves its id to
    # be weighed: the differential may still rank it first. A critical finding has said all of
    # its id (a rank killed with nothing of its own: who died is known, what killed it is not)
    known = {
        f.id
        for f in standing
        if f.severity is Severity.CRITICAL or (f.severity is Severity.WARNING and f.cause)
    }
    if decisive and lead is not None:
        return differential(facts, ordered, known, confirmed=lead.id)[:ALTERNATIVES]
    return differential(facts, ordered, known)


def triage(findings: Sequence[Finding], facts: Facts, read: ReadResult) -> Report:
    """The report: ordered, folded findings, the first failure, coverage."""
    failures = failures_of(facts)
    failure, note = first_failure(facts)
    stopped = failure is None and interruption(failures) is not None
    standing, folded = fold(order(findings, failure))
    standing = _mark_roots(standing)
    coverage: Coverage = coverage_of(facts, read, standing, failure, stopped)
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
    folded_all = [kid for kids in folded.values() for kid in kids]
    hypotheses = hypotheses_of(standing, facts, failures, failure)
    verdict = verdict_of(standing, failure, facts, coverage.unchecked, stopped)
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
        fingerprint=fingerprint_of(
            facts,
            [*standing, *folded_all],
            [f.fact for f in failures],
        ),
        inventory=inventory_of(facts),
        notices=tuple(
            n
            for n in notices_of(facts)
            if not any(n.cite in f.evidence for f in (*standing, *folded_all))
        ),
    )
