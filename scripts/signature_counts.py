"""Print what the signature catalogue covers: counts by library, by version read, by symptom.

Usage: ``python scripts/signature_counts.py [--markdown]``
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from nccl_doctor.knowledge.signatures import LIBRARIES, load_signatures


def _version_key(version: str) -> tuple[tuple[int, int | str], ...]:
    """Numbers in order, words after them (labels of several sources mix in one library)."""
    return tuple(
        (0, int(p)) if p.isdigit() else (1, p) for p in version.replace("-", ".").split(".")
    )


def main(argv: list[str]) -> int:
    markdown = "--markdown" in argv
    sigs = load_signatures()
    by_lib = Counter(s.library for s in sigs)
    per_version: dict[str, Counter[str]] = defaultdict(Counter)
    symptoms: dict[str, Counter[str]] = defaultdict(Counter)
    for s in sigs:
        for v in s.versions.seen:
            per_version[s.library][v] += 1
        symptoms[s.library][s.symptom] += 1
    bar = "| " if markdown else ""
    print(f"{len(sigs)} signatures")
    for lib in LIBRARIES:
        versions = ", ".join(
            f"{v}: {n}"
            for v, n in sorted(per_version[lib].items(), key=lambda kv: _version_key(kv[0]))
        )
        top = ", ".join(f"{k} {n}" for k, n in symptoms[lib].most_common())
        print(f"{bar}{lib}: {by_lib[lib]} (by version seen: {versions}) [symptoms: {top}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
