"""The node verdict: one status per check, the repair ladder, the gate's exit code.

Built from a report and the facts under it (``check`` on the live node or a
saved bundle), shaped like NVIDIA Health Validation's ``NodeVerdict``
(statuses PASS/INFO/WARNING/CRITICAL/UNKNOWN, ``affected_components`` with
``category``/``check_ids``/``entities``/``max_severity``, remediation names
drain/reset_gpu/restart_os/service_required); ``docs/gate.md`` is its
contract. A verdict also reads back from its JSON, so a saved one can be gated
again under another policy.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from nccl_doctor import __version__
from nccl_doctor.errors import EvidenceError
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Finding
from nccl_doctor.gate.checks import CHECKS, JOB_CHECK, OWNER, CheckSpec
from nccl_doctor.gate.ladder import choose
from nccl_doctor.knowledge.repair_ladder import Step
from nccl_doctor.report import Report

KIND = "nccl-doctor.node-verdict"
SCHEMA_VERSION = 1
#: Statuses in the order of their weight for a gate; UNKNOWN stands apart.
ORDER = ("PASS", "INFO", "WARNING", "CRITICAL")
STATUSES = (*ORDER, "UNKNOWN")
_OF_SEVERITY = {"critical": "CRITICAL", "warning": "WARNING", "info": "INFO"}
_FAILING = frozenset({"WARNING", "CRITICAL"})
#: The most evidence lines a check carries.
MAX_EVIDENCE = 6
_BUNDLE = "nccl-doctor-bundle/"


def weight(status: str) -> int:
    """PASS 0, INFO 1, WARNING 2, CRITICAL 3 (UNKNOWN: -1, outside the order)."""
    return ORDER.index(status) if status in ORDER else -1


@dataclass(frozen=True, slots=True)
class Remediation:
    """A rung of the ladder: ``action`` now, ``then`` if it recurs, the reason and its key."""

    action: str
    reason: str
    basis: str
    then: str | None = None
    check_id: str | None = None

    @property
    def step(self) -> Step:
        """The rung as a :class:`Step`."""
        return Step[self.action.upper()]


@dataclass(frozen=True, slots=True)
class CheckVerdict:
    """One check's status, what it says, and the evidence lines behind it."""

    id: str
    name: str
    category: str
    status: str
    message: str
    evidence: tuple[str, ...] = ()
    findings: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    remediation: Remediation | None = None


@dataclass(frozen=True, slots=True)
class NodeVerdict:
    """The verdict of one node."""

    node: str
    status: str
    checks: tuple[CheckVerdict, ...]
    time: str
    source: str
    unchecked: tuple[str, ...] = ()
    version: str = __version__

    def counts(self) -> dict[str, int]:
        """How many checks have each status."""
        return {s: sum(c.status == s for c in self.checks) for s in STATUSES}

    @property
    def remediation(self) -> Remediation | None:
        """The node's rung: the biggest step of a failing check (a critical one on a tie)."""
        failing = [c for c in self.checks if c.remediation and c.status in _FAILING]
        if not failing:
            return None
        top = max(failing, key=lambda c: (c.remediation.step, weight(c.status)))  # type: ignore[union-attr]
        return top.remediation

    @property
    def headline(self) -> CheckVerdict | None:
        """The check that says most about the node: the worst status, the biggest step."""
        ranked = [c for c in self.checks if c.status != "PASS"]
        if not ranked:
            return None

        def key(c: CheckVerdict) -> tuple[int, int]:
            step = c.remediation.step if c.remediation else 0
            return (weight(c.status) if c.status != "UNKNOWN" else 1, step)

        return max(ranked, key=key)


@dataclass(frozen=True, slots=True)
class Policy:
    """When the gate fails: at ``fail_on`` (``critical`` or ``warning``) or on any UNKNOWN."""

    fail_on: str = "critical"
    fail_unknown: bool = False

    def blocks(self, verdict: NodeVerdict) -> bool:
        """Whether the node must not take jobs under this policy."""
        if weight(verdict.status) >= weight(self.fail_on.upper()):
            return True
        return self.fail_unknown and any(c.status == "UNKNOWN" for c in verdict.checks)


