"""Patterns compiled on first use: a parser's regular expressions cost only the runs that read
evidence of its kind.

A module-level ``re.compile`` runs on import, and every parser is imported
for every read: ~470 patterns, ~0.06 s of each start-up, though a log of
NCCL and PyTorch lines uses ~130 of them. :class:`LazyPattern` holds the
pattern's text and compiles it the first time one of the methods below is
called; it then answers exactly as the compiled pattern does (each call
costs ~0.1 us more).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from typing import Any, AnyStr, Generic


class LazyPattern(Generic[AnyStr]):
    """``re.compile(source, flags)``, compiled on first use (see the module docstring)."""

    __slots__ = ("_compiled", "_flags", "_source")

    def __init__(self, source: AnyStr, flags: int = 0) -> None:
        self._source: AnyStr = source
        self._flags = flags
        self._compiled: re.Pattern[AnyStr] | None = None

    def compiled(self) -> re.Pattern[AnyStr]:
        """The compiled pattern (compiled now, the first time)."""
        found = self._compiled
        if found is None:
            found = self._compiled = re.compile(self._source, self._flags)
        return found

    @property
    def pattern(self) -> AnyStr:
        return self._source

    @property
    def flags(self) -> int:
        return self.compiled().flags

    @property
    def groups(self) -> int:
        return self.compiled().groups

    @property
    def groupindex(self) -> Any:
        return self.compiled().groupindex

    def search(
        self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize
    ) -> re.Match[AnyStr] | None:
        return (self._compiled or self.compiled()).search(string, pos, endpos)

    def match(
        self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize
    ) -> re.Match[AnyStr] | None:
        return (self._compiled or self.compiled()).match(string, pos, endpos)

    def fullmatch(
        self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize
    ) -> re.Match[AnyStr] | None:
        return (self._compiled or self.compiled()).fullmatch(string, pos, endpos)

    def finditer(
        self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize
    ) -> Iterator[re.Match[AnyStr]]:
        return (self._compiled or self.compiled()).finditer(string, pos, endpos)

    def findall(self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize) -> list[Any]:
        return (self._compiled or self.compiled()).findall(string, pos, endpos)

    def split(self, string: AnyStr, maxsplit: int = 0) -> list[AnyStr | Any]:
        return (self._compiled or self.compiled()).split(string, maxsplit)

    def sub(
        self,
        repl: AnyStr | Callable[[re.Match[AnyStr]], AnyStr],
        string: AnyStr,
        count: int = 0,
    ) -> AnyStr:
        return (self._compiled or self.compiled()).sub(repl, string, count)

    def subn(
        self,
        repl: AnyStr | Callable[[re.Match[AnyStr]], AnyStr],
        string: AnyStr,
        count: int = 0,
    ) -> tuple[AnyStr, int]:
        return (self._compiled or self.compiled()).subn(repl, string, count)

    def __repr__(self) -> str:
        return f"LazyPattern({self._source!r}, {self._flags!r})"
