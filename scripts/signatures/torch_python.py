"""Read the message strings of ``torch/distributed/**/*.py`` (from a wheel's files) with ``ast``.

Each message is a logging call's or a raised exception's first argument: a
constant (``%``-style arguments make it a printf format), an f-string (its
expressions become ``{name}`` placeholders) or ``"...".format(...)``.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

LOG_METHODS = {"error", "warning", "warn", "info", "exception", "critical", "debug", "log"}


@dataclass(frozen=True)
class PyMessage:
    """One message at one place: ``style`` is ``printf`` or ``python`` (``{name}`` placeholders)."""

    path: str
    line: int
    kind: str  # "log.<method>", "raise <Exc>", "warnings.warn"
    style: str
    text: str
    args: tuple[str, ...] = ()


def _name(expr: ast.expr, taken: set[str]) -> str:
    src = ast.unparse(expr)
    words = re.findall(r"[A-Za-z_]\w*", src)
    words = [w for w in words if w not in {"self", "str", "len", "repr", "int", "float", "f"}]
    base = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", words[-1] if words else "value").lower()
    base = base.strip("_") or "value"
    name, k = base, 2
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    taken.add(name)
    return name


def _fstring(node: ast.JoinedStr) -> str:
    out: list[str] = []
    taken: set[str] = set()
    for part in node.values:
        if isinstance(part, ast.Constant) and isinstance(part.value, str):
            out.append(part.value.replace("{", "{{").replace("}", "}}"))
        elif isinstance(part, ast.FormattedValue):
            spec = ""
            if isinstance(part.format_spec, ast.JoinedStr):
                raw = "".join(
                    v.value for v in part.format_spec.values if isinstance(v, ast.Constant)
                )
                spec = (
                    ":f" if raw.endswith(("f", "e", "g")) else (":d" if raw.endswith("d") else "")
                )
            out.append("{" + _name(part.value, taken) + spec + "}")
    return "".join(out)


def _message(arg: ast.expr) -> tuple[str, str] | None:
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return "printf", arg.value
    if isinstance(arg, ast.JoinedStr):
        return "python", _fstring(arg)
    if isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Mod):
        inner = _message(arg.left)
        return ("printf", inner[1]) if inner else None
    if isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Add):
        left, right = _message(arg.left), _message(arg.right)
        if left and right:
            return "python", _as_python(*left) + _as_python(*right)
        return None
    if (
        isinstance(arg, ast.Call)
        and isinstance(arg.func, ast.Attribute)
        and arg.func.attr == "format"
        and isinstance(arg.func.value, ast.Constant)
        and isinstance(arg.func.value.value, str)
    ):
        text = arg.func.value.value
        taken: set[str] = set()
        names = [_name(a, taken) for a in arg.args]
        kw = {k.arg: k.arg for k in arg.keywords if k.arg}
        it = iter(names)

        def sub(m: re.Match[str]) -> str:
            if m.group(0) in ("{{", "}}"):
                return m.group(0)
            key = m.group(1)
            if key == "" or key.isdigit():
                nm = (
                    next(it, "value")
                    if key == ""
                    else (names[int(key)] if int(key) < len(names) else "value")
                )
            else:
                nm = kw.get(key, key)
            return "{" + nm + "}"

        return "python", re.sub(r"\{\{|\}\}|\{([^{}:!]*)(?:[:!][^{}]*)?\}", sub, text)
    return None


def _as_python(style: str, text: str) -> str:
    return text if style == "python" else text.replace("{", "{{").replace("}", "}}")


def read_tree(root: Path, rel_to: Path) -> list[PyMessage]:
    """Every message under ``root`` (paths relative to ``rel_to``)."""
    out: list[PyMessage] = []
    for path in sorted(root.rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        rel = str(path.relative_to(rel_to))
        for node in ast.walk(tree):
            call: ast.Call | None = None
            kind = ""
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                call = node.exc
                kind = "raise " + ast.unparse(call.func).split(".")[-1]
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in LOG_METHODS
            ):
                call, kind = node, "log." + node.func.attr
            if call is None or not call.args:
                continue
            first = 1 if kind == "log.log" and len(call.args) > 1 else 0
            arg = call.args[first]
            msg = _message(arg)
            if msg:
                style, text = msg
                rest: list[ast.expr] = list(call.args[first + 1 :])
                if isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Mod):
                    right = arg.right
                    rest = list(right.elts) if isinstance(right, ast.Tuple) else [right]
                if style == "printf" and "%(" in text:  # %(name)s: name the placeholder
                    style = "python"
                    text = re.sub(
                        r"%\((\w+)\)[-#0 +]*\d*(?:\.\d+)?([sdirfx])",
                        lambda m: "{" + m.group(1) + (":d" if m.group(2) in "di" else "") + "}",
                        text.replace("{", "{{").replace("}", "}}"),
                    )
                names = tuple(ast.unparse(a) for a in rest)
                out.append(PyMessage(rel, node.lineno, kind, style, text, names))
    return out
