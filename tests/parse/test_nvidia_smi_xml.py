"""nvidia-smi -q -x: every fixture, truncated and hostile XML, older elements, negatives."""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.facts.gpu import DriverInfo, Gpu, GpuProcess, GpuProcessTable, MigDevice
from nccl_doctor.parse.nvidia_smi_q import NvidiaSmiQParser
from nccl_doctor.parse.nvidia_smi_xml import NvidiaSmiXmlParser
from tests.helpers import FORMATS, blocks, fixture_text, of_type, parse_blocks


def test_a100_mig_attached_count_disagrees_with_gpu_elements() -> None:
    text = fixture_text("nvidia-smi-xml/a100-sxm4-80gb-x4-mig-535.54.txt")
    assert [(b[0].number, b[-1].number) for b in blocks(NvidiaSmiXmlParser(), text)] == [(1, 452)]
    facts = parse_blocks(NvidiaSmiXmlParser(), text)
    (driver,) = of_type(facts, DriverInfo)
    assert (driver.driver_version, driver.cuda_version, driver.attached_gpus) == (
        "535.54.03",
        "12.2",
        4,
    )
    assert driver.cite.line == 5
    assert driver.timestamp == "Fri Aug  4 11:44:30 2023"
    (gpu,) = of_type(facts, Gpu)
    assert (gpu.bus_id, gpu.minor_number, gpu.mig_mode, gpu.mig_mode_pending) == (
        "00000000:01:00.0",
        1,
        True,
        True,
    )
    assert (gpu.utilization_gpu_pct, gpu.power_draw_w, gpu.power_limit_w) == (None, 67.03, 500.0)
    assert gpu.remapped_rows_pending is None
    assert gpu.clocks_event_reasons == ()
    assert gpu.retired_pages_single_bit is None
    assert gpu.retired_pages_pending is None
    assert gpu.cite.line == 8
    migs = of_type(facts, MigDevice)
    assert [(m.mig_index, m.gi_id, m.ci_id) for m in migs] == [
        (0, 3, 0),
        (1, 4, 0),
        (2, 5, 0),
        (3, 6, 0),
    ]
    first = migs[0]
    assert (first.memory_used_mib, first.memory_total_mib, first.bar1_total_mib) == (
        12,
        19968,
        32767,
    )
    assert (first.sm_count, first.copy_engines, first.decoders, first.ecc_volatile_uncorrected) == (
        14,
        1,
        1,
        0,
    )
    assert first.gpu_uuid == "GPU-513536b6-7d19-9063-b049-1e69664bb298"
    assert first.cite.line == 21
    (table,) = of_type(facts, GpuProcessTable)
    assert (table.none_found, table.rows, table.truncated) == (True, 0, False)


def test_gtx1660ti_418_no_doctype_graphics_device() -> None:
    facts = parse_blocks(
        NvidiaSmiXmlParser(), fixture_text("nvidia-smi-xml/gtx1660ti-418.43-graphics-device.txt")
    )
    (driver,) = of_type(facts, DriverInfo)
    assert (driver.driver_version, driver.cuda_version) == ("418.43", "10.1")
    (gpu,) = of_type(facts, Gpu)
    assert (gpu.name, gpu.product_brand, gpu.product_architecture) == (
        "Graphics Device",
        "GeForce",
        None,
    )
    assert (gpu.fan_pct, gpu.perf_state, gpu.power_draw_w, gpu.power_limit_w) == (
        0,
        "P8",
        8.93,
        130.0,
    )
    assert (gpu.pcie_gen_current, gpu.pcie_gen_max) == (1, 3)
    assert gpu.ecc_mode is None
    assert gpu.ecc_volatile_uncorrected is None
    assert (gpu.utilization_gpu_pct, gpu.utilization_memory_pct) == (0, 1)
    assert of_type(facts, GpuProcessTable)[0].none_found


def test_rtx_a5000_x2_590_v13() -> None:
    facts = parse_blocks(
        NvidiaSmiXmlParser(), fixture_text("nvidia-smi-xml/rtx-a5000-x2-590.44-v13.txt")
    )
    (driver,) = of_type(facts, DriverInfo)
    assert (driver.driver_version, driver.cuda_version, driver.attached_gpus) == (
        "590.44.01",
        "13.1",
        2,
    )
    gpus = of_type(facts, Gpu)
    assert [(g.bus_id, g.minor_number) for g in gpus] == [
        ("00000000:81:00.0", 1),
        ("00000000:C1:00.0", 0),
    ]
    first = gpus[0]
    assert (first.power_draw_w, first.power_limit_w) == (6.41, 230.0)  # average_power_draw
    assert (first.fan_pct, first.temperature_c, first.perf_state) == (30, 13, "P8")
    assert (first.memory_used_mib, first.memory_total_mib) == (22437, 24564)
    assert (first.pcie_gen_current, first.pcie_gen_max, first.pcie_width_current) == (1, 4, 16)
    assert (first.ecc_mode, first.ecc_volatile_uncorrected) == (False, None)
    assert (first.remapped_rows_correctable, first.remapped_rows_failure) == (0, False)
    assert (first.recovery_action, first.fabric_state) == ("None", None)
    procs = of_type(facts, GpuProcess)
    assert [(p.gpu_bus_id, p.pid, p.memory_used_mib) for p in procs] == [
        ("00000000:81:00.0", 100477, 22430),
        ("00000000:C1:00.0", 100477, 17246),
    ]
    assert procs[0].name == "/root/src/llama.cpp/build/bin/llama-server"
    assert not procs[0].name_truncated
    assert procs[0].cite.line == 855


