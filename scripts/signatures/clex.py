"""A small C/C++ lexer for the miners: blank comments, find logging calls, read their arguments."""

from __future__ import annotations

import re
from dataclasses import dataclass

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'", "a": "\a"}


def blank_comments(src: str) -> str:
    """``src`` with comments replaced by spaces (newlines kept, so line numbers hold)."""
    out: list[str] = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c in "\"'":
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            out.append(src[i : j + 1])
            i = j + 1
        elif src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def split_args(src: str, open_paren: int) -> tuple[list[str], int]:
    """The top-level comma-separated arguments of the call whose ``(`` is at ``open_paren``.

    Returns the argument texts and the index just past the closing ``)``.
    """
    depth, i, n = 0, open_paren, len(src)
    args: list[str] = []
    start = open_paren + 1
    while i < n:
        c = src[i]
        if c in "\"'":
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            i = j + 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append(src[start:i])
                return [a.strip() for a in args], i + 1
        elif c == "," and depth == 1:
            args.append(src[start:i])
            start = i + 1
        i += 1
    return [], n


def _unescape(body: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt == "x":
                m = re.match(r"[0-9a-fA-F]{1,2}", body[i + 2 :])
                if m:
                    out.append(chr(int(m.group(0), 16)))
                    i += 2 + len(m.group(0))
                    continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


@dataclass
class Format:
    """A format argument read from source: its text and the argument expressions in order."""

    text: str
    args: list[str]


_TOKEN = re.compile(
    r'\s*(?:(?P<lit>(?:u8|L|u|U)?"(?:[^"\\]|\\.)*")|(?P<ident>[A-Za-z_]\w*))', re.DOTALL
)


def read_format(expr: str, rest: list[str], pri: dict[str, str]) -> Format | None:
    """Concatenated literals of ``expr`` (with ``"%" PRIu64`` and macro-parameter names).

    An identifier between literals that is not a ``PRI`` macro stands for a
    string (e.g. ``"Call to " name " failed"`` in a macro): it becomes ``%s``
    whose argument is that identifier. ``None`` when ``expr`` holds no literal.
    """
    pos = 0
    text: list[str] = []
    args = list(rest)
    conv = re.compile(r"%(?!%)")
    seen_lit = False
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if not m:
            if expr[pos:].strip():
                return None
            break
        pos = m.end()
        if m.group("lit"):
            seen_lit = True
            lit = m.group("lit")
            text.append(_unescape(lit[lit.index('"') + 1 : -1]))
        else:
            ident = m.group("ident")
            if ident in pri:
                text.append("l" + pri[ident])
            else:
                joined = "".join(text).replace("%%", "")
                args.insert(min(len(conv.findall(joined)), len(args)), ident)
                text.append("%s")
    if not seen_lit:
        return None
    return Format("".join(text), args)


def find_calls(src: str, names: tuple[str, ...]) -> list[tuple[str, int, list[str], int]]:
    """``(macro, line, args, end)`` for each call of one of ``names`` in comment-free ``src``."""
    pat = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\s*\(")
    out = []
    for m in pat.finditer(src):
        line_start = src.rfind("\n", 0, m.start()) + 1
        if re.match(r"\s*#\s*define\s+" + re.escape(m.group(1)) + r"\b", src[line_start : m.end()]):
            continue
        args, end = split_args(src, m.end() - 1)
        if args:
            out.append((m.group(1), src.count("\n", 0, m.start()) + 1, args, end))
    return out
