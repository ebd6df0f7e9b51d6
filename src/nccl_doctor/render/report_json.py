"""The JSON report (``spec/json-report.md``, schema_version 1)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nccl_doctor import GENERATOR, __version__
from nccl_doctor.facts.base import Cite
from nccl_doctor.findings import Finding
from nccl_doctor.redact import scrub
from nccl_doctor.report import SCHEMA_VERSION, Inventory, Report


def _cite(cite: Cite, clean: Callable[[str], str]) -> dict[str, Any]:
    return {"source": clean(cite.source), "line": cite.line, "text": clean(cite.text)}


def finding_json(finding: Finding, clean: Callable[[str], str] = scrub) -> dict[str, Any]:
    """One finding as the contract spells it."""
    return {
        "id": finding.id,
        "severity": finding.severity.value,
        "root_cause": finding.root_cause,
        "confidence": finding.confidence.value,
        "title": clean(finding.title),
        "summary": clean(finding.summary),
        "fix": [clean(step) for step in finding.fix],
        "fix_steps": [
            {
                "text": clean(step.text),
                "kind": step.kind.value,
                "setting": clean(step.setting) if step.setting else None,
                "masks": step.masks,
            }
            for step in finding.steps
        ],
        "evidence": [_cite(c, clean) for c in finding.evidence],
        "subjects": {
            "ranks": list(finding.subjects.ranks),
            "gpus": list(finding.subjects.gpus),
            "hosts": [clean(h) for h in finding.subjects.hosts],
        },
        "explains": list(finding.explains),
        "follows": list(finding.defers_to),
        "detail": [clean(d) for d in finding.detail],
        "roles": [
            {
                "role": role.role,
                "ranks": list(role.ranks),
                "reason": clean(role.reason),
                "evidence": [_cite(c, clean) for c in role.evidence],
            }
            for role in finding.roles
        ],
        "collective": None
        if finding.collective is None
        else {
            "op": finding.collective.op,
            "seq": finding.collective.seq,
            "size": finding.collective.size,
            "process_group": clean(finding.collective.process_group)
            if finding.collective.process_group
            else None,
            "source": finding.collective.source,
        },
    }


def inventory_json(inv: Inventory, clean: Callable[[str], str] = scrub) -> dict[str, Any]:
    """The report's ``inventory``: hosts, GPUs, versions, probe figures, counter deltas."""

    def host(name: str | None) -> str | None:
        return clean(name) if name else None

    return {
        "hosts": [clean(h) for h in inv.hosts],
        "gpus": [
            {
                "host": host(g.host),
                "index": g.index,
                "bus_id": g.bus_id,
                "uuid": g.uuid,
                "serial": g.serial,
                "name": g.name,
            }
            for g in inv.gpus
        ],
        "versions": dict(inv.versions),
        "probe": [
            {
                "host": host(p.host),
                "kind": p.kind,
                "gpus": list(p.gpus),
                "world": p.world,
                "size_bytes": p.size_bytes,
                "busbw_gbytes_s": p.busbw_gbytes_s,
                "expected_gbytes_s": p.expected_gbytes_s,
                "gpu_model": p.gpu_model,
            }
            for p in inv.probe
        ],
        "counters": [
            {
                "host": host(c.host),
                "device": c.device,
                "counter": c.counter,
                "before": c.before,
                "after": c.after,
                "delta": c.delta,
                "gpu": c.gpu,
            }
            for c in inv.counters
        ],
        "counters_compared": [clean(h) for h in inv.compared],
    }


def report_json(report: Report, clean: Callable[[str], str] = scrub) -> dict[str, Any]:
    """The whole report; ``clean`` is applied to every string taken from evidence."""
    first = report.first_failure
    folded = dict(report.folded)
    findings = []
    for finding in report.findings:
        item = finding_json(finding, clean)
        item["folded"] = [finding_json(kid, clean) for kid in folded.get(finding.id, ())]
        findings.append(item)
    out: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": GENERATOR, "version": __version__},
        "verdict": report.verdict.value,
        "findings": findings,
        "first_failure": None
        if first is None
        else {
            "rank": first.rank,
            "host": clean(first.host) if first.host else None,
            "time": first.time,
            "message": clean(first.message),
            "source": {"source": clean(first.cite.source), "line": first.cite.line},
        },
        "hypotheses": [
            {
                "id": h.id,
                "probability": h.probability,
                "symptom": h.symptom,
                "for": [clean(x) for x in h.for_],
                "against": [clean(x) for x in h.against],
                "check": clean(h.check),
                "tells": clean(h.tells),
                "source": {"source": clean(h.cite.source), "line": h.cite.line},
            }
            for h in report.hypotheses
        ],
        "notices": [
            {
                "signature": n.signature,
                "library": n.library,
                "level": n.level,
                "why": clean(n.why),
                "count": n.count,
                "evidence": {
                    "source": clean(n.cite.source),
                    "line": n.cite.line,
                    "text": clean(n.cite.text),
                },
            }
            for n in report.notices
        ],
        "coverage": {
            "evidence": [
                {"kind": e.kind, "source": clean(e.source), "ranks": list(e.ranks)}
                for e in report.coverage.evidence
            ],
            "missing": list(report.coverage.missing),
            "next_steps": list(report.coverage.next_steps),
            "notes": [clean(n) for n in report.coverage.notes],
            "unchecked": list(report.coverage.unchecked),
        },
        "inventory": inventory_json(report.inventory, clean),
    }
    if report.fingerprint is not None:
        out["fingerprint"] = report.fingerprint.as_json(clean)
    if report.against is not None:
        out["against"] = report.against.as_json(clean)
    return out
