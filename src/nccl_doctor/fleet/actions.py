"""What the scheduler does with node verdicts: exclude, drain, taint, each with its evidence.

The input is one :class:`NodeRecord` per node (node, status, evidence), from
verdict files (:func:`records_from_verdict`) or from the history store; the
output is a :class:`Plan`: the ``--exclude=`` argument for ``sbatch``/``srun``,
one ``scontrol update NodeName=... State=DRAIN Reason=...`` per node, and a
Kubernetes taint, label and annotation per node, each as the argv that
``--apply`` runs (never through a shell) and as a line safe to paste.

A node is acted on when its status reaches ``fail_on`` (CRITICAL by
default), or is UNKNOWN under ``fail_unknown``; the others are listed as kept,
with why. Node names are checked before they reach a command line; a Slurm
reason is redacted, stripped to plain characters and bounded.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nccl_doctor.errors import EvidenceError
from nccl_doctor.redact import redact

if TYPE_CHECKING:  # the verdict loads the rules' report: not for building the parser
    from nccl_doctor.gate.verdict import NodeVerdict

#: The longest Slurm drain reason written (``sinfo -R`` shows the start of it).
MAX_REASON = 120
TAINT_KEY = "nccl-doctor/health"
REASON_ANNOTATION = "nccl-doctor/reason"
_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")
_K8S_LABEL = r"[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?"
_K8S_NODE = re.compile(rf"{_K8S_LABEL}(?:\.{_K8S_LABEL})*")
_UNSAFE = re.compile(r"[^A-Za-z0-9 ._:,;/()#+@%=\[\]-]+")


@dataclass(frozen=True, slots=True)
class NodeRecord:
    """One node as the scheduler sees it: its status and the evidence for it.

    ``reason_id`` names what the drain reason cites (a diagnosis id or a check
    id), ``action`` is the repair ladder's rung (``none`` ... ``service_required``),
    ``time`` orders records of the same node (ISO 8601; the latest wins).
    """

    node: str
    status: str
    evidence: tuple[str, ...] = ()
    reason_id: str = ""
    action: str = "none"
    time: str = ""
    source: str = ""
    unknown_checks: int = 0


@dataclass(frozen=True, slots=True)
class Command:
    """One command of the plan: the argv ``--apply`` runs and the line to paste."""

    target: str
    node: str
    argv: tuple[str, ...]

    @property
    def line(self) -> str:
        """The command as a shell line, every word quoted where it needs it."""
        return shlex.join(self.argv)


@dataclass(frozen=True, slots=True)
class NodePlan:
    """A node's record and what the plan does with it."""

    record: NodeRecord
    excluded: bool
    why: str
    reason: str


