"""xid: NVIDIA driver kernel lines across driver versions, multi-line messages and negatives."""

from __future__ import annotations

import pytest

from nccl_doctor.evidence.lines import lines_of
from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.host import KernelGpuMessage, XidEvent
from nccl_doctor.parse.xid import XidParser, bus_id
from tests.helpers import FORMATS, fixture_text, of_type, parse_stream


def parse(text: str) -> list[Fact]:
    return parse_stream(XidParser(), text)


def kinds(facts: list[Fact]) -> list[tuple[int, str]]:
    return [(m.cite.line, m.kind) for m in of_type(facts, KernelGpuMessage)]


# -- fixtures ------------------------------------------------------------------------
def test_gsp_heartbeat_timeout_gh100_open_module_595() -> None:
    facts = parse(fixture_text("xid/dmesg-595-gsp-heartbeat-timeout-rpc-gh100.txt"))
    assert of_type(facts, XidEvent) == []
    assert kinds(facts) == [
        (1, "module_version"),
        (3, "gsp_heartbeat_timeout"),
        (4, "gsp_heartbeat_timeout"),
        (5, "driver_timeout"),
        (6, "driver_timeout"),
        (7, "driver_timeout"),
        (8, "memory_error"),
        (9, "gsp_error"),
        (10, "gsp_timeout"),
    ]
    msgs = of_type(facts, KernelGpuMessage)
    assert (msgs[0].version, msgs[0].open_module) == ("595.71.05", True)
    assert {m.gpu_label for m in msgs[1:]} == {"GPU6"}
    assert all(m.bus_id is None for m in msgs)


def test_dmesg_t_535_xids_with_identity_and_serial() -> None:
    facts = parse(fixture_text("xid/dmesg-T-535-xid43-31-94-contained-board-serial.txt"))
    xids = of_type(facts, XidEvent)
    got = [(x.cite.line, x.xid, x.bus_id, x.pid, x.process_name, x.channel) for x in xids]
    assert got == [
        (5, 43, "00000000:00:05.0", 1045242, "pt_main_thread", "00000008"),
        (6, 43, "00000000:00:05.0", 1084984, "pt_main_thread", "00000008"),
        (9, 31, "00000000:00:07.0", 2512125, "python3.10", "00000008"),
        (12, 94, "00000000:00:08.0", None, None, None),
    ]
    assert xids[0].uuid == "GPU-efbdfde9-5798-a6e7-4c46-12518fa15375"
    assert xids[0].message is None
    assert xids[2].message is not None
    assert xids[2].message.startswith("MMU Fault: ENGINE GRAPHICS")
    assert xids[2].message.endswith("FAULT_PDE ACCESS_TYPE_VIRT_WRITE")
    assert xids[3].message == "Contained: SM (0x1). RST: No, D-RST: No"
    assert xids[3].uuid == "GPU-c24840ec-8de1-83d5-b126-08000173ae32"
    msgs = of_type(facts, KernelGpuMessage)
    assert (msgs[0].kind, msgs[0].version, msgs[0].open_module) == (
        "module_version",
        "535.183.01",
        False,
    )
    serials = [(m.bus_id, m.serial) for m in msgs if m.kind == "board_serial"]
    assert serials == [
        ("00000000:00:05.0", "1650423013443"),
        ("00000000:00:07.0", "1652923017935"),
        ("00000000:00:08.0", "1652923018111"),
    ]
    assert not any(f.cite.line == 1 for f in facts)  # the shell prompt line


def test_fallen_off_bus_over_three_lines_without_xid() -> None:
    facts = parse(fixture_text("xid/dmesg-fallen-off-bus-multiline-no-xid-570.txt"))
    assert of_type(facts, XidEvent) == []
    assert kinds(facts) == [(1, "fallen_off_bus"), (4, "probe_failed"), (5, "module_version")]
    fallen = of_type(facts, KernelGpuMessage)[0]
    assert (fallen.bus_id, fallen.pci_device_id) == ("00000000:B3:00.0", "10de:26b5")
    assert fallen.message.endswith("fallen off the bus and is not responding to commands.")
    assert of_type(facts, KernelGpuMessage)[2].version == "570.158.01"