def _where(source: str) -> str:
    """A citation's source without the temporary folder a capture was read from."""
    return source.split(_BUNDLE, 1)[1] if _BUNDLE in source else source


def _status(finding: Finding, cap: str | None) -> str:
    status = _OF_SEVERITY[finding.severity.value]
    if cap and weight(cap) < weight(status):
        return cap
    return status


def _check(spec: CheckSpec, found: list[Finding], facts: Facts, report: Report) -> CheckVerdict:
    if not found:
        reading = spec.needs(facts, report)
        return CheckVerdict(spec.id, spec.name, spec.category, reading.status, reading.message)
    rated = []
    for finding in found:
        choice = choose(finding, facts)
        rated.append((finding, choice, _status(finding, choice.rung.status)))
    worst = max(weight(s) for _, _, s in rated)
    status = ORDER[worst]
    evidence: list[str] = []
    for finding, _, _ in rated:
        for c in finding.evidence[:3]:
            line = f"{_where(c.source)}:{c.line}: {c.text.strip()}"
            if line not in evidence and len(evidence) < MAX_EVIDENCE:
                evidence.append(line)
    remediation = None
    if status in _FAILING:
        top = max(
            ((f, c) for f, c, s in rated if weight(s) == worst),
            key=lambda pair: pair[1].rung.step,
        )
        rung = top[1].rung
        remediation = Remediation(
            action=rung.step.label,
            reason=rung.reason,
            basis=top[1].basis,
            then=rung.then.label if rung.then is not None else None,
            check_id=spec.id,
        )
    summaries = [f.summary for f, _, s in rated if weight(s) == worst]
    message = summaries[0] + (f" (+{len(summaries) - 1} more)" if len(summaries) > 1 else "")
    entities: list[str] = []
    for finding, _, _ in rated:
        entities.extend(finding.subjects.gpus)
        entities.extend(finding.subjects.hosts)
    return CheckVerdict(
        spec.id,
        spec.name,
        spec.category,
        status,
        message,
        tuple(evidence),
        tuple(dict.fromkeys(f.id for f, _, _ in rated)),
        tuple(dict.fromkeys(entities)),
        remediation,
    )


def worst(statuses: Iterable[str]) -> str:
    """CRITICAL, else WARNING, else UNKNOWN (part not read), else INFO, else PASS."""
    seen = set(statuses)
    for status in ("CRITICAL", "WARNING", "UNKNOWN", "INFO"):
        if status in seen:
            return status
    return "PASS"


def overall(checks: Iterable[CheckVerdict]) -> str:
    """The node's status: the :func:`worst` of its checks'."""
    return worst(c.status for c in checks)


def build(
    report: Report, facts: Facts, *, node: str, source: str, when: str | None = None
) -> NodeVerdict:
    """The verdict of the node ``report`` and ``facts`` describe."""
    owned: dict[str, list[Finding]] = {}
    # a finding triage folded under another (Xid 43 under an ECC error) is still the node's
    every = [*report.findings, *(f for _, kids in report.folded for f in kids)]
    for finding in every:
        owned.setdefault(OWNER.get(finding.id, JOB_CHECK.id), []).append(finding)
    checks = [_check(spec, owned.get(spec.id, []), facts, report) for spec in CHECKS]
    if JOB_CHECK.id in owned:
        checks.append(_check(JOB_CHECK, owned[JOB_CHECK.id], facts, report))
    done = tuple(checks)
    return NodeVerdict(
        node=node,
        status=overall(done),
        checks=done,
        time=when or time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        source=source,
        unchecked=report.coverage.unchecked,
    )


