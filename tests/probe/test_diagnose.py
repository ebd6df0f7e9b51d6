"""A saved probe result is evidence: ``diagnose`` reads it back and names the cause."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.probe import ProbeBandwidth, ProbeIsolation, ProbeStep
from nccl_doctor.pipeline import diagnose_paths, facts_of
from nccl_doctor.probe.result import load_result, write_result
from nccl_doctor.probe.runner import run_probe
from tests.probe.conftest import cpu_options


def test_saved_result_is_diagnosed_again(tmp_path: Path) -> None:
    result = run_probe(cpu_options(4, inject="corrupt@2:all_reduce", collectives=("all_reduce",)))  # type: ignore[arg-type]
    path = write_result(result, tmp_path / "probe.json")
    assert load_result(path)["summary"]["ok"] is False
    facts = facts_of(read_paths([str(path)]))
    steps = facts.of(ProbeStep)
    assert any(s.step == "all_reduce" and not s.ok and s.phase == "collective" for s in steps)
    assert {b.kind for b in facts.of(ProbeBandwidth)} >= {"h2d", "d2h", "d2d"}
    iso = [i for i in facts.of(ProbeIsolation) if i.method == "bisection"]
    assert iso
    assert iso[0].gpus == (2,)
    assert iso[0].rounds == 2
    assert steps[0].cite.line > 1
    assert steps[0].cite.text.lstrip().startswith("{")
    report = diagnose_paths([str(path)])
    top = report.findings[0]
    assert top.id == "gpu.lost"
    assert "GPU 2" in top.summary


def test_healthy_result_has_no_critical_finding(tmp_path: Path) -> None:
    result = run_probe(cpu_options(2, collectives=("all_reduce", "broadcast")))  # type: ignore[arg-type]
    assert result["summary"]["ok"] is True
    report = diagnose_paths([str(write_result(result, tmp_path / "ok.json"))])
    assert not [f for f in report.findings if f.severity.value == "critical"]


def test_odd_records_are_skipped(tmp_path: Path) -> None:
    text = (
        '{"nccl_doctor_probe": 1,\n "steps": [\n  {"step": "kernel"},\n  not json,\n'
        '  {"step": "p2p 0->1", "ok": false, "status": "hung", "phase": "p2p", "gpus": [0, 1]}\n'
        " ]\n}\n"
    )
    (tmp_path / "odd.json").write_text(text)
    facts = facts_of(read_paths([str(tmp_path / "odd.json")]))
    (step,) = facts.of(ProbeStep)
    assert step.status == "hung"
    assert step.gpus == (0, 1)
    assert "nccl.p2p" in {f.id for f in diagnose_paths([str(tmp_path / "odd.json")]).findings}


def test_cli_module_runs_and_saves(tmp_path: Path) -> None:
    import subprocess

    out = tmp_path / "r.json"
    env = {
        "PYTHONPATH": str(Path(__file__).parents[2] / "src"),
        "PYTHONWARNINGS": "ignore",
        "PATH": "/usr/bin:/bin",
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "nccl_doctor.probe",
            "--device",
            "cpu",
            "--gpus",
            "0,1",
            "--format",
            "json",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["verdict"]
    assert load_result(out)["meta"]["device_kind"] == "cpu"
    bad = subprocess.run(
        [sys.executable, "-m", "nccl_doctor.probe", "--device", "cpu", "--timeout", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert bad.returncode == 2
    assert "--timeout must be positive" in bad.stderr