def test_uptime_418_graphics_exceptions_and_elided_line() -> None:
    facts = parse(fixture_text("xid/dmesg-uptime-418-xid31-13-32-graphics-exception-elided.txt"))
    xids = of_type(facts, XidEvent)
    assert [(x.cite.line, x.xid) for x in xids] == [
        (2, 31),
        (4, 13),
        (5, 13),
        (6, 13),
        (7, 13),
        (8, 32),
    ]
    assert {x.bus_id for x in xids} == {"00000000:01:00.0"}
    assert {x.uuid for x in xids} == {"GPU-8a47641b-dff6-f09f-618c-c3eb58fb430d"}
    assert (xids[0].pid, xids[0].process_name, xids[0].channel) == (None, None, "0000003a")
    assert xids[0].message is not None
    assert xids[0].message.startswith("MMU Fault:")
    assert xids[4].channel == "0052"
    assert xids[5].channel == "00000052"
    assert xids[5].message is None
    assert xids[1].message == "Graphics Exception: Class 0x0 Subchannel 0x0 Mismatch"


def test_journal_kernel_prefix_xid45_caused_by_nvlink() -> None:
    xids = of_type(
        parse(fixture_text("xid/journal-kernel-prefix-xid45-caused-by-nvlink-xid145-149.txt")),
        XidEvent,
    )
    assert len(xids) == 7
    assert {x.xid for x in xids} == {45}
    assert [(x.bus_id, x.caused_by_xid) for x in xids[:2]] == [
        ("00000000:DC:00.0", 149),
        ("00000000:ED:00.0", 145),
    ]
    assert (xids[0].pid, xids[0].process_name, xids[0].channel) == (1818990, "python3", "00000001")
    assert xids[0].message == "caused by previous Xid 149"


def test_xid63_bare_line_lower_case_bus_without_function() -> None:
    (xid,) = of_type(parse(fixture_text("xid/xid63-row-remapper-bare-line.txt")), XidEvent)
    assert (xid.xid, xid.bus_id, xid.pid, xid.process_name) == (63, "00000000:10:1C.0", 1896, None)
    assert xid.message == "Row Remapper: New row marked for remapping, reset gpu to activate."


# -- inline samples -----------------------------------------------------------------------
MANY = """\
Mar  5 10:00:00 node7 kernel: [ 1234.567890] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.
[ 1234.6] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.
[ 1234.7] NVRM: A GPU crash dump has been created. If possible, please run
NVRM: nvidia-bug-report.sh as root to collect this data before
NVRM: the NVIDIA kernel module is unloaded.
NVRM: API mismatch: the client has the version 535.129.03, but
NVRM: this kernel module has the version 535.104.05.  Please
NVRM: make sure that this kernel module and all NVIDIA driver
NVRM: components have the same version.
NVRM: Xid (0000:04:00): 13, 0003 00000000 0000a1c0 000016c0 00000000 00000000
NVRM: Xid (PCI:0000:1b:00): 119, pid=2389, name=nvidia-smi, Timeout after 6s of waiting for RPC response from GPU1 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20801702 0x8).
NVRM: GPU0 _kgspLogXid119: ********************************* GSP Timeout **********************************
NVRM: Xid (PCI:0000:0c:00): 145, RLW_REMAP Nonfatal XC0 i0 Link 00 (0x00000000 0x00000000)
nvidia-nvswitch3: SXid (PCI:0000:88:00.0): 20034, Fatal, Link 30 LTSSM Fault Up
nvidia_peermem: Unknown symbol ib_register_peer_memory_client (err -2)
modprobe: ERROR: could not insert 'nvidia_peermem': Invalid argument
nvidia-uvm: Loaded the UVM driver, major device number 510.
nvidia_uvm: module uses symbols from proprietary module nvidia, inheriting taint.
NVRM: GPU 0000:3b:00.0: RmInitAdapter failed! (0x26:0xffff:1476)
NVRM: The NVIDIA GPU 0000:05:00.0 (PCI ID: 10de:1b80)
NVRM: installed in this system is not supported by the
NVRM: NVIDIA 470.xx driver release.
NVRM: GPU at 0000:02:00: GPU-1d2e3f40-aaaa-bbbb-cccc-0123456789ab
NVRM: Xid (0000:02:00): 48, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6.
NVRM: loading NVIDIA UNIX ppc64le Kernel Module  418.67  Sat Apr  6 03:07:24 CDT 2019
"""  # noqa: E501


