"""What UCX prints when the transport under a job fails, read as its source prints it.

UCX (openucx/ucx) carries Open MPI's ``pml ucx``, Horovod's MPI path and RAPIDS; the
catalogue rows ``ucx.*`` (``scripts/signatures/mine_ucx.py``, releases 1.9-1.22) hold its
messages. Every case runs the whole pipeline on a job's output; the lines carry UCX's own
log prefix (``[time] [host:pid:tid] file.c:line UCX ERROR``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.report import Report
from tests.helpers import diagnose_text

HEAD = "$ mpirun -np 16 -H gpu-node-3:8,gpu-node-4:8 --mca pml ucx python train.py\n"


def _ucx(file: str, text: str, level: str = "ERROR") -> str:
    """One line as UCX's logger prints it (``ucs_log_default_handler``)."""
    return f"[1712345678.123456] [gpu-node-3:41234:0] {file:>18}  UCX  {level:<5} {text}\n"


def _report(tmp_path: Path, *lines: str) -> Report:
    return diagnose_text(tmp_path, HEAD + "".join(lines))


@pytest.mark.parametrize(
    ("text", "signature"),
    [
        (
            "Transport retry count exceeded on mlx5_0:1/IB (synd 0x15 vend 0x81 hw_synd 0/0)",
            "ucx.ib_mlx5.transport_retry_exceeded",
        ),
        # UCX 1.9-1.10 called the remote operation error 'Remote QP'
        ("Remote QP on mlx5_2:1/RoCE (synd 0x13 vend 0x89 hw_synd 0/0)",
         "ucx.ib_mlx5.remote_operation_1_10_1"),
    ],
)  # fmt: skip
def test_an_rdma_completion_error_points_at_the_fabric_path(
    tmp_path: Path, text: str, signature: str
) -> None:
    report = _report(tmp_path, _ucx("ib_mlx5_log.c:177", text))
    top = report.hypotheses[0]
    assert top.id == "net.ib_transport"
    assert top.symptom.startswith("an RDMA transfer completed with an error")
    assert signature in top.for_[0]
    assert [h.id for h in report.hypotheses[:2]] == ["net.ib_transport", "net.ib_link"]


def test_dev_shm_too_small_for_the_shared_memory_transport(tmp_path: Path) -> None:
    report = _report(
        tmp_path,
        _ucx(
            "mm_posix.c:206",
            "Not enough memory to write total of 4294967296 bytes. Please check that "
            "/dev/shm or the directory you specified in UCX_POSIX_DIR has more available "
            "memory.",
        ),
    )
    assert [h.id for h in report.hypotheses[:2]] == ["host.resources", "nccl.shm"]
    assert "ucx.posix.dev_shm_full" in report.hypotheses[0].for_[0]


def test_a_bindings_exception_quoting_no_resources_is_a_host_limit(tmp_path: Path) -> None:
    # JUCX (Spark RAPIDS' shuffle) raises the status text as a Java exception
    report = _report(
        tmp_path,
        "java.lang.RuntimeException: org.openucx.jucx.UcxException: No resources are "
        "available to initiate the operation\n",
    )
    assert report.hypotheses[0].id == "host.resources"
    assert report.hypotheses[0].symptom.startswith("a system call hit a host limit")


def test_a_connect_with_no_route_points_at_the_network_not_a_dead_peer(tmp_path: Path) -> None:
    report = _report(
        tmp_path,
        _ucx(
            "sock.c:355",
            "connect(fd=64, dest_addr=10.0.0.12:45231) failed: No route to host",
        ),
    )
    # the network (either reading of it), not the peer's crash the class's table once led with
    assert {h.id for h in report.hypotheses[:2]} == {"net.unreachable", "net.socket_interface"}


def test_the_fork_notice_of_a_finished_run_is_a_notice_not_a_failure(tmp_path: Path) -> None:
    report = _report(
        tmp_path,
        _ucx(
            "ib_md.c:917",
            "IB: ibv_fork_init() was disabled or failed, yet a fork() has been issued.",
            "WARN",
        ),
        "[1,0]<stdout>:Epoch 10/10 loss 0.41\n[1,0]<stdout>:Training finished.\n",
    )
    assert report.hypotheses == ()
    assert report.findings == ()
    assert [n.signature for n in report.notices] == ["ucx.ib.fork_init_disabled"]
