"""Bisection names an injected faulty rank in ceil(log2 n) rounds; transport switches."""

from __future__ import annotations

import math

import pytest

from nccl_doctor.probe.isolate import bisect, isolate_transport
from nccl_doctor.probe.runner import Runner
from tests.probe.conftest import cpu_options


@pytest.mark.parametrize("bad", range(8))
def test_bisect_logic_names_each_device_in_three_rounds(bad: int) -> None:
    calls: list[list[list[int]]] = []

    def test_round(groups: list[list[int]]) -> list[tuple[bool, float | None]]:
        calls.append(groups)
        return [(bad not in g, None) for g in groups]

    found = bisect(list(range(8)), test_round)
    assert found.conclusion == "gpu"
    assert found.gpus == [bad]
    assert found.rounds == len(calls) == math.ceil(math.log2(8))


def test_bisect_logic_names_a_link() -> None:
    def test_round(groups: list[list[int]]) -> list[tuple[bool, float | None]]:
        return [(not {2, 3} <= set(g), None) for g in groups]  # fails only with 2 and 3 together

    found = bisect(list(range(8)), test_round)
    assert found.conclusion == "link"
    assert (found.gpus, found.other) == ([2], [3])


def test_bisection_over_8_cpu_ranks_names_the_faulty_rank() -> None:
    opts = cpu_options(8, inject="corrupt@5:all_reduce", collectives=("all_reduce",))
    runner = Runner(opts)  # type: ignore[arg-type]
    res = runner.collectives()
    assert not runner.verdict(res)["all_reduce"][0]
    runner.isolate(res)
    record = runner.result["isolation"][-1]
    assert record["method"] == "bisection"
    assert record["conclusion"] == "gpu"
    assert record["gpus"] == [5]
    assert record["rounds"] == 3
    assert [r["groups"] for r in record["trail"]] == [
        [[0, 1, 2, 3], [4, 5, 6, 7]],
        [[4, 5], [6, 7]],
        [[4], [5]],
    ]
    assert [r["passed"] for r in record["trail"]] == [[True, False], [False, True], [True, False]]


def test_transport_isolation_names_the_curing_switch() -> None:
    opts = cpu_options(
        4, inject="corrupt@1:all_reduce!NCCL_SHM_DISABLE", collectives=("all_reduce",)
    )
    runner = Runner(opts)  # type: ignore[arg-type]
    runner.isolate(runner.collectives())
    transport = runner.result["isolation"][0]
    assert transport["transport"] == "SHM"
    assert transport["env"] == {"NCCL_SHM_DISABLE": "1"}
    assert [t["transport"] for t in transport["tried"]] == ["P2P", "SHM"]


def test_shortfall_is_named_when_a_switch_lifts_bandwidth() -> None:
    rerun_bw = {"P2P": 10.0, "SHM": 90.0}

    def rerun(env: dict[str, str]) -> tuple[bool, float | None]:
        name = "P2P" if "NCCL_P2P_DISABLE" in env else "SHM"
        return True, rerun_bw[name]

    found = isolate_transport(rerun, failed=False, baseline_gbytes_s=20.0, mark_gbytes_s=50.0)
    assert found["transport"] == "SHM"