def test_driver_messages_across_versions() -> None:
    facts = parse(MANY)
    xids = of_type(facts, XidEvent)
    got = [(x.cite.line, x.xid, x.bus_id, x.nvswitch) for x in xids]
    assert got == [
        (1, 79, "00000000:3B:00.0", False),
        (10, 13, "00000000:04:00.0", False),
        (11, 119, "00000000:1B:00.0", False),
        (13, 145, "00000000:0C:00.0", False),
        (14, 20034, "00000000:88:00.0", True),
        (24, 48, "00000000:02:00.0", False),
    ]
    assert xids[0].host == "node7"
    assert xids[0].message == "GPU has fallen off the bus."
    assert (xids[2].pid, xids[2].process_name) == (2389, "nvidia-smi")
    assert xids[2].message is not None
    assert xids[2].message.startswith("Timeout after 6s")
    assert xids[4].message == "Fatal, Link 30 LTSSM Fault Up"
    assert xids[5].uuid == "GPU-1d2e3f40-aaaa-bbbb-cccc-0123456789ab"
    assert kinds(facts) == [
        (2, "fallen_off_bus"),
        (3, "crash_dump"),
        (6, "api_mismatch"),
        (12, "gsp_timeout"),
        (15, "module_load_error"),
        (16, "module_load_error"),
        (17, "module_loaded"),
        (19, "init_failed"),
        (20, "unsupported_gpu"),
        (23, "gpu_identity"),
        (25, "module_version"),
    ]
    msgs = {m.cite.line: m for m in of_type(facts, KernelGpuMessage)}
    assert (msgs[6].client_version, msgs[6].version) == ("535.129.03", "535.104.05")
    assert msgs[2].bus_id == "00000000:3B:00.0"
    assert (msgs[15].module, msgs[16].module, msgs[17].module) == (
        "nvidia_peermem",
        "nvidia_peermem",
        "nvidia_uvm",
    )
    assert (msgs[20].bus_id, msgs[20].pci_device_id) == ("00000000:05:00.0", "10de:1b80")
    assert (msgs[25].version, msgs[25].open_module) == ("418.67", False)
    assert not any(f.cite.line == 18 for f in facts)


def test_api_mismatch_cut_after_its_first_line() -> None:
    (msg,) = of_type(
        parse("NVRM: API mismatch: the client has the version 550.54.15, but\n"), KernelGpuMessage
    )
    assert (msg.kind, msg.client_version, msg.version) == ("api_mismatch", "550.54.15", None)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("0000:3b:00", "00000000:3B:00.0"),
        ("0000:b3:00.0", "00000000:B3:00.0"),
        ("00000000:1A:00.0", "00000000:1A:00.0"),
        ("0000:3b", None),
        ("zz:00:00", None),
        ("0000:3b:00.9", None),
        ("", None),
    ],
)
def test_bus_id_normalisation(raw: str, expected: str | None) -> None:
    assert bus_id(raw) == expected


# -- negatives ----------------------------------------------------------------------------
def test_other_kinds_are_not_consumed() -> None:
    for kind in (
        "nvidia-smi",
        "nvidia-smi-q",
        "ibstat",
        "torchrun",
        "topo",
        "nccl-log",
        "collect_env",
    ):
        for path in sorted((FORMATS / kind).glob("*")):
            text = path.read_bytes().decode("utf-8", errors="replace")
            parser = XidParser()
            for line in lines_of(text, path.name):
                if any(a in line.raw for a in parser.anchors):
                    assert not parser.feed(line), (path.name, line.raw)
            assert parser.take() + parser.finish() == [], path.name


def test_commands_that_mention_nvrm_are_not_taken() -> None:
    assert parse("root@node4:~# dmesg -T | grep NVRM\n$ journalctl -k | grep -i nvrm\n") == []


def test_a_driver_status_is_read_by_name_or_number_and_a_gone_gpu_by_its_words() -> None:
    facts = parse(
        "[ 10.1] NVRM: GPU3 nvAssertOkFailedNoLog: Assertion failed: Reset required "
        "[NV_ERR_RESET_REQUIRED] (0x00000062) returned from status @ kernel_channel.c:2874\n"
        "[ 10.2] NVRM: GPU3 _threadNodeCheckTimeout: API_GPU_ATTACHED_SANITY_CHECK failed!\n"
        "[ 10.3] NVRM: GPU0 _intrServiceStallCommonCheckBegin: Failed GPU reg read : 0xffffffff."
        " Check whether GPU is present on the bus\n"
        "[ 10.4] NVRM: nvGpuOpsReportFatalError: uvm encountered global fatal error 0x60, "
        "requiring os reboot to recover.\n"
        "[ 10.5] NVRM: GPU0 nvCheckOkFailedNoLog: Check failed: Call not supported "
        "[NV_ERR_NOT_SUPPORTED] (0x00000056) returned from pRmApi->Control\n"
    )
    msgs = of_type(facts, KernelGpuMessage)
    assert [(m.cite.line, m.kind, m.status, m.gpu_label) for m in msgs] == [
        (1, "other", "NV_ERR_RESET_REQUIRED", "GPU3"),
        (2, "detached", None, "GPU3"),
        (3, "detached", None, "GPU0"),
        (4, "reboot_required", "NV_ERR_RC_ERROR", None),
        (5, "other", None, "GPU0"),
    ]


