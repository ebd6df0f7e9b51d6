"""The watchdog: a step past its deadline is killed and reported by name and ranks."""

from __future__ import annotations

import time

from nccl_doctor.probe.launch import launch

SLACK_S = 6.0  # worker start (the forkserver loads torch once) and the kill


def test_sleeping_step_is_killed_and_named() -> None:
    t0 = time.monotonic()
    res = launch(
        [{"task": "sleep", "sleep_s": 600, "name": "nap", "rank": 3, "device": 3}],
        step_timeout_s=2.0,
    )
    took = time.monotonic() - t0
    assert took < 2.0 + SLACK_S
    (step,) = res.steps
    assert step["step"] == "nap"
    assert step["status"] == "hung"
    assert step["ranks"] == [3]
    assert "no progress within 2 s in step nap" in step["error"]
    assert res.abandoned == 0


def test_short_sleep_passes() -> None:
    res = launch([{"task": "sleep", "sleep_s": 0.1, "rank": 0}], step_timeout_s=5.0)
    assert res.ok
    assert res.steps[0]["detail"] == "slept"


def test_hung_collective_names_step_and_every_rank(tmp_path: object) -> None:
    from nccl_doctor.probe.runner import Runner
    from tests.probe.conftest import cpu_options

    opts = cpu_options(4, timeout_s=3.0, inject="hang@2:all_gather", collectives=("all_gather",))
    runner = Runner(opts)  # type: ignore[arg-type]
    t0 = time.monotonic()
    res = runner.collectives()
    assert time.monotonic() - t0 < 3.0 + SLACK_S
    hung = [s for s in res.steps if s["status"] == "hung"]
    assert [s["step"] for s in hung] == ["all_gather"]
    assert hung[0]["ranks"] == [0, 1, 2, 3]
    assert res.abandoned == 0
