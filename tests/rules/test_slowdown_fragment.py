"""gpu.thermal_power from a pasted piece of ``nvidia-smi -q``: the clock event reasons alone.

Reporters paste the part of ``-q -d PERFORMANCE`` that matters, without the GPU's header
the parser needs; a hardware or thermal slowdown marked ``Active`` there still says the
clocks are held down. ``Not Active`` says nothing, nor does ``SW Power Cap`` (a GPU at its
power limit under load, which is normal).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nccl_doctor.findings import Severity
from tests.helpers import diagnose_text

if TYPE_CHECKING:
    from pathlib import Path

SLOW = "4 nodes, training is twice as slow as on our other cluster; on node03 GPU 5 shows:\n"
REASONS = (
    "    Clocks Event Reasons\n"
    "        Idle                              : Not Active\n"
    "        SW Power Cap                      : {cap}\n"
    "        HW Slowdown                       : {hw}\n"
    "            HW Thermal Slowdown           : Not Active\n"
    "            HW Power Brake Slowdown       : {hw}\n"
    "        SW Thermal Slowdown               : Not Active\n"
)


def _thermal(tmp_path: Path, cap: str, hw: str) -> list[str]:
    report = diagnose_text(tmp_path, SLOW + REASONS.format(cap=cap, hw=hw))
    return [f.summary for f in report.findings if f.id == "gpu.thermal_power"]


def test_an_active_hardware_slowdown_in_a_pasted_piece_is_the_cause(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, SLOW + REASONS.format(cap="Not Active", hw="Active"))
    (found,) = [f for f in report.findings if f.id == "gpu.thermal_power"]
    assert found.summary.startswith(
        "nvidia-smi -q shows HW Power Brake Slowdown, HW Slowdown active"
    )
    assert found.severity is Severity.WARNING
    assert [e.line for e in found.evidence] == [5, 7]
    assert report.top(1) == ["gpu.thermal_power"]


def test_no_slowdown_or_only_the_power_cap_says_nothing(tmp_path: Path) -> None:
    assert _thermal(tmp_path, "Not Active", "Not Active") == []
    assert _thermal(tmp_path, "Active", "Not Active") == []
