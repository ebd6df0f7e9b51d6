"""Environment variables of NCCL, PyTorch distributed, the launchers and CUDA: lookups and checks.

The tables live in :mod:`nccl_doctor.knowledge._env_nccl` (every NCCL_* variable
read by NVIDIA/nccl releases 2.3.5 to 2.30.7, plus NVIDIA's plugins and
nccl-tests) and :mod:`nccl_doctor.knowledge._env_other` (TORCH_NCCL_*,
TORCH_FR_*, TORCH_DISTRIBUTED_DEBUG, the deprecated NCCL_* aliases PyTorch still
reads, torchrun variables, Gloo and CUDA); their docstrings name the sources
(NVIDIA/nccl ``src/`` at every release tag, ``src/misc/param.cc``,
``src/include/param.h``, the NCCL user guide page "Environment Variables", and
PyTorch's ``ProcessGroupNCCL.hpp``/``.cpp``), read on 2026-12-02.

Value checks follow how the readers parse: NCCL reads numeric parameters with
``strtoll(value, NULL, 0)`` and keeps whatever prefix parses, so ``true`` reads as
0 and ``4M`` as 4; NCCL_P2P_LEVEL and NCCL_NET_GDR_LEVEL compare names with exact
case; ``^``/``=`` in NCCL_SOCKET_IFNAME and NCCL_IB_HCA only count at the very
start of the value.
"""

from __future__ import annotations

import difflib
import re

from nccl_doctor.knowledge._env_nccl import FUNCTIONS, NCCL_VARS
from nccl_doctor.knowledge._env_other import NOT_READ, TORCH_VARS
from nccl_doctor.knowledge._env_types import NcclVar

__all__ = [
    "FAMILIES",
    "NOT_READ",
    "VARS",
    "NcclVar",
    "closest",
    "harm",
    "is_known_family",
    "lookup",
    "validate",
]

VARS: tuple[NcclVar, ...] = NCCL_VARS + TORCH_VARS
"""Every known variable, NCCL's first."""

_BY_NAME: dict[str, NcclVar] = {v.name: v for v in VARS}

FAMILIES: tuple[str, ...] = ("NCCL_", "TORCH_NCCL_", "TORCH_FR_", "TORCH_DISTRIBUTED_")
"""Prefixes whose variables the tables cover completely: an unknown name with one of
these prefixes is most likely a typo or a variable nothing reads."""

_INT_RE = re.compile(r"[+-]?(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")
_INT_PREFIX_RE = re.compile(r"\s*[+-]?(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")
_WORDS = {"true", "false", "yes", "no", "on", "off", "enable", "enabled", "disable", "disabled"}


def lookup(name: str) -> NcclVar | None:
    """The table row of ``name`` (exact, case-sensitive as environments are), else ``None``."""
    return _BY_NAME.get(name.strip()) if isinstance(name, str) else None


def is_known_family(name: str) -> bool:
    """Whether ``name`` belongs to a family the tables cover completely (see :data:`FAMILIES`)."""
    return isinstance(name, str) and name.strip().upper().startswith(FAMILIES)


def closest(name: str) -> str | None:
    """The known name ``name`` was most likely meant to be, for a misspelt or miscased name.

    Returns ``None`` when ``name`` is itself known or nothing is close enough.
    Case slips (``nccl_debug``) map straight to the known name; otherwise the
    best match of the same family with a similarity of at least 0.85 is taken.
    """
    if not isinstance(name, str):
        return None
    key = name.strip()
    if not key or key in _BY_NAME or key.upper() in NOT_READ:
        return None
    upper = key.upper()
    if upper in _BY_NAME:
        return upper
    family = next((f for f in sorted(FAMILIES, key=len, reverse=True) if upper.startswith(f)), "")
    pool = [n for n in _BY_NAME if n.startswith(family)] if family else list(_BY_NAME)
    best = difflib.get_close_matches(upper, pool, n=1, cutoff=0.85)
    return best[0] if best else None


def _c_int(text: str) -> int:
    """``text`` (a full :data:`_INT_RE` match) read as C's ``strtoll(text, NULL, 0)`` reads it."""
    sign = -1 if text.startswith("-") else 1
    digits = text.lstrip("+-")
    if digits[:2].lower() == "0x":
        return sign * int(digits, 0)
    if len(digits) > 1 and digits.startswith("0"):
        return sign * int(digits, 8)
    return sign * int(digits)


def _strtoll_problem(value: str) -> str | None:
    """Why NCCL's ``strtoll(value, NULL, 0)`` would not read ``value`` as the number meant."""
    if _INT_RE.fullmatch(value):
        return None
    if value.lower() in _WORDS:
        return f"{value!r} is not a number: NCCL reads it as 0; use 0 or 1"
    prefix = _INT_PREFIX_RE.match(value)
    if prefix:
        return f"{value!r} is not a plain integer: NCCL reads only {prefix.group(0).strip()!r}"
    return f"{value!r} is not an integer: NCCL ignores it and keeps the default"


