"""nvidia-smi -q / -a: every fixture, older and newer layouts, processes, negatives."""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.facts.gpu import DriverInfo, Gpu, GpuProcess, GpuProcessTable, MigDevice
from nccl_doctor.parse.nvidia_smi_q import NvidiaSmiQParser
from tests.helpers import FORMATS, blocks, fixture_text, of_type, parse_blocks


def test_375_four_digit_domain_no_cuda_version() -> None:
    facts = parse_blocks(
        NvidiaSmiQParser(),
        fixture_text("nvidia-smi-q/375.82-quadro-m1000m-4digit-pci-domain-partial.txt"),
    )
    (driver,) = of_type(facts, DriverInfo)
    assert (driver.driver_version, driver.cuda_version, driver.attached_gpus) == ("375.82", None, 1)
    assert driver.timestamp == "Mon Apr  2 19:47:58 2018"
    assert driver.cite.line == 4
    (gpu,) = of_type(facts, Gpu)
    assert gpu.bus_id == "00000000:01:00.0"
    assert gpu.index is None
    assert (gpu.name, gpu.product_brand, gpu.minor_number) == ("Quadro M1000M", "Quadro", 0)
    assert gpu.uuid == "GPU-7cfc2710-0025-0d50-7ce9-5c877f079cb4"
    assert (gpu.persistence_mode, gpu.display_active, gpu.serial) == (False, True, None)
    assert gpu.vbios_version == "82.07.9D.00.1F"
    assert gpu.cite.text == "GPU 0000:01:00.0"


def test_450_gtx780_mig_mode_na_and_prompt() -> None:
    text = fixture_text("nvidia-smi-q/450.66-gtx780-mig-mode-na-partial.txt")
    assert [(b[0].number, b[-1].number) for b in blocks(NvidiaSmiQParser(), text)] == [(3, 33)]
    facts = parse_blocks(NvidiaSmiQParser(), text)
    (driver,) = of_type(facts, DriverInfo)
    assert (driver.driver_version, driver.cuda_version) == ("450.66", "11.0")
    (gpu,) = of_type(facts, Gpu)
    assert (gpu.name, gpu.mig_mode, gpu.mig_mode_pending, gpu.display_active) == (
        "GeForce GTX 780",
        None,
        None,
        None,
    )
    assert gpu.uuid == "GPU-a230e637-c9e1-1b61-3830-a437b874d88d"


def test_510_dash_a_prompt_without_space() -> None:
    text = fixture_text("nvidia-smi-q/510.68-gtx1650-dash-a-prompt-partial.txt")
    assert [b[0].number for b in blocks(NvidiaSmiQParser(), text)] == [3]
    facts = parse_blocks(NvidiaSmiQParser(), text)
    (driver,) = of_type(facts, DriverInfo)
    assert (driver.driver_version, driver.cuda_version) == ("510.68.02", "11.6")
    (gpu,) = of_type(facts, Gpu)
    assert (gpu.bus_id, gpu.product_architecture, gpu.name) == (
        "00000000:82:00.0",
        "Turing",
        "NVIDIA GeForce GTX 1650",
    )


def test_a100_ecc_corrected_and_remapped_rows_pending() -> None:
    facts = parse_blocks(
        NvidiaSmiQParser(),
        fixture_text("nvidia-smi-q/a100-510.73-ecc-remapped-rows-pending-elided.txt"),
    )
    (driver,) = of_type(facts, DriverInfo)
    assert (driver.driver_version, driver.attached_gpus) == ("510.73.08", 8)
    (gpu,) = of_type(facts, Gpu)
    assert gpu.bus_id == "00000000:10:1C.0"
    assert (gpu.ecc_volatile_corrected, gpu.ecc_volatile_uncorrected) == (177, 0)
    assert (gpu.ecc_aggregate_corrected, gpu.ecc_aggregate_uncorrected) == (177, 0)
    assert (gpu.retired_pages_single_bit, gpu.retired_pages_pending) == (None, None)
    assert (gpu.remapped_rows_correctable, gpu.remapped_rows_uncorrectable) == (1, 0)
    assert (gpu.remapped_rows_pending, gpu.remapped_rows_failure) == (True, False)
    pending = gpu.cite_of("remapped_rows_pending")
    assert pending.line == 27
    assert pending.text.endswith("Pending                           : Yes")
    assert gpu.cite_of("no_such_field") == gpu.cite


