"""Write docs/diagnoses.md from docs/diagnoses.md.in and the rule modules' docstrings.

Usage: ``python scripts/gen_diagnoses.py [--check]``. The id table and the
per-rule sections come from each rule's ``RULE`` and docstring
(:func:`nccl_doctor.explain.catalogue_markdown`); the prose that belongs to no
single rule lives in the template. ``--check`` writes nothing and exits 1 when
the file on disk differs from what would be written.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from nccl_doctor.explain import catalogue_markdown

TEMPLATE = ROOT / "docs" / "diagnoses.md.in"
TARGET = ROOT / "docs" / "diagnoses.md"


def generated() -> str:
    """The text docs/diagnoses.md must hold."""
    return catalogue_markdown(TEMPLATE.read_text(encoding="utf-8"))


def main(argv: list[str]) -> int:
    text = generated()
    if "--check" in argv:
        same = TARGET.is_file() and TARGET.read_text(encoding="utf-8") == text
        if not same:
            sys.stderr.write(f"{TARGET.relative_to(ROOT)} is stale: run {argv[0]}\n")
        return 0 if same else 1
    TARGET.write_text(text, encoding="utf-8")
    sys.stderr.write(f"wrote {TARGET.relative_to(ROOT)}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
