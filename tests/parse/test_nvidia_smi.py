"""The default nvidia-smi table: every fixture, layouts the fixtures lack, messages, negatives."""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.gpu import (
    DriverInfo,
    Gpu,
    GpuProcess,
    GpuProcessTable,
    MigDevice,
    SmiError,
)
from nccl_doctor.parse.nvidia_smi import NvidiaSmiParser
from tests.helpers import FORMATS, blocks, fixture_text, of_type, parse_blocks

EXAMPLE = Path(__file__).parents[2] / "examples" / "h200-cuda-999" / "nvidia-smi.txt"


def test_390_eight_gtx1080ti_old_process_table() -> None:
    facts = parse_blocks(
        NvidiaSmiParser(), fixture_text("nvidia-smi/390.25-8x-gtx1080ti-procs-truncated-names.txt")
    )
    (driver,) = of_type(facts, DriverInfo)
    assert (driver.driver_version, driver.cuda_version, driver.smi_version) == (
        "390.25",
        None,
        "390.25",
    )
    gpus = of_type(facts, Gpu)
    assert [g.index for g in gpus] == list(range(8))
    first = gpus[0]
    assert first.name == "GeForce GTX 108..."
    assert first.name_truncated
    assert first.bus_id == "00000000:04:00.0"
    assert (first.fan_pct, first.temperature_c, first.perf_state) == (53, 75, "P2")
    assert (first.power_draw_w, first.power_limit_w) == (223.0, 250.0)
    assert (first.memory_used_mib, first.memory_total_mib) == (10807, 11178)
    assert (first.utilization_gpu_pct, first.compute_mode) == (98, "Default")
    assert first.persistence_mode is False
    assert first.ecc_mode is None
    assert first.mig_mode is None
    assert first.errors == ()
    assert first.cite.line == 8
    procs = of_type(facts, GpuProcess)
    assert len(procs) == 13
    matlab = next(p for p in procs if p.pid == 4755)
    assert (matlab.gpu_index, matlab.type, matlab.memory_used_mib) == (3, "C", 389)
    assert matlab.name == "...ware/MATLAB/matlab94/bin/glnxa64/MATLAB"
    assert matlab.name_truncated
    assert matlab.gi_id is None
    assert matlab.ci_id is None
    assert [p.pid for p in procs if p.gpu_index == 4] == [13956, 14293, 14294, 14295]
    (table,) = of_type(facts, GpuProcessTable)
    assert (table.rows, table.none_found, table.truncated) == (13, False, False)


def test_440_docker_empty_process_table_is_not_none_found() -> None:
    facts = parse_blocks(
        NvidiaSmiParser(), fixture_text("nvidia-smi/440.82-2x-gtx1080ti-docker-no-procs.txt")
    )
    (driver,) = of_type(facts, DriverInfo)
    assert (driver.driver_version, driver.cuda_version) == ("440.82", "10.2")
    gpus = of_type(facts, Gpu)
    assert [(g.index, g.perf_state, g.memory_used_mib) for g in gpus] == [
        (0, "P2", 10916),
        (1, "P8", 149),
    ]
    assert gpus[1].memory_total_mib == 11178
    assert gpus[0].memory_total_mib == 11175
    (table,) = of_type(facts, GpuProcessTable)
    assert (table.rows, table.none_found, table.truncated) == (0, False, False)
    assert not of_type(facts, GpuProcess)


def test_450_mig_row_titan_xp() -> None:
    facts = parse_blocks(
        NvidiaSmiParser(), fixture_text("nvidia-smi/450.57-titan-xp-gpu-table-only.txt")
    )
    (driver,) = of_type(facts, DriverInfo)
    assert (driver.driver_version, driver.cuda_version) == ("450.57", "11.0")
    (gpu,) = of_type(facts, Gpu)
    assert (gpu.name, gpu.name_truncated, gpu.persistence_mode) == ("TITAN Xp", False, True)
    assert (gpu.fan_pct, gpu.temperature_c, gpu.power_draw_w, gpu.memory_used_mib) == (
        23,
        39,
        9.0,
        7,
    )
    assert gpu.mig_mode is None  # N/A: no MIG on Pascal
    assert not of_type(facts, GpuProcessTable)


