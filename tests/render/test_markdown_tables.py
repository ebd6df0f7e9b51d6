"""Markdown tables survive GitHub: a row has as many cells as its header.

GitHub splits a table row at every ``|`` that is not escaped, inside code
spans too; the differential's next checks are shell pipelines (``lsmod | grep
nvidia_uvm``), and the shipped example's table broke into extra columns.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nccl_doctor.pipeline import diagnose_paths
from nccl_doctor.render import render_report

ROOT = Path(__file__).parents[2]
_SPLIT = re.compile(r"(?<!\\)\|")


def _tables(markdown: str) -> list[list[str]]:
    tables: list[list[str]] = []
    current: list[str] = []
    for line in markdown.splitlines():
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append(current)
            current = []
    if current:
        tables.append(current)
    return tables


def _cells(row: str) -> int:
    return len(_SPLIT.split(row.strip())) - 2  # the split leaves an empty piece at each edge


@pytest.mark.parametrize(
    "evidence",
    [
        "examples/h200-cuda-999",  # the differential's checks: 'lsmod | grep nvidia_uvm'
        "tests/fixtures/captured/premortem-ras-h200/premortem",
        "tests/cases/app/hang/flight_recorder_dump_from_rank4",
    ],
)
def test_every_row_has_the_headers_cells(evidence: str) -> None:
    markdown = render_report(diagnose_paths([str(ROOT / evidence)]), "markdown")
    tables = _tables(markdown)
    assert tables
    for table in tables:
        header = _cells(table[0])
        assert header >= 4
        assert [_cells(row) for row in table] == [header] * len(table), table


def test_a_pipe_in_a_check_is_escaped_and_still_shown() -> None:
    markdown = render_report(diagnose_paths([str(ROOT / "examples/h200-cuda-999")]), "markdown")
    rows = [line for line in markdown.splitlines() if line.startswith("| 1 | `driver.uvm`")]
    assert len(rows) == 1
    assert r"`lsmod \| grep nvidia_uvm; ls -l /dev/nvidia-uvm`" in rows[0]
    # outside a table a pipe needs no escape: the fix steps keep the command as typed
    assert "`lsmod | grep nvidia_uvm`" in markdown
    assert r"\|" not in "".join(line for line in markdown.splitlines() if line[:1] != "|")
