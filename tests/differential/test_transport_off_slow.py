"""A slow job whose own settings turn off the transport its ranks would use (NCCL's "set by
environment" echo of NCCL_IB_DISABLE=1 across nodes, NCCL_P2P_DISABLE=1 on an NVLink node): the
setting leads the differential, though its finding is only a warning (a leftover, not a
failure). The same switch on one node, or a failure that is no slowness, leaves it behind."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import critical_ids, diagnose_text

_SLOW = (
    "Multi-node training on the new image is 4x slower than on the old image. 2 nodes x 8 H100, "
    "8x 400G IB each; `env | grep NCCL` shows nothing.\n\n"
)


def _ib_off(nranks: int) -> str:
    return (
        "h100-0:5521:5521 [0] NCCL INFO Bootstrap : Using eth0:10.3.0.4<0>\n"
        "NCCL version 2.19.3+cuda12.3\n"
        "h100-0:5521:5611 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n"
        "h100-0:5521:5611 [0] NCCL INFO NET/Socket : Using [0]eth0:10.3.0.4<0> "
        "[1]ib0:192.168.0.4<0>\n"
        "h100-0:5521:5611 [0] NCCL INFO Using network Socket\n"
        f"h100-0:5521:5611 [0] NCCL INFO comm 0x55e7d4c8e2a0 rank 0 nranks {nranks} cudaDev 0 "
        "nvmlDev 0 busId 18000 commId 0x1a8dd0e7f17c45b3 - Init START\n"
    )


def test_ib_off_across_nodes_leads_a_slow_job(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _SLOW + _ib_off(16))
    assert critical_ids(report) == []
    assert [f.id for f in report.findings] == ["nccl.env"]
    assert report.top(1) == ["nccl.env"]
    [lead] = report.hypotheses[:1]
    assert any("turn off the transport its ranks would use" in r for r in lead.for_)


def test_p2p_off_on_an_nvlink_node_leads_a_slow_job(tmp_path: Path) -> None:
    text = (
        "8x H100 SXM single HGX node: DDP scaling is terrible inside our container, 0.9 it/s "
        "against 3.1 it/s with the NGC image.\n\n"
        "hgx-07:301:301 [0] NCCL INFO NCCL version 2.20.3+cuda12.4\n"
        "hgx-07:301:402 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1.\n"
        "hgx-07:301:402 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct\n"
    )
    assert diagnose_text(tmp_path, text).top(1) == ["nccl.env"]


def test_ib_off_that_made_it_work_is_a_workaround(tmp_path: Path) -> None:
    said = "With NCCL_IB_DISABLE=1 it works, but it is slow.\n"
    report = diagnose_text(tmp_path, _SLOW + said + _ib_off(16))
    assert report.top(1) != ["nccl.env"]


def test_ib_off_on_one_node_is_no_slow_cause(tmp_path: Path) -> None:
    one = "Training on one node with 8 GPUs is slower than expected.\n\n" + _ib_off(8).replace(
        "Using network Socket", "Using network Socket (one node)"
    )
    report = diagnose_text(tmp_path, one)
    assert report.top(1) != ["nccl.env"]