def test_550_tesla_p4_ecc_off_and_cut_processes() -> None:
    text = fixture_text("nvidia-smi/550.135-tesla-p4-ecc-off-padded-blank-line.txt")
    found = blocks(NvidiaSmiParser(), text)
    assert [(b[0].number, b[-1].number) for b in found] == [(2, 15)]
    facts = parse_blocks(NvidiaSmiParser(), text)
    (gpu,) = of_type(facts, Gpu)
    assert gpu.ecc_mode is False
    assert gpu.ecc_volatile_uncorrected is None
    assert gpu.fan_pct is None
    assert gpu.temperature_c == 49
    assert (gpu.power_draw_w, gpu.power_limit_w) == (24.0, 75.0)
    assert (gpu.memory_used_mib, gpu.memory_total_mib, gpu.utilization_gpu_pct) == (7719, 8192, 6)
    assert gpu.bus_id == "00000000:86:00.0"
    (table,) = of_type(facts, GpuProcessTable)
    assert (table.rows, table.truncated, table.cite.line) == (0, True, 15)


def test_two_hosts_two_tables_driver_mismatch() -> None:
    text = fixture_text("nvidia-smi/570-vs-550-two-hosts-run-cmd-prefix-v100-xorg.txt")
    found = blocks(NvidiaSmiParser(), text)
    assert [(b[0].number, b[-1].number) for b in found] == [(5, 28), (32, 55)]
    facts = parse_blocks(NvidiaSmiParser(), text)
    drivers = of_type(facts, DriverInfo)
    assert [(d.driver_version, d.cuda_version) for d in drivers] == [
        ("570.133.20", "12.8"),
        ("550.144.03", "12.4"),
    ]
    gpus = of_type(facts, Gpu)
    assert [g.bus_id for g in gpus] == [
        "00000000:08:00.0",
        "00000000:85:00.0",
        "00000000:08:00.0",
        "00000000:82:00.0",
    ]
    assert all(g.ecc_volatile_uncorrected == 0 and g.ecc_mode for g in gpus)
    assert all(g.mig_mode is None and g.power_limit_w == 300.0 for g in gpus)
    procs = of_type(facts, GpuProcess)
    assert [(p.gpu_index, p.pid, p.type, p.name, p.memory_used_mib) for p in procs] == [
        (0, 3486, "G", "/usr/lib/xorg/Xorg", 4),
        (1, 3486, "G", "/usr/lib/xorg/Xorg", 4),
        (0, 2412, "G", "/usr/lib/xorg/Xorg", 4),
        (1, 2412, "G", "/usr/lib/xorg/Xorg", 4),
    ]
    assert procs[0].cite.text.startswith("|    0   N/A  N/A            3486")


def test_570_l40s_seven_digit_pid_cut_path() -> None:
    facts = parse_blocks(
        NvidiaSmiParser(), fixture_text("nvidia-smi/570.195-3x-l40s-truncated-process-path.txt")
    )
    assert [g.index for g in of_type(facts, Gpu)] == [0, 1, 2]
    (proc,) = of_type(facts, GpuProcess)
    assert (proc.pid, proc.gpu_index, proc.type, proc.memory_used_mib) == (3330776, 0, "C", 41504)
    assert proc.name == "...ma.cpp/build/bin/llama-server"
    assert proc.name_truncated


def test_570_h100_no_running_processes() -> None:
    text = fixture_text("nvidia-smi/570.195-h100-slurm-srun-prompt-no-procs.txt")
    assert [b[0].number for b in blocks(NvidiaSmiParser(), text)] == [4]
    facts = parse_blocks(NvidiaSmiParser(), text)
    (gpu,) = of_type(facts, Gpu)
    assert (gpu.name, gpu.mig_mode, gpu.power_draw_w, gpu.power_limit_w) == (
        "NVIDIA H100 80GB HBM3",
        False,
        104.0,
        700.0,
    )
    assert (gpu.memory_used_mib, gpu.memory_total_mib) == (0, 81559)
    (table,) = of_type(facts, GpuProcessTable)
    assert (table.rows, table.none_found, table.truncated) == (0, True, False)