def test_a100_x8_complete_dash_a() -> None:
    text = fixture_text("nvidia-smi-q/a100-sxm4-40gb-x8-535.129-dash-a-complete.txt")
    found = blocks(NvidiaSmiQParser(), text)
    assert [(b[0].number, b[-1].number) for b in found] == [(3, 1568)]
    facts = parse_blocks(NvidiaSmiQParser(), text)
    (driver,) = of_type(facts, DriverInfo)
    assert (driver.driver_version, driver.cuda_version, driver.attached_gpus) == (
        "535.129.03",
        "12.2",
        8,
    )
    gpus = of_type(facts, Gpu)
    assert [g.bus_id for g in gpus] == [
        "00000000:2F:00.0",
        "00000000:35:00.0",
        "00000000:62:00.0",
        "00000000:67:00.0",
        "00000000:9F:00.0",
        "00000000:A5:00.0",
        "00000000:C8:00.0",
        "00000000:CD:00.0",
    ]
    assert [g.minor_number for g in gpus] == list(range(8))
    first = gpus[0]
    assert (first.name, first.serial, first.product_architecture) == (
        "NVIDIA A100-SXM4-40GB",
        "1323121035405",
        "Ampere",
    )
    assert (first.memory_used_mib, first.memory_total_mib, first.memory_reserved_mib) == (
        4,
        40960,
        620,
    )
    assert (first.power_draw_w, first.power_limit_w) == (52.12, 400.0)
    assert (first.temperature_c, first.temperature_slowdown_c, first.perf_state) == (22, 89, "P0")
    assert (first.pcie_gen_current, first.pcie_gen_max, first.pcie_gen_host_max) == (4, 4, 3)
    assert (first.pcie_width_current, first.pcie_width_max, first.pcie_replays) == (16, 16, 0)
    assert first.clocks_event_reasons == ("gpu_idle",)
    assert (first.ecc_mode, first.ecc_volatile_uncorrected, first.ecc_aggregate_uncorrected) == (
        True,
        0,
        0,
    )
    assert (first.mig_mode, first.compute_mode, first.reset_required) == (False, "Default", False)
    assert (first.fabric_state, first.fabric_status) == (None, None)
    assert first.cite_of("power_draw_w").line == 162
    tables = of_type(facts, GpuProcessTable)
    assert len(tables) == 8
    assert all(t.none_found and t.rows == 0 for t in tables)
    assert tables[0].gpu_bus_id == "00000000:2F:00.0"
    assert tables[0].cite.line == 203
    assert gpus[7].power_draw_w == 53.1


def test_h800_single_gpu_fabric_completed() -> None:
    facts = parse_blocks(
        NvidiaSmiQParser(), fixture_text("nvidia-smi-q/h800-525.105-single-gpu-complete-fabric.txt")
    )
    (driver,) = of_type(facts, DriverInfo)
    assert (driver.driver_version, driver.cuda_version, driver.attached_gpus) == (
        "525.105.17",
        "12.0",
        8,
    )
    (gpu,) = of_type(facts, Gpu)
    assert (gpu.fabric_state, gpu.fabric_status) == ("Completed", "Success")
    assert (gpu.name, gpu.product_architecture, gpu.persistence_mode) == (
        "NVIDIA H800",
        "Hopper",
        True,
    )
    assert (gpu.power_draw_w, gpu.power_limit_w) == (74.71, 700.0)
    assert (gpu.ecc_mode, gpu.ecc_volatile_uncorrected) == (False, None)
    assert (gpu.remapped_rows_pending, gpu.pcie_gen_current, gpu.pcie_width_current) == (
        False,
        5,
        16,
    )
    assert (gpu.memory_total_mib, gpu.memory_reserved_mib, gpu.fan_pct) == (81559, 516, None)
    (table,) = of_type(facts, GpuProcessTable)
    assert table.none_found
    assert table.cite.text.startswith("    Processes")