def test_peermem_reporting_a_mapping_is_a_loaded_module_not_a_failed_load() -> None:
    facts = parse(
        "[86122.45] nvidia-peermem nv_get_p2p_free_callback:139 ERROR detected invalid context,"
        " skipping further processing\n"
        "[   12.01] nvidia_peermem: Unknown symbol ib_register_peer_memory_client (err -2)\n"
    )
    msgs = of_type(facts, KernelGpuMessage)
    assert [(m.cite.line, m.kind, m.module) for m in msgs] == [
        (1, "module_runtime_error", "nvidia_peermem"),
        (2, "module_load_error", "nvidia_peermem"),
    ]


def test_gsp_rpc_lines_as_vgpu_rpc_c_prints_them() -> None:
    facts = parse(
        "[ 20.1] NVRM: GPU0 _issueRpcAndWait: rpcRecvPoll timedout for fn 76 sequence 102452!\n"
        "[ 20.2] NVRM: GPU3 _issueRpcAndWait: rpcSendMessage failed with status 0x0000000f for "
        "fn 10!\n"
        "[ 20.3] NVRM: GPU1 rpcRmApiControl_GSP: GspRmControl failed: hClient=0xc1d00027; "
        "hObject=0x5c000002; cmd=0x20801329; paramsSize=0x00000010; paramsStatus=0x00000000; "
        "status=0x0000001f\n"
        "[ 20.4] NVRM: GPU4 rpcRmApiAlloc_GSP: GspRmAlloc failed: hClient=0xc1d00616; "
        "hParent=0x5c000054; hObject=0x5c00005b; hClass=0x0000c86f; paramsSize=0x00000170; "
        "paramsStatus=0x00000062; status=0x00000062\n"
    )
    msgs = of_type(facts, KernelGpuMessage)
    assert [(m.cite.line, m.kind, m.status) for m in msgs] == [
        (1, "gsp_timeout", None),
        (2, "gsp_error", "NV_ERR_GPU_IS_LOST"),
        (3, "other", None),  # a caller's invalid argument: no GSP failure
        (4, "gsp_error", "NV_ERR_RESET_REQUIRED"),
    ]


def test_rc_of_all_channels_is_the_xid_it_names() -> None:
    facts = parse(
        "[ 30.1] NVRM: GPU2 krcRcAndNotifyAllChannels_IMPL: RC all channels for critical error "
        "79.\n"
        "[ 30.2] NVRM: GPU5 kgspRcAndNotifyAllChannels_IMPL: RC all user channels for critical "
        "error 119.\n"
    )
    assert [(e.cite.line, e.xid, e.gpu_label) for e in of_type(facts, XidEvent)] == [
        (1, 79, "GPU2"),
        (2, 119, "GPU5"),
    ]
    assert of_type(facts, KernelGpuMessage) == []


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        (
            "NVRM: GPU 0000:3b:00.0: GPU does not have the necessary power cables connected.",
            "no_power",
        ),
        ("NVRM: RmFetchGspRmImages: No firmware image found", "no_firmware"),
        (
            (
                "NVRM: GPU0 _kgspBootGspRm: unexpected WPR2 already up, cannot proceed with "
                "booting GSP"
            ),
            "reset_needed",
        ),
        (
            (
                "NVRM: GPU0 kgspWaitForGfwBootOk_TU102: failed to wait for GFW boot complete: 0x65 "
                "VBIOS version 96.00.89.00.01"
            ),
            "reset_needed",
        ),
        ("NVRM: BAR1 is 0M @ 0x0 (PCI:0000:3b:00.0)", "bar_invalid"),
        ("NVRM: GPU0 kgspInitRm_IMPL: Max GSP-RM boot attempts exceeded: 3/3", "init_failed"),
        ("NVRM: nvidia_frontend_open: minor 0, module->open() failed, error -5", "init_failed"),
        ("NVRM: None of the NVIDIA devices were initialized.", "probe_failed"),
        # the GFW wait's status check names no boot in words: a GSP timeout, not a bad state
        (
            (
                "NVRM: GPU0 nvCheckOkFailedNoLog: Check failed: Call timed out [NV_ERR_TIMEOUT] "
                "(0x00000065) returned from kgspWaitForGfwBootOk_HAL(pGpu, pKernelGsp) @ "
                "kernel_gsp.c:4945"
            ),
            "gsp_timeout",
        ),
    ],
)
def test_why_the_driver_could_not_initialise_a_gpu(line: str, kind: str) -> None:
    (msg,) = of_type(parse(f"[    5.101000] {line}\n"), KernelGpuMessage)
    assert msg.kind == kind
