"""Score the diagnosis on a folder of incidents: top-1, top-3, healthy runs.

Each incident is a folder with ``case.json`` (``expected``: a catalogue id,
or ``none`` for a run that was fine) and evidence files. Prints one row per
incident and the totals; ``--json`` prints them as JSON instead.

    python scripts/score_incidents.py tests/fixtures/incidents
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from nccl_doctor.pipeline import diagnose_paths


def score(folder: Path) -> list[dict[str, object]]:
    """One row per incident: expected, the top three, and whether each counts."""
    rows: list[dict[str, object]] = []
    for case in sorted(p.parent for p in folder.glob("*/case.json")):
        spec = json.loads((case / "case.json").read_text())
        expected = spec["expected"]
        evidence = sorted(str(p) for p in case.iterdir() if p.name != "case.json")
        start = time.perf_counter()
        report = diagnose_paths(evidence)
        seconds = time.perf_counter() - start
        top = report.top(3)
        critical = [f.id for f in report.findings if f.severity.value == "critical"]
        if expected == "none":
            top1 = top3 = not critical
        else:
            top1 = bool(top) and top[0] == expected
            top3 = expected in top
        rows.append(
            {
                "case": case.name,
                "expected": expected,
                "top": top,
                "top1": top1,
                "top3": top3,
                "seconds": round(seconds, 3),
            }
        )
    return rows


def main() -> int:
    """Print the score table; exit 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = score(args.folder)
    n = len(rows) or 1
    top1 = sum(bool(r["top1"]) for r in rows)
    top3 = sum(bool(r["top3"]) for r in rows)
    if args.json:
        print(json.dumps({"rows": rows, "top1": top1 / n, "top3": top3 / n}, indent=1))
        return 0
    for r in rows:
        mark = "ok " if r["top1"] else ("top3" if r["top3"] else "MISS")
        got = ", ".join(r["top"]) or "-"  # type: ignore[arg-type]
        print(f"{mark:4} {r['case']:32} {r['expected']:24} {got}")
    print(f"top-1 {top1}/{len(rows)} = {top1 / n:.0%}   top-3 {top3}/{len(rows)} = {top3 / n:.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
