"""Readings the blind battery M ("the newest stack") asked for: each fires on a small realistic
report, and stays silent where its mechanism does not hold."""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.differential.context import context_of
from nccl_doctor.facts.gpu import Gpu
from nccl_doctor.facts.run import C10dSocketError
from tests.helpers import critical_ids, cue_says, diagnose_text, facts_text

# -- the store's bind error retold with its errno name --------------------------------------------

_BIND = (
    "The torchrun agent of the second job prints a DistNetworkError saying the server socket has "
    "failed to listen on any local network address, with port 29500, code -98, {name}.\n"
)


def test_a_retold_bind_error_named_eaddrinuse_is_the_port_in_use(tmp_path: Path) -> None:
    text = _BIND.format(name='EADDRINUSE, "address already in use"')
    (error,) = facts_text(tmp_path, text).of(C10dSocketError)
    assert (error.errno, error.error_name) == (98, "EADDRINUSE")
    assert critical_ids(diagnose_text(tmp_path, text))[:1] == ["launch.port_in_use"]


def test_a_retold_bind_error_with_another_errno_is_no_port_in_use(tmp_path: Path) -> None:
    text = _BIND.format(name="EADDRNOTAVAIL")
    (error,) = facts_text(tmp_path, text).of(C10dSocketError)
    assert error.errno is None
    assert "launch.port_in_use" not in critical_ids(diagnose_text(tmp_path, text))


# -- NVLS off said to work, through the one reading of settings that worked -----------------------


def test_nvls_off_said_to_work_is_nvls(tmp_path: Path) -> None:
    text = (
        "Training on the HGX H200 hangs at the first all_reduce; with NCCL_NVLS_ENABLE=0 it "
        "works.\n"
    )
    nvls = [f for f in diagnose_text(tmp_path, text).findings if f.id == "nccl.nvls"]
    assert [f.severity.value for f in nvls] == ["warning"]


def test_nvls_off_tried_without_any_effect_is_no_nvls(tmp_path: Path) -> None:
    text = (
        "init_process_group fails with CUDA unknown error; we tried NCCL_CUMEM_ENABLE=0 and "
        "NCCL_NVLS_ENABLE=0 without any effect. What's the right way to fix this?\n"
    )
    assert "nccl.nvls" not in [f.id for f in diagnose_text(tmp_path, text).findings]


# -- versions that differ by node, and groups of nodes that fail together -------------------------


def test_two_hosts_printing_different_nccl_versions_differ(tmp_path: Path) -> None:
    text = (
        'The two hosts print a different "NCCL version" line: the rack B node says '
        "2.27.5+cuda12.9, the rack A node says 2.21.5+cuda12.4.\n"
    )
    assert cue_says("nccl_versions_differ", text)
    assert not cue_says("nccl_versions_differ", 'Both hosts print the same "NCCL version" line.')


def test_one_node_of_each_rack_failing_is_a_node_group(tmp_path: Path) -> None:
    text = (
        "Jobs that land on two rack B nodes, or two rack A nodes, train fine. Jobs that get one "
        "node from each rack hang in the first all_reduce.\n"
    )
    assert context_of(facts_text(tmp_path, text)).says("node_groups")
    assert not cue_says("node_groups", "We took one node from each rack and all of them train.")


# -- a GPU lost before its peers' sends went unacknowledged ---------------------------------------

_IB = (
    "[2026-01-15 22:41:38] b200-n01:118203:118611 [3] transport/net_ib.cc:2458 NCCL WARN NET/IB: "
    "Got completion from peer 10.52.4.104<52114> with status=12 opcode=0 len=0 vendor err 129 "
    "(Send) hca mlx5_3\n"
)
_XID = (
    "[Thu Jan 15 {t} 2026] NVRM: Xid (PCI:0000:61:00): 79, pid='<unknown>', name=<unknown>, "
    "GPU has fallen off the bus.\n"
)


def test_a_gpu_lost_before_the_completion_errors_is_the_cause(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _IB + _XID.format(t="22:41:07"))
    assert critical_ids(report)[:1] == ["gpu.lost"]
    ib = next(f for f in report.findings if f.id == "net.ib_transport")
    assert ib.defers_to == ("gpu.lost",)


def test_a_gpu_lost_after_the_completion_errors_is_not_their_cause(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _IB + _XID.format(t="22:49:07"))
    ib = next(f for f in report.findings if f.id == "net.ib_transport")
    assert ib.defers_to == ()


# -- an Xid the reporter names leads a message their sentences quote ------------------------------