def test_fragment_hyperv_domain_and_err_power() -> None:
    facts = parse_blocks(
        NvidiaSmiParser(),
        fixture_text("nvidia-smi/fragment-v100-pcie-azure-err-power-domain-8ed0.txt"),
    )
    assert not of_type(facts, DriverInfo)
    (gpu,) = of_type(facts, Gpu)
    assert (gpu.index, gpu.bus_id, gpu.name_truncated) == (1, "00008ED0:00:00.0", True)
    assert gpu.power_draw_w is None
    assert gpu.power_limit_w == 250.0
    assert gpu.errors == ("power_draw_w",)
    assert (gpu.memory_used_mib, gpu.memory_total_mib, gpu.ecc_volatile_uncorrected) == (
        593,
        16160,
        0,
    )


def test_mig_devices_section() -> None:
    facts = parse_blocks(
        NvidiaSmiParser(), fixture_text("nvidia-smi/mig-devices-section-a100-3-instances.txt")
    )
    migs = of_type(facts, MigDevice)
    assert [(m.gpu_index, m.gi_id, m.ci_id, m.mig_index) for m in migs] == [
        (1, 3, 0, 0),
        (1, 5, 0, 1),
        (1, 6, 0, 2),
    ]
    first = migs[0]
    assert (first.memory_used_mib, first.memory_total_mib) == (14366, 19968)
    assert (first.bar1_used_mib, first.bar1_total_mib) == (4, 32767)
    assert (first.sm_count, first.ecc_volatile_uncorrected) == (28, 0)
    assert (
        first.copy_engines,
        first.encoders,
        first.decoders,
        first.ofa_count,
        first.jpeg_count,
    ) == (
        2,
        0,
        1,
        0,
        0,
    )
    assert not of_type(facts, Gpu)


def test_h200_example_processes_only_cut_last_row() -> None:
    text = EXAMPLE.read_bytes().decode("utf-8", errors="replace")
    facts = parse_blocks(NvidiaSmiParser(), text, "nvidia-smi.txt")
    procs = of_type(facts, GpuProcess)
    assert len(procs) == 9
    first = procs[0]
    assert (first.gpu_index, first.pid, first.type, first.memory_used_mib) == (
        0,
        1775815,
        "C",
        55824,
    )
    assert first.name == "...kground_change/bin/python3.10"
    assert first.name_truncated
    assert (first.gi_id, first.ci_id) == (None, None)
    assert [p.gpu_index for p in procs] == [0, 0, 2, 3, 4, 4, 4, 4, 5]
    triton = [p for p in procs if p.name == "tritonserver"]
    assert [(p.gpu_index, p.memory_used_mib) for p in triton] == [(2, 36392), (3, 14844)]
    assert procs[2].cite == Cite.of("nvidia-smi.txt", 8, text.splitlines()[7])
    (table,) = of_type(facts, GpuProcessTable)
    assert (table.rows, table.truncated, table.cut_row_gpu_indices) == (9, True, (6,))
    assert not of_type(facts, Gpu)


TABLE_535_MIG = """\
+---------------------------------------------------------------------------------------+
| NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |
|-----------------------------------------+----------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |
|                                         |                      |               MIG M. |
|=========================================+======================+======================|
|   0  NVIDIA A100-SXM4-80GB          On  | 00000000:00:05.0 Off |                   On |
| N/A   46C    P0              62W / 500W |     51MiB / 81920MiB |     N/A      Default |
|                                         |                      |              Enabled |
+-----------------------------------------+----------------------+----------------------+

+---------------------------------------------------------------------------------------+
| MIG devices:                                                                          |
+------------------+--------------------------------+-----------+-----------------------+
| GPU  GI  CI  MIG |                   Memory-Usage |        Vol|      Shared           |
|      ID  ID  Dev |                     BAR1-Usage | SM     Unc| CE ENC DEC OFA JPG    |
|                  |                                |        ECC|                       |
|==================+================================+===========+=======================|
|  0    1   0   0  |              26MiB / 40192MiB  | 42      0 |  3   0    2    0    0 |
|                  |               0MiB / 65535MiB  |           |                       |
+------------------+--------------------------------+-----------+-----------------------+
|  0    2   0   1  |              25MiB / 40192MiB  | 42      0 |  3   0    2    0    0 |
|                  |               0MiB / 65535MiB  |           |                       |
+------------------+--------------------------------+-----------+-----------------------+

+---------------------------------------------------------------------------------------+
| Processes:                                                                            |
|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |
|        ID   ID                                                             Usage      |
|=======================================================================================|
|    0    1    0      12345      C   python                                    11968MiB |
+---------------------------------------------------------------------------------------+
"""