OLD_Q = """\
==============NVSMI LOG==============

Timestamp                           : Tue Jun  4 10:21:33 2019
Driver Version                      : 418.67
CUDA Version                        : 10.1

Attached GPUs                       : 1
GPU 00000000:00:1E.0
    Product Name                    : Tesla V100-SXM2-16GB
    Persistence Mode                : Enabled
    PCI
        Bus                         : 0x00
        Bus Id                      : 00000000:00:1E.0
        GPU Link Info
            PCIe Generation
                Max                 : 3
                Current             : 1
            Link Width
                Max                 : 16x
                Current             : 8x
    Fan Speed                       : N/A
    Performance State               : P0
    Clocks Throttle Reasons
        Idle                        : Not Active
        Applications Clocks Setting : Not Active
        SW Power Cap                : Not Active
        HW Slowdown                 : Active
            HW Thermal Slowdown     : Active
            HW Power Brake Slowdown : Not Active
        Sync Boost                  : Not Active
        SW Thermal Slowdown         : Not Active
        Display Clock Setting       : Not Active
    FB Memory Usage
        Total                       : 16130 MiB
        Used                        : 15000 MiB
        Free                        : 1130 MiB
    Compute Mode                    : Exclusive_Process
    Ecc Mode
        Current                     : Enabled
        Pending                     : Enabled
    ECC Errors
        Volatile
            Single Bit
                Device Memory       : 2
                Register File       : 0
                Total               : 2
            Double Bit
                Device Memory       : 1
                Register File       : 0
                Total               : 1
        Aggregate
            Single Bit
                Total               : 5
            Double Bit
                Total               : 1
    Retired Pages
        Single Bit ECC              : 0
        Double Bit ECC              : 1
        Pending                     : Yes
    Temperature
        GPU Current Temp            : 91 C
        GPU Shutdown Temp           : 90 C
        GPU Slowdown Temp           : 87 C
    Power Readings
        Power Management            : Supported
        Power Draw                  : Unknown Error
        Power Limit                 : 300.00 W
        Enforced Power Limit        : 300.00 W
    Processes
        Process ID                  : 4242
            Type                    : C
            Name                    : python
            Used GPU Memory         : 14990 MiB
        Process ID                  : 4343
            Type                    : C
            Name                    : python3
            Used GPU Memory         : 8 MiB
"""


def test_old_layout_double_bit_ecc_throttle_unknown_error_processes() -> None:
    facts = parse_blocks(NvidiaSmiQParser(), OLD_Q)
    (gpu,) = of_type(facts, Gpu)
    assert (gpu.ecc_volatile_corrected, gpu.ecc_volatile_uncorrected) == (2, 1)
    assert (gpu.ecc_aggregate_corrected, gpu.ecc_aggregate_uncorrected) == (5, 1)
    assert (gpu.retired_pages_double_bit, gpu.retired_pages_pending) == (1, True)
    assert gpu.clocks_event_reasons == ("hw_slowdown", "hw_thermal_slowdown")
    assert gpu.power_draw_w is None
    assert gpu.errors == ("power_draw_w",)
    assert gpu.power_limit_w == 300.0
    assert gpu.compute_mode == "Exclusive_Process"
    assert (gpu.pcie_gen_current, gpu.pcie_gen_max, gpu.pcie_width_current) == (1, 3, 8)
    assert (gpu.temperature_c, gpu.temperature_slowdown_c) == (91, 87)
    assert gpu.cite_of("power_draw_w").text.strip().startswith("Power Draw")
    procs = of_type(facts, GpuProcess)
    assert [(p.pid, p.type, p.name, p.memory_used_mib) for p in procs] == [
        (4242, "C", "python", 14990),
        (4343, "C", "python3", 8),
    ]
    assert procs[0].gpu_bus_id == "00000000:00:1E.0"
    assert procs[0].gpu_index is None
    assert procs[0].cite.text.strip().startswith("Process ID")
    (table,) = of_type(facts, GpuProcessTable)
    assert (table.rows, table.none_found) == (2, False)


