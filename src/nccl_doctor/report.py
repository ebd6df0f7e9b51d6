"""The report: verdict, ordered findings, the first failure, and coverage.

This is the view model every renderer reads (``spec/json-report.md``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nccl_doctor.compare.fingerprint import Fingerprint
from nccl_doctor.differential import Hypothesis
from nccl_doctor.facts.base import Cite
from nccl_doctor.findings import Finding

if TYPE_CHECKING:
    from nccl_doctor.compare.diff import Comparison

SCHEMA_VERSION = 1


class Verdict(enum.Enum):
    """The one-word answer."""

    HEALTHY = "healthy"
    DEGRADED = "degraded"
    FAILED = "failed"
    INCONCLUSIVE = "inconclusive"
    #: nothing critical in what was read, but a part the check must read could not be
    #: (the GPUs of a live capture); ``Coverage.unchecked`` says what and why
    INCOMPLETE = "incomplete"


@dataclass(frozen=True, slots=True)
class FirstFailure:
    """The earliest failure across ranks (or the launcher's root cause, corrected)."""

    rank: int | None
    host: str | None
    time: str | None
    message: str
    cite: Cite


@dataclass(frozen=True, slots=True)
class EvidenceRead:
    """One kind of evidence read from one source, and the ranks it covered."""

    kind: str
    source: str
    ranks: tuple[int, ...] = ()
    lines: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class Coverage:
    """What was read, what was missing, what to collect next.

    ``unchecked``: what a live capture could not check at all, with why (``GPU
    state (NVML): the NVIDIA driver is installed but not loaded``); a report
    with any is never ``healthy``.
    """

    evidence: tuple[EvidenceRead, ...] = ()
    missing: tuple[str, ...] = ()
    next_steps: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    unchecked: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Report:
    """A diagnosis, ready to render."""

    verdict: Verdict
    findings: tuple[Finding, ...]
    first_failure: FirstFailure | None
    coverage: Coverage = field(default_factory=Coverage)
    folded: tuple[tuple[str, tuple[Finding, ...]], ...] = ()
    hosts: tuple[str, ...] = ()
    #: the ranked differential, after the findings (empty when a finding is decisive)
    hypotheses: tuple[Hypothesis, ...] = ()
    #: what the run ran on and with, and its error set (``nccl_doctor.compare.fingerprint``)
    fingerprint: Fingerprint | None = None
    #: what changed against a reference run (``diagnose --against``), when one was given
    against: Comparison | None = None

    def top(self, k: int) -> list[str]:
        """The top-k answer: critical and warning findings' ids, then the hypotheses'."""
        ids: list[str] = []
        for finding in self.findings:
            if finding.severity.value in ("critical", "warning") and finding.id not in ids:
                ids.append(finding.id)
        ids.extend(h.id for h in self.hypotheses if h.id not in ids)
        return ids[:k]
