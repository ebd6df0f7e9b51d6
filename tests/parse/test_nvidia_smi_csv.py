"""nvidia-smi --query-gpu=... --format=csv: one Gpu per row with the fields the query asked
for, joined on the bus id like the other formats; a CSV whose header names no query fields,
a row with another count of values, or a headerless query with no command line naming its
fields are not read as GPUs."""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.gpu import Gpu, GpuProcess, GpuProcessTable
from nccl_doctor.pipeline import facts_of
from tests.helpers import diagnose_text

_QUERY = (
    "$ nvidia-smi --query-gpu=index,pci.bus_id,pcie.link.gen.current,pcie.link.gen.max,"
    "pcie.link.width.current,pcie.link.width.max,utilization.gpu --format=csv\n"
    "index, pci.bus_id, pcie.link.gen.current, pcie.link.gen.max, pcie.link.width.current, "
    "pcie.link.width.max, utilization.gpu [%]\n"
    "0, 00000000:17:00.0, 4, 4, 16, 16, 97 %\n"
    "1, 00000000:31:00.0, 4, 4, 16, 16, 98 %\n"
    "2, 00000000:B1:00.0, 4, 4, 8, 16, 99 %\n"
    "3, 00000000:CA:00.0, 4, 4, 16, 16, 97 %\n"
)


def _gpus(tmp_path: Path, text: str) -> list[Gpu]:
    path = tmp_path / "smi.txt"
    path.write_text(text)
    return list(facts_of(read_paths([str(path)])).of(Gpu))


def test_each_row_is_a_gpu_with_the_fields_asked_for(tmp_path: Path) -> None:
    gpus = _gpus(tmp_path, _QUERY)
    assert [(g.index, g.bus_id) for g in gpus] == [
        (0, "00000000:17:00.0"),
        (1, "00000000:31:00.0"),
        (2, "00000000:B1:00.0"),
        (3, "00000000:CA:00.0"),
    ]
    third = gpus[2]
    assert (third.tool, third.pcie_width_current, third.pcie_width_max) == ("nvidia-smi-csv", 8, 16)
    assert (third.pcie_gen_current, third.utilization_gpu_pct) == (4, 99)
    assert third.memory_used_mib is None  # not asked for


def test_a_narrow_link_under_load_is_the_slow_gpu(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, "Training on srv-b is 40% slower than on srv-a.\n" + _QUERY)
    [pcie] = [f for f in report.findings if f.id == "gpu.pcie_degraded"]
    assert "width x8 of x16" in pcie.summary


def test_a_csv_of_other_fields_is_no_gpu(tmp_path: Path) -> None:
    other = "step, loss, lr\n1, 2.31, 0.0001\n2, 2.12, 0.0001\n"
    assert _gpus(tmp_path, other) == []


def test_a_row_of_another_count_ends_the_query(tmp_path: Path) -> None:
    cut = _QUERY.replace("3, 00000000:CA:00.0, 4, 4, 16, 16, 97 %", "3, 00000000:CA:00.0, 4")
    assert [g.index for g in _gpus(tmp_path, cut)] == [0, 1, 2]


_THROTTLED = (
    "$ nvidia-smi --query-gpu=index,temperature.gpu,clocks.sm,power.draw,"
    "clocks_event_reasons.hw_thermal_slowdown,clocks_event_reasons.sw_thermal_slowdown "
    "--format=csv,noheader\n"
    "0, 63, 1410 MHz, 287.41 W, Not Active, Not Active\n"
    "1, 66, 1410 MHz, 291.02 W, Not Active, Not Active\n"
    "2, 89, 1005 MHz, 171.26 W, {hw}, {sw}\n"
)


def test_a_headerless_query_reads_the_fields_its_command_line_names(tmp_path: Path) -> None:
    gpus = _gpus(tmp_path, _THROTTLED.format(hw="Active", sw="Active"))
    assert [(g.index, g.temperature_c, g.clocks_event_reasons) for g in gpus] == [
        (0, 63, ()),
        (1, 66, ()),
        (2, 89, ("hw_thermal_slowdown", "sw_thermal_slowdown")),
    ]
    # the rows alone, their command line not pasted: the columns are unknown
    rows = _THROTTLED.format(hw="Active", sw="Active").split("\n", 1)[1]
    assert _gpus(tmp_path, rows) == []


def test_a_gpu_held_down_by_heat_is_the_slow_machine(tmp_path: Path) -> None:
    said = "Machine B is 30% slower than machine A with the same script.\n"
    report = diagnose_text(tmp_path, said + _THROTTLED.format(hw="Active", sw="Active"))
    assert report.top(1) == ["gpu.thermal_power"]
    assert report.findings[0].summary.startswith("GPU 2: HW Thermal Slowdown")
    cool = diagnose_text(tmp_path, said + _THROTTLED.format(hw="Not Active", sw="Not Active"))
    assert "gpu.thermal_power" not in [f.id for f in cool.findings]


