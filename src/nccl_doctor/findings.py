"""Findings: what a rule concluded, with the evidence and the fix."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from nccl_doctor.facts.base import Cite
from nccl_doctor.knowledge.workarounds import FixKind, classify


class Severity(enum.Enum):
    """How bad a finding is: critical stops the job, warning breaks or slows it."""

    CRITICAL = "critical"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        """Sort key: critical first."""
        return {"critical": 0, "warning": 1, "info": 2}[self.value]


class Confidence(enum.Enum):
    """How sure the rule is, from how direct its evidence is."""

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"

    @property
    def rank(self) -> int:
        """Sort key: high first."""
        return {"high": 0, "medium": 1, "low": 2}[self.value]


@dataclass(frozen=True, slots=True)
class Subjects:
    """Who a finding is about: ranks, GPUs (index or bus id) and hosts."""

    ranks: tuple[int, ...] = ()
    gpus: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FixStep:
    """One step of a fix, and what it does about the cause (``knowledge/workarounds.py``).

    A workaround names the switch it sets (``setting``: ``NCCL_P2P_DISABLE=1``)
    and what that trades while the cause stays (``masks``).
    """

    text: str
    kind: FixKind
    masks: str | None = None
    setting: str | None = None

    @classmethod
    def of(cls, text: str) -> FixStep:
        """The step ``text``, classified by its mechanism."""
        step = classify(text)
        return cls(text, step.kind, step.reason, step.setting)


#: The roles of ranks in a hang (``Finding.roles``).
ORIGIN, LAGGING, MESSENGER = "origin", "lagging", "messenger"


@dataclass(frozen=True, slots=True)
class RankRole:
    """Ranks that play one role in a hang, for one reason.

    ``origin``: the rank(s) that started it (never joined the collective,
    dead, its own GPU work ahead of the collective did not finish, stuck in
    a different collective, an error of its own); ``lagging``: behind the
    others, but only because it waits on the origin; ``messenger``: only
    reporting (it reached the collective, and its timeout or lost
    connection is the origin's consequence).
    """

    role: str
    ranks: tuple[int, ...]
    reason: str
    evidence: tuple[Cite, ...] = ()


@dataclass(frozen=True, slots=True)
class CollectiveRef:
    """The collective where the ranks diverge: op, sequence number, size, process group.

    ``source`` says which evidence named it (``flight recorder``,
    ``watchdog``, ``NCCL RAS``, ``stacks``); unknown fields are ``None``.
    """

    op: str | None
    seq: int | None = None
    size: str | None = None
    process_group: str | None = None
    source: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """One diagnosis: an id of the catalogue, a specific summary, the fix, the proof.

    ``fix`` lists the steps in order, every workaround after the steps that
    check or repair (:meth:`~nccl_doctor.rules.base.Rule.finding` orders them);
    ``steps`` gives each with its kind. ``root_cause`` is decided by triage;
    a rule proposes ``cause=True`` when its finding is a cause rather than a
    symptom or context. ``defers_to``
    names findings this one follows from (a checklist whose first step is
    another finding's cause): when one of them stands as a root cause, this
    one is shown after it and is not a root cause itself.
    """

    id: str
    severity: Severity
    confidence: Confidence
    title: str
    summary: str
    fix: tuple[str, ...]
    evidence: tuple[Cite, ...]
    subjects: Subjects = field(default_factory=Subjects)
    cause: bool = True
    explains: tuple[str, ...] = ()
    defers_to: tuple[str, ...] = ()
    root_cause: bool = False
    detail: tuple[str, ...] = ()

    @property
    def steps(self) -> tuple[FixStep, ...]:
        """The fix steps with their kinds: check, repair, or a workaround that masks the cause."""
        return tuple(FixStep.of(step) for step in self.fix)

    #: the ranks' roles in a hang (origin, lagging, messenger), where the evidence tells them
    roles: tuple[RankRole, ...] = ()
    #: the collective where the ranks diverge
    collective: CollectiveRef | None = None
