"""Sample messages rendered from a signature's format string; adversarial inputs for its pattern.

Independent of the miners that wrote the patterns: printf formats are
rendered with Python's own ``%`` operator (C length modifiers dropped, ``%p``
as a hex pointer), ``{name}``/``{name:d}`` placeholders with values by type.
"""

from __future__ import annotations

import re

from nccl_doctor.knowledge.signatures import Signature

_PRINTF = re.compile(
    r"%(?P<flags>[-+ #0']*)(?P<width>\d+|\*)?(?:\.(?P<prec>\d+|\*))?"
    r"(?P<len>hh|h|ll|l|z|j|t|L|q)?(?P<conv>[diouxXeEfFgGcspn%])"
)
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{(?P<name>[a-z_][a-z0-9_]*)(?::(?P<type>[dfxswm]))?\}")


def _value(conv: str, i: int) -> object:
    if conv in "diu":
        return 40 + i
    if conv in "xXo":
        return 0x1F + i
    if conv in "eEfFgG":
        return 1.5 + i
    if conv == "c":
        return "c"
    if conv == "p":
        return f"0x7f{i:02x}beef"
    return f"mlx5_{i}" if i == 0 else f"sample_text_{chr(97 + i % 26)}"


def render_printf(fmt: str) -> str:
    """``fmt`` with sample values, as C's printf would print it."""
    out: list[str] = []
    pos, i = 0, 0
    for m in _PRINTF.finditer(fmt):
        out.append(fmt[pos : m.start()])
        pos = m.end()
        conv = m.group("conv")
        if conv == "%":
            out.append("%")
            continue
        spec = "%" + (m.group("flags") or "").replace("'", "")
        args: list[object] = []
        if m.group("width"):
            spec += m.group("width")
            if m.group("width") == "*":
                args.append(4)
        if m.group("prec"):
            spec += "." + m.group("prec")
            if m.group("prec") == "*":
                args.append(20)
        py_conv = {"u": "d", "p": "s", "i": "d"}.get(conv, conv)
        args.append(_value(conv, i))
        out.append((spec + py_conv) % tuple(args))
        i += 1
    out.append(fmt[pos:])
    return "".join(out)


def render_placeholders(fmt: str) -> str:
    """``fmt`` with each ``{name[:type]}`` replaced by a sample of that type."""
    counter = iter(range(1000))

    def sub(m: re.Match[str]) -> str:
        if m.group(0) in ("{{", "}}"):
            return m.group(0)[0]
        kind = m.group("type") or "s"
        i = next(counter)
        if kind == "m":
            return f"{20 + i}.00 MiB"
        if kind == "w":
            return f"host-{i}.example:2950{i % 10}"
        return str(_value({"d": "d", "f": "f", "x": "x", "s": "s"}[kind], i))

    return _PLACEHOLDER.sub(sub, fmt)


def first_line(sig: Signature) -> str:
    """The format's first line with three letters outside conversions (what a pattern covers)."""
    for line in sig.format.split("\n"):
        bare = (
            _PLACEHOLDER.sub("", _PRINTF.sub("", line)) if sig.format_style != "literal" else line
        )
        if len(re.findall(r"[A-Za-z]", bare)) >= 3:
            return line
    return sig.format


def render(sig: Signature) -> str:
    """A sample of the line the pattern covers (whitespace-trimmed, as NCCL prints it)."""
    line = first_line(sig)
    if sig.format_style == "printf":
        text = render_printf(line)
    elif sig.format_style == "literal":
        text = line
    else:
        text = render_placeholders(line)
    return text.strip()


def literals(sig: Signature) -> list[str]:
    """The literal pieces of the format, in order (what an adversary repeats)."""
    fmt = first_line(sig)
    if sig.format_style == "printf":
        parts = _PRINTF.split(fmt)
        # split() interleaves the groups: keep the text between conversions only
        step = _PRINTF.groups + 1
        pieces = parts[::step]
    elif sig.format_style == "literal":
        pieces = [fmt]
    else:
        pieces = _PLACEHOLDER.split(fmt)[:: _PLACEHOLDER.groups + 1]
    return [p for p in (x.strip("\n") for x in pieces if x) if p]


def adversarial(sig: Signature, size: int) -> list[str]:
    """Inputs of about ``size`` characters built to make ``sig``'s pattern backtrack.

    One long line each: the sample minus its last character repeated (a
    near-miss at every start), the first literal followed by every later
    literal many times over (each can end a capture: the most places to try),
    and the first literal followed by long runs of the characters the
    captures accept.
    """
    sample = render(sig)
    lits = literals(sig) or [sample]
    first, rest = lits[0], "".join(lits[1:]) or " "
    units = [
        sample[:-1] if len(sample) > 1 else sample + " ",
        first + rest * 12,
        first + "a1 " * 150,
        first + "9" * 400,
    ]
    return [(u * (size // max(len(u), 1) + 1))[:size] for u in units]
