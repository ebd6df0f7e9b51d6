"""``gate plan --apply``: the exact argv run, a missing tool, a failing one.

scontrol and kubectl here are tiny programs on PATH that record the argv
they were given and exit as told: the argv is the contract.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from nccl_doctor.cli import main
from tests.gate._support import FALLEN_OFF, HEALTHY, broken_bundle

_RECORDER = """#!{python}
import json, os, sys
with open(os.path.join({record!r}, os.path.basename(sys.argv[0]) + ".jsonl"), "a") as out:
    out.write(json.dumps(sys.argv) + "\\n")
code = int(os.environ.get("FAKE_EXIT", "0"))
if code:
    sys.stderr.write("slurm_update error: Invalid node name specified\\n")
sys.exit(code)
"""


def _tools(tmp: Path, *names: str) -> tuple[Path, Path]:
    bin_dir, record = tmp / "bin", tmp / "record"
    bin_dir.mkdir()
    record.mkdir()
    for name in names:
        tool = bin_dir / name
        tool.write_text(_RECORDER.format(python=sys.executable, record=str(record)))
        tool.chmod(0o755)
    return bin_dir, record


def _recorded(record: Path, tool: str) -> list[list[str]]:
    path = record / f"{tool}.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def verdicts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    folder = tmp_path / "verdicts"
    folder.mkdir()
    broken = broken_bundle(tmp_path, FALLEN_OFF)
    for node, source in (("gpu-02", broken), ("gpu-01", HEALTHY)):
        main(["check", "--gate", "--exit-zero", "-q", "--gate-node", node, "--from", str(source)])
        (folder / f"{node}.json").write_text(capsys.readouterr().out)
    return folder


def _path(monkeypatch: pytest.MonkeyPatch, bin_dir: Path) -> None:
    monkeypatch.setenv("PATH", str(bin_dir))  # only the recorders: a real tool here never runs


def test_apply_runs_exactly_the_planned_argv(
    verdicts: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bin_dir, record = _tools(tmp_path, "scontrol", "kubectl")
    _path(monkeypatch, bin_dir)
    assert main(["gate", "plan", str(verdicts), "--format", "json"]) == 0
    planned = [c["argv"] for c in json.loads(capsys.readouterr().out)["commands"]]
    assert main(["gate", "plan", str(verdicts), "--apply"]) == 0
    out = capsys.readouterr().out
    ran = _recorded(record, "scontrol") + _recorded(record, "kubectl")
    assert [[Path(a[0]).name, *a[1:]] for a in ran] == planned
    assert ran[0][0] == str(bin_dir / "scontrol")  # resolved on PATH, run by its full path
    assert ran[0][1:4] == ["update", "NodeName=gpu-02", "State=DRAIN"]
    assert ran[0][4].startswith("Reason=nccl-doctor: gpu.lost GPU 00000000:B3:00.0 is lost")
    assert "ran: scontrol update NodeName=gpu-02 State=DRAIN 'Reason=nccl-doctor: gpu.lost" in out
    assert out.count("-> exit 0") == 4


def test_a_missing_tool_stops_before_anything_runs(
    verdicts: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bin_dir, record = _tools(tmp_path, "scontrol")
    _path(monkeypatch, bin_dir)
    assert main(["gate", "plan", str(verdicts), "--apply"]) == 2
    assert capsys.readouterr().err == (
        "error: kubectl is not on PATH; nothing was applied "
        "(hint: run where kubectl works, or apply only --target slurm)\n"
    )
    assert _recorded(record, "scontrol") == []


def test_a_failing_command_is_reported_with_its_status(
    verdicts: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bin_dir, record = _tools(tmp_path, "scontrol")
    _path(monkeypatch, bin_dir)
    monkeypatch.setenv("FAKE_EXIT", "1")
    assert (
        main(["gate", "plan", str(verdicts), "--target", "slurm", "--apply", "--format", "json"])
        == 1
    )
    applied = json.loads(capsys.readouterr().out)["applied"]
    assert len(applied) == 1
    assert applied[0]["exit_code"] == 1
    assert applied[0]["message"] == "slurm_update error: Invalid node name specified"
    assert len(_recorded(record, "scontrol")) == 1


def test_dry_run_is_the_default(
    verdicts: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bin_dir, record = _tools(tmp_path, "scontrol", "kubectl")
    _path(monkeypatch, bin_dir)
    assert main(["gate", "plan", str(verdicts)]) == 0
    assert "ran:" not in capsys.readouterr().out
    assert _recorded(record, "scontrol") == _recorded(record, "kubectl") == []
