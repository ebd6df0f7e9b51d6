"""NVLink error counters: a warning as a snapshot, critical when they grow between two readings
or when one link's replays and recoveries stand beside clean sibling links while a collective
timed out (NVIDIA's health check, DCGM's MonitorNVLink, fails a link on any replay or recovery
error; CRC errors only above a rate)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import critical_ids, diagnose_text


def _counters(replay: tuple[int, int], recovery: tuple[int, int], crc: tuple[int, int]) -> str:
    lines = ["GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-51d0e7a2-3c98-4f16-a0b7-9e2d64c1f8a3)"]
    for link, (rep, rec, bad) in enumerate(zip(replay, recovery, crc, strict=True)):
        lines += [
            f"\t Link {link}: Replay Errors: {rep}",
            f"\t Link {link}: Recovery Errors: {rec}",
            f"\t Link {link}: CRC Errors: {bad}",
        ]
    return "\n".join(lines) + "\n"


_TIMEOUT = (
    "[rank3]:[E ProcessGroupNCCL.cpp:523] [Rank 3] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=55071, OpType=ALLREDUCE, NumelIn=52428800, NumelOut=52428800, "
    "Timeout(ms)=1800000) ran for 1800622 milliseconds before timing out.\n"
)


def _nvlink(tmp_path: Path, text: str) -> tuple[list[str], str]:
    report = diagnose_text(tmp_path, text)
    finding = next(f for f in report.findings if f.id == "gpu.nvlink")
    return critical_ids(report), finding.severity.value


def test_one_links_replays_beside_clean_siblings_under_a_timeout_is_the_cause(
    tmp_path: Path,
) -> None:
    text = (
        _TIMEOUT + "$ nvidia-smi nvlink -e -i 1\n" + _counters((0, 41877), (0, 213), (0, 1902544))
    )
    critical, severity = _nvlink(tmp_path, text)
    assert critical[:1] == ["gpu.nvlink"]
    assert severity == "critical"


def test_the_same_counters_without_a_failure_are_a_warning(tmp_path: Path) -> None:
    text = "$ nvidia-smi nvlink -e -i 1\n" + _counters((0, 41877), (0, 213), (0, 1902544))
    critical, severity = _nvlink(tmp_path, text)
    assert critical == []
    assert severity == "warning"


def test_replays_on_every_link_under_a_timeout_stay_a_warning(tmp_path: Path) -> None:
    # no clean sibling to set one link apart: errors of the whole board, read once
    text = _TIMEOUT + "$ nvidia-smi nvlink -e -i 1\n" + _counters((12, 9), (1, 1), (40, 40))
    critical, severity = _nvlink(tmp_path, text)
    assert critical[:1] == ["app.hang"]
    assert severity == "warning"


def test_counters_that_grew_between_two_readings_are_critical(tmp_path: Path) -> None:
    text = (
        "$ nvidia-smi nvlink -e -i 1\n"
        + _counters((3, 3), (0, 0), (0, 120))
        + "$ sleep 300; nvidia-smi nvlink -e -i 1\n"
        + _counters((3, 9), (0, 0), (0, 4410))
    )
    report = diagnose_text(tmp_path, text)
    finding = next(f for f in report.findings if f.id == "gpu.nvlink")
    assert finding.severity.value == "critical"
    assert "grew between two readings: GPU 1 link 1 CRC Errors 4410" in finding.summary


def test_the_same_counters_read_twice_are_a_warning(tmp_path: Path) -> None:
    text = (
        "$ nvidia-smi nvlink -e -i 1\n"
        + _counters((3, 3), (0, 0), (0, 120))
        + "$ sleep 300; nvidia-smi nvlink -e -i 1\n"
        + _counters((3, 3), (0, 0), (0, 120))
    )
    _, severity = _nvlink(tmp_path, text)
    assert severity == "warning"