def test_rtx3060_570_tabs_single_digit_day() -> None:
    facts = parse_blocks(NvidiaSmiXmlParser(), fixture_text("nvidia-smi-xml/rtx3060-570.124.txt"))
    (driver,) = of_type(facts, DriverInfo)
    assert (driver.driver_version, driver.timestamp) == ("570.124.04", "Sun Mar 2 15:02:02 2025")
    (gpu,) = of_type(facts, Gpu)
    assert (gpu.name, gpu.power_draw_w, gpu.power_limit_w) == (
        "NVIDIA GeForce RTX 3060",
        11.6,
        170.0,
    )
    assert (gpu.memory_used_mib, gpu.memory_total_mib) == (116, 12288)


def test_rtx4000_595_four_processes() -> None:
    facts = parse_blocks(
        NvidiaSmiXmlParser(), fixture_text("nvidia-smi-xml/rtx4000-sff-ada-595.84-v13-procs.txt")
    )
    (driver,) = of_type(facts, DriverInfo)
    assert (driver.driver_version, driver.cuda_version) == ("595.84", "13.2")
    procs = of_type(facts, GpuProcess)
    assert [(p.pid, p.type, p.name, p.memory_used_mib) for p in procs] == [
        (1842, "G", "cosmic-comp", 410),
        (3190, "G", "/usr/bin/code", 451),
        (4937, "C", "python", 160),
        (34626, "C+G", "/usr/lib/chromium/chromium", 183),
    ]
    (table,) = of_type(facts, GpuProcessTable)
    assert (table.rows, table.none_found) == (4, False)


def test_tesla_t4_515_retired_pages_and_processes() -> None:
    facts = parse_blocks(
        NvidiaSmiXmlParser(), fixture_text("nvidia-smi-xml/tesla-t4-515.105-procs.txt")
    )
    (gpu,) = of_type(facts, Gpu)
    assert gpu.bus_id == "00000000:00:1E.0"
    assert (gpu.retired_pages_single_bit, gpu.retired_pages_double_bit) == (0, 0)
    assert gpu.retired_pages_pending is False
    assert (gpu.pcie_width_current, gpu.pcie_width_max) == (8, 16)
    assert (gpu.ecc_mode, gpu.ecc_volatile_uncorrected, gpu.ecc_aggregate_uncorrected) == (
        True,
        0,
        0,
    )
    assert (gpu.power_draw_w, gpu.power_limit_w) == (26.78, 70.0)
    procs = of_type(facts, GpuProcess)
    assert [(p.pid, p.type, p.name, p.memory_used_mib) for p in procs] == [
        (675, "G", "/usr/lib/xorg/Xorg", 22),
        (5762, "C", "python", 1005),
    ]


def test_xml_and_q_agree_on_the_same_fields() -> None:
    xml = of_type(
        parse_blocks(
            NvidiaSmiXmlParser(), fixture_text("nvidia-smi-xml/tesla-t4-515.105-procs.txt")
        ),
        Gpu,
    )[0]
    q_text = "\n".join(
        [
            "GPU 00000000:00:1E.0",
            "    Product Name                          : Tesla T4",
            "    FB Memory Usage",
            "        Total                             : 15360 MiB",
            "        Used                              : 1032 MiB",
            "    Power Readings",
            "        Power Draw                        : 26.78 W",
            "        Power Limit                       : 70.00 W",
        ]
    )
    q = of_type(parse_blocks(NvidiaSmiQParser(), q_text), Gpu)[0]
    for name in ("bus_id", "name", "memory_total_mib", "memory_used_mib", "power_draw_w"):
        assert getattr(q, name) == getattr(xml, name), name


def test_truncated_xml_keeps_what_was_complete() -> None:
    lines = fixture_text("nvidia-smi-xml/rtx-a5000-x2-590.44-v13.txt").splitlines()
    cut = "\n".join(lines[:960])  # inside the second <gpu>, after its <pci> section started
    found = blocks(NvidiaSmiXmlParser(), cut)
    assert len(found) == 1
    assert found[0][-1].number == 960
    facts = parse_blocks(NvidiaSmiXmlParser(), cut)
    gpus = of_type(facts, Gpu)
    assert [g.bus_id for g in gpus] == ["00000000:81:00.0", "00000000:C1:00.0"]
    assert gpus[1].name == "NVIDIA RTX A5000"
    assert gpus[1].memory_used_mib is None
    assert len(of_type(facts, GpuProcess)) == 1


