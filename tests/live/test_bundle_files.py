"""What a capture writes reads back, through the existing parsers, as the same numbers."""

from __future__ import annotations

import os
from types import ModuleType

from nccl_doctor.evidence.nvml import collect
from nccl_doctor.evidence.nvml_files import nvlink_text, smi_messages, smi_xml
from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.gpu import DriverInfo, Gpu, GpuProcess, GpuProcessTable, MigDevice, SmiError
from nccl_doctor.facts.topology import NvLink, NvLinkErrorCount
from nccl_doctor.parse.nvidia_smi import NvidiaSmiParser
from nccl_doctor.parse.nvidia_smi_xml import NvidiaSmiXmlParser
from nccl_doctor.parse.nvlink import NvlinkParser
from tests.helpers import blocks


def _parse(parser: NvidiaSmiXmlParser | NvidiaSmiParser | NvlinkParser, text: str) -> list[Fact]:
    found = blocks(parser, text, "bundle")
    assert found, text[:200]
    return [fact for block in found for fact in parser.parse(block)]


def test_xml_round_trips_through_the_xml_parser(fake: ModuleType) -> None:
    fake.use("ok")
    snap = collect(fake)
    xml = smi_xml(snap, "Thu Dec  3 06:00:00 2026")
    assert xml is not None
    facts = _parse(NvidiaSmiXmlParser(), xml)
    (driver,) = [f for f in facts if isinstance(f, DriverInfo)]
    assert (driver.driver_version, driver.cuda_version, driver.attached_gpus) == (
        "580.159.04",
        "13.0",
        2,
    )
    gpu0, gpu1 = [f for f in facts if isinstance(f, Gpu)]
    assert gpu0.tool == "nvidia-smi-xml"
    assert gpu0.bus_id == "00000000:3B:00.0"
    assert gpu0.uuid == snap["gpus"][0]["uuid"]
    assert gpu0.name == "NVIDIA H200"
    assert (gpu0.memory_used_mib, gpu0.memory_total_mib) == (70000, 143771)
    assert (gpu0.utilization_gpu_pct, gpu0.utilization_memory_pct) == (97, 41)
    assert gpu0.compute_mode == "Exclusive_Process"
    assert gpu0.persistence_mode is True
    assert (gpu0.mig_mode, gpu0.mig_mode_pending) == (False, True)
    assert (gpu0.ecc_mode, gpu0.ecc_mode_pending) == (True, True)
    assert (gpu0.ecc_volatile_corrected, gpu0.ecc_volatile_uncorrected) == (12, 3)
    assert (gpu0.ecc_aggregate_corrected, gpu0.ecc_aggregate_uncorrected) == (120, 7)
    assert (gpu0.retired_pages_single_bit, gpu0.retired_pages_double_bit) == (0, 2)
    assert gpu0.retired_pages_pending is True
    assert (gpu0.remapped_rows_correctable, gpu0.remapped_rows_uncorrectable) == (2, 1)
    assert (gpu0.remapped_rows_pending, gpu0.remapped_rows_failure) == (True, False)
    assert gpu0.clocks_event_reasons == ("sw_power_cap", "hw_slowdown")
    assert gpu0.temperature_c == 71
    assert (gpu0.power_draw_w, gpu0.power_limit_w) == (512.35, 700.0)
    assert (gpu0.pcie_gen_current, gpu0.pcie_gen_max, gpu0.pcie_gen_device_max) == (4, 5, 5)
    assert (gpu0.pcie_width_current, gpu0.pcie_width_max, gpu0.pcie_replays) == (8, 16, 5)
    assert gpu0.fabric_state is None
    assert gpu0.errors == ()
    assert (gpu1.fabric_state, gpu1.fabric_status, gpu1.mig_mode) == ("Completed", "Success", True)
    procs = [f for f in facts if isinstance(f, GpuProcess)]
    assert [(p.pid, p.memory_used_mib, p.gpu_bus_id) for p in procs] == [
        (os.getpid(), 60000, "00000000:3B:00.0"),
        (4_000_000, None, "00000000:3B:00.0"),
    ]
    expected_name = snap["gpus"][0]["processes"][0]["cmdline"].split(" ", 1)[0]
    assert procs[0].name == expected_name
    tables = [f for f in facts if isinstance(f, GpuProcessTable)]
    assert [(t.rows, t.none_found, t.truncated) for t in tables] == [
        (2, False, False),
        (0, True, False),
    ]
    migs = [f for f in facts if isinstance(f, MigDevice)]
    assert [(m.gi_id, m.ci_id, m.memory_used_mib, m.memory_total_mib) for m in migs] == [
        (3, 0, 100, 20480),
        (4, 0, 200, 20480),
    ]
    assert all(m.gpu_bus_id == "00000000:86:00.0" for m in migs)


