"""NVSHMEM's failures (DeepEP, torch's symmetric memory): its error macros print the source
path, ``non-zero status: N`` or ``NULL value``, then why; the catalogue reads the messages that
say why (scripts/signatures/mine_nvshmem.py) and, for a line cut from its message, the module its
path names. Before, each fell to the catch-all class (or named nothing); NVSHMEM's start-up
chatter stays silent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.facts.catalogue import signature_of
from nccl_doctor.pipeline import diagnose_paths
from nccl_doctor.report import Report, Verdict
from tests.helpers import diagnose_text

CAPTURED = Path(__file__).resolve().parents[1] / "fixtures" / "captured" / "nvshmem-h100"
#: where the wheels torch and DeepEP install were built: every error line starts with it
SRC = "/dvs/p4/build/sw/rel/gpgpu/toolkit/r12.8/main_nvshmem/src"


def _first(report: Report) -> str:
    top = report.top(1)
    assert top, report
    return top[0]


def test_real_heap_out_of_memory_is_the_root_and_the_fault_after_it_its_cascade() -> None:
    report = diagnose_paths([str(CAPTURED / "heap-out-of-memory.log")])
    assert report.verdict is Verdict.FAILED
    roots = [f for f in report.findings if f.cause]
    assert [f.id for f in roots] == ["gpu.oom"]
    oom = roots[0]
    assert oom.evidence[0].line == 2  # mem_heap.cpp: non-zero status: 2 cuMemCreate failed
    assert oom.explains == ("cuda.illegal_access",)  # NVSHMEM's barrier on the missing chunk
    assert "NVSHMEM_SYMMETRIC_SIZE" in oom.fix[0]


def test_real_nvshmem_start_up_with_its_warnings_is_healthy() -> None:
    report = diagnose_paths([str(CAPTURED / "healthy-debug-warn.log")])
    assert report.verdict is Verdict.HEALTHY
    assert report.findings == ()
    assert report.hypotheses == ()


def test_hosts_of_one_name_read_from_the_ipc_socket_nvshmem_cannot_find(tmp_path: Path) -> None:
    # two nodes both named after the image: NVSHMEM took the peer for local and looked for its
    # Unix socket in this host's /tmp
    log = (
        "IPC failure: Sending data over socket failed: No such file or directory\n"
        f"{SRC}/host/mem/mem_heap.cpp:exchange_heap_memory_handle:775: Fatal IPC Failure\n"
    )
    report = diagnose_text(tmp_path, log)
    assert _first(report) == "nccl.host_identity"
    assert report.hypotheses[0].symptom == LABEL


LABEL = (
    "NVSHMEM could not start or move data (DeepEP, symmetric memory): a transport, its memory "
    "or its peers"
)


def test_no_gpudirect_module_leads_to_net_gdr(tmp_path: Path) -> None:
    log = "".join(
        f"{line}\n"
        for line in (
            "Allocating buffer size: 2115.111296 MB ...",
            (
                f"{SRC}/modules/transport/ibgda/ibgda.cpp:nvshmemt_init:3688: neither nv_peer_mem, "
                "or nvidia_peermem detected. Skipping transport."
            ),
            (
                f"{SRC}/host/transport/transport.cpp:nvshmemi_transport_init:280: init failed for "
                "transport: IBGDA"
            ),
            (
                f"{SRC}/host/transport/transport.cpp:nvshmemi_transport_init:292: Unable to "
                "initialize any transports. returning error."
            ),
            f"{SRC}/host/init/init.cu:1046: non-zero status: 7 nvshmem setup connections failed ",
            (
                f"{SRC}/host/init/init.cu:nvshmemi_check_state_and_init:1119: nvshmem "
                "initialization failed, exiting "
            ),
        )
    )
    report = diagnose_text(tmp_path, log)
    assert _first(report) == "net.gdr"
    assert report.hypotheses[0].symptom == LABEL


def test_a_container_without_devx_rights_leads_to_driver_container(tmp_path: Path) -> None:
    log = (
        f"{SRC}/modules/transport/ibgda/ibgda.cpp:1889: NULL value cannot allocate "
        "mlx5dv_devx_uar\n" * 4
    )
    assert _first(diagnose_text(tmp_path, log)) == "driver.container"


def test_registration_refused_for_locked_memory_leads_to_host_resources(tmp_path: Path) -> None:
    log = (
        f"{SRC}/modules/transport/common/transport_ib_common.cpp:127: NULL value mem "
        "registration failed. Reason: Cannot allocate memory\n"
    )
    assert _first(diagnose_text(tmp_path, log)) == "host.resources"
    gdr = log.replace("Cannot allocate memory", "Bad address")
    assert _first(diagnose_text(tmp_path, gdr)) == "net.gdr"


def test_lines_cut_from_their_message_still_name_the_transport(tmp_path: Path) -> None:
    # eight ranks write unbuffered: the path and the message land on different lines
    log = (
        f"{SRC}/modules/transport/ibrc/ibrc.cpp:427: non-zero status: 110 \n"
        f"{SRC}/modules/transport/ibrc/ibrc.cpp:427: non-zero status: 110 \n"
        "Train step 0\n"
    )
    report = diagnose_text(tmp_path, log)
    assert _first(report) == "net.ib_config"
    assert report.hypotheses[0].symptom == LABEL


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (f"{SRC}/modules/transport/ibgda/ibgda.cpp:1348: NULL value ", "nvshmem.module.ibgda"),
        (f"{SRC}/host/mem/mem_heap.cpp:1825: non-zero status: 7 ", "nvshmem.module.heap"),
        # NVSHMEM 2.x kept its transports under src/comm/transports
        ("/opt/nvshmem/src/comm/transports/ibrc/ibrc.cpp:417: non-zero status: 110 ",
         "nvshmem.module.ibrc"),
        (f"{SRC}/modules/bootstrap/uid/bootstrap_uid.cpp:90: non-zero status: -6 ",
         "nvshmem.module.bootstrap"),
        # the message outranks its module
        (f"{SRC}/host/mem/mem_heap.cpp:1761: non-zero status: 801 cuMemCreate failed ",
         "nvshmem.heap.cumemcreate_failed"),
        (f"{SRC}/host/mem/mem_heap.cpp:1761: non-zero status: 2 cuMemCreate failed ",
         "nvshmem.heap.cumemcreate_out_of_memory"),
        ("NVSHMEM requires the same number of PEs on all nodes (8 PEs on gpu-node)",
         "nvshmem.init.uneven_pes"),
    ],
)  # fmt: skip
def test_lines_read_as(line: str, expected: str) -> None:
    found = signature_of(line)
    assert found is not None
    assert found.id == expected


@pytest.mark.parametrize(
    "line",
    [
        # NVSHMEM's progress lines carry the same paths, with no failure word after the line
        (
            f"{SRC}/modules/bootstrap/uid/bootstrap_uid.cpp:bootstrap_net_init:180: UID bootstrap "
            "network using:  eth0:192.0.2.2<0>"
        ),
        (
            f"{SRC}/modules/bootstrap/uid/bootstrap_uid.cpp:bootstrap_uid_allgather:503: rank 0 "
            "nranks 1 size 8 - DONE"
        ),
        "WARN: device erdma_0 is not enumerated as an mlx5 device. Skipping...",
    ],
)
def test_progress_lines_and_a_skipped_nic_are_no_failure(line: str) -> None:
    found = signature_of(line)
    assert found is None


def test_a_run_that_skipped_a_nic_and_finished_is_healthy(tmp_path: Path) -> None:
    log = (
        "WARN: device erdma_0 is not enumerated as an mlx5 device. Skipping...\n"
        f"{SRC}/modules/bootstrap/uid/bootstrap_uid.cpp:bootstrap_net_init:180: UID bootstrap "
        "network using:  eth0:192.0.2.2<0>\n"
        "[tuning] best dispatch (FP8): SMs 24, NVL chunk 20, RDMA chunk 16: 41 GB/s (RDMA)\n"
    )
    report = diagnose_text(tmp_path, log)
    assert report.verdict is not Verdict.FAILED
    assert report.findings == ()
    assert report.hypotheses == ()


def test_nccls_own_queue_pair_warning_is_not_read_as_nvshmems() -> None:
    # NCCL's ibvwrap prints the call's name too: only NVSHMEM's macro words make its line
    line = "misc/ibvwrap.cc:206 NCCL WARN Call to ibv_modify_qp failed with error Invalid argument"
    found = signature_of(line)
    assert found is None or found.library != "nvshmem"
    cut = f"{SRC}/modules/transport/ibrc/ibrc.cpp:427: non-zero status: 110 ibv_modify_qp failed"
    found = signature_of(cut)
    assert found is not None
    assert found.id == "nvshmem.ib.modify_qp_failed"
