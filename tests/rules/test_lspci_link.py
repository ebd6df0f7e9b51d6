"""lspci's link status marked downgraded: a width below the slot's always counts; a speed only
where another link of the listing runs faster and is marked ok (an idle GPU drops its link
speed to save power, which lspci marks downgraded all the same)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_text

_SLOW = "Training on this 8x A100 PCIe box got slower this week, no errors.\n"


def _row(bus: str, speed: str, sstat: str, width: str = "x16", wstat: str = "ok") -> str:
    return f"{bus}: \t\tLnkSta:\tSpeed {speed}GT/s ({sstat}), Width {width} ({wstat})\n"


def _pcie(tmp_path: Path, rows: str) -> str | None:
    report = diagnose_text(tmp_path, _SLOW + rows)
    found = [f for f in report.findings if f.id == "gpu.pcie_degraded"]
    return found[0].summary if found else None


def test_one_link_slower_than_the_listings_others(tmp_path: Path) -> None:
    rows = _row("1b", "16", "ok") + _row("a0", "2.5", "downgraded") + _row("c5", "16", "ok")
    said = _pcie(tmp_path, rows)
    assert said is not None
    assert "2.5 GT/s where others of the listing run 16 GT/s" in said


def test_a_narrow_link_counts_alone(tmp_path: Path) -> None:
    said = _pcie(tmp_path, _row("a0", "16", "ok", "x4", "downgraded"))
    assert said is not None
    assert "(width x4)" in said


def test_every_link_at_idle_speed_is_no_finding(tmp_path: Path) -> None:
    rows = _row("1b", "2.5", "downgraded") + _row("a0", "2.5", "downgraded")
    assert _pcie(tmp_path, rows) is None
