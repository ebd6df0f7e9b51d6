"""Snapshots of the text, JSON and Markdown reports of real evidence.

A change to a renderer or a rule that changes these reports shows here as a
diff. To accept an intended change: ``NCCL_DOCTOR_UPDATE_SNAPSHOTS=1 pytest
tests/render/test_snapshots.py`` and review the diff before committing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nccl_doctor.pipeline import diagnose_paths
from nccl_doctor.render import render_report

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOTS = Path(__file__).parent / "snapshots"
ZOO = ROOT / "tests" / "fixtures" / "captured" / "zoo-h200"
EVIDENCE = {
    "h200-cuda-999": [ROOT / "examples" / "h200-cuda-999"],
    "oom-foreign": [ZOO / "oom_foreign.log", ZOO / "oom_foreign.nvidia-smi.txt"],
    "busy-self": [ZOO / "busy_self.log", ZOO / "busy_self.nvidia-smi.txt"],
    "device-assert": [ZOO / "device_assert.log"],
}
SUFFIX = {"text": "txt", "json": "json", "markdown": "md"}


@pytest.mark.parametrize("fmt", sorted(SUFFIX))
@pytest.mark.parametrize("name", sorted(EVIDENCE))
def test_report_snapshot(name: str, fmt: str) -> None:
    paths = [str(p.relative_to(ROOT)) for p in EVIDENCE[name]]
    cwd = Path.cwd()
    os.chdir(ROOT)
    try:
        rendered = render_report(diagnose_paths(paths), fmt)
    finally:
        os.chdir(cwd)
    snapshot = SNAPSHOTS / f"{name}.{SUFFIX[fmt]}"
    if os.environ.get("NCCL_DOCTOR_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOTS.mkdir(exist_ok=True)
        snapshot.write_text(rendered, encoding="utf-8")
    assert snapshot.is_file(), (
        f"no snapshot {snapshot.name}: run with NCCL_DOCTOR_UPDATE_SNAPSHOTS=1"
    )
    assert rendered == snapshot.read_text(encoding="utf-8")
