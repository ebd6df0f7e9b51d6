"""nvidia-smi --query-gpu=... --format=csv: one Gpu per row with the fields the query asked
for, joined on the bus id like the other formats; a CSV whose header names no query fields,
a row with another count of values, or a headerless query are not read as GPUs."""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.gpu import Gpu
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