@dataclass(frozen=True, slots=True)
class Plan:
    """The exclusion list and the commands for every node acted on."""

    nodes: tuple[NodePlan, ...]
    fail_on: str
    fail_unknown: bool
    effect: str
    commands: tuple[Command, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def excluded(self) -> tuple[str, ...]:
        """The nodes acted on, in name order."""
        return tuple(sorted(p.record.node for p in self.nodes if p.excluded))

    @property
    def exclude_arg(self) -> str | None:
        """``--exclude=a,b`` for ``sbatch``/``srun``, or ``None`` when no node is excluded."""
        return f"--exclude={','.join(self.excluded)}" if self.excluded else None


def check_node(name: str) -> str:
    """``name`` when it is a plain host name; else :class:`EvidenceError`."""
    if not _HOST.fullmatch(name):
        raise EvidenceError(
            f"{name!r} is not a host name a scheduler command may take",
            "node names are letters, digits, '.', '_' and '-', starting with a letter or digit",
        )
    return name


def records_from_verdict(verdict: NodeVerdict, source: str = "") -> NodeRecord:
    """The record of a node verdict: its status, its headline check's id and evidence."""
    top = verdict.headline
    evidence: tuple[str, ...] = ()
    reason_id = ""
    if top is not None:
        reason_id = top.findings[0] if top.findings else top.id
        evidence = tuple(e for e in (top.message, *top.evidence[:2]) if e)
    remedy = verdict.remediation
    return NodeRecord(
        node=check_node(verdict.node),
        status=verdict.status,
        evidence=evidence,
        reason_id=reason_id,
        action=remedy.action if remedy else "none",
        time=verdict.time,
        source=source or verdict.source,
        unknown_checks=verdict.counts()["UNKNOWN"],
    )


def drain_reason(record: NodeRecord) -> str:
    """``nccl-doctor: <id> <short evidence>``: redacted, plain characters, at most 120 long."""
    words = " ".join(
        p for p in ("nccl-doctor:", record.reason_id or record.status, *record.evidence[:1]) if p
    )
    clean = " ".join(_UNSAFE.sub(" ", redact(words)).split())
    return clean if len(clean) <= MAX_REASON else clean[: MAX_REASON - 3].rstrip() + "..."


def _latest(records: list[NodeRecord]) -> list[NodeRecord]:
    """One record per node: the latest, the worst status on a tie."""
    from nccl_doctor.gate.verdict import weight  # noqa: PLC0415 -- see the imports

    best: dict[str, NodeRecord] = {}
    for record in records:
        check_node(record.node)
        old = best.get(record.node)
        if old is None or (record.time, weight(record.status)) > (old.time, weight(old.status)):
            best[record.node] = record
    return sorted(best.values(), key=lambda r: r.node)


def _decide(record: NodeRecord, fail_on: str, fail_unknown: bool) -> tuple[bool, str]:
    from nccl_doctor.gate.verdict import weight  # noqa: PLC0415 -- see the imports

    if weight(record.status) >= weight(fail_on.upper()):
        return True, f"{record.status} reaches --fail-on {fail_on}"
    if fail_unknown and (record.status == "UNKNOWN" or record.unknown_checks):
        return True, "part of the node could not be checked (--fail-unknown)"
    if record.status == "UNKNOWN":
        return False, "UNKNOWN: part of the node could not be checked; kept (--fail-unknown acts)"
    return False, f"{record.status} is below --fail-on {fail_on}"


def _commands(node: NodePlan, effect: str) -> tuple[list[Command], list[str]]:
    name, status = node.record.node, node.record.status.lower()
    out = [
        Command(
            "slurm",
            name,
            ("scontrol", "update", f"NodeName={name}", "State=DRAIN", f"Reason={node.reason}"),
        )
    ]
    if not _K8S_NODE.fullmatch(name) or len(name) > 253:
        return out, [f"{name}: not a Kubernetes node name; no kubectl command for it"]
    out += [
        Command(
            "k8s",
            name,
            ("kubectl", "taint", "nodes", name, f"{TAINT_KEY}={status}:{effect}", "--overwrite"),
        ),
        Command(
            "k8s", name, ("kubectl", "label", "nodes", name, f"{TAINT_KEY}={status}", "--overwrite")
        ),
        Command(
            "k8s",
            name,
            (
                "kubectl",
                "annotate",
                "nodes",
                name,
                f"{REASON_ANNOTATION}={node.reason}",
                "--overwrite",
            ),
        ),
    ]
    return out, []


def plan(
    records: list[NodeRecord],
    *,
    fail_on: str = "critical",
    fail_unknown: bool = False,
    effect: str = "NoSchedule",
) -> Plan:
    """What to do with each node of ``records`` (one per node: the latest wins)."""
    nodes: list[NodePlan] = []
    commands: list[Command] = []
    notes: list[str] = []
    for record in _latest(records):
        excluded, why = _decide(record, fail_on, fail_unknown)
        node = NodePlan(record, excluded, why, drain_reason(record))
        nodes.append(node)
        if excluded:
            made, said = _commands(node, effect)
            commands += made
            notes += said
    return Plan(tuple(nodes), fail_on, fail_unknown, effect, tuple(commands), tuple(notes))


def plan_json(p: Plan) -> dict[str, Any]:
    """The plan as JSON (``docs/gate.md``)."""
    return {
        "kind": "nccl-doctor.gate-plan",
        "schema_version": 1,
        "fail_on": p.fail_on,
        "fail_unknown": p.fail_unknown,
        "exclude": p.exclude_arg,
        "excluded": list(p.excluded),
        "nodes": [
            {
                "node": n.record.node,
                "status": n.record.status,
                "excluded": n.excluded,
                "why": n.why,
                "action": n.record.action,
                "reason": n.reason,
                "evidence": list(n.record.evidence),
                "source": n.record.source,
            }
            for n in p.nodes
        ],
        "commands": [
            {"target": c.target, "node": c.node, "argv": list(c.argv), "line": c.line}
            for c in p.commands
        ],
        "notes": list(p.notes),
    }


def plan_text(p: Plan, targets: frozenset[str]) -> str:
    """The plan as text: each node with its evidence, then the lines to paste."""
    unknown = ", fail-unknown" if p.fail_unknown else ""
    out = [
        f"{len(p.nodes)} node(s), {len(p.excluded)} to exclude (fail-on {p.fail_on}{unknown})",
        "",
    ]
    for n in p.nodes:
        mark = "EXCLUDE" if n.excluded else "keep"
        out.append(f"{n.record.node}  {n.record.status}  {mark}: {n.why}")
        if n.record.action != "none":
            out.append(f"  repair: {n.record.action}")
        out.extend(f"  evidence: {e}" for e in n.record.evidence)
    if p.exclude_arg:
        out += ["", "# sbatch / srun", p.exclude_arg]
    for target, title in (
        ("slurm", "# Slurm: drain"),
        ("k8s", "# Kubernetes: taint, label, reason"),
    ):
        lines = [c.line for c in p.commands if c.target == target]
        if lines and target in targets:
            out += ["", title, *lines]
    out.extend(f"note: {n}" for n in p.notes)
    return "\n".join(out) + "\n"