def test_535_mig_enabled_gpu_devices_and_instance_processes() -> None:
    facts = parse_blocks(NvidiaSmiParser(), TABLE_535_MIG)
    (gpu,) = of_type(facts, Gpu)
    assert (gpu.mig_mode, gpu.ecc_mode, gpu.ecc_volatile_uncorrected) == (True, True, None)
    assert gpu.utilization_gpu_pct is None
    assert gpu.errors == ()
    migs = of_type(facts, MigDevice)
    assert [(m.gi_id, m.mig_index, m.memory_used_mib, m.sm_count) for m in migs] == [
        (1, 0, 26, 42),
        (2, 1, 25, 42),
    ]
    assert migs[0].bar1_total_mib == 65535
    (proc,) = of_type(facts, GpuProcess)
    assert (proc.gpu_index, proc.gi_id, proc.ci_id, proc.pid, proc.memory_used_mib) == (
        0,
        1,
        0,
        12345,
        11968,
    )


TABLE_470_ERR = """\
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 470.82.01    Driver Version: 470.82.01    CUDA Version: 11.4     |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|                               |                      |               MIG M. |
|===============================+======================+======================|
|   0  Tesla V100-SXM2...  On   | 00000000:00:1E.0 Off |                 ERR! |
|ERR!  ERR!  ERR!    ERR! / ERR! |  16160MiB / 16160MiB |    ERR!      Default |
|                               |                      |                 ERR! |
+-------------------------------+----------------------+----------------------+
|   1  Tesla V100-SXM2...  On   | 00000000:00:1F.0 Off |                    3 |
| N/A   41C    P0    57W / 300W |   2331MiB / 16160MiB |     99%   E. Process |
|                               |                      |                  N/A |
+-------------------------------+----------------------+----------------------+
"""


def test_470_err_gpu_and_volatile_ecc_count() -> None:
    facts = parse_blocks(NvidiaSmiParser(), TABLE_470_ERR)
    lost, busy = of_type(facts, Gpu)
    assert set(lost.errors) == {
        "ecc_volatile_uncorrected",
        "fan_pct",
        "temperature_c",
        "perf_state",
        "power_draw_w",
        "power_limit_w",
        "utilization_gpu_pct",
        "mig_mode",
    }
    assert lost.temperature_c is None
    assert lost.memory_used_mib == 16160
    assert busy.errors == ()
    assert busy.ecc_volatile_uncorrected == 3
    assert (busy.compute_mode, busy.utilization_gpu_pct, busy.temperature_c) == (
        "Exclusive_Process",
        99,
        41,
    )


TABLE_WDDM = """\
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 516.94       Driver Version: 516.94       CUDA Version: 11.7     |
|-------------------------------+----------------------+----------------------+
| GPU  Name            TCC/WDDM | Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|                               |                      |               MIG M. |
|===============================+======================+======================|
|   0  NVIDIA GeForce ... WDDM  | 00000000:01:00.0  On |                  N/A |
| 30%   45C    P8    19W / 170W |    862MiB / 12288MiB |      4%      Default |
|                               |                      |                  N/A |
+-------------------------------+----------------------+----------------------+

+-----------------------------------------------------------------------------+
| Processes:                                                                  |
|  GPU   GI   CI        PID   Type   Process name                  GPU Memory |
|        ID   ID                                                   Usage      |
|=============================================================================|
|    0   N/A  N/A      1234    C+G   C:\\Windows\\explorer.exe         N/A      |
|    0   N/A  N/A      5678    C+G   ...8bbwe\\WindowsTerminal.exe    N/A      |
+-----------------------------------------------------------------------------+
"""


def test_windows_wddm_and_na_process_memory() -> None:
    facts = parse_blocks(NvidiaSmiParser(), TABLE_WDDM)
    (gpu,) = of_type(facts, Gpu)
    assert (gpu.driver_model, gpu.persistence_mode, gpu.display_active) == ("WDDM", None, True)
    assert gpu.name == "NVIDIA GeForce ..."
    assert gpu.name_truncated
    procs = of_type(facts, GpuProcess)
    assert [(p.pid, p.type, p.name, p.memory_used_mib) for p in procs] == [
        (1234, "C+G", "C:\\Windows\\explorer.exe", None),
        (5678, "C+G", "...8bbwe\\WindowsTerminal.exe", None),
    ]
    assert procs[1].name_truncated


