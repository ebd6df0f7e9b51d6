"""Hostile input, part two: one very long line, and many copies of one error line.

A 300,000-character NCCL WARN line took minutes (a pattern rescanned the line
from every position); 40,000 copies of one WARN took three (a citation list
de-duplicated with a list-membership test). The long lines are read by the
real CLI under a timeout the old code could not meet; the many lines are
proved linear by counting the Python calls ``diagnose`` makes (the same count
on every machine): three times the lines may cost three times the calls, and
the old code's grew with the square.
"""

from __future__ import annotations

import cProfile
import importlib.util
import json
import pstats
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

from nccl_doctor.evidence.reader import LINE_MAX_BYTES
from nccl_doctor.pipeline import diagnose_paths
from nccl_doctor.report import Report
from nccl_doctor.rules.base import first_distinct

BENCH = Path(__file__).resolve().parents[1] / "bench" / "hostile_lines.py"


def _bench() -> ModuleType:
    """bench/hostile_lines.py, whose line shapes the test shares."""
    spec = importlib.util.spec_from_file_location("hostile_lines", BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOSTILE = _bench()
PREFIX = "host1:1:2 [0] NCCL WARN "
FRAME = " at /opt/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1234 (0x7f3a2b1c0d9e)"


def test_long_warn_lines_are_cut_and_read_fast(tmp_path: Path) -> None:
    """Letters, dots and a stack frame, 300,000 characters each: the old reader took minutes.

    Each line is cut at LINE_MAX_BYTES (with a coverage note); what precedes the
    cut is read as usual.
    """
    lines = [
        PREFIX + "a" * 300_000,
        PREFIX + "Call to mmap failed with error Cannot allocate memory " + "." * 300_000,
        PREFIX + "shared memory segment /dev/shm/nccl-x (size 9)" + FRAME * 3_400,
    ]
    log = tmp_path / "long.log"
    log.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "nccl_doctor", "parse", str(log), "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,  # the first line alone took over a minute before
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    parsed = json.loads(proc.stdout)
    (section,) = parsed["sections"]
    letters, dots, frames = section["facts"]
    assert letters["message"] == "a" * (LINE_MAX_BYTES - len(PREFIX))
    assert letters["peer"] is None
    assert (dots["call"], dots["os_error"], dots["errno"]) == ("mmap", "Cannot allocate memory", 12)
    assert (frames["path"], frames["size_bytes"]) == ("/dev/shm/nccl-x", 9)
    assert parsed["coverage"]["notes"] == [
        {"source": str(log), "message": f"3 line(s) longer than {LINE_MAX_BYTES} bytes were cut"}
    ]


def _calls(path: Path) -> tuple[int, Report]:
    """How many Python calls one ``diagnose`` of ``path`` makes, and its report."""
    profiler = cProfile.Profile()
    profiler.enable()
    report = diagnose_paths([str(path)])
    profiler.disable()
    return sum(row[1] for row in pstats.Stats(profiler).stats.values()), report  # type: ignore[attr-defined]


@pytest.mark.parametrize("shape", ["ibv_reg_mr", "watchdog", "xid79"])
def test_many_error_lines_cost_linear_work(tmp_path: Path, shape: str) -> None:
    make: Callable[[int], str] = HOSTILE.SHAPES[shape]
    counts: dict[int, int] = {}
    for lines in (200, 1_000, 3_000):  # the first run warms caches (compiled patterns)
        log = tmp_path / f"{shape}-{lines}.log"
        HOSTILE.write_log(log, make, lines)
        counts[lines], _ = _calls(log)
    growth = counts[3_000] / counts[1_000]
    # linear work grows 3x (a little less: fixed costs); the old ibv_reg_mr run grew 5x
    assert growth < 3.3, counts


CITED = {"ibv_reg_mr": ("net.ib_config", 3), "watchdog": ("app.hang", 3), "xid79": ("gpu.lost", 2)}


@pytest.mark.parametrize("shape", sorted(CITED))
def test_citations_stay_few_and_first(tmp_path: Path, shape: str) -> None:
    """Thousands of copies are cited by their first lines, a few, each once."""
    log = tmp_path / f"{shape}.log"
    HOSTILE.write_log(log, HOSTILE.SHAPES[shape], 5_000)
    rule, cited = CITED[shape]
    (finding,) = [f for f in diagnose_paths([str(log)]).findings if f.id == rule]
    assert [c.line for c in finding.evidence] == list(range(1, cited + 1))
    assert [c.text for c in finding.evidence] == [HOSTILE.SHAPES[shape](i) for i in range(cited)]


def test_first_distinct_stops_at_the_limit() -> None:
    taken: list[int] = []

    def items() -> Iterator[int]:
        for i in [1, 1, 2, 1, 3, 4, 5, 6]:
            taken.append(i)
            yield i

    assert first_distinct(items(), 3) == [1, 2, 3]
    assert taken == [1, 1, 2, 1, 3]  # read no further than the third distinct item
    assert first_distinct(["a", "B", "b", "A"], key=str.lower) == ["a", "B"]
    assert first_distinct([1, 2], 0) == []