def test_an_xid_told_leads_the_unhandled_cuda_error_told(tmp_path: Path) -> None:
    text = (
        'Any job with node sn-h100-22 hangs in an all-gather and dies with an "unhandled cuda '
        'error" from NCCL on that node only. In dmesg there are two Xid 74 entries for GPU 6.\n'
    )
    report = diagnose_text(tmp_path, text)
    assert report.top(1) == ["gpu.nvlink"]
    assert report.hypotheses[0].symptom.startswith("the driver logged a GPU fault")


def test_a_machine_line_still_leads_an_xid_told(tmp_path: Path) -> None:
    text = (
        "node22:4411:4530 [6] NCCL INFO misc/argcheck.cc:39 -> 4\n"
        "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:121, "
        "unhandled cuda error, NCCL version 2.27.5\n"
        "Last week there was one Xid 74 in dmesg on another node.\n"
    )
    report = diagnose_text(tmp_path, text)
    assert not report.hypotheses[0].symptom.startswith("the driver logged a GPU fault")


# -- the flight-recorder analyser's mismatch verdict ----------------------------------------------

_FR = (
    "Collective sequence number: 2207 has errors\n"
    "collective: nccl:broadcast\n"
    "expected ranks: {{0, 1, 2, 3}}\n"
    "collective state: scheduled\n"
    "error msg: Culprit rank 1; Error type: {kind}, Expected collective type: 'broadcast' "
    "does not match found collective type: 'all_reduce', Culprit rank 2; Error type: {kind}, "
    "Expected collective type: 'broadcast' does not match found collective type: 'all_reduce'\n"
)


def test_the_analysers_type_mismatch_is_a_collective_mismatch(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _FR.format(kind="COLLECTIVE_TYPE_MISMATCH"))
    assert critical_ids(report)[:1] == ["app.collective_mismatch"]
    finding = report.findings[0]
    assert "ranks 1, 2 issuing a different collective" in finding.summary
    assert finding.subjects.ranks == (1, 2)


def test_the_analysers_state_mismatch_is_no_collective_mismatch(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _FR.format(kind="COLLECTIVE_STATE_MISMATCH"))
    assert "app.collective_mismatch" not in critical_ids(report)


# -- nvidia-smi -q's PCIe link section pasted alone -----------------------------------------------

_LINK = (
    "$ nvidia-smi -q -i 2 -d PCIE\n"
    "        GPU Link Info\n"
    "            PCIe Generation\n"
    "                Max                                    : 5\n"
    "                Current                                : 5\n"
    "            Link Width\n"
    "                Max                                    : 16x\n"
    "                Current                                : {width}x\n"
)


def test_a_link_section_alone_at_half_width_is_a_degraded_link(tmp_path: Path) -> None:
    (gpu,) = facts_text(tmp_path, _LINK.format(width=8)).of(Gpu)
    assert (gpu.pcie_width_current, gpu.pcie_width_max, gpu.pcie_gen_current) == (8, 16, 5)
    report = diagnose_text(tmp_path, _LINK.format(width=8))
    assert [f.id for f in report.findings] == ["gpu.pcie_degraded"]
    assert "width x8 of x16" in report.findings[0].summary


def test_a_link_section_alone_at_full_width_is_no_finding(tmp_path: Path) -> None:
    assert diagnose_text(tmp_path, _LINK.format(width=16)).findings == ()


# -- an Xid named for a diagnosis of its own outranks the generic GPU fault -----------------------


def test_an_nvlink_xid_told_ranks_nvlink_before_the_generic_fault(tmp_path: Path) -> None:
    text = "Training hangs after a few hours; dmesg shows Xid 74 for GPU 6 each time.\n"
    ranked = [h.id for h in diagnose_text(tmp_path, text).hypotheses]
    assert ranked.index("gpu.nvlink") < ranked.index("gpu.xid")


def test_a_generic_xid_told_keeps_the_generic_fault_first(tmp_path: Path) -> None:
    text = "Training hangs after a few hours; dmesg shows Xid 62 for GPU 6 each time.\n"
    assert diagnose_text(tmp_path, text).top(1) == ["gpu.xid"]


def test_link_sections_pasted_one_after_another_are_one_gpu_each(tmp_path: Path) -> None:
    section = _LINK.split("\n", 1)[1]
    text = section.format(width=16) + section.format(width=4)
    gpus = facts_text(tmp_path, text).of(Gpu)
    assert [(g.pcie_width_current, g.pcie_width_max) for g in gpus] == [(16, 16), (4, 16)]
