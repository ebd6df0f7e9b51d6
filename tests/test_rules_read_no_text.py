"""Rules read typed facts and signs, never raw text.

A module under ``rules/`` that imports ``re``, calls the facts store's
text search (``facts.search`` / ``facts.said``) or looks for words in a line's
text or a message (``"x" in fact.message``, ``"x" in hit.cite.text``) re-reads
the evidence with its own patterns; what it needs belongs in a sign table
(:mod:`nccl_doctor.signs`), read once by the store and shared. The signs
themselves are checked here: unique ids, a description each, and every sign
a rule imports is one the tables declare.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import nccl_doctor.signs
from nccl_doctor.facts.signs import SignError, registered, sign

RULES = Path(nccl_doctor.signs.__file__).parent.parent / "rules"


#: The attributes that hold what a line or a message said, as printed.
_RAW = frozenset({"text", "message"})


def _raw_text(node: ast.expr) -> bool:
    """``x.text`` / ``x.message``, also lowered or defaulted (``(x.message or "").lower()``)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr in {"lower", "upper", "casefold"} and _raw_text(node.func.value)
    if isinstance(node, ast.BoolOp):
        return any(_raw_text(v) for v in node.values)
    return isinstance(node, ast.Attribute) and node.attr in _RAW


def _reads_text(path: Path) -> list[str]:
    """How a module reads raw text: ``re`` imported, a text search called, words looked for."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Compare)
            and isinstance(node.left, ast.Constant)
            and isinstance(node.left.value, str)
            and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops)
            and any(_raw_text(c) for c in node.comparators)
        ):
            found.append(f"line {node.lineno}: words in a text")
        if isinstance(node, ast.Import) and any(a.name == "re" for a in node.names):
            found.append(f"line {node.lineno}: import re")
        elif isinstance(node, ast.ImportFrom) and node.module == "re":
            found.append(f"line {node.lineno}: from re import")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in {"search", "said"}
        ):
            found.append(f"line {node.lineno}: .{node.func.attr}(...)")
    return found


def _modules() -> list[Path]:
    return sorted(RULES.rglob("*.py"))


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(RULES)))
def test_a_rule_module_reads_no_raw_text(path: Path) -> None:
    assert _reads_text(path) == []


def test_the_checker_sees_each_way_of_reading_text(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "import re\nfrom re import search\n\ndef f(facts, w):\n"
        "    return facts.search('x'), facts.said('y'), re.search('a', 'b'), "
        "'z' in (w.message or '').lower(), 'k' not in w.cite.text, 'n' in w.name\n",
        encoding="utf-8",
    )
    assert _reads_text(module) == [
        "line 1: import re",
        "line 2: from re import",
        "line 5: .search(...)",
        "line 5: .said(...)",
        "line 5: .search(...)",
        "line 5: words in a text",
        "line 5: words in a text",
    ]


def test_every_sign_has_a_unique_dotted_id_and_says_what_it_tells() -> None:
    signs = registered()
    assert len(signs) >= 5
    ids = [s.id for s in signs]
    assert len(ids) == len(set(ids))
    for s in signs:
        table = s.id.split(".", 1)[0]
        assert hasattr(nccl_doctor.signs, table), s.id
        assert len(s.about) > 20, s.id


def test_every_sign_a_rule_imports_is_declared() -> None:
    declared = {id(s) for s in registered()}
    for path in _modules():
        module = ".".join(path.relative_to(RULES.parent.parent).with_suffix("").parts)
        loaded = importlib.import_module(module.removesuffix(".__init__"))
        for name, value in vars(loaded).items():
            if type(value).__name__ == "Sign":
                assert id(value) in declared, f"{module}.{name}"


def test_a_sign_is_declared_once_and_its_pattern_must_compile() -> None:
    with pytest.raises(SignError, match="declared twice"):
        sign("nccl.shm_error", "x", "the same id as the shared-memory sign")
    with pytest.raises(SignError, match="not dotted"):
        sign("NoDots", "x", "an id without a table")
    with pytest.raises(SignError, match=r"sign test\.broken"):
        sign("test.broken", "(", "a pattern that does not compile")
