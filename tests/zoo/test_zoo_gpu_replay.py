"""The GPU fault zoo, replayed: real NCCL failures captured on the H200 machine.

Each log is torchrun's console output of ``tests/zoo/gpu/job.py`` in one
scenario (``tests/fixtures/captured/zoo-h200/SOURCE.md``); the diagnosis of
what the user would have must name the cause and the first failing rank.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.pipeline import diagnose_paths

ZOO = Path(__file__).resolve().parents[1] / "fixtures" / "captured" / "zoo-h200"

#: scenario -> (evidence files, top finding, first failing rank)
CAPTURED = {
    "duplicate_gpu": (["duplicate_gpu.log"], "nccl.duplicate_gpu", 0),
    "bad_ifname": (["bad_ifname.log"], "net.socket_interface", 0),
    "invalid_ordinal": (["invalid_ordinal.log"], "cuda.device_visibility", 0),
    "no_gpus": (["no_gpus.log"], "cuda.device_visibility", 0),
    "device_assert": (["device_assert.log"], "cuda.device_assert", 0),
    "illegal_access": (["illegal_access.log"], "cuda.illegal_access", 0),
    "oom_foreign": (["oom_foreign.log", "oom_foreign.nvidia-smi.txt"], "gpu.contention", 0),
    "oom_self": (["oom_self.log", "oom_self.nvidia-smi.txt"], "gpu.oom", 0),
}


@pytest.mark.parametrize("name", sorted(CAPTURED))
def test_captured_gpu_failure(name: str) -> None:
    files, top, rank = CAPTURED[name]
    report = diagnose_paths([str(ZOO / f) for f in files])
    assert report.top(1) == [top], report.top(3)
    assert report.first_failure is not None
    assert report.first_failure.rank == rank
    assert report.verdict.value == "failed"


def test_foreign_holder_is_named_with_its_memory_in_gib() -> None:
    report = diagnose_paths([str(ZOO / "oom_foreign.log"), str(ZOO / "oom_foreign.nvidia-smi.txt")])
    summary = report.findings[0].summary
    assert "PID 707 holds 120.5 GiB" in summary
    assert "asking for 40.0 GiB" in summary


def test_env_typo_run_is_not_a_failure() -> None:
    report = diagnose_paths([str(ZOO / "env_typo.log")])
    assert not [f for f in report.findings if f.severity.value == "critical"]


def test_healthy_job_with_its_own_process_listed_is_healthy() -> None:
    report = diagnose_paths([str(ZOO / "busy_self.log"), str(ZOO / "busy_self.nvidia-smi.txt")])
    assert report.verdict.value == "healthy"