def test_580_layout_indented_like_notebook_output() -> None:
    text = """\
    Wed Aug 12 07:54:38 2026
    +-----------------------------------------------------------------------------------------+
    | NVIDIA-SMI 580.65.05              Driver Version: 580.88         CUDA Version: 13.0     |
    +-----------------------------------------+------------------------+----------------------+
    | GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
    | Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
    |                                         |                        |               MIG M. |
    |=========================================+========================+======================|
    |   0  NVIDIA GeForce RTX 5090 ...    On  |   00000000:01:00.0 Off |                  N/A |
    | N/A   45C    P8              5W /  150W |   22504MiB /  24463MiB |      0%      Default |
    |                                         |                        |                  N/A |
    +-----------------------------------------+------------------------+----------------------+
"""
    facts = parse_blocks(NvidiaSmiParser(), text)
    (driver,) = of_type(facts, DriverInfo)
    assert (driver.smi_version, driver.driver_version, driver.cuda_version) == (
        "580.65.05",
        "580.88",
        "13.0",
    )
    (gpu,) = of_type(facts, Gpu)
    assert gpu.name == "NVIDIA GeForce RTX 5090 ..."
    assert gpu.name_truncated
    assert (gpu.power_draw_w, gpu.power_limit_w, gpu.memory_used_mib) == (5.0, 150.0, 22504)


def test_vgpu_na_power_and_memory_cells() -> None:
    text = """\
+-------------------------------+----------------------+----------------------+
|   0  GRID A100-2-10C     On   | 00000000:02:00.0 Off |                   On |
| N/A   N/A    P0    N/A /  N/A |                  N/A |     N/A      Default |
|                               |                      |              Enabled |
+-------------------------------+----------------------+----------------------+
"""
    (gpu,) = of_type(parse_blocks(NvidiaSmiParser(), text), Gpu)
    assert gpu.power_draw_w is None
    assert gpu.power_limit_w is None
    assert gpu.memory_used_mib is None
    assert gpu.memory_total_mib is None
    assert (gpu.mig_mode, gpu.perf_state, gpu.errors) == (True, "P0", ())


def test_two_tables_in_one_block_reset_state() -> None:
    text = TABLE_470_ERR + TABLE_470_ERR
    found = blocks(NvidiaSmiParser(), text)
    assert len(found) == 1
    facts = parse_blocks(NvidiaSmiParser(), text)
    assert len(of_type(facts, DriverInfo)) == 2
    assert [g.index for g in of_type(facts, Gpu)] == [0, 1, 0, 1]


def test_process_row_cut_after_pid_keeps_the_process() -> None:
    text = (
        "| Processes:                                                       GPU Memory |\n"
        "|    2   N/A  N/A     20411      C   /opt/conda/bin/pyth"
    )
    facts = parse_blocks(NvidiaSmiParser(), text)
    (proc,) = of_type(facts, GpuProcess)
    assert (proc.gpu_index, proc.pid, proc.name, proc.name_truncated, proc.memory_used_mib) == (
        2,
        20411,
        "/opt/conda/bin/pyth",
        True,
        None,
    )
    (table,) = of_type(facts, GpuProcessTable)
    assert table.truncated
    assert table.cut_row_gpu_indices == ()


def test_fragment_starting_at_a_process_row() -> None:
    text = "|    3   N/A  N/A    938504      C   tritonserver     14844MiB |\n"
    facts = parse_blocks(NvidiaSmiParser(), text)
    (proc,) = of_type(facts, GpuProcess)
    assert (proc.gpu_index, proc.pid, proc.memory_used_mib) == (3, 938504, 14844)
    assert of_type(facts, GpuProcessTable)[0].rows == 1


