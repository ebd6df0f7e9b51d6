"""Every case folder under tests/cases runs through the whole pipeline.

A case is ``tests/cases/<layer>/<rule>/<case>/``: evidence files and a
``case.json`` naming what must fire (``fires``), what must stay silent
(``silent``), and optionally the top finding (``top``, or ``null`` for none
critical/warning), the first failing rank and the verdict.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nccl_doctor.pipeline import diagnose_paths
from nccl_doctor.rules import CATALOGUE

CASES = Path(__file__).parent / "cases"
_ALL = sorted(p.parent for p in CASES.glob("*/*/*/case.json"))


def _ids(report: object) -> set[str]:
    found = {f.id for f in report.findings}  # type: ignore[attr-defined]
    for _, kids in report.folded:  # type: ignore[attr-defined]
        found.update(k.id for k in kids)
    return found


@pytest.mark.parametrize("case", _ALL, ids=[str(p.relative_to(CASES)) for p in _ALL])
def test_case(case: Path) -> None:
    spec = json.loads((case / "case.json").read_text())
    evidence = sorted(str(p) for p in case.iterdir() if p.name != "case.json")
    report = diagnose_paths(evidence)
    found = _ids(report)
    for rule_id in spec.get("fires", []):
        assert rule_id in found, f"{rule_id} did not fire; got {sorted(found)}"
    for rule_id in spec.get("silent", []):
        assert rule_id not in found, f"{rule_id} fired but must stay silent"
    if "top" in spec:
        top = report.top(1)
        assert (top[0] if top else None) == spec["top"], f"top was {top}"
    if "first_failing_rank" in spec:
        rank = report.first_failure.rank if report.first_failure else None
        assert rank == spec["first_failing_rank"]
    if "verdict" in spec:
        assert report.verdict.value == spec["verdict"]


def test_every_id_has_a_firing_and_a_silent_case() -> None:
    fires: set[str] = set()
    silent: set[str] = set()
    for case in _ALL:
        spec = json.loads((case / "case.json").read_text())
        fires.update(spec.get("fires", []))
        silent.update(spec.get("silent", []))
    assert sorted(set(CATALOGUE) - fires) == []
    assert sorted(set(CATALOGUE) - silent) == []
