"""Shared helpers of the signature miners: printf formats to bounded regexes, field names, JSONL.

The miners read the libraries' own sources (git mirrors, wheels) and write
``src/nccl_doctor/knowledge/signatures/<library>.jsonl``. Every pattern they
emit keeps to the subset that both Python ``re`` and Hyperscan accept and that
runs in linear time: no backreferences, no lookaround, no ``$``, every repeat
bounded, every free-text capture lazy and bounded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
OUT_DIR = REPO / "src" / "nccl_doctor" / "knowledge" / "signatures"

# the longest a %s capture may be; messages are single lines, paths and error texts fit
TEXT_MAX = 200

PRINTF = re.compile(
    r"%(?P<flags>[-+ #0']*)(?P<width>\d+|\*)?(?:\.(?P<prec>\d+|\*))?"
    r"(?P<len>hh|h|ll|l|z|j|t|L|q)?(?P<conv>[diouxXeEfFgGcspn%])"
)

INT = r"-?\d{1,20}"
UINT = r"\d{1,20}"
HEX = r"[0-9a-fA-F]{1,16}"
FLOAT = r"-?(?:\d{1,20}(?:\.\d{0,20})?(?:[eE][-+]?\d{1,4})?|inf|nan)"
TEXT = rf"[^\n]{{0,{TEXT_MAX}}}?"

# C's inttypes macros spelled between literals: "%" PRIu64
PRI_MACROS = {f"PRI{c}{n}": c for c in "diuxX" for n in ("8", "16", "32", "64", "PTR", "MAX")}


def conversion_regex(conv: str, flags: str) -> str:
    """The bounded regex for one printf conversion (without its capture group)."""
    if conv in "di":
        return INT
    if conv == "u":
        return UINT
    if conv in "xX":
        return ("0x" if "#" in flags else "") + HEX
    if conv == "o":
        return r"[0-7]{1,22}"
    if conv == "p":
        return r"(?:0x[0-9a-fA-F]{1,16}|\(nil\))"
    if conv in "eEfFgG":
        return FLOAT
    if conv == "c":
        return r"[^\n]"
    if conv == "s":
        return TEXT
    raise ValueError(conv)


_META = re.compile(r"([\\.^$*+?{}\[\]|()])")


def escape(text: str) -> str:
    """Escape the regex metacharacters only (spaces stay readable; both engines agree)."""
    return _META.sub(r"\\\1", text)


_SNAKE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NAME_HINTS = {
    "strerror": "errno_text",
    "gai_strerror": "gai_error",
    "cudaGetErrorString": "cuda_error",
    "cuGetErrorString": "cu_error",
    "ncclGetErrorString": "nccl_error",
    "ncclSocketToString": "address",
    "ibv_wc_status_str": "wc_status",
    "ibvWcStatusStr": "wc_status",
    "ibv_event_type_str": "event",
    "ncclFuncToString": "func",
    "ncclCollNoteToString": "note",
    "errno": "errno",
    "e.what": "exception",
}


def field_name(expr: str, taken: set[str]) -> str:
    """A Python group name from a C argument expression, unique within ``taken``."""
    expr = expr.strip()
    base = ""
    call = re.match(r"\(?\s*\(?([A-Za-z_][\w.]*(?:->\w+)*)\s*\(", expr)
    if call:
        fn = call.group(1).split("->")[-1]
        base = _NAME_HINTS.get(fn, "")
        if not base and fn in {"strerror", "sizeof"}:
            base = fn
        if not base:
            inner = re.findall(r"[A-Za-z_]\w*", expr[call.end() :])
            base = inner[-1] if inner and fn.lower().endswith(("tostring", "str", "name")) else fn
    if not base:
        idents = [
            w
            for w in re.findall(r"[A-Za-z_]\w*", expr)
            if w
            not in {
                "int",
                "long",
                "unsigned",
                "void",
                "char",
                "const",
                "size_t",
                "uint64_t",
                "uint32_t",
                "int64_t",
                "uintptr_t",
            }
        ]
        base = _NAME_HINTS.get(expr, idents[-1] if idents else "value")
    base = _SNAKE.sub("_", base).lower().strip("_")
    base = re.sub(r"\W+", "_", base) or "value"
    if base[0].isdigit():
        base = "f_" + base
    if base in {"str", "s", "p", "x", "i", "n", "d", "buf", "buffer", "line", "msg", "tmp", "c"}:
        base = {"line": "text", "msg": "text", "buf": "text", "buffer": "text"}.get(base, "value")
    name, k = base, 2
    while name in taken:
        name = f"{base}_{k}"
        k += 1
    taken.add(name)
    return name


def printf_to_pattern(fmt: str, args: list[str]) -> tuple[str, list[str]]:
    """An anchored, bounded regex for a printf ``fmt`` and the names of its captures.

    ``args`` are the C argument expressions (used for names only). Leading and
    trailing whitespace of the format is dropped (NCCL adds its own); a format
    that starts with ``%s`` gets a restricted capture so that the pattern never
    starts with free text, and a trailing ``%s`` is greedy (a lazy one would
    match nothing).
    """
    start, end = len(fmt) - len(fmt.lstrip()), len(fmt.rstrip())
    # leading conversions (a file:line, an op name) are left out: a pattern that starts
    # with free text would be tried at every offset of a line; it starts at the first
    # literal holding a letter instead, and their arguments are skipped
    arg_skip = 0
    while True:
        m = PRINTF.match(fmt, start)
        if not m or m.group("conv") == "%":
            break
        arg_skip += 1 + (m.group("width") == "*") + (m.group("prec") == "*")
        start = m.end()
        while start < end and not fmt[start].isalpha() and fmt[start] != "%":
            start += 1
    args = args[arg_skip:]
    pieces: list[str] = []
    fields: list[str] = []
    taken: set[str] = set()
    pos, arg_i = start, 0
    prev_end, prev_text = -1, False
    for m in PRINTF.finditer(fmt, start, end):
        pieces.append(escape(fmt[pos : m.start()]))
        pos = m.end()
        conv, flags, width = m.group("conv"), m.group("flags") or "", m.group("width")
        if conv == "%":
            pieces.append("%")
            prev_end = -1
            continue
        arg_i += (width == "*") + (m.group("prec") == "*")
        expr = args[arg_i] if arg_i < len(args) else "value"
        arg_i += 1
        body = conversion_regex(conv, flags)
        if conv == "s" and m.group("prec") not in (None, "*"):
            body = rf"[^\n]{{0,{m.group('prec')}}}?"
        if width and width != "*" and conv in "diuxX":
            pad = f" {{0,{int(width)}}}"
            body = body + pad if "-" in flags else pad + body
        if conv in "sc" and m.start() == prev_end and prev_text:
            prev_end = m.end()
            continue  # adjacent to a free-text capture: one capture holds both
        name = field_name(expr, taken)
        fields.append(name)
        pieces.append(f"(?P<{name}>{body})")
        prev_text = conv in "sc" or body == TEXT
        prev_end = m.end()
    pieces.append(escape(fmt[pos:end]))
    pattern = _fence_captures("".join(pieces))
    if pattern.endswith("}?)"):
        pattern = pattern[: -len("?)")] + ")"
    return pattern, fields


_LAZY = f"[^\\n]{{0,{TEXT_MAX}}}?)"
_FENCE = ",;()[]<>'\""


def _fence_captures(pattern: str) -> str:
    """Keep a lazy capture from running past the punctuation that ends it.

    ``(?P<x>[^\\n]{0,200}?) \\(`` becomes ``(?P<x>[^\\n(]{0,200}?) \\(``: the
    capture cannot hold the first non-space character of the literal after
    it, so it has one place to stop, not one per occurrence of that literal
    in the next 200 characters. Without this, two lazy captures in a row cost
    the product of their bounds at every near-miss. The price: a value that
    itself holds that character (a path with a ``)``) does not match.
    """
    out: list[str] = []
    pos = 0
    while True:
        i = pattern.find(_LAZY, pos)
        if i < 0:
            out.append(pattern[pos:])
            return "".join(out)
        j = i + len(_LAZY)
        nxt = pattern[j:].lstrip(" ")
        ch = nxt[1] if nxt.startswith("\\") and len(nxt) > 1 else nxt[:1]
        out.append(pattern[pos:i])
        if ch and ch in _FENCE:
            esc = "\\" + ch if ch in "[]" else ch
            out.append(f"[^\\n{esc}]{{0,{TEXT_MAX}}}?)")
        else:
            out.append(_LAZY)
        pos = j


def write_jsonl(library: str, entries: Iterable[dict[str, Any]]) -> Path:
    """Write ``entries`` sorted by id as ``<library>.jsonl``; returns the path."""
    path = OUT_DIR / f"{library}.jsonl"
    rows = sorted(entries, key=lambda e: e["id"])
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, sort_keys=False) + "\n")
    return path


def slug(text: str, limit: int = 48) -> str:
    """A lower_snake id part from message text (conversions and punctuation dropped)."""
    text = PRINTF.sub(" ", text)
    words = re.findall(r"[A-Za-z][A-Za-z0-9]*", text)
    out = ""
    for w in words:
        cand = (out + "_" + w.lower()) if out else w.lower()
        if len(cand) > limit:
            break
        out = cand
    return out or "message"


_PLACE = re.compile(r"\{\{|\}\}|\{(?P<name>[a-z_][a-z0-9_]*)(?::(?P<type>[dfxswm]))?\}")
# placeholder types: s text, w one token (no blanks), d integer, f float, x hex, m a byte size
# as PyTorch prints it ("20.00 MiB")
PLACE_TYPES = {
    "s": TEXT,
    "w": rf"[^\s]{{1,{TEXT_MAX}}}",
    "d": INT,
    "f": FLOAT,
    "x": HEX,
    "m": r"\d{1,20}(?:\.\d{1,20})? [KMGTPE]?i?B",
}


def placeholders_to_pattern(fmt: str) -> tuple[str, list[str]]:
    """The pattern of a ``{name[:type]}`` format line (same rules as :func:`printf_to_pattern`)."""
    text = fmt.strip()
    pieces: list[str] = []
    fields: list[str] = []
    pos, prev_end, prev_text, dropped = 0, -1, False, False
    for m in _PLACE.finditer(text):
        lit = text[pos : m.start()]
        if m.group(0) in ("{{", "}}"):
            pieces.append(escape(lit + m.group(0)[0]))
            pos, prev_end = m.end(), -1
            continue
        pos = m.end()
        if not fields and not re.search(r"[A-Za-z]", "".join(pieces) + lit):
            pieces, dropped = [], True  # leading placeholders: start at the first literal
            continue
        if dropped and not fields and not pieces:
            lit = lit[re.search(r"[A-Za-z]", lit).start() :]  # type: ignore[union-attr]
        pieces.append(escape(lit))
        kind = m.group("type") or "s"
        if kind == "s" and m.start() == prev_end and prev_text:
            prev_end = m.end()
            continue
        fields.append(m.group("name"))
        pieces.append(f"(?P<{m.group('name')}>{PLACE_TYPES[kind]})")
        prev_end, prev_text = m.end(), kind == "s"
    tail = text[pos:]
    if dropped and not fields and not pieces and re.search(r"[A-Za-z]", tail):
        tail = tail[re.search(r"[A-Za-z]", tail).start() :]  # type: ignore[union-attr]
    pieces.append(escape(tail))
    pattern = _fence_captures("".join(pieces))
    if pattern.endswith("}?)"):
        pattern = pattern[: -len("?)")] + ")"
    return pattern, fields


def first_line(text: str) -> str:
    """The first line of ``text`` holding three letters (what a single-line pattern covers)."""
    for line in text.split("\n"):
        if len(re.findall(r"[A-Za-z]", _PLACE.sub("", PRINTF.sub("", line)))) >= 3:
            return line
    return text


def pattern_for(fmt: str, style: str, args: list[str] | None = None) -> tuple[str, list[str]]:
    """The pattern and field names for the first line of ``fmt`` (``printf`` or ``{name}`` style)."""
    if style == "printf":
        return printf_to_pattern(first_line(fmt), args or [])
    if style == "literal":
        return escape(first_line(fmt).strip()), []
    return placeholders_to_pattern(first_line(fmt))