def _norm(text: str, var: NcclVar) -> str:
    """``text`` as the reader compares it."""
    return text if var.case_sensitive else text.upper()


def _in_values(token: str, var: NcclVar) -> bool:
    """Whether ``token`` is one of ``var.values``."""
    return _norm(token, var) in {_norm(v, var) for v in var.values}


def _unknown(tokens: list[str], var: NcclVar) -> str | None:
    """A problem line naming the tokens that are not valid values, if any."""
    bad = [t for t in tokens if not _in_values(t, var)]
    if not bad:
        return None
    shown = ", ".join(repr(b) for b in bad[:4])
    hint = ""
    if var.case_sensitive and any(b.upper() in {v.upper() for v in var.values} for b in bad):
        hint = " (names are case-sensitive)"
    return f"{var.name}: unknown value {shown}{hint}; expected {', '.join(var.values)}"


def _check_funclist(value: str, var: NcclVar) -> str | None:
    """NCCL_ALGO/NCCL_PROTO: ``[^]a,b`` or ``func:[^]a,b;func:...`` (prefixes since 2.24)."""
    for index, raw in enumerate(value.split(";")):
        entry = raw.strip()
        if not entry:
            return f"{var.name}: empty entry in {value!r}"
        prefix, sep, body = entry.partition(":")
        if sep:
            if prefix.strip().upper() not in {f.upper() for f in FUNCTIONS}:
                return f"{var.name}: unknown collective {prefix.strip()!r}; expected one of " + (
                    ", ".join(FUNCTIONS)
                )
        else:
            body = prefix
            if index > 0:
                return f"{var.name}: entries after the first need a 'collective:' prefix"
        body = body.strip()
        body = body.removeprefix("^")
        tokens = [t.strip() for t in body.split(",")]
        if any(not t for t in tokens):
            return f"{var.name}: empty item in {entry!r}"
        problem = _unknown(tokens, var)
        if problem:
            return problem
    return None


def _check_iflist(value: str, var: NcclVar) -> str | None:
    """NCCL_SOCKET_IFNAME/NCCL_IB_HCA style: ``[^][=]prefix[:port],...``."""
    body = value.removeprefix("^").removeprefix("=")
    tokens = [t.strip() for t in body.split(",")]
    if not any(tokens):
        return f"{var.name}: no interface in {value!r}"
    for token in tokens:
        if token[:1] in ("^", "="):
            return (
                f"{var.name}: '^' and '=' only count at the start of the whole value, "
                f"not in {token!r}"
            )
        if " " in token:
            return f"{var.name}: {token!r} has a space; items are separated by commas only"
        name, _, port = token.partition(":")
        if port and not (port.split(":")[0].isascii() and port.split(":")[0].isdigit()):
            return f"{var.name}: port {port!r} of {name!r} is not a number"
    return None


def validate(name: str, value: str) -> str | None:
    """A one-line problem when ``value`` is invalid for the known variable ``name``, else ``None``.

    Unknown names and empty values are not judged here (see :func:`closest`,
    :func:`is_known_family`); harmful but valid values are :func:`harm`'s.
    """
    var = lookup(name) if isinstance(name, str) else None
    if var is None or not isinstance(value, str):
        return None
    text = value.strip()
    if not text:
        return None
    if var.kind in ("bool", "int", "size"):
        if var.origin in ("nccl", "nccl-plugin", "nccl-tests"):
            problem = _strtoll_problem(text)
            if problem:
                return f"{var.name}: {problem}"
        elif not _INT_RE.fullmatch(text) and not (var.kind == "bool" and text.lower() in _WORDS):
            return f"{var.name}: {text!r} is not a number"
        if var.kind == "bool" and _INT_RE.fullmatch(text) and _c_int(text) not in (0, 1):
            return f"{var.name}: expects 0 or 1, got {text!r}"
        return None
    if var.kind == "enum":
        return _unknown([text], var)
    if var.kind == "list":
        if var.syntax == "funclist":
            return _check_funclist(text, var)
        if var.syntax == "iflist":
            return _check_iflist(text, var)
        if not var.values:
            return None
        separator = "|" if var.syntax == "pipelist" else ","
        body = text.removeprefix("^") if var.syntax == "bitset" else text
        tokens = [t.strip() for t in body.split(separator)]
        if any(not t for t in tokens):
            return f"{var.name}: empty item in {text!r}"
        return _unknown(tokens, var)
    return None


def harm(name: str, value: str) -> str | None:
    """Why ``value`` of the known variable ``name`` usually hurts a job, else ``None``."""
    var = lookup(name) if isinstance(name, str) else None
    if var is None or not isinstance(value, str):
        return None
    text = value.strip()
    if any(text.lower() == h.lower() for h in var.harmful_values):
        return f"{var.name}={text}: {var.harmful_when or 'usually hurts the job'}"
    return None
