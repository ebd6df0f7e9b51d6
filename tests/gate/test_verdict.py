"""``check --gate`` on real captured checks: statuses per check, the ladder, the exit code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nccl_doctor.cli import main
from tests.gate._support import (
    BAD_ENV,
    CONTAINED,
    FALLEN_OFF,
    FOREIGN,
    GSP,
    HEALTHY,
    NO_GPU,
    NVLINK_XIDS,
    REMAP_PENDING,
    XID79,
    broken_bundle,
)

GPU_CHECKS = ("gpu.visible", "gpu.memory", "gpu.nvlink", "gpu.pcie", "gpu.processes")


def gate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any], str]:
    """Run ``check --gate ARGS``: exit code, the verdict JSON, stderr."""
    code = main(["check", "--gate", *args])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def checks(verdict: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in verdict["checks"]}


def test_idle_h200_passes_every_gpu_check(capsys: pytest.CaptureFixture[str]) -> None:
    code, v, err = gate(capsys, "--from", str(HEALTHY))
    assert code == 0
    assert v["kind"] == "nccl-doctor.node-verdict"
    assert v["node"] == "vm"  # the hostname the capture read
    by = checks(v)
    for cid in (*GPU_CHECKS, "gpu.xid", "driver.stack", "host.shm", "nccl.env"):
        assert by[cid]["status"] == "PASS", cid
    assert by["gpu.visible"]["message"] == "GPU state read: 1 GPU(s), driver 580.159.04"
    assert by["host.shm"]["message"] == "/dev/shm: 131072 MiB"
    # no RDMA port on that VM: said, not a failure
    assert by["net.rdma"]["status"] == "INFO"
    assert v["status"] == "INFO"
    assert v["remediation"] is None
    assert v["gate"] == {
        "fail_on": "critical",
        "fail_unknown": False,
        "blocks": False,
        "exit_code": 0,
    }
    assert v["affected_components"] == [
        {
            "category": "infiniband",
            "check_ids": ["net.rdma"],
            "entities": [],
            "max_severity": "INFO",
        }
    ]
    assert err.startswith("gate: vm INFO, exit 0")


def test_foreign_process_is_info_not_a_node_fault(capsys: pytest.CaptureFixture[str]) -> None:
    code, v, _ = gate(capsys, "--from", str(FOREIGN), "--gate-node", "gpu-07")
    procs = checks(v)["gpu.processes"]
    assert procs["status"] == "INFO"
    assert procs["findings"] == ["gpu.contention"]
    assert "PID 576 (python3) 20998 MiB" in procs["message"]
    assert procs["remediation"] is None
    assert (code, v["node"], v["status"]) == (0, "gpu-07", "INFO")


def test_bad_nccl_variables_warn_and_block_only_at_warning(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, v, _ = gate(capsys, "--from", str(BAD_ENV))
    env = checks(v)["nccl.env"]
    assert env["status"] == "WARNING"
    assert "NCCL_ALGO: unknown value 'Bogus'" in env["message"]
    assert env["remediation"]["action"] == "none"
    assert (code, v["status"], v["gate"]["blocks"]) == (0, "WARNING", False)
    code, v, _ = gate(capsys, "--from", str(BAD_ENV), "--gate-fail-on", "warning")
    assert (code, v["gate"]["blocks"], v["gate"]["exit_code"]) == (1, True, 1)


def test_fallen_off_the_bus_is_critical_reboot_then_ticket(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = broken_bundle(tmp_path, FALLEN_OFF)
    code, v, err = gate(capsys, "--from", str(bundle), "--gate-node", "gpu-02")
    visible = checks(v)["gpu.visible"]
    assert visible["status"] == "CRITICAL"
    assert visible["findings"] == ["gpu.lost"]
    assert visible["entities"] == ["00000000:B3:00.0"]
    assert any(
        "kernel-log.txt:1: [ 1843.308145] NVRM: The NVIDIA GPU" in e for e in visible["evidence"]
    )
    assert visible["remediation"] == {
        "action": "restart_os",
        "then": "service_required",
        "reason": visible["remediation"]["reason"],
        "basis": "kernel:fallen_off_bus",
        "check_id": "gpu.visible",
    }
    assert v["remediation"]["basis"] == "kernel:fallen_off_bus"
    assert v["status"] == "CRITICAL"
    assert {"category": "gpu", "check_ids": ["gpu.visible"], "entities": ["00000000:B3:00.0"],
            "max_severity": "CRITICAL"} in v["affected_components"]  # fmt: skip
    assert code == 1
    assert err.startswith(
        "gate: gpu-02 CRITICAL, exit 1: gpu.visible CRITICAL: GPU 00000000:B3:00.0"
    )


def test_xid79_reboots_then_opens_a_ticket(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = broken_bundle(tmp_path, XID79)
    code, v, _ = gate(capsys, "--from", str(bundle))
    visible = checks(v)["gpu.visible"]
    assert (visible["status"], code) == ("CRITICAL", 1)
    assert visible["remediation"]["action"] == "restart_os"
    assert visible["remediation"]["then"] == "service_required"
    assert visible["remediation"]["basis"] == "xid:79"


def test_nvlink_xids_reset_then_ticket(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, v, _ = gate(capsys, "--from", str(broken_bundle(tmp_path, NVLINK_XIDS)))
    nvlink = checks(v)["gpu.nvlink"]
    assert nvlink["status"] == "CRITICAL"
    assert nvlink["remediation"]["action"] == "reset_gpu"
    assert nvlink["remediation"]["then"] == "service_required"
    assert nvlink["remediation"]["basis"] in ("xid:145", "xid:149")
    assert set(nvlink["entities"]) >= {"00000000:DC:00.0", "00000000:ED:00.0"}
    assert code == 1


def test_contained_memory_error_resets_and_app_xids_ask_nothing_of_the_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, v, _ = gate(capsys, "--from", str(broken_bundle(tmp_path, CONTAINED)))
    by = checks(v)
    assert by["gpu.memory"]["status"] == "WARNING"
    assert by["gpu.memory"]["remediation"]["action"] == "reset_gpu"
    assert by["gpu.memory"]["remediation"]["basis"] == "xid:94"
    # Xid 43/31 are the application's faults: a warning, and no step for the node
    assert by["gpu.xid"]["status"] == "WARNING"
    assert by["gpu.xid"]["remediation"]["action"] == "none"
    assert v["remediation"]["action"] == "reset_gpu"
    assert (code, v["status"]) == (0, "WARNING")


def test_gsp_timeouts_reset_then_reboot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, v, _ = gate(capsys, "--from", str(broken_bundle(tmp_path, GSP)))
    xid = checks(v)["gpu.xid"]
    assert xid["status"] == "CRITICAL"
    assert (xid["remediation"]["action"], xid["remediation"]["then"]) == ("reset_gpu", "restart_os")
    assert xid["remediation"]["basis"] == "kernel:gsp"


def test_pending_row_remap_resets_the_gpu_and_says_what_was_not_read(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, v, _ = gate(capsys, "--from", str(REMAP_PENDING), "--gate-node", "a100-3")
    by = checks(v)
    assert by["gpu.memory"]["status"] == "WARNING"
    assert by["gpu.memory"]["remediation"]["basis"] == "ecc:remap_pending"
    assert by["gpu.memory"]["remediation"]["action"] == "reset_gpu"
    assert by["gpu.visible"]["status"] == "PASS"
    # an nvidia-smi -q alone: no kernel log, no host read
    assert by["gpu.xid"]["status"] == "UNKNOWN"
    assert by["driver.stack"]["status"] == "UNKNOWN"
    assert (code, v["status"], v["counts"]["WARNING"]) == (0, "WARNING", 1)


def test_no_gpu_is_unknown_visible_and_blocks_only_when_asked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, v, err = gate(capsys, "--from", str(NO_GPU))
    by = checks(v)
    for cid in GPU_CHECKS:
        assert by[cid]["status"] == "UNKNOWN", cid
        assert "the NVML bindings (nvidia-ml-py) are not installed" in by[cid]["message"]
    assert by["driver.stack"]["message"] == "the kernel modules could not be read (/proc/modules)"
    assert (code, v["status"], v["counts"]["UNKNOWN"]) == (0, "UNKNOWN", 8)
    assert v["unchecked"][0].startswith("GPU state (NVML)")
    assert "(8 check(s) UNKNOWN)" in err
    code, v, _ = gate(capsys, "--from", str(NO_GPU), "--gate-fail-unknown")
    assert (code, v["gate"]["blocks"]) == (1, True)


def test_a_saved_verdict_is_gated_again_under_another_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, first, _ = gate(capsys, "--from", str(BAD_ENV), "--gate-node", "gpu-09")
    saved = tmp_path / "gpu-09.json"
    saved.write_text(json.dumps(first))
    code, again, _ = gate(capsys, "--from", str(saved))
    assert code == 0
    assert again["checks"] == first["checks"]
    assert (again["node"], again["status"]) == ("gpu-09", "WARNING")
    code, again, _ = gate(capsys, "--from", str(saved), "--gate-fail-on", "warning")
    assert (code, again["gate"]["fail_on"]) == (1, "warning")


def test_text_format_names_the_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["check", "--gate", "--format", "text", "--from", str(broken_bundle(tmp_path, FALLEN_OFF))]
    )
    out = capsys.readouterr().out
    assert code == 1
    assert out.startswith("node vm: CRITICAL - gate blocks (exit 1 at --gate-fail-on critical)\n")
    assert "repair: reboot, then hardware ticket if it recurs (gpu.visible:" in out
    assert "-> reboot, then hardware ticket if it recurs [kernel:fallen_off_bus]" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["check", "--from", "x.tgz"], "error: --from needs --gate"),
        (["check", "--gate-node", "n1"], "error: --gate-node needs --gate"),
        (["check", "--gate", "--format", "markdown"], "error: --gate prints json or text"),
    ],
)
def test_gate_options_misused(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith(message)


def test_a_report_is_not_evidence(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "report.json"
    assert main(["diagnose", str(HEALTHY), "--format", "json", "-o", str(report), "-q"]) == 0
    capsys.readouterr()
    assert main(["check", "--gate", "--from", str(report)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {report} is a report, not evidence")
    assert "check --gate --from node.tgz" in err


def test_evidence_of_no_named_node_needs_gate_node(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--gate", "--from", str(REMAP_PENDING)]) == 2
    assert capsys.readouterr().err == (
        "error: cannot tell which node the evidence is from (hint: name it: --gate-node NAME)\n"
    )
