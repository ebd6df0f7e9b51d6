"""The CPU fault zoo, end to end: real torchrun/gloo jobs broken on purpose.

Each scenario's console output goes through ``diagnose`` as a user would
give it; the top finding, the first failing rank and the folded cascade are
checked. Needs torch (the README's test command installs the CPU build).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from nccl_doctor.pipeline import diagnose_paths
from tests.zoo.cpu.scenarios import ANY, SCENARIOS, Scenario, run_scenario

pytest.importorskip("torch.distributed")


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_zoo_scenario(scenario: Scenario, tmp_path: Path) -> None:
    log, _ = run_scenario(scenario, tmp_path)
    report = diagnose_paths([str(log)])
    text = log.read_text(errors="replace")
    if scenario.racy and log.with_suffix(".exit").read_text().strip() == "0":
        # the timing let it pass this time: nothing failed, so nothing may be critical
        assert not [f for f in report.findings if f.severity.value == "critical"]
        return
    assert report.top(1) == [scenario.top], f"got {report.top(3)}\n{text[-3000:]}"
    rank = report.first_failure.rank if report.first_failure else None
    if scenario.first_failing_rank != ANY:
        assert rank == scenario.first_failing_rank
    roots = {f.id for f in report.findings if f.root_cause}
    assert not roots & set(scenario.not_root), roots
    if scenario.names is not None:
        assert report.findings[0].subjects.ranks == scenario.names, report.findings[0].summary
    if scenario.critical is not None:
        critical = [f.id for f in report.findings if f.severity.value == "critical"]
        assert critical[:1] == [scenario.critical], critical


def test_a_log_dir_folder_gives_the_consoles_diagnosis(tmp_path: Path) -> None:
    """torchrun ``--log-dir`` (each rank's output in its own file) reads like the console."""
    logs = tmp_path / "logs"
    raises = next(s for s in SCENARIOS if s.name == "rank_raises")
    console, _ = run_scenario(
        replace(raises, torchrun=("--log-dir", str(logs), "--tee", "3")), tmp_path
    )
    assert sorted(p.name for p in logs.rglob("stderr.log"))  # the layout is there
    for report in (diagnose_paths([str(console)]), diagnose_paths([str(logs)])):
        assert report.top(1) == ["launch.rank_crash"]
        first = report.first_failure
        assert first is not None
        assert first.rank == 1
        assert "ValueError: rank 1: bad batch at step 1" in first.message
