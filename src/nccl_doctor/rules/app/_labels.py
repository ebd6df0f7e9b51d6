"""Labels of ranks in a hang: the role, the reason, the line, and how direct the evidence is."""

from __future__ import annotations

from dataclasses import dataclass

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.stacks import Position, frame_text
from nccl_doctor.findings import LAGGING, MESSENGER, ORIGIN, CollectiveRef

#: How direct each kind of evidence is; per rank the heaviest label wins.
DEAD, GONE, OWN_ERROR, STACKS, FLIGHT, DESYNC, RAS_COUNTS, QUIET, SILENT, REPORTED, WAITING = (
    100, 90, 85, 80, 70, 65, 60, 50, 45, 40, 30,
)  # fmt: skip
ROLE_ORDER = {ORIGIN: 0, LAGGING: 1, MESSENGER: 2}


@dataclass(frozen=True, slots=True)
class Label:
    """One rank's role, why, the line that shows it, and how direct that evidence is."""

    rank: int
    role: str
    reason: str
    cite: Cite
    weight: int
    #: the evidence shows the rank alive (elsewhere in Python, stopped without an error of its
    #: own, printing without an error): stuck, not dead
    alive: bool = False


Found = tuple[list[Label], CollectiveRef | None]

OWN_GPU = (
    "the job's only rank: no peer can be behind - its own GPU work queued ahead of the "
    "collective (a long or hung kernel, a copy, a GPU fault) did not finish"
)


def elsewhere(pos: Position) -> str:
    """Where a rank in no collective is: its innermost frame and the job's own line."""
    where = f"not in any collective, at {frame_text(pos.at)}"
    if pos.user is not None and pos.user != pos.at:
        where += f" (from {frame_text(pos.user)})"
    return where
