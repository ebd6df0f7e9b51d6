"""The catalogue, the rule files, their docs and the spec table are one list."""

from __future__ import annotations

from pathlib import Path

import nccl_doctor.rules as rules_pkg
from nccl_doctor.rules import CATALOGUE, load_rules
from nccl_doctor.rules.base import DOC_SECTIONS, doc_sections
from tests.knowledge._catalogue import catalogue_ids

RULES_DIR = Path(rules_pkg.__file__).parent


def test_catalogue_order_is_the_spec_table() -> None:
    assert set(CATALOGUE) == catalogue_ids()
    assert len(CATALOGUE) == len(set(CATALOGUE)) == 43


def test_one_rule_file_per_id_and_no_other() -> None:
    files = {
        f"{p.parent.name}.{p.stem}" for p in RULES_DIR.glob("*/*.py") if not p.name.startswith("_")
    }
    assert files == set(CATALOGUE)


def test_every_rule_loads_with_its_own_id() -> None:
    loaded = load_rules()
    assert [r.rule.id for r in loaded] == list(CATALOGUE)


def test_every_doc_has_the_four_sections_with_text() -> None:
    for loaded in load_rules():
        sections = doc_sections(loaded.doc)
        assert tuple(sections) == DOC_SECTIONS, loaded.rule.id
        assert all(len(body) > 40 for body in sections.values()), loaded.rule.id
        assert loaded.doc.splitlines()[0].strip(), loaded.rule.id


def test_explains_names_only_catalogue_ids() -> None:
    for loaded in load_rules():
        assert set(loaded.rule.explains) <= set(CATALOGUE), loaded.rule.id
        assert loaded.rule.id not in loaded.rule.explains
