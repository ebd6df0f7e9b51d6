"""Start-up: what a run of ``diagnose`` pays before it reads a line, counted, never timed.

Three mechanisms keep it small: the command-line parser is built without the
rules' report (``check --gate``'s verdict loads it), the methods of the
package's dataclasses are compiled once and kept (:class:`CompiledMethods`),
and the parsers' patterns compile on first use (:class:`LazyPattern`).
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

import nccl_doctor
from nccl_doctor.cache import CompiledMethods
from nccl_doctor.parse._lazy import LazyPattern

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = Path(nccl_doctor.__file__).parent
NCCL_LOG = ROOT / "examples" / "h200-cuda-999" / "train.log"
#: NCCL INFO and WARN lines of two hosts
NCCL_WARN = (
    ROOT / "tests/fixtures/formats/nccl-log/h100-multihost-ib-warn-error4-vendor81-interleaved.txt"
)


def _python(code: str, cache: Path) -> str:
    """``code`` run by a fresh interpreter (nothing imported yet) with its cache in ``cache``."""
    env = dict(os.environ, XDG_CACHE_HOME=str(cache))
    env.pop("NCCL_DOCTOR_NO_CODE_CACHE", None)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    return done.stdout


# -- the command line ---------------------------------------------------------------


def test_building_the_parser_loads_no_reader_rule_or_report(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from nccl_doctor.cli import build_parser\n"
        "build_parser()\n"
        "print(sorted(m for m in sys.modules if m.startswith('nccl_doctor.')))\n"
    )
    loaded = set(eval(_python(code, tmp_path)))  # noqa: S307 -- a list of names we printed
    for heavy in (
        "nccl_doctor.report",
        "nccl_doctor.gate.verdict",
        "nccl_doctor.evidence.reader",
        "nccl_doctor.rules",
        "nccl_doctor.facts.store",
        "nccl_doctor.fleet.db",  # and with it sqlite3
        "nccl_doctor.fleet.actions",  # the gate's plan; its options need only the names
    ):
        assert heavy not in loaded
    assert "nccl_doctor.gate.cli" in loaded  # its options are on the parser


# -- the kept methods of dataclasses ----------------------------------------------

CLASS = '''
from dataclasses import dataclass

@dataclass(frozen=True, slots=True, kw_only=True)
class Point:
    """A class as the facts are made."""

    x: int
    label: str | None = None
    tags: tuple[str, ...] = ()
'''


def _made(name: str, methods: CompiledMethods | None, monkeypatch: pytest.MonkeyPatch) -> type:
    """``Point`` made in a module called ``name``, ``dataclasses`` calling ``methods``."""
    module = types.ModuleType(name)
    monkeypatch.setitem(sys.modules, name, module)
    with monkeypatch.context() as patch:
        if methods is None:
            patch.delattr(dataclasses, "exec", raising=False)
        else:
            patch.setattr(dataclasses, "exec", methods.exec, raising=False)
        exec(compile(CLASS, name, "exec", dont_inherit=True), module.__dict__)  # noqa: S102
    made: type = module.Point
    return made


def _same_class(made: type, plain: type) -> None:
    """``made`` behaves as ``plain``, made by ``dataclasses`` itself."""
    a, b = made(x=1, label="a"), plain(x=1, label="a")
    assert repr(a).split("(", 1)[1] == repr(b).split("(", 1)[1] == "x=1, label='a', tags=())"
    assert a == made(x=1, label="a")
    assert a != made(x=2)
    assert hash(a) == hash(b) == hash((1, "a", ()))
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.x = 3  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        made(1)  # keyword-only
    for method in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__"):
        ours, theirs = getattr(made, method).__code__, getattr(plain, method).__code__
        assert ours.co_code == theirs.co_code
        assert ours.co_flags == theirs.co_flags  # no __future__ flag of the caller leaks in
    assert made.__init__.__annotations__ == plain.__init__.__annotations__
    assert made.__slots__ == plain.__slots__ == ("x", "label", "tags")


def test_a_class_gets_the_same_methods_and_the_next_run_compiles_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "dataclasses-test.marshal"
    plain = _made("nccl_doctor._plain_point", None, monkeypatch)
    first = CompiledMethods(path)
    _same_class(_made("nccl_doctor._point", first, monkeypatch), plain)
    assert first.compiled == 6  # __init__, __repr__, __eq__, __hash__, __setattr__, __delattr__
    first.save()
    again = CompiledMethods(path)  # the next run
    _same_class(_made("nccl_doctor._point", again, monkeypatch), plain)
    assert again.compiled == 0


def test_a_damaged_file_is_compiled_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "dataclasses-test.marshal"
    first = CompiledMethods(path)
    _made("nccl_doctor._point", first, monkeypatch)
    first.save()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    for damaged in (bytes(data), path.read_bytes()[:100], b"", b"x" * 40):
        path.write_bytes(damaged)
        again = CompiledMethods(path)
        _same_class(_made("nccl_doctor._point", again, monkeypatch), _made("x", None, monkeypatch))
        assert again.compiled == 6


def test_other_modules_classes_are_made_as_before_and_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "dataclasses-test.marshal"
    methods = CompiledMethods(path)
    made = _made("someone_else", methods, monkeypatch)
    _same_class(made, _made("someone_else_plain", None, monkeypatch))
    assert methods.compiled == 0
    methods.save()
    assert not path.exists()


def test_a_second_run_compiles_no_method_of_the_diagnosis(tmp_path: Path) -> None:
    code = (
        "import json, nccl_doctor.cache as c\n"
        "from nccl_doctor.cli import main\n"
        "import contextlib, io\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main(['diagnose', {str(NCCL_LOG)!r}, '--format', 'json'])\n"
        "print(json.dumps([c.METHODS.compiled, len(c.METHODS._used)]))\n"
    )
    cold = json.loads(_python(code, tmp_path))
    warm = json.loads(_python(code, tmp_path))
    assert cold[0] > 500  # a method each: facts, findings, the report...
    assert warm == [0, cold[1]]
    assert len(list((tmp_path / "nccl-doctor").glob("dataclasses-*.marshal"))) == 1


# -- the parsers' patterns ----------------------------------------------------------


def test_no_parser_compiles_a_pattern_on_import() -> None:
    found = []
    for path in sorted((PACKAGE / "parse").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        functions = {
            id(n)
            for f in ast.walk(tree)
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            for n in ast.walk(f)
        }
        found += [
            f"{path.name}:{node.lineno}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and node.attr == "compile"
            and isinstance(node.value, ast.Name)
            and node.value.id == "re"
            and id(node) not in functions
            and path.name != "_lazy.py"
        ]
    assert found == []


def test_a_log_of_nccl_lines_compiles_no_pattern_of_the_other_parsers(tmp_path: Path) -> None:
    code = (
        "import json, sys\n"
        "from nccl_doctor.evidence.reader import read_paths\n"
        "from nccl_doctor.parse._lazy import LazyPattern\n"
        f"read_paths([{str(NCCL_LOG)!r}, {str(NCCL_WARN)!r}])\n"
        "def walk(v, depth=0):\n"
        "    if isinstance(v, LazyPattern): yield v\n"
        "    elif isinstance(v, (tuple, list)) and depth < 3:\n"
        "        for x in v: yield from walk(x, depth + 1)\n"
        "    elif isinstance(v, dict) and depth < 3:\n"
        "        for x in v.values(): yield from walk(x, depth + 1)\n"
        "out = {}\n"
        "for name, m in list(sys.modules.items()):\n"
        "    if name.startswith('nccl_doctor.parse.'):\n"
        "        ps = [p for v in vars(m).values() for p in walk(v)]\n"
        "        out[name] = [len(ps), sum(p._compiled is not None for p in ps)]\n"
        "print(json.dumps(out))\n"
    )
    counts = json.loads(_python(code, tmp_path))
    assert sum(n for n, _ in counts.values()) > 300  # every parser is imported...
    for idle in ("nvidia_smi", "xid", "ncclras", "collect_env", "topo", "infiniband", "env"):
        total, compiled = counts[f"nccl_doctor.parse.{idle}"]
        assert total > 5
        assert compiled == 0
    assert counts["nccl_doctor.parse._nccl_warn"][1] > 0
    assert sum(c for _, c in counts.values()) < 0.4 * sum(n for n, _ in counts.values())


@pytest.mark.parametrize(
    ("source", "flags", "text"),
    [
        (r"(?P<rank>\d+):(?P<word>\w+)", 0, "a 12:ab 3:c 44:Ë"),
        (r"nccl (warn|info)\b", re.IGNORECASE, "x NCCL WARN y nccl info z"),
        (rb"(\d+) NCCL INFO ", 0, b"host:1:2 [3] NCCL INFO 4 NCCL INFO "),
    ],
)
def test_a_lazy_pattern_answers_as_the_compiled_one(
    source: str | bytes, flags: int, text: str | bytes
) -> None:
    lazy, real = LazyPattern(source, flags), re.compile(source, flags)
    assert lazy.pattern == real.pattern
    assert lazy._compiled is None  # nothing compiled until asked
    assert (lazy.flags, lazy.groups, lazy.groupindex) == (real.flags, real.groups, real.groupindex)
    for name in ("search", "match", "fullmatch"):
        for pos in (0, 2):
            ours, theirs = getattr(lazy, name)(text, pos), getattr(real, name)(text, pos)
            assert (ours and ours.span()) == (theirs and theirs.span())
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in real.finditer(text)]
    assert lazy.findall(text) == real.findall(text)
    assert lazy.split(text, 1) == real.split(text, 1)
    repl = "<\\1>" if isinstance(text, str) else b"<\\1>"
    assert lazy.sub(repl, text) == real.sub(repl, text)  # type: ignore[arg-type]
    assert lazy.subn(repl, text, 1) == real.subn(repl, text, 1)  # type: ignore[arg-type]
