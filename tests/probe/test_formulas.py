"""busbw/algbw against hand-computed numbers (nccl-tests doc/PERFORMANCE.md)."""

from __future__ import annotations

import pytest

from nccl_doctor.probe.formulas import (
    algbw_gbytes_s,
    bus_factor,
    busbw_gbytes_s,
    chunks,
    expected_gbytes_s,
    is_short,
    spec_for,
)


@pytest.mark.parametrize(
    ("coll", "n", "busbw"),
    [
        ("all_reduce", 8, 175.0),  # 100 * 2*7/8
        ("all_reduce", 2, 100.0),  # 100 * 2*1/2
        ("all_reduce", 1, 0.0),
        ("all_gather", 4, 75.0),  # 100 * 3/4
        ("reduce_scatter", 2, 50.0),  # 100 * 1/2
        ("all_to_all", 8, 87.5),  # 100 * 7/8
        ("broadcast", 8, 100.0),
    ],
)
def test_busbw_by_hand(coll: str, n: int, busbw: float) -> None:
    # 1 GB moved in 10 ms: algbw = 1e9 B / 0.01 s = 100 GB/s
    assert algbw_gbytes_s(10**9, 0.01) == pytest.approx(100.0)
    assert busbw_gbytes_s(coll, n, 10**9, 0.01) == pytest.approx(busbw)


def test_factors_and_sizes() -> None:
    assert bus_factor("all_reduce", 4) == pytest.approx(1.5)
    assert bus_factor("all_gather", 3) == pytest.approx(2 / 3)
    assert chunks("all_gather", 8) == 8
    assert chunks("reduce_scatter", 8) == 8
    assert chunks("all_to_all", 8) == 8
    assert chunks("all_reduce", 8) == 1
    assert algbw_gbytes_s(1, 0.0) == 0.0
    with pytest.raises(ValueError, match="unknown"):
        bus_factor("gather", 2)


def test_expectations() -> None:
    h200 = spec_for("NVIDIA H200")
    assert h200 is not None
    assert h200.hbm_gbytes_s == 4800
    assert spec_for("NVIDIA H100 80GB HBM3") is not None
    assert spec_for("cpu") is None
    assert expected_gbytes_s("h2d", "NVIDIA H200") == 55
    assert expected_gbytes_s("all_reduce", "NVIDIA H200", 1) is None
    assert is_short(10.0, 55.0)
    assert not is_short(40.0, 55.0)
    assert not is_short(1.0, None)
