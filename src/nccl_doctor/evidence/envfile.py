"""The one writer of ``NAME=value`` environment files: a capture's ``env.txt``, a run's
``environment.txt``.

One line per variable, sorted by name, secrets redacted (a secret name's whole
value hidden). A process
environment can hold names no shell accepts (``execve`` takes any bytes but
``=`` and NUL: a newline too) and values with newlines or control characters;
written raw, ``X<newline>NCCL_P2P_DISABLE=1`` would forge a line the diagnosis
then reads as a setting. So a name that is not a shell identifier
(``[A-Za-z_][A-Za-z0-9_]*``) is left out, counted in a trailing ``#`` comment,
and every character of a value that is not printable is written as a
Python-style escape (``\\n``, ``\\t``, ``\\x1b``, ``\\u2028``); backslashes
themselves are kept as they are.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from nccl_doctor.redact import redact_env

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(ch: str) -> str:
    code = ord(ch)
    if ch in _SHORT:
        return _SHORT[ch]
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def escape_value(value: str) -> str:
    """``value`` on one line: each non-printable character as an escape."""
    if value.isprintable():
        return value
    return "".join(ch if ch.isprintable() else _escape(ch) for ch in value)


def env_file(environ: Mapping[str, str], wanted: Callable[[str], bool] | None = None) -> str:
    """The ``NAME=value`` lines of ``environ`` (those ``wanted`` takes), ready to write."""
    lines: list[str] = []
    left_out = 0
    for name, value in sorted(environ.items()):
        if wanted is not None and not wanted(name):
            continue
        if not _NAME.fullmatch(name):
            left_out += 1
            continue
        lines.append(redact_env(name, escape_value(value)))
    if left_out:
        lines.append(
            f"# nccl-doctor: {left_out} variable(s) left out, their names are not shell identifiers"
        )
    return "".join(line + "\n" for line in lines)
