"""Inactive NVLink links beside links that run: the GPU's own list, or a grep for the inactive
ones under a command line that names the GPU; links that are all inactive on a card without
NVLink partners are no finding."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_text

_SLOW = "all_reduce_perf busbw on this node is half what the other nodes give.\n"


def test_links_a_grep_shows_inactive_beside_those_it_left_out_are_down(tmp_path: Path) -> None:
    text = _SLOW + (
        "$ nvidia-smi nvlink -s -i 5 | grep inactive\n"
        "\t Link 1: <inactive>\n\t Link 4: <inactive>\n\t Link 7: <inactive>\n"
    )
    report = diagnose_text(tmp_path, text)
    assert report.top(1) == ["gpu.nvlink"]
    assert "(GPU 5: links 1, 4, 7 inactive, 5 up)" in report.findings[0].summary


def test_a_cards_links_all_inactive_are_no_finding(tmp_path: Path) -> None:
    text = _SLOW + (
        "$ nvidia-smi nvlink -s\n"
        "GPU 0: NVIDIA L40S (UUID: GPU-5e1c7a2b-9d34-4f80-8c6e-1a2b3c4d5e6f)\n"
        "\t Link 0: <inactive>\n\t Link 1: <inactive>\n"
    )
    report = diagnose_text(tmp_path, text)
    assert "gpu.nvlink" not in [f.id for f in report.findings]
