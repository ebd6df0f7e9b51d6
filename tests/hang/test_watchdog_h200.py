"""The real one-GPU watchdog timeout (H200): the hang is the root cause, the abort its cascade.

tests/fixtures/captured/watchdog-h200 (SOURCE.md): one rank, ~40 s of its own
GPU work queued before an all_reduce with an 8 s timeout; the watchdog fires,
the flight recorder dumps, and a minute later the process is aborted (-6).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.pipeline import diagnose_paths

CAPTURE = Path(__file__).resolve().parents[1] / "fixtures" / "captured" / "watchdog-h200"


@pytest.mark.parametrize(
    "paths",
    [
        ["lazy"],
        ["lazy/console.log"],  # without the flight-recorder dump
        ["eager"],
        ["lazy_info"],
        ["under_run"],
    ],
    ids=lambda p: p[0],
)
def test_the_watchdog_abort_folds_under_the_hang(paths: list[str]) -> None:
    report = diagnose_paths([str(CAPTURE / p) for p in paths])
    top = report.findings[0]
    assert (top.id, top.root_cause, top.severity.value) == ("app.hang", True, "critical")
    assert top.confidence.value == "high"
    assert "ALLREDUCE SeqNum=2" in top.summary
    roles = {(r.role, r.ranks) for r in top.roles}
    if paths != ["lazy/console.log"]:  # the dump or NCCL's init line says the world is one rank
        assert "rank 0 is the origin: the job's only rank: no peer can be behind" in top.summary
        assert "its own GPU work queued ahead of the collective" in top.summary
        assert top.fix[0].startswith("Find what the rank's own GPU stream was doing")
        assert roles == {("origin", (0,))}
    else:  # the console alone does not say how many ranks there were
        assert "a rank whose log is not here never joined it, or the collective itself" in (
            top.summary
        )
        assert roles == {("messenger", (0,))}  # its watchdog only reports; the origin is unknown
    assert top.collective is not None
    assert (top.collective.seq, top.collective.op.lower().replace("_", "")) == (2, "allreduce")
    if paths[0] in ("lazy", "eager", "under_run"):  # the dump names size and group
        assert top.collective.source == "flight recorder"
        assert top.collective.size == "[[1048576]] Float"
        assert top.collective.process_group == "0 (default_pg)"
    folded = dict(report.folded)
    aborts = folded["app.hang"]
    assert [f.id for f in aborts] == ["launch.rank_crash"]
    assert "(SIGABRT) after its collective timed out" in aborts[0].summary
    assert not aborts[0].cause
    assert [f.id for f in report.findings if f.root_cause] == ["app.hang"]
    assert report.first_failure is not None
    assert report.first_failure.rank == 0
    assert "Watchdog caught collective operation timeout" in report.first_failure.message


def test_a_sigabrt_without_a_timeout_is_still_a_crash(tmp_path: Path) -> None:
    """The silent side: the same torchrun summary with no watchdog line is a crash of its own."""
    lines = (CAPTURE / "lazy" / "console.log").read_text().splitlines()
    kept = [ln for ln in lines if "ProcessGroupNCCL" not in ln and "Watchdog" not in ln]
    kept = [ln for ln in kept if "watchdog" not in ln.lower()]
    log = tmp_path / "console.log"
    log.write_text("\n".join(kept) + "\n")
    report = diagnose_paths([str(log)])
    assert report.findings[0].id == "launch.rank_crash"
    assert report.findings[0].cause
    assert "died first with exit code -6 (SIGABRT)" in report.findings[0].summary
