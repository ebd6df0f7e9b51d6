"""Exact result checks: right values pass, one corrupted contribution is caught."""

from __future__ import annotations

import pytest

from nccl_doctor.probe.formulas import COLLECTIVES
from nccl_doctor.probe.runner import Runner
from tests.probe.conftest import cpu_options


@pytest.mark.parametrize("n", [3, 4])
def test_every_collective_passes_exactly(n: int) -> None:
    runner = Runner(cpu_options(n))  # type: ignore[arg-type]
    res = runner.collectives()
    assert {s["step"]: s["ok"] for s in res.steps} == {
        "init": True,
        **dict.fromkeys(COLLECTIVES, True),
    }
    sizes = {b["size_bytes"] for b in res.bandwidth if b["kind"] == "all_gather"}
    # nccl-tests size: the whole output buffer, n chunks of whole float32 elements
    assert sizes == {(s // (4 * n)) * 4 * n for s in (4096, 64 * 1024)}
    assert all(b["busbw_GBps"] > 0 for b in res.bandwidth)


def test_a_corrupted_contribution_is_caught() -> None:
    runner = Runner(cpu_options(4, inject="corrupt@1"))  # type: ignore[arg-type]
    res = runner.collectives()
    ok = {s["step"]: s["ok"] for s in res.steps}
    # rank 1 contributes wrong values: every collective that carries its data fails;
    # broadcast only carries the root's (rank 0) and passes
    assert ok == {
        "init": True,
        "all_reduce": False,
        "all_gather": False,
        "reduce_scatter": False,
        "all_to_all": False,
        "broadcast": True,
    }
    bad = next(s for s in res.steps if s["step"] == "all_reduce")
    assert "WRONG all_reduce" in bad["error"]
    assert "expected 10" in bad["error"]


def test_a_corrupted_root_breaks_broadcast() -> None:
    runner = Runner(cpu_options(2, inject="corrupt@0:broadcast", collectives=("broadcast",)))  # type: ignore[arg-type]
    res = runner.collectives()
    assert not next(s for s in res.steps if s["step"] == "broadcast")["ok"]


def test_device_steps_and_a_wrong_kernel() -> None:
    runner = Runner(cpu_options(2, inject="corrupt@1:kernel"))  # type: ignore[arg-type]
    runner.devices()
    steps = {(s["gpus"][0], s["step"]): s for s in runner.result["steps"]}
    assert steps[(0, "kernel")]["ok"]
    assert steps[(0, "d2d")]["ok"]
    assert not steps[(1, "kernel")]["ok"]
    assert "WRONG matmul" in steps[(1, "kernel")]["error"]
    assert (1, "h2d") not in steps  # a failed step ends that device's task
    kinds = sorted(b["kind"] for b in runner.result["bandwidth"])
    assert kinds == ["d2d", "d2h", "h2d"]