_APPS = (
    "$ nvidia-smi --query-compute-apps=pid,process_name,used_memory,gpu_bus_id --format=csv\n"
    "pid, process_name, used_gpu_memory [MiB], gpu_bus_id\n"
    "3120447, python, 8214 MiB, 00000000:07:00.0\n"
    "3120448, python, 8214 MiB, 00000000:0F:00.0\n"
    "3120449, python, 8742 MiB, 00000000:47:00.0\n"
    "{extra}"
    "3120450, python, 8742 MiB, 00000000:4E:00.0\n"
)
_STALE = "2987310, /opt/conda/bin/python, 30844 MiB, 00000000:47:00.0\n"
_OOM = (
    "[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 2 "
    "has a total capacity of 39.39 GiB of which 498.75 MiB is free.\n"
)


def test_a_compute_apps_row_is_a_process_on_the_gpu_its_bus_id_names(tmp_path: Path) -> None:
    path = tmp_path / "apps.txt"
    path.write_text(_APPS.format(extra=_STALE))
    facts = facts_of(read_paths([str(path)]))
    procs = [(p.pid, p.name, p.memory_used_mib, p.gpu_bus_id) for p in facts.of(GpuProcess)]
    assert procs[2:4] == [
        (3120449, "python", 8742, "00000000:47:00.0"),
        (2987310, "/opt/conda/bin/python", 30844, "00000000:47:00.0"),
    ]
    [table] = facts.of(GpuProcessTable)
    assert (table.tool, table.rows, table.none_found) == ("nvidia-smi-csv", 5, False)
    assert facts.of(Gpu) == ()


def test_a_pid_csv_without_a_gpu_field_is_no_process_list(tmp_path: Path) -> None:
    path = tmp_path / "ps.txt"
    path.write_text("pid, name, state\n412, sshd, S\n9001, python, R\n")
    assert facts_of(read_paths([str(path)])).of(GpuProcess) == ()


def test_a_stale_process_beside_the_launch_is_the_failing_ranks_contention(
    tmp_path: Path,
) -> None:
    report = diagnose_text(tmp_path, _OOM + _APPS.format(extra=_STALE))
    assert report.top(1) == ["gpu.contention"]
    finding = report.findings[0]
    assert finding.summary.startswith("GPU 2 (rank 2): PID 2987310 (python) 30844 MiB.")
    assert finding.confidence.value == "medium"  # the GPU index is read from the bus order
    assert "gpu.oom" not in [f.id for f in report.findings]


def test_one_process_per_gpu_is_the_job_itself(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _OOM + _APPS.format(extra=""))
    assert "gpu.contention" not in [f.id for f in report.findings]
    assert report.top(1) == ["gpu.oom"]


def test_the_ranks_own_stray_contexts_on_gpu_0_are_no_other_process(tmp_path: Path) -> None:
    stray = (
        "pid, process_name, used_gpu_memory [MiB], gpu_bus_id\n"
        "41880, python3, 75402 MiB, 00000000:19:00.0\n"
        "41881, python3, 518 MiB, 00000000:19:00.0\n"
        "41882, python3, 518 MiB, 00000000:19:00.0\n"
        "41881, python3, 71116 MiB, 00000000:3B:00.0\n"
        "41882, python3, 71100 MiB, 00000000:4C:00.0\n"
    )
    oom = _OOM.replace("rank2", "rank0").replace("GPU 2", "GPU 0")
    report = diagnose_text(tmp_path, oom + stray)
    assert "gpu.contention" not in [f.id for f in report.findings]
    assert report.top(1) == ["gpu.oom"]


def test_other_programs_covering_every_gpu_are_no_launch(tmp_path: Path) -> None:
    # one PID per GPU, but of different programs and far apart: other tenants, not the job
    tenants = (
        "pid, process_name, used_gpu_memory [MiB], gpu_bus_id\n"
        "1775815, python3.10, 55824 MiB, 00000000:07:00.0\n"
        "3507824, python3, 22992 MiB, 00000000:07:00.0\n"
        "694989, tritonserver, 36392 MiB, 00000000:0F:00.0\n"
        "938504, tritonserver, 14844 MiB, 00000000:47:00.0\n"
    )
    oom = _OOM.replace("rank2", "rank1").replace("GPU 2", "GPU 1")
    report = diagnose_text(tmp_path, oom + tenants)
    assert report.top(1) == ["gpu.contention"]
    assert "PID 694989 (tritonserver) 36392 MiB" in report.findings[0].summary
