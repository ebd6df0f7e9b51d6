"""A node verdict as text: the status, the node's repair step, then one line per check."""

from __future__ import annotations

from nccl_doctor.gate.verdict import NodeVerdict, Policy, Remediation
from nccl_doctor.knowledge.repair_ladder import Step


def _steps(r: Remediation) -> str:
    words = Step[r.action.upper()].words
    if r.then:
        words += f", then {Step[r.then.upper()].words} if it recurs"
    return words


def verdict_text(verdict: NodeVerdict, policy: Policy, *, verbosity: int = 0) -> str:
    """The verdict for a terminal or a log: failing checks with evidence, the rest one line each."""
    blocks = policy.blocks(verdict)
    gate = f"blocks (exit 1 at --gate-fail-on {policy.fail_on})" if blocks else "passes (exit 0)"
    out = [f"node {verdict.node}: {verdict.status} - gate {gate}"]
    if (r := verdict.remediation) is not None:
        out.append(f"repair: {_steps(r)} ({r.check_id}: {r.reason})")
    out.append("")
    for c in verdict.checks:
        if verbosity < 0 and c.status == "PASS":
            continue
        out.append(f"  {c.status:8} {c.id:18} {c.name}: {c.message}")
        if c.remediation is not None:
            out.append(f"  {'':8} {'':18} -> {_steps(c.remediation)} [{c.remediation.basis}]")
        shown = c.evidence if verbosity > 0 else c.evidence[:2]
        out.extend(f"  {'':8} {'':18} | {line}" for line in shown)
    return "\n".join(out) + "\n"
