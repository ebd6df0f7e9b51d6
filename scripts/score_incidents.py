"""Score the diagnosis on folders of incidents: top-1, top-3, empty reports, per id.

Each incident is a folder with ``case.json`` (``expected``: a catalogue id,
or ``none`` for a run that was fine; ``acceptable``: other ids that are also
right among the first three) and evidence files. Prints one row per incident
and the totals; ``--summary`` prints the totals only (for a held-out corpus
whose cases must not steer the rules), ``--json`` everything as JSON.

    python scripts/score_incidents.py tests/fixtures/incidents
    python scripts/score_incidents.py --summary tests/fixtures/incidents-blind

Strict scoring: top-1 counts only when the first answer is ``expected``;
top-3 when ``expected`` is among the first three. ``lenient`` also accepts an
``acceptable`` id. An *empty* report is a failure incident (expected is not
``none``) whose report has no critical or warning finding and no hypothesis. A healthy
run counts as right when no critical finding comes; one that is given causes all the same
(a finding or a hypothesis: a report that reads as a failure) is counted apart.
Per id: precision = how often a first answer of that id was right, recall =
how often an incident expecting it got it first.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

from nccl_doctor.pipeline import diagnose_paths


def _evidence(case: Path) -> list[str]:
    return sorted(str(p) for p in case.iterdir() if p.name != "case.json")


def score_case(case: Path) -> dict[str, object]:
    """One incident: expected, the top three, and whether each measure counts."""
    spec = json.loads((case / "case.json").read_text())
    expected = spec["expected"]
    acceptable = {expected, *spec.get("acceptable", ())}
    start = time.perf_counter()
    report = diagnose_paths(_evidence(case))
    seconds = time.perf_counter() - start
    top = report.top(3)
    critical = [f.id for f in report.findings if f.severity.value == "critical"]
    if expected == "none":
        top1 = top3 = lenient1 = lenient3 = not critical
        empty = False
    else:
        top1 = bool(top) and top[0] == expected
        top3 = expected in top
        lenient1 = bool(top) and top[0] in acceptable
        lenient3 = bool(acceptable & set(top))
        empty = not top
    return {
        "case": case.name,
        "expected": expected,
        "top": top,
        "top1": top1,
        "top3": top3,
        "lenient1": lenient1,
        "lenient3": lenient3,
        "empty": empty,
        "critical_on_none": expected == "none" and bool(critical),
        "causes_on_none": expected == "none" and bool(top),
        "seconds": round(seconds, 3),
    }


def score(folders: list[Path]) -> list[dict[str, object]]:
    """One row per incident of every folder."""
    cases = sorted(p.parent for folder in folders for p in folder.glob("*/case.json"))
    return [score_case(case) for case in cases]


def per_id(rows: list[dict[str, object]]) -> dict[str, dict[str, float | int]]:
    """Precision and recall of the first answer, per expected or answered id."""
    expected = Counter(str(r["expected"]) for r in rows if r["expected"] != "none")
    answered: Counter[str] = Counter()
    right: Counter[str] = Counter()
    for r in rows:
        top = r["top"]
        if isinstance(top, list) and top and r["expected"] != "none":
            answered[top[0]] += 1
            if top[0] == r["expected"]:
                right[top[0]] += 1
    table: dict[str, dict[str, float | int]] = {}
    for rule_id in sorted(set(expected) | set(answered)):
        table[rule_id] = {
            "expected": expected[rule_id],
            "answered": answered[rule_id],
            "right": right[rule_id],
            "precision": right[rule_id] / answered[rule_id] if answered[rule_id] else 0.0,
            "recall": right[rule_id] / expected[rule_id] if expected[rule_id] else 0.0,
        }
    return table


def totals(rows: list[dict[str, object]]) -> dict[str, object]:
    """The corpus-level measures."""
    n = len(rows) or 1
    failures = [r for r in rows if r["expected"] != "none"]
    return {
        "incidents": len(rows),
        "top1": sum(bool(r["top1"]) for r in rows) / n,
        "top3": sum(bool(r["top3"]) for r in rows) / n,
        "lenient_top1": sum(bool(r["lenient1"]) for r in rows) / n,
        "lenient_top3": sum(bool(r["lenient3"]) for r in rows) / n,
        "empty_rate": sum(bool(r["empty"]) for r in failures) / (len(failures) or 1),
        "critical_on_none": sum(bool(r["critical_on_none"]) for r in rows),
        "causes_on_none": sum(bool(r.get("causes_on_none")) for r in rows),
        "none_cases": len(rows) - len(failures),
    }


def main() -> int:
    """Print the score table; exit 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", type=Path, nargs="+")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--summary", action="store_true", help="totals only, no per-case rows")
    parser.add_argument("--per-id", action="store_true", help="also print precision/recall per id")
    args = parser.parse_args()
    rows = score(args.folders)
    t = totals(rows)
    if args.json:
        doc = {"totals": t, "per_id": per_id(rows)}
        if not args.summary:
            doc["rows"] = rows
        print(json.dumps(doc, indent=1))
        return 0
    if not args.summary:
        for r in rows:
            mark = "ok " if r["top1"] else ("top3" if r["top3"] else "MISS")
            got = ", ".join(r["top"]) or "-"  # type: ignore[arg-type]
            print(f"{mark:4} {r['case']:32} {r['expected']:24} {got}")
    if args.per_id:
        print(f"{'id':26} {'expected':>8} {'answered':>8} {'right':>5} {'prec':>5} {'recall':>6}")
        for rule_id, m in per_id(rows).items():
            print(
                f"{rule_id:26} {m['expected']:>8} {m['answered']:>8} {m['right']:>5} "
                f"{m['precision']:>5.0%} {m['recall']:>6.0%}"
            )
    k = t["incidents"]
    print(
        f"incidents {k}  top-1 {t['top1']:.0%}  top-3 {t['top3']:.0%}  "
        f"(with acceptable ids: {t['lenient_top1']:.0%} / {t['lenient_top3']:.0%})  "
        f"empty reports {t['empty_rate']:.0%} of failures  "
        f"critical on {t['critical_on_none']} of {t['none_cases']} healthy "
        f"(causes named on {t['causes_on_none']})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
