"""nccl.env: settings that cost speed or log lines are a note beside a failure, not its cause.

The evidence is the two case folders of ``tests/cases/nccl/env`` (a launcher script
with leftovers, with and without a start-up failure no rule explains), run through
the whole pipeline; a logging switch's bad value is never a serious problem.
"""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.findings import Confidence, Severity
from nccl_doctor.pipeline import diagnose_paths
from tests.helpers import diagnose_text

ENV = Path(__file__).parents[1] / "cases" / "nccl" / "env"


def _files(case: str) -> list[str]:
    return sorted(str(p) for p in (ENV / case).iterdir() if p.name != "case.json")


def test_leftovers_beside_a_failure_are_a_note() -> None:
    report = diagnose_paths(_files("leftovers_beside_an_unexplained_failure"))
    env = next(f for f in report.findings if f.id == "nccl.env")
    assert env.severity is Severity.INFO
    assert not env.root_cause
    assert "NCCL_MAX_NRINGS is deprecated" in env.summary
    assert report.top(1) != ["nccl.env"]
    assert report.hypotheses  # the failure's ranked causes lead the answer


def test_the_same_leftovers_without_a_failure_are_the_warning() -> None:
    report = diagnose_paths(_files("deprecated_and_trace_no_failure"))
    env = next(f for f in report.findings if f.id == "nccl.env")
    assert env.severity is Severity.WARNING
    assert env.confidence is Confidence.MEDIUM
    assert report.top(1) == ["nccl.env"]


def test_a_logging_switchs_bad_value_is_no_cause(tmp_path: Path) -> None:
    debug = diagnose_text(tmp_path, "export NCCL_DEBUG=DEBUG\nexport NCCL_IB_HCA=mlx5_0\n")
    env = next(f for f in debug.findings if f.id == "nccl.env")
    assert "NCCL_DEBUG: unknown value 'DEBUG'" in env.summary
    assert env.confidence is Confidence.MEDIUM
    assert not env.cause
    algo = diagnose_text(tmp_path, "export NCCL_ALGO=Bogus\nexport NCCL_IB_HCA=mlx5_0\n")
    bogus = next(f for f in algo.findings if f.id == "nccl.env")
    assert bogus.confidence is Confidence.HIGH  # a bad value NCCL acts on is serious
    assert bogus.cause


WATCHDOG = (
    "[rank3]:[E1205 08:12:44.801 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective "
    "operation timeout: WorkNCCL(SeqNum=4471, OpType=_ALLGATHER_BASE, NumelIn=1048576, "
    "NumelOut=8388608, Timeout(ms)=600000) ran for 600017 milliseconds before timing out.\n"
)


def test_a_variable_nothing_reads_is_a_note_beside_a_timeout(tmp_path: Path) -> None:
    """ms-swift's GRPO hang: 'export NCCL_TIMEOUT=14400' was taken for the cause of the
    watchdog timeout; nothing reads it, so the group's own timeout fired, and the hang
    itself is the failure to explain."""
    report = diagnose_text(tmp_path, "export NCCL_TIMEOUT=14400\n" + WATCHDOG)
    env = next(f for f in report.findings if f.id == "nccl.env")
    assert env.severity is Severity.INFO
    assert not env.cause
    assert "NCCL_TIMEOUT: read by neither NCCL nor PyTorch" in env.summary
    assert "init_process_group(timeout=...)" in env.summary
    assert report.top(1) == ["app.hang"]


def test_a_variable_nothing_reads_on_a_healthy_run_is_a_warning(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, "export NCCL_ABORT_ON_ERROR=1\nexport NCCL_IB_HCA=mlx5_0\n")
    (env,) = [f for f in report.findings if f.id == "nccl.env"]
    assert env.severity is Severity.WARNING
    assert env.confidence is Confidence.MEDIUM
    assert "TORCH_NCCL_ASYNC_ERROR_HANDLING" in env.summary
    assert report.verdict.value == "degraded"
