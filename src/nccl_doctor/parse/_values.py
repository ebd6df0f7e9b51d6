"""Small total helpers that the parsers' helper modules share, behaviour for behaviour.

Only helpers that behave the same everywhere live here. The number converters of
``_nccl_common``, ``_runtext``, ``_blocktext`` and ``_nvsmi`` look alike but differ
(digit limits, exponents, hex, units), so each module keeps its own.
"""

from __future__ import annotations

import json
from typing import Any

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.base import Cite


def cite(line: Line) -> Cite:
    """The citation of ``line``."""
    return Cite.of(line.source, line.number, line.raw)


def json_document(data: bytes, what: str, max_bytes: int) -> tuple[Any, str, str | None]:
    """A whole file's JSON value and text, or, as a coverage note naming ``what``, why it was
    not read (over ``max_bytes``, or not JSON); never raises."""
    if len(data) > max_bytes:
        return None, "", f"{what} over {max_bytes >> 20} MiB: not read"
    text = data.decode("utf-8", "replace")
    try:
        return json.loads(text), text, None
    except (ValueError, RecursionError) as exc:
        return None, text, f"{what}: not valid JSON ({exc})"
