"""How each discriminating fact shifts the weights: a data table, each row with its reason.

A :class:`Shift` multiplies one id's weight when its condition holds in the
:class:`~nccl_doctor.differential.context.Context` (for the symptom classes
it names), and says why; :func:`shifted` applies every row to one id. The rows are kept by
what they read (:mod:`.machine`, :mod:`.words`, :mod:`.signs`; see :mod:`.table`).
"""

from __future__ import annotations

from nccl_doctor.differential.context import Context
from nccl_doctor.differential.shifts.machine import MACHINE
from nccl_doctor.differential.shifts.signs import SIGNS
from nccl_doctor.differential.shifts.table import Shift
from nccl_doctor.differential.shifts.words import WORDS

__all__ = ["SHIFTS", "Shift", "shifted"]

#: Every row, in the order their reasons are shown.
SHIFTS: tuple[Shift, ...] = (*MACHINE, *WORDS, *SIGNS)


def shifted(
    ctx: Context, rule_id: str, cls: str | None = None
) -> tuple[float, list[str], list[str]]:
    """The product of the shifts that apply to ``rule_id`` (for class ``cls``), with reasons."""
    factor = 1.0
    pro: list[str] = []
    con: list[str] = []
    for shift in SHIFTS:
        if shift.id == rule_id and shift.holds(ctx, cls):
            factor *= shift.factor
            why = shift.explain(ctx) if shift.explain is not None else shift.why
            (pro if shift.factor > 1 else con).append(why)
    return factor, pro, con
