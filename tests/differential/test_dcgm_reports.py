"""DCGM's failure reports (dcgm_errors.h's DCGM_FR_*_MSG, DCGM 2.1-4.6) point at their component.

Each kept code's message is a catalogued row (scripts/signatures/dcgm_reports.py);
the lines below are the messages as dcgmi and the host engine print them,
whole. A report of clocks held back by heat or power is information, no failure.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import critical_ids, diagnose_text


@pytest.mark.parametrize(
    ("line", "lead"),
    [
        ("Detected 2 volatile double-bit ECC error(s) in GPU 3.", "gpu.ecc"),
        ("A pending retired page has been detected in GPU 3.", "gpu.ecc"),
        ("GPU 3 had uncorrectable memory errors and row remapping failed.", "gpu.ecc"),
        ("GPU had an uncontained error (XID 95)", "gpu.ecc"),
        (
            (
                "GPU 4 fault may have left the OS in an inconsistent state. Recovery action: 2 "
                "(NODE_REBOOT)."
            ),
            "gpu.lost",
        ),
        ("GPU 2 has fallen off the bus", "gpu.lost"),
        ("Detected XID 119 for GPU 4", "gpu.xid"),
        ("GPU 5's NvLink link 11 is currently down", "gpu.nvlink"),
        (
            (
                "GPU 1 is running at PCI link width 8X, which is below the minimum allowed link "
                "generation of 16 (parameter 'pcie_width')"
            ),
            "gpu.pcie_degraded",
        ),
    ],
)
def test_a_health_failure_points_at_its_component(tmp_path: Path, line: str, lead: str) -> None:
    report = diagnose_text(tmp_path, line + "\n")
    ranked = [h.id for h in report.hypotheses]
    found = [f.id for f in report.findings]
    assert lead in (found[:1] or ranked[:1]), (found, ranked)


def test_clock_events_are_information(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        "Detected clocks event due to thermal violation in GPU 6.\n"
        "There were thermal violations totaling 12.5 seconds for GPU 6\n",
    )
    assert list(report.hypotheses) == []
    assert critical_ids(report) == []