def _remediation_json(r: Remediation | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {
        "action": r.action,
        "then": r.then,
        "reason": r.reason,
        "basis": r.basis,
        "check_id": r.check_id,
    }


def affected_components(verdict: NodeVerdict) -> list[dict[str, Any]]:
    """Per category with a non-PASS check: its check ids, entities and worst status."""
    groups: dict[str, list[CheckVerdict]] = {}
    for c in verdict.checks:
        if c.status != "PASS":
            groups.setdefault(c.category, []).append(c)
    return [
        {
            "category": category,
            "check_ids": [c.id for c in group],
            "entities": list(dict.fromkeys(e for c in group for e in c.entities)),
            "max_severity": overall(group),
        }
        for category, group in groups.items()
    ]


def verdict_json(verdict: NodeVerdict, policy: Policy) -> dict[str, Any]:
    """The verdict as the JSON ``check --gate`` prints (``docs/gate.md``)."""
    blocks = policy.blocks(verdict)
    return {
        "kind": KIND,
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "nccl-doctor", "version": verdict.version},
        "node": verdict.node,
        "time": verdict.time,
        "source": verdict.source,
        "status": verdict.status,
        "gate": {
            "fail_on": policy.fail_on,
            "fail_unknown": policy.fail_unknown,
            "blocks": blocks,
            "exit_code": 1 if blocks else 0,
        },
        "remediation": _remediation_json(verdict.remediation),
        "counts": verdict.counts(),
        "affected_components": affected_components(verdict),
        "checks": [
            {
                "id": c.id,
                "name": c.name,
                "category": c.category,
                "status": c.status,
                "message": c.message,
                "evidence": list(c.evidence),
                "findings": list(c.findings),
                "entities": list(c.entities),
                "remediation": _remediation_json(c.remediation),
            }
            for c in verdict.checks
        ],
        "unchecked": list(verdict.unchecked),
    }


def _strs(value: object) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def _text(value: object, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise EvidenceError(
            f"not a node verdict: {what} is missing",
            "pass a file `nccl-doctor check --gate` wrote, unchanged",
        )
    return value


def _remediation_of(value: object) -> Remediation | None:
    if not isinstance(value, dict):
        return None
    action = value.get("action")
    if not isinstance(action, str) or action.upper() not in Step.__members__:
        return None
    then = value.get("then")
    return Remediation(
        action=action,
        reason=str(value.get("reason") or ""),
        basis=str(value.get("basis") or ""),
        then=then if isinstance(then, str) and then.upper() in Step.__members__ else None,
        check_id=value.get("check_id") if isinstance(value.get("check_id"), str) else None,
    )


def verdict_from_json(data: object) -> NodeVerdict:
    """A verdict read back from its JSON; a malformed one raises :class:`EvidenceError`."""
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise EvidenceError(
            'not a node verdict (no "kind": "nccl-doctor.node-verdict")',
            "pass a file `nccl-doctor check --gate` wrote",
        )
    checks = []
    for item in data.get("checks") or []:
        if not isinstance(item, dict):
            continue
        status = item.get("status")
        if status not in STATUSES:
            raise EvidenceError(
                f"not a node verdict: check status {status!r} is none of {', '.join(STATUSES)}",
                "pass a file `nccl-doctor check --gate` wrote, unchanged",
            )
        checks.append(
            CheckVerdict(
                id=_text(item.get("id"), "a check's id"),
                name=str(item.get("name") or ""),
                category=str(item.get("category") or ""),
                status=status,
                message=str(item.get("message") or ""),
                evidence=_strs(item.get("evidence")),
                findings=_strs(item.get("findings")),
                entities=_strs(item.get("entities")),
                remediation=_remediation_of(item.get("remediation")),
            )
        )
    done = tuple(checks)
    status = data.get("status")
    return NodeVerdict(
        node=_text(data.get("node"), "the node name"),
        status=status if status in STATUSES else overall(done),
        checks=done,
        time=str(data.get("time") or ""),
        source=str(data.get("source") or ""),
        unchecked=_strs(data.get("unchecked")),
        version=str((data.get("tool") or {}).get("version") or ""),
    )
