"""The import graph follows the data path: nothing imports a layer above its own.

evidence -> parse -> facts -> rules -> differential -> triage -> report ->
render, with the applications on top (``compare``, a run's fingerprint and
the diff of two runs, sits between the differential and the report). A
layer's number says how far along the path it sits; a module may import
its own layer or a lower one, never a higher one (imports inside functions
count too). ``facts`` sits below the readers because the readers produce
facts: they import the fact types, and the facts import no reader. Besides
the order, the renderers import no rule and no reader of raw text: a
picture is drawn from the report and the facts.
"""

from __future__ import annotations

import ast
from pathlib import Path

import nccl_doctor

PACKAGE = Path(nccl_doctor.__file__).parent

#: Top-level modules and packages of ``nccl_doctor``, lowest layer first.
LAYERS: dict[str, int] = {
    # 0: no knowledge of the data path
    "__init__": 0,
    "errors": 0,
    "redact": 0,
    "extras": 0,
    "files": 0,
    "cache": 0,
    "knowledge": 0,
    # 1: the facts and what is derived from them (failures, world size, rank -> GPU)
    "facts": 1,
    # the sign tables: patterns read over the facts' lines, imported by what derives from them
    # (the node span, in facts/span.py) as by the rules
    "signs": 1,
    # 2: reading evidence into facts
    "evidence": 2,
    "parse": 2,
    # 3: rules over facts, and the findings they make
    "findings": 3,
    "rules": 3,
    # 4: the ranked differential; 5: comparing runs (fingerprint, diff)
    "differential": 4,
    "compare": 5,
    # 6: the report model; 7: triage, which builds it
    "report": 6,
    "triage": 7,
    # 8: rendering
    "render": 8,
    # 9: applications
    "pipeline": 9,
    "cli_output": 9,
    "explain": 9,
    "live_check": 9,
    "probe": 9,
    "run": 9,
    "gate": 9,
    "fleet": 9,
    "cli": 10,
    "__main__": 10,
}

#: Edges the order would allow but the design forbids.
FORBIDDEN = {("render", "rules"), ("render", "parse"), ("render", "triage")}


def _top(module: str) -> str:
    """The top-level part of the package a module name belongs to (``__init__`` for its names)."""
    parts = module.split(".")
    if len(parts) < 2:
        return "__init__"
    part = parts[1]
    if (PACKAGE / part).is_dir() or (PACKAGE / f"{part}.py").is_file():
        return part
    return "__init__"  # ``from nccl_doctor import GENERATOR``: a name of the package itself


def _imports(code: str) -> list[str]:
    """Every ``nccl_doctor`` module a source imports, at any depth (functions included)."""
    names: list[str] = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "nccl_doctor":
                names += [f"nccl_doctor.{a.name}" for a in node.names]
            else:
                names.append(node.module)
        elif isinstance(node, ast.Import):
            names += [a.name for a in node.names]
    return [n for n in names if n == "nccl_doctor" or n.startswith("nccl_doctor.")]


def _edges() -> list[tuple[str, str, str]]:
    """(importing file, its top-level part, the imported top-level part) for every import."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        here = rel.parts[0].removesuffix(".py")
        found += [(str(rel), here, _top(n)) for n in _imports(path.read_text(encoding="utf-8"))]
    return found


def test_every_part_of_the_package_has_a_layer() -> None:
    parts = {p.name.removesuffix(".py") for p in PACKAGE.iterdir()}
    parts = {p for p in parts if not p.startswith((".", "_")) or p in ("__init__", "__main__")}
    parts -= {"py.typed"}
    assert parts - set(LAYERS) == set()


def test_no_module_imports_a_higher_layer() -> None:
    upward = [
        f"{file}: {here} (layer {LAYERS[here]}) imports {there} (layer {LAYERS.get(there)})"
        for file, here, there in _edges()
        if there in LAYERS and LAYERS[there] > LAYERS[here]
    ]
    unknown = sorted({there for _, _, there in _edges() if there not in LAYERS})
    assert upward == []
    assert unknown == []


def test_renderers_import_no_rule_and_no_reader() -> None:
    assert [(f, there) for f, here, there in _edges() if (here, there) in FORBIDDEN] == []


def test_the_walker_sees_imports_inside_functions_and_package_names() -> None:
    code = (
        "import os\n"
        "from nccl_doctor import GENERATOR, triage\n"
        "def f():\n"
        "    import nccl_doctor.render.text\n"
        "    from nccl_doctor.rules.base import Rule\n"
    )
    assert [_top(n) for n in _imports(code)] == ["__init__", "triage", "render", "rules"]
