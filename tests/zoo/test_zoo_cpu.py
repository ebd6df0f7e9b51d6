"""The CPU fault zoo, end to end: real torchrun/gloo jobs broken on purpose.

Each scenario's console output goes through ``diagnose`` as a user would
give it; the top finding, the first failing rank and the folded cascade are
checked. Needs torch (the README's test command installs the CPU build).
"""

from __future__ import annotations

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
