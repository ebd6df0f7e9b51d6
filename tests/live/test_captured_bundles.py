"""Bundles `nccl-doctor check` wrote on the H200 machine, diagnosed again here."""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.pipeline import diagnose_paths

BUNDLES = Path(__file__).resolve().parents[1] / "fixtures" / "captured" / "check-h200"


def _ids(name: str) -> dict[str, str]:
    report = diagnose_paths([str(BUNDLES / name)])
    return {f.id: f.summary for f in report.findings}


def test_idle_h200_is_healthy() -> None:
    report = diagnose_paths([str(BUNDLES / "bundle-healthy.tgz")])
    assert report.verdict.value == "healthy"
    assert report.findings == ()
    kinds = {e.kind for e in report.coverage.evidence}
    assert {"nvidia-smi-xml", "live-host", "env"} <= kinds


def test_foreign_process_is_contention_with_its_pid_and_name() -> None:
    found = _ids("bundle-foreign-process.tgz")
    assert "gpu.contention" in found
    assert "PID 576 (python3) 20998 MiB" in found["gpu.contention"]


def test_bad_nccl_variables_are_named() -> None:
    found = _ids("bundle-bad-env.tgz")
    summary = found["nccl.env"]
    assert "NCCL_ALGO: unknown value 'Bogus'" in summary
    assert "NCCL_SOCKET_IFNAMES" in summary
    assert "did you mean NCCL_SOCKET_IFNAME?" in summary
