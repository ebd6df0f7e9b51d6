"""Ray's memory monitor kills a worker when the node's host memory passes its threshold (raylet
node_manager.cc): the killed worker never joins the next collective, so the others' watchdog
timeouts follow from host memory, not from NCCL. Ray's advice about its monitor, a count of
workers that crashed for other reasons, or the threshold named in a sentence are no kill."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import critical_ids, diagnose_text

_KILLED = (
    "(raylet) [2025-07-14 03:12:41,882 E 1877 1877] (raylet) node_manager.cc:3069: 1 Workers "
    "(tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed due to other "
    "reasons at node (ID: 5c1e8a0f, IP: 10.0.12.7) over the last time period.\n"
)
_TIMEOUT = (
    "(WorkerDict pid=58810) [rank2]:[E714 03:22:44.093114582 ProcessGroupNCCL.cpp:629] [Rank 2] "
    "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2211, OpType=_ALLGATHER_BASE, "
    "NumelIn=16384000, NumelOut=131072000, Timeout(ms)=600000) ran for 600012 milliseconds "
    "before timing out.\n"
)


def test_a_worker_ray_killed_for_host_memory_explains_the_timeouts(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _KILLED + _TIMEOUT)
    assert critical_ids(report) == ["host.resources"]
    assert report.findings[0].summary.startswith("Ray's memory monitor killed a worker")
    assert [f.id for f in dict(report.folded)["host.resources"]] == ["app.hang"]


def test_rays_advice_about_its_monitor_is_no_kill(tmp_path: Path) -> None:
    advice = (
        "(raylet) Refer to the documentation on how to address the out of memory issue: "
        "https://docs.ray.io/en/latest/ray-core/scheduling/ray-oom-prevention.html. To adjust "
        "the kill threshold, set the environment variable `RAY_memory_usage_threshold` when "
        "starting Ray.\n"
    )
    report = diagnose_text(tmp_path, advice + _TIMEOUT)
    assert critical_ids(report) == ["app.hang"]
