"""The NCCL WARNs read in their code (scripts/signatures/nccl_readings.jsonl) reach the
catalogue: each names a message NCCL prints, and its row carries the ids the reading gave."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
READINGS = ROOT / "scripts" / "signatures" / "nccl_readings.jsonl"
CATALOGUE = ROOT / "src" / "nccl_doctor" / "knowledge" / "signatures" / "nccl.jsonl"


def _rows(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_every_reading_names_a_catalogued_message_and_gives_it_its_ids() -> None:
    by_format: dict[str, list[dict[str, object]]] = {}
    for row in _rows(CATALOGUE):
        by_format.setdefault(str(row["format"]), []).append(row)
    readings = _rows(READINGS)
    assert len(readings) == 91
    for reading in readings:
        rows = by_format.get(str(reading["format"]))
        assert rows, reading["format"]
        assert all(row["hint_ids"] == reading["hint_ids"] for row in rows), reading["format"]
        assert reading["confidence"] in ("high", "medium")


def test_the_cascade_and_harmless_messages_stay_without_ids() -> None:
    by_format = {str(row["format"]): row for row in _rows(CATALOGUE)}
    for text in ("Failed to open libibverbs.so[.1]", "Call to recv failed : %s"):
        assert by_format[text]["hint_ids"] == [], text
