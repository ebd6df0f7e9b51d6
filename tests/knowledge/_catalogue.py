"""The diagnosis ids of the catalogue table in the project's docs/diagnoses.md."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: the catalogue of diagnosis ids, a public contract
CATALOGUE = ROOT / "docs" / "diagnoses.md"


def catalogue_ids() -> set[str] | None:
    """The ``| `layer.name` |`` ids of the catalogue table, or ``None`` without the file."""
    if not CATALOGUE.is_file():
        return None
    text = CATALOGUE.read_text(encoding="utf-8")
    return set(re.findall(r"^\|\s*`([a-z0-9]+\.[a-z0-9_]+)`\s*\|", text, flags=re.MULTILINE))