NEW_PROCESSES = """\
GPU 00000000:01:00.0
    Product Name                          : NVIDIA GeForce RTX 3090
    Processes
        GPU instance ID                   : N/A
        Compute instance ID               : N/A
        Process ID                        : 924
            Type                          : C+G
            Name                          : Insufficient Permissions
            Used GPU Memory               : Not available in WDDM driver model
        GPU instance ID                   : N/A
        Compute instance ID               : N/A
        Process ID                        : 3402470
            Type                          : C
            Name                          :
            Used GPU Memory               : 8716 MiB
        GPU instance ID                   : 1
        Compute instance ID               : 0
        Process ID                        : 3141
            Type                          : C
            Name                          : C:\\tools\\run: a, b.exe
            Used GPU Memory               : 12 MiB
"""


def test_450_plus_processes_with_instance_ids_and_odd_names() -> None:
    facts = parse_blocks(NvidiaSmiQParser(), NEW_PROCESSES)
    assert not of_type(facts, DriverInfo)
    procs = of_type(facts, GpuProcess)
    assert [(p.pid, p.type, p.name, p.memory_used_mib, p.gi_id, p.ci_id) for p in procs] == [
        (924, "C+G", "Insufficient Permissions", None, None, None),
        (3402470, "C", None, 8716, None, None),
        (3141, "C", "C:\\tools\\run: a, b.exe", 12, 1, 0),
    ]


MIG_Q = """\
GPU 00000000:01:00.0
    Product Name                          : NVIDIA A100-SXM4-80GB
    MIG Mode
        Current                           : Enabled
        Pending                           : Enabled
    MIG Devices
        MIG Device
            Index                         : 0
            GPU Instance ID               : 3
            Compute Instance ID           : 0
            Device Attributes
                Shared
                    Multiprocessor count  : 14
                    Copy Engine count     : 1
            ECC Errors
                Volatile
                    SRAM Uncorrectable    : 0
            FB Memory Usage
                Total                     : 19968 MiB
                Used                      : 12 MiB
        MIG Device
            Index                         : 1
            GPU Instance ID               : 4
            Compute Instance ID           : 0
            FB Memory Usage
                Total                     : 19968 MiB
                Used                      : 13 MiB
    Compute Mode                          : Default
"""


def test_mig_devices_read_like_the_xml_elements() -> None:
    facts = parse_blocks(NvidiaSmiQParser(), MIG_Q)
    (gpu,) = of_type(facts, Gpu)
    assert (gpu.mig_mode, gpu.mig_mode_pending, gpu.compute_mode) == (True, True, "Default")
    assert gpu.memory_used_mib is None  # the MIG devices' memory is not the GPU's
    migs = of_type(facts, MigDevice)
    assert [(m.mig_index, m.gi_id, m.ci_id, m.memory_used_mib) for m in migs] == [
        (0, 3, 0, 12),
        (1, 4, 0, 13),
    ]
    assert (migs[0].sm_count, migs[0].copy_engines, migs[0].ecc_volatile_uncorrected) == (14, 1, 0)
    assert migs[0].gpu_bus_id == "00000000:01:00.0"


def test_two_outputs_in_one_block_give_two_drivers() -> None:
    one = fixture_text("nvidia-smi-q/450.66-gtx780-mig-mode-na-partial.txt").split("\n", 2)[2]
    facts = parse_blocks(NvidiaSmiQParser(), one + "\n" + one)
    drivers = of_type(facts, DriverInfo)
    assert len(drivers) == 2
    assert [type(f).__name__ for f in facts] == ["DriverInfo", "Gpu", "DriverInfo", "Gpu"]


def test_block_ends_at_the_prompt_after_the_output() -> None:
    text = NEW_PROCESSES + "root@node:~# ls\nfile.txt\n"
    found = blocks(NvidiaSmiQParser(), text)
    assert len(found) == 1
    assert found[0][-1].text.strip().startswith("Used GPU Memory")


