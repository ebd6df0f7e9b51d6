"""A probe result written on the H200 machine, read back as evidence."""

from __future__ import annotations

import json
from pathlib import Path

from nccl_doctor.pipeline import diagnose_paths

H200 = Path(__file__).resolve().parents[1] / "fixtures" / "captured" / "probe-h200"


def test_h200_full_probe_is_healthy_and_carries_its_figures() -> None:
    report = diagnose_paths([str(H200 / "probe-full.json")])
    assert report.verdict.value == "healthy"
    assert report.findings == ()
    data = json.loads((H200 / "probe-full.json").read_text())
    assert data["meta"]["gpu_model"] == "NVIDIA H200"
    assert data["meta"]["nccl"] == "2.28.9"
    assert data["summary"] == {
        "failed": 0,
        "failed_steps": [],
        "hung": 0,
        "isolation": [],
        "ok": True,
        "short": 0,
        "steps": 12,
    }


def test_h200_copies_match_the_reference_loop_within_5_percent() -> None:
    rows = json.loads((H200 / "probe_bw.txt").read_text().splitlines()[-2])["rows"]
    assert {r["kind"] for r in rows} == {"h2d", "d2h", "d2d"}
    for row in rows:
        assert 0.95 <= row["ratio"] <= 1.05, row
    h2d = next(r for r in rows if r["kind"] == "h2d")
    assert 50 < h2d["probe_GBps"] < 64  # PCIe Gen5 x16


def test_one_rank_collectives_show_no_bus_bandwidth() -> None:
    from nccl_doctor.render.probe_progress import summary_text

    text = summary_text(json.loads((H200 / "probe-full.json").read_text()))
    assert "broadcast          1024.0 MiB  busbw n/a (1 rank)" in text
    assert "h2d                1024.0 MiB  busbw     55.53 GB/s  expected ~55" in text
