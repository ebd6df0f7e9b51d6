"""``nccl-doctor run -- torchrun ... job.py``: real gloo jobs of the CPU fault zoo."""

from __future__ import annotations

import json
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from nccl_doctor.cli import main as cli_main
from tests.run._support import manifest, report_json, start
from tests.zoo.cpu.scenarios import JOB, free_port, torchrun

pytest.importorskip("torch.distributed")


def _torchrun(nproc: int = 2) -> list[str]:
    return [torchrun(), "--nproc-per-node", str(nproc), "--master-port", str(free_port()), str(JOB)]


def _ids(report: dict[str, object]) -> list[str]:
    return [f["id"] for f in report["findings"]]  # type: ignore[index,union-attr]


def _later(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    """``nccl-doctor diagnose DIR --format json`` on the run folder afterwards."""
    capsys.readouterr()
    assert cli_main(["diagnose", str(run_dir), "--format", "json"]) == 1
    data: dict[str, object] = json.loads(capsys.readouterr().out)
    return data


@pytest.mark.parametrize(
    ("scenario", "needle"),
    [("rank_raises", "ValueError: rank 1: bad batch at step 1"), ("sigkill", "Signal 9")],
)
def test_failing_job_is_diagnosed_now_and_later(
    scenario: str, needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    proc, out, err = start(
        run_dir, _torchrun(), tmp_path, "--format", "json", ZOO_SCENARIO=scenario
    )
    code = proc.wait(timeout=120)
    console = (run_dir / "console.log").read_text(errors="replace")
    assert code == 1, console[-2000:]  # torchrun's own status for a failed worker
    assert needle in console
    shown = out.read_text(errors="replace").splitlines()
    shown += err.read_text(errors="replace").splitlines()
    assert Counter(console.splitlines()) <= Counter(shown)  # teed whole to the terminal
    info = manifest(run_dir)
    assert (info["exit_code"], info["launcher"]) == (1, "torchrun")
    assert info["console_lines"] == console.count("\n")
    assert (run_dir / "node-before" / "host.json").is_file()
    assert (run_dir / "node-after" / "host.json").is_file()
    now = report_json(err.read_text())
    assert _ids(now)[0] == "launch.rank_crash"
    assert now["first_failure"]["rank"] == 1  # type: ignore[index]
    later = _later(run_dir, capsys)
    assert _ids(later) == _ids(now)
    assert later["first_failure"] == now["first_failure"]


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _wait_for_workers(run_dir: Path, count: int) -> None:
    """Until torchrun (the job's pid) has ``count`` workers, plus a moment to import torch."""
    end = time.monotonic() + 60
    while time.monotonic() < end:
        info = manifest(run_dir) if (run_dir / "MANIFEST.json").exists() else {}
        if "pid" in info and len(_children(int(info["pid"]))) >= count:
            time.sleep(3)  # the workers import torch and reach the process group
            return
        time.sleep(0.1)
    raise AssertionError("torchrun never started its workers")


def test_sigterm_to_the_wrapper_stops_torchrun_and_returns_its_status(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    proc, _, err = start(
        run_dir, _torchrun(), tmp_path, "--no-snapshot", ZOO_SCENARIO="hold", ZOO_HOLD_S="60"
    )
    _wait_for_workers(run_dir, 2)
    began = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(timeout=60)
    info = manifest(run_dir)
    assert info["signals_forwarded"] == ["SIGTERM"]
    assert not info["sigkilled_after_grace"]  # torchrun stopped on the forwarded signal
    assert time.monotonic() - began < 10
    assert code == info["exit_code"] != 0
    console = (run_dir / "console.log").read_text(errors="replace")
    assert "SIGTERM" in console, console[-2000:]
    assert "rank 0 done" not in console
    assert "the job exited with status" in err.read_text()
