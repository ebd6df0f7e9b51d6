"""A GPU the driver could not bring up at load, by what the driver said (595.45.04 sources).

RmInitAdapter and its stages (osinit.c), the GSP boot (kernel_gsp.c) and the
board checks (nv.c) each say why; the finding leads with what to do about
that reason. A healthy load says none of it.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import critical_ids, diagnose_text

_LOAD = (
    "[    4.912345] nvidia: loading out-of-tree module taints kernel.\n"
    "[    4.981234] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  595.45.04  "
    "Release Build  (dvs-builder@U22-I3-AE18-23-3)  Mon Mar  2 10:11:12 UTC 2026\n"
)


def _first(tmp_path: Path, text: str) -> tuple[str, str, str, str]:
    report = diagnose_text(tmp_path, text)
    top = report.findings[0]
    return top.id, top.title, top.summary, top.fix[0]


def test_power_cables_lead_before_the_stage_that_failed(tmp_path: Path) -> None:
    rule, title, summary, fix = _first(
        tmp_path,
        _LOAD + "[    5.101000] NVRM: GPU 0000:3b:00.0: GPU does not have the necessary power "
        "cables connected.\n"
        "[    5.101200] NVRM: GPU 0000:3b:00.0: RmInitAdapter failed! (0x24:0x1c:1435)\n"
        "[    5.101300] NVRM: GPU 0000:3b:00.0: rm_init_adapter failed, device minor number 0\n",
    )
    assert (rule, title) == ("gpu.lost", "The driver could not initialise the GPU")
    assert summary.startswith(
        "The driver could not initialise 00000000:3B:00.0: GPU does not have the necessary "
        "power cables connected."
    )
    assert fix.startswith("Connect the GPU's auxiliary power cables")


def test_a_gpu_left_in_a_bad_state_needs_a_reset(tmp_path: Path) -> None:
    rule, _, summary, fix = _first(
        tmp_path,
        _LOAD + "[   61.553000] NVRM: GPU0 _kgspBootGspRm: unexpected WPR2 already up, cannot "
        "proceed with booting GSP\n"
        "[   61.553010] NVRM: GPU0 _kgspBootGspRm: (the GPU is likely in a bad state and may "
        "need to be reset)\n"
        "[   61.553100] NVRM: GPU0 RmInitAdapter: Cannot initialize GSP firmware RM\n",
    )
    assert rule == "gpu.lost"
    assert "GPU0: _kgspBootGspRm: unexpected WPR2 already up" in summary
    assert fix.startswith("Reset the GPU (nvidia-smi -r -i <gpu>) or power-cycle the node")


def test_a_bar_without_an_address_points_at_the_bios(tmp_path: Path) -> None:
    rule, _, _, fix = _first(
        tmp_path,
        _LOAD + "[    5.2] NVRM: This PCI I/O region assigned to your NVIDIA device is invalid:\n"
        "[    5.2] NVRM: BAR1 is 0M @ 0x0 (PCI:0000:3b:00.0)\n"
        "[    5.3] NVRM: The NVIDIA probe routine failed for 1 device(s).\n"
        "[    5.3] NVRM: None of the NVIDIA devices were initialized.\n",
    )
    assert rule == "gpu.lost"
    assert fix.startswith("Enable 'Above 4G decoding'")


def test_missing_gsp_firmware_is_an_incomplete_driver_install(tmp_path: Path) -> None:
    rule, _, summary, fix = _first(
        tmp_path,
        _LOAD + "[    5.4] NVRM: RmFetchGspRmImages: No firmware image found\n"
        "[    5.4] NVRM: GPU 0000:3b:00.0: RmInitAdapter failed! (0x61:0x56:1594)\n",
    )
    assert rule == "driver.version_mismatch"
    assert "found no GSP firmware of its own version" in summary
    assert fix.startswith("Install the firmware of the loaded module's version")


def test_a_healthy_load_says_nothing(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        _LOAD + "[    5.2] NVRM: GPU at PCI:0000:3b:00: GPU-5e3b2c1a-7d4f-4a2b-9c8e-1f2a3b4c5d6e\n"
        "[    5.2] NVRM: Xid (PCI:0000:3b:00): 0, Ch 00000000\n"
        "[    5.6] nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver for UNIX "
        "platforms  595.45.04\n"
        "[    5.7] [drm] [nvidia-drm] [GPU ID 0x00003b00] Loading driver\n",
    )
    assert critical_ids(report) == []
    assert not [f for f in report.findings if f.id in ("gpu.lost", "driver.version_mismatch")]
