"""NCCL goes on after some of its WARNs: such a WARN is no failure.

NCCL up to 2.11 WARNs ``Failed to open libibverbs.so[.1]`` where the host has no
verbs library; the IB transport's init then fails and ``initNet`` takes the next
network (Socket), as the ``Using network Socket`` line after it shows (2.12 made
the message an INFO). ``Failed to open libgdrapi.so`` is the same for GDRCopy,
which NCCL uses only where asked and goes on without. Either line beside a
hang is the hang's company, not an ncclSystemError; beside a run that completes
it is no failure at all; a real ``unhandled system error`` still leads. So
for a WARN whose own words say NCCL carries on and after which its source
returns no error (``Unable to create thread context due to old driver,
disabling.``, ``... - skipping``). Every case runs the whole pipeline.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import critical_ids, diagnose_text

#: An NCCL 2.10.3 INFO log of one two-GPU host without libibverbs (two ranks).
_NO_VERBS = (
    "trx40:115664:115664 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n"
    "trx40:115664:115664 [0] NCCL INFO NET/Socket : Using [0]enp68s0:192.168.1.20<0>\n"
    "trx40:115664:115664 [0] NCCL INFO Using network Socket\n"
    "NCCL version 2.10.3+cuda11.3\n"
    "trx40:115828:115828 [1] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n"
    "trx40:115828:115828 [1] NCCL INFO Bootstrap : Using enp68s0:192.168.1.20<0>\n"
    "trx40:115828:115828 [1] NCCL INFO Using network Socket\n"
)
_DONE = (
    "trx40:115664:115700 [0] NCCL INFO comm 0x55d0c8a0 rank 0 nranks 2 cudaDev 0 busId 21000 - "
    "Init COMPLETE\n"
    "trx40:115828:115701 [1] NCCL INFO comm 0x5630a1b0 rank 1 nranks 2 cudaDev 1 busId 4a000 - "
    "Init COMPLETE\n"
)
_HANG = "the job hangs without an error (the reporter's words)"


def test_no_verbs_library_beside_a_hang_leaves_the_hang_leading(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        "Two A6000s on one workstation, DDP with the NCCL backend: training hangs after "
        "the process group is set up.\n" + _NO_VERBS,
    )
    assert report.hypotheses
    assert report.hypotheses[0].symptom == _HANG
    assert all("ncclSystemError" not in h.symptom for h in report.hypotheses)


def test_no_verbs_library_in_a_run_that_completes_is_no_failure(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _NO_VERBS + _DONE)
    assert report.hypotheses == ()
    assert not [f for f in report.findings if f.severity.value in ("critical", "warning")]
    # the line is named as what it is: one notice for both ranks' copies
    [notice] = report.notices
    assert notice.signature == "nccl.warn.ibvwrap.failed_to_open_libibverbs_so"
    assert notice.count == 2
    assert notice.why == "NCCL warns of it and goes on: a notice, not the failure"


def test_no_gdrcopy_library_in_a_run_that_completes_is_no_failure(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        "node1:2201:2201 [0] NCCL INFO NCCL_GDRCOPY_ENABLE set by environment to 1.\n"
        "node1:2201:2201 [0] misc/gdrwrap.cc:57 NCCL WARN Failed to open libgdrapi.so\n"
        "NCCL version 2.18.6+cuda12.2\n" + _DONE.replace("trx40", "node1"),
    )
    assert report.hypotheses == ()
    assert critical_ids(report) == []
    # no failure, and not called harmless either: the row points at GPUDirect RDMA's set-up
    assert report.notices == ()


def test_a_real_system_error_beside_it_still_leads(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        _NO_VERBS + "trx40:115664:115700 [0] misc/socket.cc:409 NCCL WARN Net : Connect to "
        "192.168.1.21<43511> failed : Connection refused\n"
        "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:47, "
        "unhandled system error, NCCL version 2.10.3\n",
    )
    assert report.hypotheses
    assert "ncclSystemError" in report.hypotheses[0].symptom


@pytest.mark.parametrize(
    ("warn", "notices"),
    [
        (
            (
                "mem_manager.cc:832 NCCL WARN MemManager: Cannot re-import peer buffer from rank 3 "
                "(different node) using POSIX FD - skipping"
            ),
            ["nccl.warn.mem_manager.memmanager_cannot_re_import_peer_buffer"],
        ),
        (
            (
                "init.cc:2460 NCCL WARN graphStreamOrdering=0 with graphUsageMode=2 (graph mixing) "
                "is not supported; falling back to graphStreamOrdering=1 for this communicator"
            ),
            ["nccl.warn.init.graphstreamordering_with_graphusagemode"],
        ),
        # no failure, yet a clue to the driver's age rather than a line to call harmless
        (
            "proxy.cc:805 NCCL WARN Unable to create thread context due to old driver, disabling.",
            [],
        ),
    ],
)
def test_a_warn_that_says_nccl_carries_on_is_no_failure(
    tmp_path: Path, warn: str, notices: list[str]
) -> None:
    report = diagnose_text(tmp_path, f"trx40:115664:115664 [0] {warn}\n" + _DONE)
    assert report.hypotheses == ()
    assert [n.signature for n in report.notices] == notices
