"""XLA's coordination service (JAX's multi-process start-up and heartbeats), as its lines read."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_text

HEARTBEAT_LOST = (
    "E0612 03:14:55.201337   41873 coordination_service.cc:412] UNAVAILABLE: Task "
    "/job:jax_worker/replica:0/task:5 heartbeat timeout. This indicates that the remote task "
    "has failed, got preempted, or crashed unexpectedly. Check the task logs for an earlier "
    "error or scheduler events (e.g. preemption, eviction) to debug further.\n"
)


def test_a_task_s_lost_heartbeats_lead_with_the_task_that_died(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, HEARTBEAT_LOST)
    first = report.hypotheses[0]
    assert first.symptom.startswith("a process of the job stopped answering the service")
    assert first.id == "launch.rank_crash"
    assert "xla.coordination.heartbeat_timeout" in first.for_[0]
    assert "JAX task's own stderr" in first.check