def test_truncated_processes_are_not_none_found() -> None:
    text = "\n".join(
        [
            "<nvidia_smi_log>",
            '\t<gpu id="00000000:06:00.0">',
            "\t\t<processes>",
            "\t\t\t<process_info>",
            "\t\t\t\t<pid>1842</pid>",
        ]
    )
    facts = parse_blocks(NvidiaSmiXmlParser(), text)
    (table,) = of_type(facts, GpuProcessTable)
    assert (table.truncated, table.none_found) == (True, False)
    (proc,) = of_type(facts, GpuProcess)
    assert proc.pid == 1842
    assert proc.gpu_bus_id == "00000000:06:00.0"


def test_internal_entities_are_never_expanded() -> None:
    text = "\n".join(
        [
            '<?xml version="1.0"?>',
            "<!DOCTYPE nvidia_smi_log [",
            '  <!ENTITY lol "lol">',
            '  <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">',
            "]>",
            "<nvidia_smi_log>",
            "  <driver_version>550.54.15</driver_version>",
            "  <timestamp>&lol2;</timestamp>",
            "  <cuda_version>12.4</cuda_version>",
            "</nvidia_smi_log>",
        ]
    )
    facts = parse_blocks(NvidiaSmiXmlParser(), text)
    (driver,) = of_type(facts, DriverInfo)
    assert driver.driver_version == "550.54.15"
    assert driver.timestamp is None
    assert driver.cuda_version is None


def test_old_double_bit_ecc_elements_and_unknown_error() -> None:
    text = """\
<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v10.dtd">
<nvidia_smi_log>
    <driver_version>418.87.01</driver_version>
    <attached_gpus>1</attached_gpus>
    <gpu id="0000:3B:00.0">
        <product_name>Tesla V100-PCIE-32GB</product_name>
        <ecc_errors>
            <volatile>
                <single_bit>
                    <device_memory>4</device_memory>
                    <total>4</total>
                </single_bit>
                <double_bit>
                    <device_memory>2</device_memory>
                    <total>2</total>
                </double_bit>
            </volatile>
        </ecc_errors>
        <power_readings>
            <power_draw>Unknown Error</power_draw>
        </power_readings>
    </gpu>
</nvidia_smi_log>
"""
    facts = parse_blocks(NvidiaSmiXmlParser(), text)
    (gpu,) = of_type(facts, Gpu)
    assert gpu.bus_id == "00000000:3B:00.0"
    assert (gpu.ecc_volatile_uncorrected, gpu.ecc_volatile_corrected) == (2, 4)
    assert gpu.errors == ("power_draw_w",)
    assert gpu.cite_of("ecc_volatile_uncorrected").line == 16


def test_prefixed_lines_from_a_collector() -> None:
    raw = fixture_text("nvidia-smi-xml/tesla-t4-515.105-procs.txt").splitlines()
    text = "\n".join(f"2024-05-01T10:00:00.000000000Z stdout F {line}" for line in raw)
    facts = parse_blocks(NvidiaSmiXmlParser(), text)
    assert len(of_type(facts, GpuProcess)) == 2


def test_other_xml_document_is_left_after_its_head() -> None:
    text = "\n".join(
        [
            '<?xml version="1.0"?>',
            '<system version="1">',
            '  <cpu numaid="0" affinity="ffff" arch="x86_64">',
            '    <pci busid="0000:17:00.0" class="0x060400"/>',
            "  </cpu>",
            "</system>",
        ]
    )
    found = blocks(NvidiaSmiXmlParser(), text)
    assert [len(b) for b in found] == [3]
    assert parse_blocks(NvidiaSmiXmlParser(), text) == []


def test_block_ends_at_the_root_end_tag() -> None:
    text = (
        fixture_text("nvidia-smi-xml/rtx3060-570.124.txt") + "\n<?xml version='1.0'?>\nroot@x:~#\n"
    )
    found = blocks(NvidiaSmiXmlParser(), text)
    assert found[0][-1].text.strip() == "</nvidia_smi_log>"


OTHER_KINDS = sorted(p for p in FORMATS.glob("*/*.txt") if p.parent.name != "nvidia-smi-xml")


@pytest.mark.parametrize("path", OTHER_KINDS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_other_kinds_do_not_start_a_block(path: Path) -> None:
    text = path.read_bytes().decode("utf-8", errors="replace")
    assert blocks(NvidiaSmiXmlParser(), text) == []


def test_every_fixture_block_starts_on_an_anchor() -> None:
    parser = NvidiaSmiXmlParser()
    for path in sorted((FORMATS / "nvidia-smi-xml").glob("*.txt")):
        found = blocks(parser, path.read_bytes().decode("utf-8", errors="replace"))
        assert len(found) == 1, path.name
        assert any(a in found[0][0].raw for a in parser.anchors), path.name
