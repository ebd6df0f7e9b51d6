"""Every regular expression of the package, and inputs built to make each one slow.

Python's ``re`` backtracks. A pattern such as ``[\\w.:]+<\\d+>`` run with
``search`` over a long run of word characters tries every start position and,
from each, scans the whole run before failing on the missing ``<``: quadratic
time, minutes on one long line. This module finds the patterns and builds,
for each, the inputs of that shape, so a test can time them at growing sizes.

Patterns are found two ways, so none hides: every ``re.Pattern`` reachable
from a module's globals, its classes and their tables (tuples, dicts,
dataclass instances, bound ``search`` methods); and every string literal the
source passes to ``re.compile``/``re.search``/... or to ``facts.search`` /
``facts.said`` (which search all evidence lines joined, case-insensitive).

Each pattern is timed the way the package runs it: with ``search`` (each
position a possible start), except a global pattern its module only ever calls
``.match``/``.fullmatch`` on (and no other module imports), which is anchored
at one position.

Inputs, for each unbounded repeat of a pattern (``*``, ``+``, ``{n,}``): the
text that leads into the repeat (a witness generated from the pattern, its
branches chosen to pass through the repeat), then the repeat's body pumped to
the size, with and without a trailing character that fails the match; the
lead and one body repeated (every copy a fresh start); the body alone. A body
that is one character class is pumped with each of several characters it
accepts (a letter, a digit, punctuation, a space...) and with their mix.
Besides those, plain runs of letters, dots, digits, hex, ``/``, ``:``,
spaces, a base64 blob and a stack frame.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import pkgutil
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    from re import _constants as sre_c
    from re import _parser as sre_p
else:  # pragma: no cover -- Python 3.10
    import sre_constants as sre_c
    import sre_parse as sre_p

import nccl_doctor
from nccl_doctor.facts.literals import required_words
from nccl_doctor.facts.signs import Sign
from nccl_doctor.parse._lazy import LazyPattern

PACKAGE = Path(nccl_doctor.__file__).parent

#: Characters tried against each character class, in order of preference.
CANDIDATES = "aZ0f._-/:@+% ,=;'\"()[]<>{}|\\\t#*!?~^$&x\u00e9\x01\n"
#: Trailing characters: none, a control character, a newline.
TRAILERS = ("", "\x00", "\n")
#: Plain runs every pattern gets, whatever its shape.
PLAIN = (
    "a",
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
    ".",
    "a.",
    "0123456789",
    "0123456789abcdef",
    "/",
    "/usr/lib/x86_64-linux-gnu/libnccl.so.2",
    ":",
    "0:",
    " ",
    "a ",
    "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo+/=",
    " at /opt/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1234 (0x7f3a2b1c0d9e)",
)
_RE_CALLS = {
    "compile",
    "search",
    "match",
    "fullmatch",
    "sub",
    "subn",
    "findall",
    "finditer",
    "split",
}
#: Where each ``re`` function takes its flags, counting positional arguments.
_FLAGS_AT = {"compile": 1, "sub": 4, "subn": 4, "split": 3}
_FACTS_CALLS = {"search", "said"}
_ANCHORED_CALLS = {"match", "fullmatch"}


@dataclass(frozen=True)
class Found:
    """A pattern, where it was found, and how the package runs it (``search`` or ``match``)."""

    pattern: re.Pattern[str]
    where: str
    mode: str = "search"

    def runner(self) -> Any:
        """The bound method the package calls: ``search``, ``match`` or ``fullmatch``."""
        return getattr(self.pattern, self.mode)


# -- finding the patterns ------------------------------------------------


def _modules() -> Iterator[Any]:
    for info in pkgutil.walk_packages([str(PACKAGE)], "nccl_doctor."):
        if info.name.endswith("__main__"):
            continue
        yield importlib.import_module(info.name)


def _reachable(value: Any, depth: int, seen: set[int]) -> Iterator[re.Pattern[str]]:
    if id(value) in seen or depth > 5:
        return
    seen.add(id(value))
    if isinstance(value, LazyPattern):  # compiled on first use: the pattern it will run
        value = value.compiled()
    if isinstance(value, re.Pattern):
        if isinstance(value.pattern, str):
            yield value
    elif isinstance(getattr(value, "__self__", None), (re.Pattern, LazyPattern)):  # a bound .search
        yield from _reachable(value.__self__, depth, seen)
    elif isinstance(value, Sign):  # compiled on first use: the pattern it will run
        yield value.regex
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _reachable(k, depth + 1, seen)
            yield from _reachable(v, depth + 1, seen)
    elif isinstance(value, (tuple, list, set, frozenset)):
        for v in value:
            yield from _reachable(v, depth + 1, seen)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _reachable(getattr(value, f.name, None), depth + 1, seen)
    elif isinstance(value, type) and value.__module__.startswith("nccl_doctor"):
        for v in vars(value).values():
            yield from _reachable(v, depth + 1, seen)


def _literal_flags(node: ast.expr | None) -> int:
    if node is None:
        return 0
    try:
        flags = eval(compile(ast.Expression(node), "<flags>", "eval"), {"re": re})  # noqa: S307 -- the package's own flag expressions
    except Exception:  # noqa: BLE001 -- a flags value held in a variable: assume none
        return 0
    return int(flags)


def _anchored_names(tree: ast.Module) -> dict[str, set[str]]:
    """Globals the module only ever calls ``.match``/``.fullmatch`` on, and which of the two."""
    uses: dict[str, set[str]] = {}
    anchored_loads: set[int] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.attr in _ANCHORED_CALLS
        ):
            anchored_loads.add(id(node.value))
            uses.setdefault(node.value.id, set()).add(node.attr)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Name)
            and isinstance(node.ctx, ast.Load)
            and id(node) not in anchored_loads
        ):
            uses.setdefault(node.id, set()).add("search")
    return {name: modes for name, modes in uses.items() if "search" not in modes}


def _imported_names() -> set[str]:
    names: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                names.update(a.name for a in node.names)
    return names


def _literal_patterns(path: Path, tree: ast.Module) -> Iterator[Found]:
    where = str(path.relative_to(PACKAGE.parent))
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if not node.args or not isinstance(node.args[0], ast.Constant):
            continue
        text = node.args[0].value
        if not isinstance(text, str):
            continue
        name, receiver = node.func.attr, node.func.value
        if isinstance(receiver, ast.Name) and receiver.id == "re" and name in _RE_CALLS:
            at = _FLAGS_AT.get(name, 2)
            flag_node = next((k.value for k in node.keywords if k.arg == "flags"), None)
            if flag_node is None and len(node.args) > at:
                flag_node = node.args[at]
            flags = _literal_flags(flag_node)
            mode = name if name in _ANCHORED_CALLS else "search"
        elif name in _FACTS_CALLS and isinstance(receiver, ast.Name) and receiver.id == "facts":
            # as Facts.search runs it: on each candidate line, or over all lines joined
            flags, mode = re.IGNORECASE, "search"
            if required_words(text, flags) is None:
                flags |= re.MULTILINE
        else:
            continue
        yield Found(re.compile(text, flags), f"{where}:{node.lineno}", mode)


def package_patterns() -> list[Found]:
    """Every pattern of the package, once per (pattern, flags, mode)."""
    found: dict[tuple[str, int, str], Found] = {}
    imported = _imported_names()
    anchored: dict[str, dict[str, set[str]]] = {}
    literal: list[Found] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        names = _anchored_names(tree)
        anchored[module.removesuffix(".__init__")] = {
            k: v for k, v in names.items() if k not in imported
        }
        literal.extend(_literal_patterns(path, tree))
    for module in _modules():
        seen: set[int] = set()
        for name, value in vars(module).items():
            modes = anchored.get(module.__name__, {}).get(name, {"search"})
            if isinstance(value, type) and value.__module__ != module.__name__:
                continue  # a class imported from elsewhere: walked in its own module
            for pattern in _reachable(value, 0, seen):
                for mode in sorted(modes):
                    item = Found(pattern, f"{module.__name__}.{name}", mode)
                    found.setdefault((pattern.pattern, pattern.flags, mode), item)
    # a literal of the source the globals did not hold: compiled in a function, run there
    walked = {(text, flags) for text, flags, _ in found}
    for item in literal:
        if (item.pattern.pattern, item.pattern.flags) not in walked:
            found.setdefault((item.pattern.pattern, item.pattern.flags, item.mode), item)
    # a pattern also run with search makes its match-only entry redundant
    return [
        f
        for (text, flags, mode), f in found.items()
        if mode == "search" or (text, flags, "search") not in found
    ]


# -- inputs ----------------------------------------------------------------

_CATEGORY_ORACLE = {
    sre_c.CATEGORY_DIGIT: re.compile(r"\d"),
    sre_c.CATEGORY_NOT_DIGIT: re.compile(r"\D"),
    sre_c.CATEGORY_SPACE: re.compile(r"\s"),
    sre_c.CATEGORY_NOT_SPACE: re.compile(r"\S"),
    sre_c.CATEGORY_WORD: re.compile(r"\w"),
    sre_c.CATEGORY_NOT_WORD: re.compile(r"\W"),
    sre_c.CATEGORY_LINEBREAK: re.compile(r"\n"),
    sre_c.CATEGORY_NOT_LINEBREAK: re.compile(r"[^\n]"),
}


def _same(code: int, ch: str, icase: bool) -> bool:
    other = chr(code)
    return other == ch or (icase and other.lower() == ch.lower())


def _in_accepts(items: list[tuple[Any, Any]], ch: str, icase: bool) -> bool:
    negate, hit = False, False
    for op, av in items:
        if op is sre_c.NEGATE:
            negate = True
        elif op is sre_c.LITERAL:
            hit = hit or _same(av, ch, icase)
        elif op is sre_c.RANGE:
            lo, hi = av
            forms = {ch, ch.lower(), ch.upper()} if icase else {ch}
            hit = hit or any(len(c) == 1 and lo <= ord(c) <= hi for c in forms)
        elif op is sre_c.CATEGORY:
            hit = hit or bool(_CATEGORY_ORACLE[av].match(ch))
    return hit != negate


def _accepts(op: Any, av: Any, ch: str, flags: int) -> bool:
    """Whether a one-character node accepts ``ch``."""
    icase = bool(flags & re.IGNORECASE)
    if op is sre_c.LITERAL:
        return _same(av, ch, icase)
    if op is sre_c.NOT_LITERAL:
        return not _same(av, ch, icase)
    if op is sre_c.ANY:
        return ch != "\n" or bool(flags & re.DOTALL)
    if op is sre_c.IN:
        return _in_accepts(av, ch, icase)
    if op is sre_c.CATEGORY:
        return bool(_CATEGORY_ORACLE[av].match(ch))
    return False


_ONE_CHAR = (sre_c.LITERAL, sre_c.NOT_LITERAL, sre_c.ANY, sre_c.IN, sre_c.CATEGORY)


def _chars(op: Any, av: Any, flags: int) -> list[str]:
    """Characters a one-character node accepts: its own, then the candidates it takes."""
    own: list[str] = []
    if op is sre_c.LITERAL:
        own.append(chr(av))
    elif op is sre_c.IN and not any(o is sre_c.NEGATE for o, _ in av):
        for o, a in av:
            if o is sre_c.LITERAL:
                own.append(chr(a))
            elif o is sre_c.RANGE:
                own.extend((chr(a[0]), chr(a[1])))
    found = dict.fromkeys(own[:4])
    found.update(dict.fromkeys(c for c in CANDIDATES if _accepts(op, av, c, flags)))
    return list(found)


_REPEATS = tuple(
    getattr(sre_c, name)
    for name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")
    if hasattr(sre_c, name)
)


def _contains(seq: Any, target: int) -> bool:
    for op, av in seq:
        if id(av) == target:
            return True
        for sub in _children(op, av):
            if _contains(sub, target):
                return True
    return False


def _children(op: Any, av: Any) -> list[Any]:
    if op in _REPEATS:
        return [av[2]]
    if op is sre_c.SUBPATTERN:
        return [av[3]]
    if op is sre_c.BRANCH:
        return list(av[1])
    if op in (sre_c.ASSERT, sre_c.ASSERT_NOT):
        return [av[1]]
    if op is getattr(sre_c, "ATOMIC_GROUP", None):
        return [av]
    if op is sre_c.GROUPREF_EXISTS:
        return [b for b in av[1:] if b is not None]
    return []


MARK = "\ue000"


class _Witness:
    """Text that walks through a pattern, ``MARK`` where one chosen repeat's body goes."""

    def __init__(self, flags: int, target: int) -> None:
        self.flags = flags
        self.target = target
        self.groups: dict[int, str] = {}

    def seq(self, seq: Any) -> str:
        return "".join(self.node(op, av) for op, av in seq)

    def node(self, op: Any, av: Any) -> str:
        if op in _ONE_CHAR:
            chars = _chars(op, av, self.flags)
            return chars[0] if chars else ""
        if op in _REPEATS:
            if id(av) == self.target:
                return MARK
            if _contains(av[2], self.target):
                return self.seq(av[2])  # once: one MARK
            return self.seq(av[2]) * max(av[0], 1)
        if op is sre_c.SUBPATTERN:
            text = self.seq(av[3])
            if av[0] is not None:
                self.groups[av[0]] = text
            return text
        if op is sre_c.BRANCH:
            alts = av[1]
            chosen = next((a for a in alts if _contains(a, self.target)), alts[0])
            return self.seq(chosen)
        if op is sre_c.ASSERT:
            return self.seq(av[1]) if _contains(av[1], self.target) else ""
        if op is getattr(sre_c, "ATOMIC_GROUP", None):
            return self.seq(av)
        if op is sre_c.GROUPREF:
            return self.groups.get(av, "")
        if op is sre_c.GROUPREF_EXISTS:
            branch = av[1] if _contains(av[1], self.target) or av[2] is None else av[2]
            return self.seq(branch)
        return ""  # AT anchors, negative lookarounds


