"""The kernel's line that an RDMA port's link went down (the RDMA core's 'mlx5_4: Port: 1 Link
DOWN', the mlx5 driver's 'Link down') beside NCCL's unacknowledged sends (status 12): the link
went down under the job, with no port listing needed. Either alone is not that."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import critical_ids, diagnose_text

_FLAP = "[Tue Feb 11 04:16:58 2025] mlx5_core 0000:9a:00.0 mlx5_4: Port: 1 Link DOWN\n"
_LOST = (
    "gpu-b12:41822:41901 [4] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from "
    "peer 10.30.1.18<49152> with status=12 opcode=0 len=0 vendor err 129 (Send) localGid "
    "fe80::a288:c203:e4:1b35 remoteGidsfe80::a288:c203:e4:2c11 hca mlx5_4\n"
)


def test_a_link_down_beside_unacknowledged_sends_is_the_link(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, "```\n" + _FLAP + _LOST + "```\n")
    assert critical_ids(report) == ["net.ib_link"]
    found = report.findings[0]
    assert found.summary.startswith("The kernel saw an RDMA port's link go down (")
    assert "completion status 12" in found.summary
    assert [k.id for _, kids in report.folded for k in kids] == ["net.ib_transport"]


def test_a_link_down_alone_or_the_sends_alone_are_not_the_flap(tmp_path: Path) -> None:
    alone = diagnose_text(tmp_path, "```\n" + _FLAP + "```\n")
    assert "net.ib_link" not in critical_ids(alone)
    sends = diagnose_text(tmp_path, "```\n" + _LOST + "```\n")
    assert critical_ids(sends) == ["net.ib_transport"]
