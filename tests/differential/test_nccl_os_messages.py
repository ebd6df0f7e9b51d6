"""NCCL's calls into the OS and the adapter, read by where NCCL prints them.

Unix-domain sockets (``UDS: ...``): local ranks pass cuMem handles of their P2P
buffers over them (2.19+), so a failure there points at the P2P path and at
containers that do not share a network namespace or /tmp. 2.30 opens NVML
itself (a container without the NVIDIA runtime lacks it) and reports a failed
RDMA completion queue entry (``Got CQE with error``) beside the completion's
status."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import diagnose_text

_TAIL = (
    "pod-a:221:260 [1] NCCL INFO proxy.cc:1262 -> 2\n"
    "[rank1]: torch.distributed.DistBackendError: NCCL error in: /opt/pytorch/torch/csrc/"
    "distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled system error (run with "
    "NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n"
)


@pytest.mark.parametrize(
    "warn",
    [
        (
            "misc/ipcsocket.cc:158 NCCL WARN UDS: Receiving data over socket "
            "/tmp/nccl-socket-1-4b9d2e7f01a3c5d8 failed : 11"
        ),
        (
            "os/linux_ipcsocket.cc:71 NCCL WARN UDS: Binding to socket /tmp/nccl-socket-1-9f0e1d "
            "failed : Address already in use (98)"
        ),
    ],
)
def test_a_uds_failure_ranks_the_p2p_path_and_the_container_first(
    tmp_path: Path, warn: str
) -> None:
    report = diagnose_text(tmp_path, f"pod-a:221:260 [1] {warn}\n{_TAIL}")
    ids = [h.id for h in report.hypotheses]
    assert ids[0] == "nccl.p2p"
    assert "driver.container" in ids[:3]
    assert any("ipcsocket" in why for why in report.hypotheses[0].for_)


def test_a_socket_error_of_the_network_keeps_its_own_ranking(tmp_path: Path) -> None:
    """The same system error after a TCP send failure is no UDS failure: no P2P lead."""
    report = diagnose_text(
        tmp_path,
        "pod-a:221:260 [1] misc/socket.cc:58 NCCL WARN socketProgress: Connection closed by "
        f"remote peer pod-b<51234>\n{_TAIL}",
    )
    assert [h.id for h in report.hypotheses][:1] != ["nccl.p2p"]


@pytest.mark.parametrize(
    ("warn", "cause"),
    [
        (
            (
                "os/linux.cc:615 NCCL WARN Failed to open libnvidia-ml.so.1: libnvidia-ml.so.1: "
                "cannot open shared object file: No such file or directory"
            ),
            "driver.container",
        ),
        (
            (
                "transport/net_ib/p2p.cc:854 NCCL WARN NET/IB: Got CQE with error (devIndex=0, "
                "req=0x7f21c8004a80, comm=0x7f21c8001200 (send), wr_id=139783, qp_num=4711)"
            ),
            "net.ib_transport",
        ),
        # ncclCommInitAll's device list names a GPU this process cannot see
        ("init.cc:2607 NCCL WARN Invalid device 4 (totalnDev=2)", "cuda.device_visibility"),
        (
            (
                "transport/net_ib/connect.cc:529 NCCL WARN NET/IB: NCCL_IB_SUBNET_PREFIX_LEN=40 is "
                "out of range [1,32]"
            ),
            "nccl.env",
        ),
        # (2.23+) the RoCE GID's type read from sysfs failed: GID entries a container lacks
        (
            (
                "transport/net_ib.cc:339 NCCL WARN NET/IB: read failed in "
                "ncclIbRoceGetVersionNum: Invalid argument"
            ),
            "net.ib_config",
        ),
        # rows read in their code (scripts/signatures/nccl_readings.jsonl): libcuda missing,
        # NCCL_NET naming a network that did not come up, IB resiliency giving up, a
        # cuMem handle fd that local ranks could not pass to each other
        (
            (
                "misc/cudawrap.cc:187 NCCL WARN Failed to find CUDA library (NCCL_CUDA_PATH='') : "
                "libcuda.so: cannot open shared object file: No such file or directory"
            ),
            "driver.container",
        ),
        ("init.cc:1211 NCCL WARN Error: network IB not found.", "nccl.env"),
        (
            (
                "transport/net_ib/p2p_resiliency.cc:412 NCCL WARN NET/IB: The error is fatal "
                "(transport retry counter exceeded). Cannot continue."
            ),
            "net.ib_transport",
        ),
        (
            (
                "proxy.cc:1207 NCCL WARN ncclProxyClientGetFd call to tpRank 3 handle 0x7f3a "
                "failed : 2"
            ),
            "nccl.p2p",
        ),
    ],
)
def test_nccl_230_messages_point_at_their_cause(tmp_path: Path, warn: str, cause: str) -> None:
    report = diagnose_text(tmp_path, f"pod-a:221:260 [1] {warn}\n{_TAIL}")
    hinted = [h for h in report.hypotheses if h.id == cause]
    assert hinted, [h.id for h in report.hypotheses]
    assert [h.id for h in report.hypotheses].index(cause) < 3
    assert any(why.startswith("the message is ") for why in hinted[0].for_)
