"""What ProcessGroupNCCL's desync report says about each rank of a hang.

The report (:class:`~nccl_doctor.facts.run.DesyncReport`) is the store's
record of the last collective each rank started and ended, read back by the
rank whose collective timed out:

* ranks with no record at all never started a collective of the group: the
  **origin** (stuck before its first collective, on another path, or dead);
* ranks that finished the lowest collective any rank is at and never started
  the next: the **origin** (they stopped between collectives: in their own
  code, or dead); ranks that started that collective and did not finish it
  wait on them: **lagging**;
* ranks that started the lowest collective and did not finish it while other
  ranks are recorded past it: their own GPU work did not complete (**origin**);
* ranks recorded at a later collective: **messengers**;
* two collectives of different names started under one number: the ranks
  issued different collectives (:func:`mismatches`, for the mismatch rule).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from nccl_doctor.facts.ranks import ranks_text
from nccl_doctor.facts.run import DesyncReport
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import LAGGING, MESSENGER, ORIGIN, CollectiveRef
from nccl_doctor.rules.app._labels import DESYNC, Found, Label

SOURCE = "desync report"


def from_desync(facts: Facts, world: int | None) -> Found:
    """The ranks' roles the desync reports tell, and the collective the first one names."""
    out: list[Label] = []
    ref: CollectiveRef | None = None
    for report in facts.of(DesyncReport):
        out += _labels(report)
        if ref is None and report.op is not None:
            ref = CollectiveRef(report.op, report.seq, source=SOURCE)
    return out, ref


def _labels(report: DesyncReport) -> list[Label]:
    cite, lag = report.cite, report.lag_seq
    never = "never started a collective of the group (the desync report)"
    out = [Label(r, ORIGIN, never, cite, DESYNC) for r in report.never_joined]
    later = sorted({r for seq, _, _, ranks in report.snapshot if lag and seq > lag for r in ranks})
    if report.not_next:
        stopped = (
            f"finished collective #{lag} and never started #{(lag or 0) + 1} (the desync "
            "report): it stopped between collectives, in its own code or dead"
        )
        out += [Label(r, ORIGIN, stopped, cite, DESYNC) for r in report.not_next]
        waits = f"started collective #{lag} and waits in it (the desync report)"
        out += [Label(r, LAGGING, waits, cite, DESYNC) for r in report.unfinished]
    elif report.unfinished and later:
        own = (
            f"its collective #{lag} never finished while other ranks went past it (the desync "
            "report): its own GPU work did not complete"
        )
        out += [Label(r, ORIGIN, own, cite, DESYNC) for r in report.unfinished]
    named = {x.rank for x in out}
    for seq, state, op, ranks in report.snapshot:
        if lag and seq > lag and state == "started":
            why = f"started {op} #{seq} and waits in it (the desync report)"
            out += [Label(r, MESSENGER, why, cite, DESYNC) for r in ranks if r not in named]
    return out


@dataclass(frozen=True, slots=True)
class Mismatch:
    """Collectives of different names started under one number, and who started each."""

    report: DesyncReport
    seq: int
    ops: tuple[tuple[str, tuple[int, ...]], ...]

    def text(self) -> str:
        """``#12: rank 0 started BROADCAST, ranks 1-3 started ALLREDUCE``."""
        said = ", ".join(f"{ranks_text(ranks)} started {op}" for op, ranks in self.ops)
        return f"collective #{self.seq}: {said}"

    @property
    def ranks(self) -> list[int]:
        """The ranks of every collective but the one most ranks started."""
        ordered = sorted(self.ops, key=lambda item: -len(item[1]))
        return sorted({r for _, ranks in ordered[1:] for r in ranks})


def mismatches(facts: Facts) -> Iterator[Mismatch]:
    """Each number under which a desync report's snapshot shows different collectives."""
    for report in facts.of(DesyncReport):
        started: dict[int, dict[str, tuple[int, ...]]] = {}
        for seq, state, op, ranks in report.snapshot:
            if state == "started":
                held = started.setdefault(seq, {})
                held[op] = (*held.get(op, ()), *ranks)
        for seq, ops in sorted(started.items()):
            if len(ops) > 1:
                yield Mismatch(report, seq, tuple(ops.items()))
