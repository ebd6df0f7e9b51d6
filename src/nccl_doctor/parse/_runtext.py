"""Small text helpers shared by the torchrun, traceback, xid and env parsers."""

from __future__ import annotations

import math
import re
from typing import TypedDict

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.run import DistributedError, default_group
from nccl_doctor.knowledge.signals import SIGNAL_NUMBERS, SIGNALS
from nccl_doctor.knowledge.units import to_mib
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._nccl_common import to_int as nccl_int
from nccl_doctor.parse._values import cite

#: a line, its rank, and the process group prefix and group rank its text names
Ctx = tuple[Line, int | None, str | None, int | None]

_MAX_DIGITS = 19
_FLOAT = LazyPattern(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d{1,3})?")
_PG = LazyPattern(r"\[PG (?P<pg>[^\[\]]{0,120}?) Rank (?P<rank>\d{1,7})\]")
_RANK = LazyPattern(r"\[Rank (?P<rank>\d{1,7})\]")
#: prefixes some launchers (accelerate, deepspeed, ray) add that the reader keeps
_LAUNCHER_PREFIX = LazyPattern(r"(?:std(?:err|out): |\(\w{1,40} pid=\d{1,9}(?:, ip=[\d.]+)?\) )")


class Who(TypedDict):
    """The attribution every fact of one line carries (``**who(...)`` into a fact)."""

    cite: Cite
    rank: int | None
    host: str | None


def who(line: Line, rank: int | None) -> Who:
    """The citation of ``line`` with ``rank`` and the line's host."""
    return {"cite": cite(line), "rank": rank, "host": line.host}


def to_int(text: str | None) -> int | None:
    """A plain (optionally signed) decimal integer of at most 19 digits (a signed 64-bit
    value, as torch prints them), else ``None``."""
    return nccl_int(text, _MAX_DIGITS)


def to_float(text: str | None) -> float | None:
    """A finite decimal number, else ``None``."""
    if text is None:
        return None
    s = text.strip()
    if not s or len(s) > 32 or not _FLOAT.fullmatch(s):
        return None
    try:
        value = float(s)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def size_mib(number: str | None, unit: str | None) -> float | None:
    """``2.00`` ``GiB`` as MiB, else ``None``."""
    return to_mib(to_float(number), unit)


def signal_of(exitcode: int | None) -> tuple[int | None, str | None]:
    """The signal a negative exit code means: ``-9`` -> (9, ``SIGKILL``)."""
    if exitcode is None or exitcode >= 0:
        return None, None
    number = -exitcode
    return number, SIGNALS.get(number)


def signal_named(text: str | None) -> tuple[int | None, str | None]:
    """A printed signal (``SIGTERM``, ``Signals.SIGTERM``, ``15``) as (number, name)."""
    if not text:
        return None, None
    s = text.strip().strip("<>.,").removeprefix("Signals.")
    s = s.split(":")[0].strip()
    number = to_int(s)
    if number is not None:
        return number, SIGNALS.get(number)
    name = s.upper()
    if not name.startswith("SIG"):
        name = "SIG" + name
    if name in SIGNAL_NUMBERS:
        return SIGNAL_NUMBERS[name], name
    return None, None


def pg_prefix(text: str) -> tuple[str | None, int | None, bool]:
    """The ``[PG ... Rank N]`` / ``[Rank N]`` prefix: (pg text, rank, whether the default group)."""
    if "Rank" not in text:
        return None, None, True
    if m := _PG.search(text):
        pg = m["pg"].strip()
        return pg, to_int(m["rank"]), default_group(pg)
    if m := _RANK.search(text):
        return None, to_int(m["rank"]), True
    return None, None, True


def rank_of(line: Line, text_rank: int | None, default_pg: bool = True) -> int | None:
    """The line's rank, else the rank the text printed when it is a default-group rank."""
    if line.rank is not None:
        return line.rank
    return text_rank if default_pg else None


def body(text: str) -> str:
    """``text`` without a launcher prefix the reader leaves (``stderr: ``, ray's ``(pid=..)``)."""
    if text[:1] in "s(" and (m := _LAUNCHER_PREFIX.match(text)):
        return text[m.end() :]
    return text


def clip(text: str, limit: int = 400) -> str:
    """``text`` stripped and cut to ``limit`` characters."""
    s = text.strip()
    return s if len(s) <= limit else s[: limit - 1] + "…"


def error_fact(ctx: Ctx, category: str, text: str, m: re.Match[str] | None) -> DistributedError:
    """A :class:`DistributedError` of ``category`` for the match ``m`` in ``text``: its group
    ``d`` is the detail, ``p`` a peer rank, ``r`` the rank the text names for itself."""
    line, rank, pg, pg_rank = ctx
    groups = m.groupdict() if m is not None else {}
    detail = groups.get("d")
    return DistributedError(
        cite=cite(line),
        # a line with no rank prefix whose text names its own rank (a GPU's printf)
        rank=rank if rank is not None else to_int(groups.get("r")),
        host=line.host,
        category=category,
        message=clip(text[m.start() :] if m is not None else text),
        detail=clip(detail, 200) if detail else None,
        peer_rank=to_int(groups.get("p")),
        pg=pg,
        pg_rank=pg_rank,
    )
