"""The scheduler's commands from node records: exclusion, drain lines, taints, their evidence."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from nccl_doctor.cli import main
from nccl_doctor.errors import EvidenceError
from nccl_doctor.fleet.actions import MAX_REASON, NodeRecord, drain_reason, plan, plan_json
from tests.gate._support import BAD_ENV, FALLEN_OFF, HEALTHY, NO_GPU, broken_bundle


@pytest.fixture
def verdicts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """Verdict files of four nodes: lost GPU, bad env, no GPU state, healthy."""
    folder = tmp_path / "verdicts"
    folder.mkdir()
    broken = broken_bundle(tmp_path, FALLEN_OFF)
    for node, source in (
        ("gpu-02", broken),
        ("gpu-05", BAD_ENV),
        ("cpu-1", NO_GPU),
        ("gpu-01", HEALTHY),
    ):
        main(["check", "--gate", "--exit-zero", "-q", "--gate-node", node, "--from", str(source)])
        (folder / f"{node}.json").write_text(capsys.readouterr().out)
    return folder


def test_plan_of_real_verdicts(verdicts: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gate", "plan", str(verdicts), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["exclude"] == "--exclude=gpu-02"
    nodes = {n["node"]: n for n in data["nodes"]}
    assert nodes["gpu-02"]["excluded"] is True
    assert nodes["gpu-02"]["action"] == "restart_os"
    assert nodes["gpu-02"]["evidence"][0].startswith("GPU 00000000:B3:00.0 is lost: kernel:")
    assert nodes["gpu-05"]["excluded"] is False  # WARNING, below --fail-on critical
    assert nodes["cpu-1"]["why"].startswith("UNKNOWN: part of the node could not be checked")
    reason = nodes["gpu-02"]["reason"]
    assert reason.startswith("nccl-doctor: gpu.lost GPU 00000000:B3:00.0 is lost")
    assert len(reason) <= MAX_REASON
    argvs = [c["argv"] for c in data["commands"]]
    assert argvs == [
        ["scontrol", "update", "NodeName=gpu-02", "State=DRAIN", f"Reason={reason}"],
        [
            "kubectl",
            "taint",
            "nodes",
            "gpu-02",
            "nccl-doctor/health=critical:NoSchedule",
            "--overwrite",
        ],
        ["kubectl", "label", "nodes", "gpu-02", "nccl-doctor/health=critical", "--overwrite"],
        ["kubectl", "annotate", "nodes", "gpu-02", f"nccl-doctor/reason={reason}", "--overwrite"],
    ]
    # every line pastes back to the same argv
    assert [shlex.split(c["line"]) for c in data["commands"]] == argvs


def test_fail_on_warning_and_unknown_widen_the_exclusion(
    verdicts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["gate", "plan", str(verdicts), "--format", "json", "--fail-on", "warning"]
    assert main([*argv, "--fail-unknown", "--target", "slurm"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["exclude"] == "--exclude=cpu-1,gpu-02,gpu-05"
    assert {c["argv"][0] for c in data["commands"]} == {"scontrol"}


def test_text_plan_is_ready_to_paste(verdicts: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gate", "plan", str(verdicts), "--target", "slurm"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("4 node(s), 1 to exclude (fail-on critical)\n")
    assert "\n# sbatch / srun\n--exclude=gpu-02\n" in out
    line = next(x for x in out.splitlines() if x.startswith("scontrol "))
    assert line.startswith(
        "scontrol update NodeName=gpu-02 State=DRAIN 'Reason=nccl-doctor: gpu.lost"
    )
    assert "kubectl" not in out


def test_reason_is_redacted_plain_and_bounded() -> None:
    record = NodeRecord(
        node="gpu-1",
        status="CRITICAL",
        reason_id="gpu.xid",
        evidence=(
            'Xid 79 "fallen" off; HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123 `rm -rf` $(id)\n' * 4,
        ),
    )
    reason = drain_reason(record)
    assert "hf_abcdefghijklmnopqrstuvwxyz0123" not in reason
    assert not set(reason) & set("\"'`$\n\\")
    assert reason.startswith("nccl-doctor: gpu.xid Xid 79 fallen off; HF_TOKEN=")
    assert len(reason) == MAX_REASON
    assert reason.endswith("...")


@pytest.mark.parametrize("name", ["-rf", "a b", "node;reboot", "$(id)", "", "n" * 300])
def test_bad_node_names_never_reach_a_command(name: str) -> None:
    with pytest.raises(EvidenceError, match="not a host name"):
        plan([NodeRecord(node=name, status="CRITICAL")])


def test_latest_record_of_a_node_wins_and_k8s_names_are_checked() -> None:
    p = plan(
        [
            NodeRecord(node="gpu-3", status="CRITICAL", time="2026-12-01T10:00:00+0000"),
            NodeRecord(node="gpu-3", status="PASS", time="2026-12-02T10:00:00+0000"),
            NodeRecord(node="GPU_4", status="CRITICAL", reason_id="gpu.ecc"),
        ]
    )
    assert p.exclude_arg == "--exclude=GPU_4"
    assert [c.target for c in p.commands] == ["slurm"]
    assert p.notes == ("GPU_4: not a Kubernetes node name; no kubectl command for it",)
    assert plan_json(p)["nodes"][1]["why"] == "PASS is below --fail-on critical"


def test_a_file_that_is_not_a_verdict_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "x.json"
    bad.write_text('{"kind": "something-else"}')
    assert main(["gate", "plan", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {bad}: not a node verdict")
    assert err.count("\n") == 1
