"""The GPUDirect RDMA stack named beside a failure weighs for GPUDirect RDMA.

The peer-memory kernel module (``nv_peer_mem``, ``nvidia_peermem``) lets the NIC
read and write GPU memory; gdrcopy maps it for the CPU through the same path.
Someone who names one of them beside a failure met it on that path, and the
driver offers GPUDirect RDMA on data-centre and workstation boards only, not on
GeForce ones. Every case runs the whole pipeline on a small bug report.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_text

FAILS = "all_reduce_perf fails between our two nodes (ConnectX-6, NCCL 2.18.3).\n"


def test_the_peer_memory_module_named_beside_a_failure_leads_with_gdr(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path, FAILS + "It only happens while the nv_peer_mem module is loaded.\n"
    )
    lead = report.hypotheses[0]
    assert lead.id == "net.gdr"
    assert lead.for_[0].startswith("the reporter names the GPUDirect RDMA stack")


def test_gdrcopy_on_geforce_boards_is_unsupported_gdr(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        "Title: gdrcopy sanity check failing\n\n"
        "Hi, I am installing gdrcopy on a server with two RTX 3090 cards and the sanity "
        "check is failing.\n",
    )
    lead = report.hypotheses[0]
    assert lead.id == "net.gdr"
    assert any("GeForce boards" in reason for reason in lead.for_)


def test_the_same_failure_without_the_stack_named_does_not_weigh_for_gdr(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, FAILS)
    assert report.hypotheses
    assert "net.gdr" not in report.top(3)


def test_a_stack_said_to_be_absent_does_not_count(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, FAILS + "The hosts run without nvidia_peermem.\n")
    assert "net.gdr" not in report.top(3)


#: A remote error between two nodes, as PyTorch 2.1 reports it.
REMOTE = (
    "torch.distributed.DistBackendError: NCCL error in: "
    "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1333, remote process exited or there "
    "was a network error, NCCL version 2.18.6\n"
    "ncclRemoteError: A call failed possibly due to a network error or a remote process "
    "exiting prematurely.\n"
)
HOSTS = "deepspeed --num_gpus 2 --num_nodes 2 --hostfile hostfile train.py\n"


def test_traffic_between_nodes_is_where_gdr_can_fail(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, HOSTS + REMOTE)
    gdr = next(h for h in report.hypotheses if h.id == "net.gdr")
    assert "the job spans several nodes" in gdr.for_


def test_with_ib_off_gpudirect_rdma_is_not_in_use(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, "export NCCL_IB_DISABLE=1\n" + HOSTS + REMOTE)
    assert "net.gdr" not in report.top(2)
    gdr = [h for h in report.hypotheses if h.id == "net.gdr"]
    assert all("NCCL_IB_DISABLE=1 is set" in h.against for h in gdr)


SLOW = "Training with 4 GPUs is slower than with one: a batch takes 2.3 s against 0.48 s.\n"


def test_a_slow_job_on_one_machine_does_not_lead_with_gdr(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, "I have 4 GPUs on my machine (PCIe x16).\n" + SLOW)
    assert report.hypotheses[0].id == "nccl.p2p"
    gdr = next(h for h in report.hypotheses if h.id == "net.gdr")
    assert "the reporter says the job runs on one machine" in gdr.against


def test_a_slow_job_across_machines_keeps_gdr_first(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, "We train on two machines with 4 GPUs each.\n" + SLOW)
    assert report.hypotheses[0].id == "net.gdr"
    assert all("one machine" not in " ".join(h.against) for h in report.hypotheses)


def test_over_tcp_sockets_gpudirect_rdma_is_not_in_use(tmp_path: Path) -> None:
    socket = "gpu-a:1234:1234 [0] NCCL INFO Using network Socket\n"
    report = diagnose_text(tmp_path, socket + HOSTS + REMOTE)
    gdr = [h for h in report.hypotheses if h.id == "net.gdr"]
    assert all("NCCL uses sockets, not InfiniBand" in h.against for h in gdr)
    assert "net.gdr" not in report.top(3)
