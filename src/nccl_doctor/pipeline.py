"""The data path of ``diagnose``: evidence -> facts -> rules -> triage -> report."""

from __future__ import annotations

from collections.abc import Sequence

from nccl_doctor.evidence.reader import ReadResult, read_paths
from nccl_doctor.facts.failures import told_over
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Finding
from nccl_doctor.report import Report
from nccl_doctor.rules import load_rules
from nccl_doctor.triage import triage


def facts_of(result: ReadResult) -> Facts:
    """The fact store of everything read, with the kinds of evidence present; a failure a
    person's sentence tells as not happening is left out (see :func:`told_over`)."""
    facts = [f for f in result.facts if not told_over(f)]
    return Facts(facts, {section.kind for section in result.sections})


def run_rules(facts: Facts) -> list[Finding]:
    """Every rule's findings over the facts, in catalogue order."""
    findings: list[Finding] = []
    for loaded in load_rules():
        findings.extend(loaded.check(facts))
    return findings


def diagnose_read(result: ReadResult) -> Report:
    """The report of evidence already read."""
    return diagnose_with_facts(result)[0]


def diagnose_with_facts(result: ReadResult) -> tuple[Report, Facts]:
    """The report of evidence already read, and the facts it was built from."""
    facts = facts_of(result)
    return triage(run_rules(facts), facts, result), facts


def diagnose_paths(paths: Sequence[str]) -> Report:
    """Read the evidence at ``paths`` and diagnose it."""
    return diagnose_read(read_paths(paths, line_totals=False))
