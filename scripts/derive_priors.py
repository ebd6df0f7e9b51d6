"""Count, per symptom class, which causes the development corpora confirm.

For every incident of the given folders (never a blind corpus), the first
failure's symptom class is read the way the differential reads it, and the
incident's expected id is tallied under it. The counts are what the priors
table (``nccl_doctor.differential.priors``) is checked against.

    python scripts/derive_priors.py tests/fixtures/incidents-dev-2026-12 tests/fixtures/incidents \
        tests/fixtures/incidents-heldout tests/fixtures/incidents-blind
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

from nccl_doctor.differential import lead_symptom
from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.failures import failures_of
from nccl_doctor.pipeline import facts_of
from nccl_doctor.triage import differential_order, first_failure


def main() -> int:
    """Print, per class, the expected ids and their counts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", type=Path, nargs="+")
    args = parser.parse_args()
    table: dict[str, Counter[str]] = defaultdict(Counter)
    for folder in args.folders:
        for spec_path in sorted(folder.glob("*/case.json")):
            expected = json.loads(spec_path.read_text())["expected"]
            if expected == "none":
                continue
            paths = [str(p) for p in spec_path.parent.iterdir() if p.name != "case.json"]
            facts = facts_of(read_paths(paths))
            failure, _ = first_failure(facts)
            lead = lead_symptom(facts, differential_order(failures_of(facts), failure))
            table[lead.cls if lead else "(no symptom)"][expected] += 1
    for cls, counts in sorted(table.items()):
        total = sum(counts.values())
        row = ", ".join(f"{rule_id} {n}" for rule_id, n in counts.most_common())
        print(f"{cls:22} n={total:3}  {row}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