def test_unknown_error_and_not_supported_read_as_nvidia_smi_prints_them(fake: ModuleType) -> None:
    fake.use("not_supported")
    xml = smi_xml(collect(fake), "now")
    assert xml is not None
    (gpu,) = [f for f in _parse(NvidiaSmiXmlParser(), xml) if isinstance(f, Gpu)]
    assert gpu.errors == ("temperature_c",)
    assert gpu.temperature_c is None
    assert gpu.ecc_volatile_uncorrected is None
    assert gpu.clocks_event_reasons is None
    assert gpu.memory_total_mib == 143771


def test_nvlink_text_round_trips(fake: ModuleType) -> None:
    fake.use("ok")
    text = nvlink_text(collect(fake))
    assert text is not None
    facts = _parse(NvlinkParser(), text)
    links = [
        (f.gpu_index, f.link, f.active, f.speed_gbytes_s) for f in facts if isinstance(f, NvLink)
    ]
    assert links == [
        (1, 0, True, 26.562),
        (1, 1, True, 26.562),
        (1, 2, True, 26.562),
        (1, 3, False, None),
    ]
    counts = {(f.link, f.counter): f.count for f in facts if isinstance(f, NvLinkErrorCount)}
    assert counts[(1, "Replay Errors")] == 148
    assert counts[(0, "CRC Errors")] == 0


def test_a_bundle_saved_with_the_old_nvlink_speed_key_reads_the_same(fake: ModuleType) -> None:
    """Bundles written before ``speed_mbytes_s`` named NVML's MB/s ``speed_mbps``."""
    fake.use("ok")
    snap = collect(fake)
    new = nvlink_text(snap)
    for gpu in snap["gpus"]:
        for link in gpu.get("nvlinks") or ():
            link["speed_mbps"] = link.pop("speed_mbytes_s")
    assert nvlink_text(snap) == new
    assert new is not None
    assert "\t Link 0: 26.562 GB/s" in new


def test_failures_read_as_nvidia_smi_messages(fake: ModuleType) -> None:
    for scenario, error in (
        ("mismatch", "version_mismatch"),
        ("driver_not_loaded", "no_driver"),
        ("init_fail", "nvml_init"),
        ("no_devices", "no_devices"),
    ):
        fake.use(scenario)
        snap = collect(fake)
        text = smi_messages(snap)
        assert text is not None
        assert smi_xml(snap, "now") is None
        errors = [f for f in _parse(NvidiaSmiParser(), text) if isinstance(f, SmiError)]
        assert [e.error for e in errors] == [error], scenario
    fake.use("lost")
    text = smi_messages(collect(fake))
    assert text is not None
    (lost,) = [f for f in _parse(NvidiaSmiParser(), text) if isinstance(f, SmiError)]
    assert (lost.error, lost.gpu_index) == ("device_handle", 1)
    assert "GPU is lost" in lost.message
    fake.use("lib_not_found")
    assert smi_messages(collect(fake)) is None  # no driver at all: nvidia-smi would not exist
