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
from nccl_doctor.facts.notices import Notice
from nccl_doctor.findings import Finding

if TYPE_CHECKING:
    from nccl_doctor.compare.diff import Comparison

SCHEMA_VERSION = 1
#: How renderers introduce :attr:`Report.notices_shown`.
NOTICES_HEADING = "Not failures: these lines read like errors, and are notices"


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
class GpuIdentity:
    """One GPU the evidence names: where it sits and what identifies it across runs.

    ``uuid`` and ``serial`` follow the board wherever it moves; ``bus_id``
    (nvidia-smi form) and ``index`` only within its host. ``host`` is ``None``
    when the evidence does not say which host (see :mod:`nccl_doctor.triage.inventory`).
    """

    host: str | None
    index: int | None = None
    bus_id: str | None = None
    uuid: str | None = None
    serial: str | None = None
    name: str | None = None


@dataclass(frozen=True, slots=True)
class ProbeFigure:
    """A probe's best bus bandwidth for one kind of transfer on one set of GPUs of a host."""

    host: str | None
    kind: str
    gpus: tuple[int, ...]
    world: int | None
    size_bytes: int | None
    busbw_gbytes_s: float
    expected_gbytes_s: float | None = None
    gpu_model: str | None = None


@dataclass(frozen=True, slots=True)
class CounterDelta:
    """How much an error counter of a host moved between two captures (before/after a job).

    ``device`` names the port (``mlx5_0/1``), GPU (its UUID, else bus id) or
    GPU link (``GPU-... link 3``); ``gpu`` is the GPU's key when it is one.
    A counter that went backwards was reset in between: ``delta`` is then
    ``after`` (what it counted since the reset).
    """

    host: str | None
    device: str
    counter: str
    before: int
    after: int
    delta: int
    gpu: str | None = None


@dataclass(frozen=True, slots=True)
class Inventory:
    """What the evidence says about the machines: hosts, GPUs, versions, probe figures, counters.

    The fleet history records runs by these; renderers show them. ``compared``
    lists the hosts whose error counters were read before and after (so an
    empty ``counters`` means "nothing moved", not "not measured").
    """

    hosts: tuple[str, ...] = ()
    gpus: tuple[GpuIdentity, ...] = ()
    versions: tuple[tuple[str, str], ...] = ()
    probe: tuple[ProbeFigure, ...] = ()
    counters: tuple[CounterDelta, ...] = ()
    compared: tuple[str, ...] = ()


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
    #: the hosts, GPUs, versions, probe figures and counter deltas the evidence names
    inventory: Inventory = field(default_factory=Inventory)
    #: lines that read like failures and are harmless notices (:mod:`nccl_doctor.facts.notices`)
    notices: tuple[Notice, ...] = ()

    @property
    def explained(self) -> bool:
        """Whether a finding names a root cause: the hypotheses are then its alternatives.

        Findings that are context (an INFO note, a condition no rule calls the
        cause) leave the failure unexplained, and the hypotheses are the answer.
        """
        return any(f.root_cause for f in self.findings)

    @property
    def hypotheses_heading(self) -> str:
        """How renderers introduce the hypotheses: the answer, or the alternatives to a cause."""
        if not self.hypotheses:
            return ""
        lead = "Other possible causes" if self.explained else "Possible causes"
        return f"{lead} of {self.hypotheses[0].symptom} (ranked)"

    @property
    def notices_shown(self) -> tuple[Notice, ...]:
        """The notices a reader is told about: where no finding names a root cause (then the
        line someone worries about may be all they saw); beside a cause they are noise."""
        return () if self.explained else self.notices

    def top(self, k: int) -> list[str]:
        """The top-k answer: critical and warning findings' ids, then the hypotheses'.

        Where no finding stands as a root cause (a rank killed by SIGKILL with nothing of its
        own: who went first is known, not why), the hypotheses rank that cause: their ids
        come first.
        """
        shown = [f.id for f in self.findings if f.severity.value in ("critical", "warning")]
        ranked = [h.id for h in self.hypotheses]
        ordered = (*ranked, *shown) if ranked and not self.explained else (*shown, *ranked)
        return list(dict.fromkeys(ordered))[:k]