@pytest.mark.parametrize(
    ("text", "error", "index", "bus", "detail"),
    [
        (
            (
                "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
                "Make sure that the latest NVIDIA driver is installed and running."
            ),
            "no_driver",
            None,
            None,
            None,
        ),
        ("No devices were found", "no_devices", None, None, None),
        ("Failed to initialize NVML: Unknown Error", "nvml_init", None, None, "Unknown Error"),
        (
            "Unable to determine the device handle for GPU0000:CB:00.0: Unknown Error",
            "device_handle",
            None,
            "00000000:CB:00.0",
            "Unknown Error",
        ),
        (
            "Unable to determine the device handle for GPU1: 0000:34:00.0: Unknown Error",
            "device_handle",
            1,
            "00000000:34:00.0",
            "Unknown Error",
        ),
        (
            (
                "Unable to determine the device handle for GPU 0000:04:00.0: GPU is lost.  "
                "Reboot the system to recover this GPU"
            ),
            "device_handle",
            None,
            "00000000:04:00.0",
            "GPU is lost.  Reboot the system to recover this GPU",
        ),
    ],
)
def test_error_messages(
    text: str, error: str, index: int | None, bus: str | None, detail: str | None
) -> None:
    (fact,) = parse_blocks(NvidiaSmiParser(), "$ nvidia-smi\n" + text + "\n$ echo done\n")
    assert isinstance(fact, SmiError)
    assert (fact.error, fact.gpu_index, fact.bus_id, fact.detail) == (error, index, bus, detail)
    assert fact.cite.line == 2


@pytest.mark.parametrize(
    "text",
    [
        'Title: pods lose the GPU after hours, "Failed to initialize NVML: Unknown Error"',
        (
            "When I exec into the pod, nvidia-smi prints Failed to initialize NVML: Unknown "
            "Error, while nvidia-smi on the host shows all GPUs healthy."
        ),
    ],
)
def test_an_nvml_message_quoted_in_a_sentence_keeps_its_own_detail(text: str) -> None:
    """What follows the message's colon, not the sentence's first colon or its later words."""
    (fact,) = parse_blocks(NvidiaSmiParser(), text + "\n")
    assert isinstance(fact, SmiError)
    assert (fact.error, fact.detail) == ("nvml_init", "Unknown Error")


def test_version_mismatch_with_nvml_library_version() -> None:
    text = (
        "Failed to initialize NVML: Driver/library version mismatch\n"
        "NVML library version: 535.183\n"
        "root@node:~#\n"
    )
    found = blocks(NvidiaSmiParser(), text)
    assert [(b[0].number, b[-1].number) for b in found] == [(1, 2)]
    (fact,) = parse_blocks(NvidiaSmiParser(), text)
    assert isinstance(fact, SmiError)
    assert (fact.error, fact.detail, fact.nvml_version) == (
        "version_mismatch",
        "Driver/library version mismatch",
        "535.183",
    )


def test_device_handle_error_before_the_table_of_the_other_gpus() -> None:
    text = "Unable to determine the device handle for GPU1: 0000:34:00.0: Unknown Error\n" + (
        "Thu Aug 27 18:05:38 2026\n" + TABLE_470_ERR
    )
    facts = parse_blocks(NvidiaSmiParser(), text)
    assert of_type(facts, SmiError)[0].gpu_index == 1
    assert len(of_type(facts, Gpu)) == 2


def test_srun_prefixed_table_keeps_rank() -> None:
    text = "".join(f"0: {line}\n" for line in TABLE_470_ERR.splitlines())
    gpus = of_type(parse_blocks(NvidiaSmiParser(), text), Gpu)
    assert [g.rank for g in gpus] == [0, 0]


OTHER_KINDS = sorted(p for p in FORMATS.glob("*/*.txt") if p.parent.name != "nvidia-smi")


@pytest.mark.parametrize("path", OTHER_KINDS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_other_kinds_do_not_start_a_table(path: Path) -> None:
    text = path.read_bytes().decode("utf-8", errors="replace")
    assert blocks(NvidiaSmiParser(), text) == []


def test_ascii_tables_of_other_tools_are_not_taken() -> None:
    text = (
        "+----------+--------+\n| Name     | Params |\n+----------+--------+\n"
        "| encoder  | 12.3 M |\n+----------+--------+\n"
    )
    assert blocks(NvidiaSmiParser(), text) == []


def test_every_fixture_block_starts_on_an_anchor() -> None:
    parser = NvidiaSmiParser()
    for path in [*sorted((FORMATS / "nvidia-smi").glob("*.txt")), EXAMPLE]:
        text = path.read_bytes().decode("utf-8", errors="replace")
        found = blocks(parser, text)
        assert found, path.name
        for block in found:
            assert any(a in block[0].raw for a in parser.anchors), path.name
