"""NCCL's own device list mixes InfiniBand and RoCE ports (NCCL_IB_HCA by prefix took a
storage NIC beside the IB rails) in a job across nodes that stalls: a channel over one kind of
port meets the peer's port of the other."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import critical_ids, diagnose_text

_USING = (
    "gpu01:41822:41822 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB "
    "[2]mlx5_2:1/{third} [3]mlx5_4:1/{fourth} ; OOB bond0:10.1.8.31<0>\n"
    "gpu01:41822:41822 [0] NCCL INFO Using network IB\n"
)
_TWO_NODES_HANG = (
    "Two nodes of 8x A100, NCCL_IB_HCA=mlx5. After init the first allreduce hangs; one node "
    "alone works.\n"
)


def test_ib_and_roce_ports_in_one_list_of_a_stalled_job_across_nodes(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _TWO_NODES_HANG + _USING.format(third="IB", fourth="RoCE"))
    assert critical_ids(report) == ["net.ib_config"]
    found = report.findings[0]
    assert found.summary.startswith(
        "NCCL's device list on gpu01 mixes InfiniBand ports (mlx5_0, mlx5_1, mlx5_2) with RoCE "
        "ports (mlx5_4)"
    )
    assert found.fix[0].startswith("Name the IB ports exactly on every node (NCCL_IB_HCA==mlx5_0")
    assert "NCCL_IB_HCA=^mlx5_4" in found.fix[0]


@pytest.mark.parametrize(
    ("said", "third", "fourth"),
    [
        (_TWO_NODES_HANG, "IB", "IB"),  # one link layer
        ("One node of 8x A100; the first allreduce hangs.\n", "IB", "RoCE"),  # one node
        ("Two nodes of 8x A100; training runs at full speed.\n", "IB", "RoCE"),  # no failure
    ],
)
def test_one_layer_one_node_or_a_healthy_job_is_no_mixed_fabric(
    tmp_path: Path, said: str, third: str, fourth: str
) -> None:
    report = diagnose_text(tmp_path, said + _USING.format(third=third, fourth=fourth))
    assert not any("mixes InfiniBand" in f.summary for f in report.findings)
