"""PyTorch's own messages around a distributed job, as torch 2.11 printed them on one H200.

The captures (``tests/fixtures/captured/torch-messages-h200``, ``SOURCE.md`` says how each was
made) run through the whole pipeline: each failure is read as its class and named first; the
healthy run that only forgot ``destroy_process_group()`` gets no finding and no hypothesis.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.pipeline import diagnose_paths

CAPTURED = Path(__file__).resolve().parent.parent / "fixtures" / "captured" / "torch-messages-h200"


@pytest.mark.parametrize(
    ("name", "first"),
    [
        ("port_in_use.txt", "launch.port_in_use"),
        ("store_connect.txt", "net.unreachable"),
        ("world_short.txt", "launch.rendezvous"),
    ],
)
def test_a_store_that_cannot_start_or_complete_names_why(name: str, first: str) -> None:
    report = diagnose_paths([str(CAPTURED / name)])
    assert report.top(1) == [first]
    assert [f.severity.value for f in report.findings if f.id == first] == ["critical"]


def test_a_healthy_run_without_destroy_process_group_is_no_failure() -> None:
    report = diagnose_paths([str(CAPTURED / "not_destroyed.txt")])
    assert [f for f in report.findings if f.severity.value != "info"] == []
    assert report.hypotheses == ()
    assert report.verdict.value != "failed"


def test_cuda_in_a_forked_child_is_the_jobs_own_error_not_the_driver() -> None:
    report = diagnose_paths([str(CAPTURED / "fork_reinit.txt")])
    lead = report.hypotheses[0]
    assert lead.symptom == "the job's own code raised a Python exception (its data or logic)"
    assert lead.id == "launch.rank_crash"
    assert not [h for h in report.hypotheses[:2] if h.id.startswith("driver.")]