def test_query_value_with_gpu_fallen_off_the_bus() -> None:
    text = (
        "GPU 00000000:3B:00.0\n"
        "    Product Name                          : Tesla V100-SXM2-32GB\n"
        "    Fan Speed                             : Unknown Error\n"
        "    Performance State                     : Unknown Error\n"
        "    FB Memory Usage\n"
        "        Total                             : GPU is lost\n"
    )
    (gpu,) = of_type(parse_blocks(NvidiaSmiQParser(), text), Gpu)
    assert gpu.errors == ("fan_pct", "perf_state", "memory_total_mib")
    assert gpu.fan_pct is None
    assert gpu.memory_total_mib is None


OTHER_KINDS = sorted(p for p in FORMATS.glob("*/*.txt") if p.parent.name != "nvidia-smi-q")


@pytest.mark.parametrize("path", OTHER_KINDS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_other_kinds_do_not_start_a_block(path: Path) -> None:
    text = path.read_bytes().decode("utf-8", errors="replace")
    assert blocks(NvidiaSmiQParser(), text) == []


def test_handle_error_mentioning_a_bus_id_is_not_a_section() -> None:
    text = "Unable to determine the device handle for GPU 0000:04:00.0: GPU is lost\n"
    assert blocks(NvidiaSmiQParser(), text) == []


def test_every_fixture_block_starts_on_an_anchor() -> None:
    parser = NvidiaSmiQParser()
    for path in sorted((FORMATS / "nvidia-smi-q").glob("*.txt")):
        found = blocks(parser, path.read_bytes().decode("utf-8", errors="replace"))
        assert found, path.name
        for block in found:
            assert any(a in block[0].raw for a in parser.anchors), path.name


def test_sections_pasted_alone_are_one_gpu_each() -> None:
    # nvidia-smi -q -i 5 -d ROW_REMAPPER | tail -6, then a grep of -d PCIE over two GPUs
    text = (
        "$ nvidia-smi -q -i 5 -d ROW_REMAPPER | tail -6\n"
        "    Remapped Rows\n"
        "        Correctable Error                 : 0\n"
        "        Uncorrectable Error               : 2\n"
        "        Pending                           : Yes\n"
        "        Remapping Failure Occurred        : No\n"
        "\n"
        "$ nvidia-smi -q -d PCIE | grep -A4 -E 'PCIe Generation|Link Width'\n"
        "            PCIe Generation\n"
        "                Max                       : 4\n"
        "                Current                   : 4\n"
        "            Link Width\n"
        "                Max                       : 16x\n"
        "                Current                   : 8x\n"
        "            PCIe Generation\n"
        "                Max                       : 4\n"
        "                Current                   : 4\n"
        "            Link Width\n"
        "                Max                       : 16x\n"
        "                Current                   : 16x\n"
    )
    gpus = of_type(parse_blocks(NvidiaSmiQParser(), text), Gpu)
    assert [
        (g.remapped_rows_uncorrectable, g.remapped_rows_pending, g.pcie_width_current) for g in gpus
    ] == [(2, True, None), (None, None, 8), (None, None, 16)]
    assert [(g.pcie_gen_current, g.pcie_width_max) for g in gpus[1:]] == [(4, 16), (4, 16)]


def test_a_section_inside_a_gpu_is_not_alone() -> None:
    text = (
        "GPU 00000000:3B:00.0\n"
        "    Product Name                          : NVIDIA A100-SXM4-80GB\n"
        "    Remapped Rows\n"
        "        Correctable Error                 : 0\n"
        "        Uncorrectable Error               : 0\n"
        "        Pending                           : No\n"
        "    ECC Errors\n"
        "        Volatile\n"
        "            DRAM Uncorrectable            : 0\n"
    )
    gpus = of_type(parse_blocks(NvidiaSmiQParser(), text), Gpu)
    assert [(g.bus_id, g.remapped_rows_pending) for g in gpus] == [("00000000:3B:00.0", False)]
