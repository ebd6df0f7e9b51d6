"""Run the CPU fault zoo and print one row per scenario: expected, got, time.

    python scripts/zoo_summary.py [--keep DIR]

Needs torch (CPU build is enough). ``--keep`` leaves every console log in DIR.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.zoo.cpu.scenarios import ANY, SCENARIOS, run_scenario

from nccl_doctor.pipeline import diagnose_paths


def main() -> int:
    """Print the table; exit 1 when a scenario's top finding is wrong."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path)
    args = parser.parse_args()
    out = args.keep or Path(tempfile.mkdtemp(prefix="zoo-"))
    out.mkdir(parents=True, exist_ok=True)
    bad = 0
    print(f"{'scenario':28} {'expected':24} {'got (top 3)':44} {'rank':>5} {'s':>6}")
    for scenario in SCENARIOS:
        log, seconds = run_scenario(scenario, out)
        report = diagnose_paths([str(log)])
        top = report.top(3)
        rank = report.first_failure.rank if report.first_failure else None
        ok = top[:1] == [scenario.top] and scenario.first_failing_rank in (ANY, rank)
        mark = "" if ok else "  <-- MISS"
        passed = log.with_suffix(".exit").read_text().strip() == "0"
        if scenario.racy and passed and not ok:
            critical = [f for f in report.findings if f.severity.value == "critical"]
            ok = not critical
            mark = "  (the race let the job pass this time; nothing critical)" if ok else mark
        bad += not ok
        got = ", ".join(top) or "-"
        print(f"{scenario.name:28} {scenario.top:24} {got:44} {rank!s:>5} {seconds:6.1f}{mark}")
    print(f"{len(SCENARIOS) - bad}/{len(SCENARIOS)} right; logs in {out}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
