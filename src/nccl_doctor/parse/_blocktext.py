"""Small helpers shared by the topology, nvlink, InfiniBand and collect_env parsers.

Everything here is total: odd input gives ``None``, never an exception.
"""

from __future__ import annotations

import dataclasses
import re
from abc import abstractmethod
from collections.abc import Sequence
from typing import Generic, TypeVar

from nccl_doctor.evidence.lines import Line
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse.base import BlockParser

S = TypeVar("S")

#: A parallel shell's host before a line (pdsh, clush: ``gn11: ``); the line reader takes only
#: names with a dash or a dot (``gn11:`` alone could tag anything), so a parser whose own lines
#: follow peels it off.
HOST_PREFIX = LazyPattern(r"^\s*(?P<host>[A-Za-z][\w.-]*):\s+(?=\S)")


def peel_host(line: Line) -> Line | None:
    """``line`` without a parallel shell's ``host:`` prefix, that host its own, where it has one
    and no host was read yet; else ``None``. (The raw line, cited, keeps it.)"""
    if line.host is not None or (m := HOST_PREFIX.match(line.text)) is None:
        return None
    return dataclasses.replace(line, text=line.text[m.end() :], host=m["host"])


#: ANSI escapes, and the bare ``[4m``/``[0m`` left when a paste lost the ESC byte.
_ANSI = LazyPattern(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Za-z0-9]|\[[0-9]{1,3}(?:;[0-9]{1,3})*m")
_NA = frozenset(
    {
        "",
        "n/a",
        "[n/a]",
        "na",
        "none",
        "unknown",
        "could not collect",
        "no cuda",
        "not set",
        "err!",
        "...",
    }
)
#: Numbers longer than this are absurd in these tools' outputs; refuse them.
_MAX_DIGITS = 24


def strip_ansi(text: str) -> str:
    """``text`` without terminal colour/underline escapes."""
    if "[" not in text:
        return text
    return _ANSI.sub("", text)


def na(value: str | None) -> str | None:
    """``value`` stripped, or ``None`` when it says the value is unknown."""
    if value is None:
        return None
    text = value.strip()
    if text.lower() in _NA:
        return None
    return text


def to_int(value: str | None) -> int | None:
    """A decimal or ``0x`` hexadecimal integer, else ``None``."""
    if value is None:
        return None
    text = value.strip()
    if not text or len(text) > _MAX_DIGITS:
        return None
    try:
        if re.fullmatch(r"0[xX][0-9a-fA-F]+", text):
            return int(text, 16)
        if text.isdigit():
            return int(text)
    except ValueError:
        return None
    return None


def to_float(value: str | None) -> float | None:
    """A plain decimal number (``25.781``), else ``None``."""
    if value is None:
        return None
    text = value.strip()
    if not text or len(text) > _MAX_DIGITS or not re.fullmatch(r"\d+(?:\.\d+)?", text):
        return None
    return float(text)


def to_bool(value: str | None) -> bool | None:
    """``True``/``Yes`` and ``False``/``No`` as booleans, else ``None``."""
    text = (value or "").strip().lower()
    if text in {"true", "yes"}:
        return True
    if text in {"false", "no"}:
        return False
    return None


def trailing_blanks(block: Sequence[Line]) -> int:
    """How many blank lines end ``block``."""
    count = 0
    for line in reversed(block):
        if line.text.strip():
            break
        count += 1
    return count


class StatefulBlockParser(BlockParser, Generic[S]):
    """A block parser whose ``accepts`` depends on what the block held so far.

    Subclasses give the state of a block's first line and one step per next
    line; the state is cached for the block being built and rebuilt by
    replaying the block when the caller passes another one, so ``accepts``
    stays a function of ``(line, block)``.
    """

    def __init__(self) -> None:
        self._first: Line | None = None
        self._length = 0
        self._state: S | None = None

    @abstractmethod
    def _initial(self, first: Line) -> S:
        """The state after the block's first line."""

    @abstractmethod
    def _step(self, state: S, line: Line) -> S | None:
        """The state after ``line`` joins the block, or ``None`` to end the block."""

    def accepts(self, line: Line, block: Sequence[Line]) -> bool:
        """Whether ``line`` continues ``block``."""
        if not block:
            return False
        state = self._state
        if state is None or self._first is not block[0] or self._length != len(block):
            state = self._initial(block[0])
            for earlier in block[1:]:
                state = self._step(state, earlier) or state
        nxt = self._step(state, line)
        if nxt is None:
            self._first, self._length, self._state = block[0], len(block), state
            return False
        self._first, self._length, self._state = block[0], len(block) + 1, nxt
        return True
