"""Read the format strings a C/C++ tree passes to its logging calls, at a release tag of a
git mirror (``git grep`` and ``git show``: no work tree).

Every miner of a C library's messages does the same walk: the files under some folders
that call one of its log macros, their comments blanked and continued lines joined, each
call's format literal read (adjacent literals and ``PRI*`` macros spliced). The macros
differ per library (NCCL's ``WARN``/``INFO``, Slurm's ``error``/``info``, aws-ofi-nccl's
``NCCL_OFI_WARN``/``NCCL_OFI_INFO``), and some take a flags argument before the format.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from clex import Format, blank_comments, find_calls, read_format
from common import PRI_MACROS

C_SUFFIXES = (".cc", ".h", ".cu", ".cpp", ".c", ".hpp", ".cuh")


def git(mirror: Path, *args: str) -> str:
    """``git -C mirror args``'s output (undecodable bytes replaced)."""
    return subprocess.run(
        ["git", "-C", str(mirror), *args], check=True, capture_output=True, text=True,
        errors="replace",
    ).stdout  # fmt: skip


@dataclass(frozen=True)
class Call:
    """One logging call at one tag: where it is, its macro, flags and format, and the
    comment-free source around it (``end`` is where the call's arguments close)."""

    path: str
    line: int
    macro: str
    flags: str
    format: Format
    src: str
    end: int


def format_calls(
    mirror: Path,
    tag: str,
    folders: tuple[str, ...],
    macros: tuple[str, ...],
    *,
    flagged: tuple[str, ...] = (),
    suffixes: tuple[str, ...] = C_SUFFIXES,
) -> Iterator[Call]:
    """Each call of one of ``macros`` under ``folders`` at ``tag`` whose format is a literal.

    A macro in ``flagged`` takes a flags argument first (``INFO(NCCL_INIT, fmt, ...)``).
    """
    calls = rf"\b({'|'.join(map(re.escape, macros))})\s*\("
    for ref in git(mirror, "grep", "-l", "-E", calls, tag, "--", *folders).split():
        path = ref.split(":", 1)[1]
        if not path.endswith(suffixes):
            continue
        src = blank_comments(git(mirror, "show", ref).replace("\\\n", "  "))
        for macro, line, args, end in find_calls(src, macros):
            flags, rest = (args[0], args[1:]) if macro in flagged else ("", args)
            if not rest:
                continue
            fmt = read_format(rest[0], rest[1:], PRI_MACROS)
            if fmt is not None:
                yield Call(path, line, macro, flags, fmt, src, end)
