"""A probe result in the evidence draws its bus-bandwidth curves in the HTML report."""

from __future__ import annotations

import json
from pathlib import Path

from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.pipeline import diagnose_read, facts_of
from nccl_doctor.render import render_report

RESULT = Path(__file__).resolve().parents[1] / "fixtures" / "captured" / "probe-cpu"


def test_probe_curves_are_drawn_per_collective() -> None:
    read = read_paths([str(RESULT / "probe-full.json")])
    html = render_report(diagnose_read(read), "html", facts=facts_of(read))
    assert "from the probe result in the evidence" in html
    data = json.loads((RESULT / "probe-full.json").read_text())
    kinds = {b["kind"] for b in data.get("bandwidth", []) if b.get("world", 0) > 1}
    assert kinds
    for kind in kinds:
        assert kind in html
