"""Small total helpers that the parsers' helper modules share, behaviour for behaviour.

Only helpers that behave the same everywhere live here. The number converters of
``_nccl_common``, ``_runtext``, ``_blocktext`` and ``_nvsmi`` look alike but differ
(digit limits, exponents, hex, units), so each module keeps its own.
"""

from __future__ import annotations

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.base import Cite


def cite(line: Line) -> Cite:
    """The citation of ``line``."""
    return Cite.of(line.source, line.number, line.raw)
