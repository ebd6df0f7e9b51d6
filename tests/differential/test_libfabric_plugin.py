"""What NCCL's libfabric plugin (aws-ofi-nccl, on AWS EFA) and the EFA provider say, read
as their sources print it.

The plugin logs through NCCL's logger (``NCCL WARN NET/OFI ...``); the transfers it sees
fail carry the EFA provider's error (libfabric ``prov/efa/src/efa_errno.h``). The
catalogue rows ``aws_ofi_nccl.*`` and ``libfabric.efa.*`` hold them; the cases below run
the whole pipeline on a job's output.
"""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.facts.catalogue import signature_of
from nccl_doctor.knowledge.signatures import by_id
from nccl_doctor.pipeline import diagnose_paths
from tests.helpers import diagnose_text

_COMPLETION = (
    "NET/OFI Request 0x7f12ac0038d0 completed with error. RC: 5. Flags: 2. Error: {err}. "
    "Completed length: 0"
)
_SYSTEM_ERROR = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 30, in <module>\n'
    "    dist.all_reduce(t)\n"
    "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269, "
    "unhandled system error, NCCL version 2.14.3\n"
    "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or "
    "device error.\n"
)


def _id(text: str) -> str | None:
    sig = signature_of(text)
    return sig.id if sig is not None else None


def test_the_efa_error_a_completion_quotes_is_read_before_the_completion() -> None:
    quoted = "4124 (Unresponsive receiver (connection previously established))"
    assert _id(_COMPLETION.format(err=quoted)) == "libfabric.efa.established_recv_unresp"
    assert _id(_COMPLETION.format(err="21 (Is a directory)")) == "aws_ofi_nccl.comm.request_failed"
    row = by_id()["libfabric.efa.established_recv_unresp"]
    assert row.hint_ids == ("launch.rank_crash", "net.ib_transport")
    assert "aws_ofi_nccl.comm.request_failed" in row.refines


def test_short_efa_wordings_that_others_print_are_not_catalogued() -> None:
    # 'Out of memory' and 'Receiver not ready' are EFA errors too, but CUDA, verbs and the
    # kernel print them: as EFA's they would claim other libraries' lines
    assert _id("RuntimeError: CUDA error: out of memory") == "cuda.error.memory_allocation"
    assert not any(
        s.format in ("Out of memory", "Receiver not ready")
        for s in by_id().values()
        if s.library == "libfabric"
    )


def test_a_registration_errno_tells_locked_memory_from_the_gpu_path() -> None:
    line = "NET/OFI Unable to register memory (type = 2) for device 0. RC: {rc}, Error: {text}"
    assert _id(line.format(rc=-12, text="Cannot allocate memory")) == (
        "aws_ofi_nccl.mr.register_failed.memlock"
    )
    assert _id(line.format(rc=-14, text="Bad address")) == (
        "aws_ofi_nccl.mr.register_failed.bad_address"
    )
    assert _id(line.format(rc=-22, text="Invalid argument")) == "aws_ofi_nccl.mr.register_failed"
    assert by_id()["aws_ofi_nccl.mr.register_failed.memlock"].refines == (
        "aws_ofi_nccl.mr.register_failed",
    )


def test_no_libfabric_provider_points_at_the_network_setup(tmp_path: Path) -> None:
    warn = (
        "ip-10-0-3-9:4411:4411 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.9.1-aws\n"
        "ip-10-0-3-9:4411:4411 [0] nccl_net_ofi_init:1302 NCCL WARN NET/OFI OFI fi_getinfo() "
        "call failed: No data available\n"
        "ip-10-0-3-9:4411:4411 [0] NCCL INFO net.cc:593 -> 2\n"
    )
    (tmp_path / "with").mkdir()
    (tmp_path / "bare").mkdir()
    report = diagnose_text(tmp_path / "with", warn + _SYSTEM_ERROR)
    first = report.hypotheses[0]
    assert first.id == "net.ib_config"
    assert "aws_ofi_nccl.init.getinfo_failed" in first.for_[0]
    bare = diagnose_text(tmp_path / "bare", _SYSTEM_ERROR)
    assert bare.hypotheses[0].id != "net.ib_config"


def test_libfabric_1_21s_wording_of_a_peer_never_reached_is_unreachable(tmp_path: Path) -> None:
    # in libfabric 1.21, error 13 read 'connection never established' (a peer the device
    # never reached); from 2.0 that is error 15 and 13 means a peer that stopped answering
    line = "ip-10-0-3-9:4411:4470 [0] process_err_completion:1109 NCCL WARN " + _COMPLETION
    never = "13 (Unresponsive receiver (connection never established or unknown))"
    stopped = "13 (Unresponsive remote (was previously responsive))"
    (tmp_path / "never").mkdir()
    (tmp_path / "stopped").mkdir()
    report = diagnose_text(tmp_path / "never", line.format(err=never) + "\n" + _SYSTEM_ERROR)
    assert [f.id for f in report.findings][:1] == ["net.unreachable"]
    later = diagnose_text(tmp_path / "stopped", line.format(err=stopped) + "\n" + _SYSTEM_ERROR)
    assert [f.id for f in later.findings][:1] == ["net.ib_transport"]
    assert "the peer stopped answering" in later.findings[0].summary


_CASES = Path(__file__).parents[1] / "cases" / "net" / "ib_config"


def test_a_plugin_warn_with_no_failure_word_opens_its_own_causes() -> None:
    # 'Unexpected group size 0': the plugin's topology gave no GPU a NIC and its RDMA protocol
    # refused to start (NCCL then runs over sockets); the WARN says no failure word
    report = diagnose_paths([str(_CASES / "efa_plugin_no_nic_group" / "rank0.log")])
    assert report.first_failure is not None
    assert report.first_failure.message == "NET/OFI Unexpected group size 0"
    assert report.findings == ()
    assert set(report.top(3)) == {"net.ib_config", "driver.container", "nccl.version_mismatch"}
    assert "aws_ofi_nccl.topo.no_nic_group" in report.hypotheses[0].for_[0]
    assert report.hypotheses[0].symptom.startswith("NCCL reported a system error")
    healthy = diagnose_paths([str(_CASES / "efa_plugin_no_nic_group_silent" / "rank0.log")])
    assert (healthy.first_failure, healthy.hypotheses) == (None, ())


def test_the_plugins_newer_range_check_reads_zero_as_no_nic() -> None:
    zero = "NET/OFI Unexpected topo group size of 0 (minimum 1, maximum 4)"
    assert _id(zero) == "aws_ofi_nccl.topo.group_size_range.none"
    assert by_id()["aws_ofi_nccl.topo.group_size_range.none"].hint_ids == (
        "net.ib_config",
        "driver.container",
        "nccl.version_mismatch",
    )
    assert _id(zero.replace("of 0", "of 8")) == "aws_ofi_nccl.topo.group_size_range"
    assert _id("NET/OFI Insufficient driver to use CUDA function cuCtxGetDevice") == (
        "aws_ofi_nccl.cuda.driver_too_old"
    )