def _repeats(seq: Any) -> Iterator[tuple[Any, Any]]:
    for op, av in seq:
        if op in _REPEATS and av[1] is sre_c.MAXREPEAT:
            yield op, av
        for sub in _children(op, av):
            yield from _repeats(sub)


def _bodies(av: Any, flags: int) -> list[str]:
    """Strings for one pass of a repeat's body: each of a few characters, their mix, a witness."""
    body = av[2]
    if len(body) == 1 and body[0][0] in _ONE_CHAR:
        chars = _chars(body[0][0], body[0][1], flags)
        picked = _spread(chars)
        return [*picked, "".join(chars)] if len(chars) > 1 else picked
    return [_Witness(flags, -1).seq(body)]


def _spread(chars: list[str]) -> list[str]:
    """At most one character of each sort: letter, digit, space, punctuation, other."""
    sorts: dict[str, str] = {}
    for c in chars:
        sort = (
            "alpha"
            if c.isalpha()
            else "digit"
            if c.isdigit()
            else "space"
            if c.isspace()
            else "punct"
            if c.isprintable()
            else "other"
        )
        sorts.setdefault(sort, c)
        if sort == "punct" and c not in sorts.values() and len(sorts) < 8:
            sorts.setdefault(f"punct{c}", c)
    return list(sorts.values())


