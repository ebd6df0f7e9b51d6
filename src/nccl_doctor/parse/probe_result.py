"""The ``probe`` kind: the result JSON of ``nccl-doctor probe`` (schema in docs/probe.md).

The file starts with the line ``{"nccl_doctor_probe": 1,``; each record of
its ``steps``, ``bandwidth`` and ``isolation`` lists sits on its own line,
and each fact cites that line. A record that does not parse is skipped; odd
input yields the facts of what could be read, never an exception.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.probe import ProbeBandwidth, ProbeIsolation, ProbeStep
from nccl_doctor.parse._values import cite
from nccl_doctor.parse.base import BlockParser

_HEAD = '{"nccl_doctor_probe"'
#: Numbers in a result are counts, sizes and seconds: larger ones are not read.
_INT_BOUND = 1 << 63


def _int(v: object) -> int | None:
    if isinstance(v, int) and not isinstance(v, bool) and -_INT_BOUND <= v < _INT_BOUND:
        return v
    return None


def _num(v: object) -> float | None:
    """A finite number (JSON's ``Infinity``/``NaN`` and 400-digit integers are not)."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    found = _int(v)
    return float(found) if found is not None else None


def _str(v: object) -> str | None:
    return v if isinstance(v, str) and v else None


def _ints(v: object) -> tuple[int, ...]:
    return tuple(x for x in v if _int(x) is not None) if isinstance(v, list) else ()


def _env(v: object) -> tuple[str, ...]:
    if not isinstance(v, dict):
        return ()
    return tuple(f"{k}={x}" for k, x in v.items() if isinstance(x, str) or _num(x) is not None)


def _step(d: dict[str, Any], at: dict[str, Any]) -> Fact | None:
    if not _str(d.get("step")) or not isinstance(d.get("ok"), bool):
        return None
    return ProbeStep(
        **at,
        step=d["step"],
        phase=_str(d.get("phase")),
        gpus=_ints(d.get("gpus")),
        ranks=_ints(d.get("ranks")),
        ok=d["ok"],
        status=_str(d.get("status")) or ("ok" if d["ok"] else "failed"),
        error=_str(d.get("error")),
        seconds=_num(d.get("seconds")),
        transport_env=_env(d.get("transport_env")),
    )


def _bandwidth(d: dict[str, Any], at: dict[str, Any]) -> Fact | None:
    if not _str(d.get("kind")):
        return None
    return ProbeBandwidth(
        **at,
        kind=d["kind"],
        phase=_str(d.get("phase")),
        gpus=_ints(d.get("gpus")),
        size_bytes=_int(d.get("size_bytes")),
        # the file keeps the keys of schema 1 (docs/probe.md); the fact names the unit
        algbw_gbytes_s=_num(d.get("algbw_GBps")),
        busbw_gbytes_s=_num(d.get("busbw_GBps")),
        expected_gbytes_s=_num(d.get("expected_GBps")),
        gpu_model=_str(d.get("gpu_model")),
        world=_int(d.get("world")),
        transport_env=_env(d.get("transport_env")),
    )


def _isolation(d: dict[str, Any], at: dict[str, Any]) -> Fact | None:
    if not _str(d.get("method")) or not _str(d.get("conclusion")):
        return None
    return ProbeIsolation(
        **at,
        method=d["method"],
        step=_str(d.get("step")) or "",
        conclusion=d["conclusion"],
        transport=_str(d.get("transport")),
        env=_env(d.get("env")),
        gpus=_ints(d.get("gpus")),
        other_gpus=_ints(d.get("other_gpus")),
        rounds=_int(d.get("rounds")),
    )


_LISTS = {"steps": _step, "bandwidth": _bandwidth, "isolation": _isolation}


class ProbeResultParser(BlockParser):
    """Parses a probe result file."""

    kind = "probe"
    anchors = (_HEAD,)
    max_lines = 200_000

    def starts(self, line: Line) -> bool:
        """The ``{"nccl_doctor_probe": 1,`` first line."""
        return line.text.startswith(_HEAD)

    def accepts(self, line: Line, block: Sequence[Line]) -> bool:
        """Every line up to the closing ``}``."""
        return bool(block) and block[-1].text.rstrip() != "}"

    def parse(self, block: Sequence[Line]) -> list[Fact]:
        """One fact per record line of the known lists."""
        facts: list[Fact] = []
        section: str | None = None
        for line in block[1:]:
            text = line.text.strip()
            if text.startswith('"') and text.endswith("["):
                close = text.find('"', 1)
                section = text[1:close] if close > 0 else None
                continue
            if text.startswith("]"):
                section = None
                continue
            make = _LISTS.get(section or "")
            if make is None or not text.startswith("{"):
                continue
            try:
                data = json.loads(text.rstrip(","))
            except (ValueError, RecursionError):
                continue
            if not isinstance(data, dict):
                continue
            host = _str(data.get("host")) or line.host
            ranks = _ints(data.get("ranks"))
            at: dict[str, Any] = {
                "cite": cite(line),
                "rank": ranks[0] if len(ranks) == 1 else line.rank,
                "host": host,
            }
            if (fact := make(data, at)) is not None:
                facts.append(fact)
        return facts
