"""Findings from a probe result whose transport isolation named one NCCL transport."""

from __future__ import annotations

from collections.abc import Sequence

from nccl_doctor.facts.probe import ProbeIsolation
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Finding
from nccl_doctor.rules.base import Rule


def isolated_transport(
    rule: Rule, facts: Facts, transport: str, what: str, fix: Sequence[str]
) -> list[Finding]:
    """The first probe step that failed with ``transport`` on and passed with it off."""
    iso = next((i for i in facts.of(ProbeIsolation) if i.transport == transport), None)
    if iso is None:
        return []
    return [
        rule.finding(
            summary=f"nccl-doctor probe: {iso.step} failed or fell short with NCCL's "
            f"{what} and passed with {', '.join(iso.env)} in fresh processes",
            fix=fix,
            evidence=[iso],
            hosts=[iso.host] if iso.host else [],
        )
    ]