@dataclass(frozen=True)
class Shape:
    """One adversarial input, as a recipe: ``lead + unit * k + trail``, cut to a size."""

    lead: str
    unit: str
    trail: str = ""

    def build(self, size: int) -> str:
        room = max(size - len(self.lead) - len(self.trail), len(self.unit))
        return self.lead + (self.unit * (room // len(self.unit) + 1))[:room] + self.trail


def shapes(pattern: re.Pattern[str]) -> list[Shape]:
    """The adversarial inputs of ``pattern``, without duplicates."""
    flags = pattern.flags
    tree = sre_p.parse(pattern.pattern, flags)
    out: dict[Shape, None] = {}
    for unit in PLAIN:
        for trail in TRAILERS:
            out[Shape("", unit, trail)] = None
    for _, av in _repeats(tree.data if hasattr(tree, "data") else tree):
        witness = _Witness(flags, id(av)).seq(tree.data if hasattr(tree, "data") else tree)
        lead, _, after = witness.partition(MARK)
        for body in _bodies(av, flags):
            if not body:
                continue
            for trail in TRAILERS:
                out[Shape(lead, body, trail)] = None
            out[Shape(lead, body, after)] = None
            out[Shape("", lead + body)] = None
            out[Shape("", body)] = None
    return list(out)
