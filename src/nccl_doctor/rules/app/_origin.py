"""Who started a hang: each rank labelled origin, lagging or messenger, and where they diverge.

Every source of evidence says something about some ranks; each statement is
a :class:`Label` with a weight (how direct the evidence is), and per rank
the heaviest wins:

* the rank died on its own (the launcher's summary, its own uncaught
  exception), its process was gone at a pre-mortem capture, RAS considers
  it dead or got nothing from it, or NCCL reports an error of its own on it
  (RAS ``async_error`` other than a remote process error): **origin**;
* Python stacks of a capture: a rank in no collective, or in a collective
  other than the one the others wait in, while others wait: **origin**;
  the ranks waiting in the common collective: **messengers**;
* flight-recorder dumps (each rank's latest): a rank that never enqueued
  the collective the others did is the **origin**, unless it waits in a
  collective of another process group that is itself held by another rank
  (then **lagging**); a rank whose collective was enqueued but never started
  while the others' started: its own GPU work ahead of the collective did
  not finish (**origin**); the ranks that issued the collective: **messengers**;
* the desync report (``TORCH_NCCL_DESYNC_DEBUG=1``: the store's record of each
  rank's last collective): ranks that never started one, or stopped between
  two, are the **origin** (:mod:`._desync`);
* NCCL RAS collective counts: the ranks that launched fewer operations of
  one type than the others (a minority) are the **origin**, the others
  **messengers**; when the ranks behind are the majority they are only
  labelled **lagging** (RAS cannot tell which of them held the rest);
  an aborted communicator or a remote-process error: **messenger**;
* logs: a rank whose watchdog timed out, whose gloo collective timed out
  waiting, whose store wait timed out, or that saw its peer close the
  connection: **messenger**; a rank the launcher had to stop that printed no
  error of its own, or a rank whose output is present but that reported
  nothing while the others timed out: **origin** (it was stuck, not waiting);
* a job of one rank whose collective timed out: that rank is the origin
  (its own GPU work ahead of the collective did not finish; no peer can be
  behind).

The collective where they diverge comes from the flight recorder (op,
sequence id, sizes, process group), else the watchdog's line, else RAS,
else the stacks. Repeated pre-mortem captures of one stall are read once:
the stacks of the latest capture, each rank's latest dump, the latest RAS
report.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.flight import FlightDump, FlightEntry, FlightGroup
from nccl_doctor.facts.job import world_size
from nccl_doctor.facts.messages import peer_gone
from nccl_doctor.facts.ranks import ranks_text
from nccl_doctor.facts.ras import RasOpCount, RasRank
from nccl_doctor.facts.run import (
    ChildFailure,
    CollectiveTimeout,
    DistributedError,
    LauncherSignal,
    PythonTraceback,
    RendezvousTimeout,
    WatchdogState,
    WorkerExit,
)
from nccl_doctor.facts.stacks import Position, StackCapture, ThreadStack, frame_text, positions
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import LAGGING, MESSENGER, ORIGIN, CollectiveRef, Finding, RankRole
from nccl_doctor.rules.app._deepep import from_deepep
from nccl_doctor.rules.app._desync import from_desync
from nccl_doctor.rules.app._labels import (
    DEAD,
    GONE,
    OWN_GPU,
    QUIET,
    REPORTED,
    ROLE_ORDER,
    SILENT,
    STACKS,
    WAITING,
    Found,
    Label,
    elsewhere,
)
from nccl_doctor.rules.app._recorders import from_flight, from_fr_trace, from_ras
from nccl_doctor.rules.launch._common import deaths, waiting_in, watchdog_aborts
from nccl_doctor.signs.app import GLOO_WAIT

_CASCADE_CATEGORIES = ("connection_closed", "connection_reset", "broken_pipe", "recv_failed")


@dataclass(frozen=True, slots=True)
class Origin:
    """The labelled ranks (one label each), the collective, the job's size."""

    labels: tuple[Label, ...]
    collective: CollectiveRef | None
    world: int | None

    def of(self, role: str) -> list[Label]:
        """The labels of one role, by rank."""
        return [x for x in self.labels if x.role == role]

    def roles(self) -> tuple[RankRole, ...]:
        """Labels grouped by role and reason: origin first, ranks compact."""
        groups: dict[tuple[str, str], list[Label]] = {}
        for label in self.labels:
            groups.setdefault((label.role, label.reason), []).append(label)
        ordered = sorted(groups.items(), key=lambda kv: (ROLE_ORDER[kv[0][0]], kv[1][0].rank))
        return tuple(
            RankRole(role, tuple(x.rank for x in found), reason, tuple(x.cite for x in found[:2]))
            for (role, reason), found in ordered
        )

    def sentence(self, tell: Iterable[str] = (ORIGIN, LAGGING, MESSENGER)) -> str:
        """``rank 1 is the origin: ...; messengers: ranks 0, 2-3 (...)``, or ``""``.

        Each origin group is told with its reason; lagging and messenger ranks
        are told once per role, compactly, with their (at most three) reasons.
        """
        parts: list[str] = []
        told = set(tell)
        others: dict[str, tuple[set[int], list[str]]] = {}
        for group in self.roles():
            if group.role not in told:
                continue
            if group.role == ORIGIN:
                verb = "is" if len(group.ranks) == 1 else "are"
                parts.append(f"{ranks_text(group.ranks)} {verb} the origin: {group.reason}")
            else:
                ranks, reasons = others.setdefault(group.role, (set(), []))
                ranks.update(group.ranks)
                reasons.append(group.reason)
        for role, (ranks, reasons) in others.items():
            plural = "s" if len(ranks) > 1 and role == MESSENGER else ""
            why = "; ".join(reasons[:3]) + ("; ..." if len(reasons) > 3 else "")
            parts.append(f"{role}{plural}: {ranks_text(ranks)} ({why})")
        return "; ".join(parts)

    def stuck(self, rank: int) -> bool:
        """Whether ``rank`` is an origin the evidence shows alive (stuck, not dead)."""
        return any(x.rank == rank and x.role == ORIGIN and x.alive for x in self.labels)

    def cites(self, limit: int = 3) -> list[Cite]:
        """The lines of the origin's labels first, then the others'."""
        ordered = sorted(self.labels, key=lambda x: (ROLE_ORDER[x.role], -x.weight, x.rank))
        return [x.cite for x in ordered][:limit]


def with_roles(
    facts: Facts, finding: Finding, tell: Iterable[str] = (ORIGIN, LAGGING, MESSENGER)
) -> Finding:
    """``finding`` (of a death or a store timeout) with the ranks' roles and the collective.

    Its summary gains the roles of ``tell`` (a crash's finding already names its origin).
    """
    origin = analyse(facts)
    if not origin.labels:
        return finding
    text = origin.sentence(tell)
    summary = finding.summary.rstrip(".") + (f"; {text}" if text else "") + "."
    return replace(finding, summary=summary, roles=origin.roles(), collective=origin.collective)


def analyse(facts: Facts) -> Origin:
    """The ranks' roles and the diverging collective (cached per facts)."""
    return facts.derived("hang-origin", _analyse)


def _analyse(facts: Facts) -> Origin:
    world = job_size(facts)
    labels: list[Label] = []
    refs: list[CollectiveRef] = []
    sources = (
        _from_deaths, _from_stacks, from_flight, from_fr_trace, from_desync, from_ras,
        from_deepep, _from_logs,
    )  # fmt: skip
    for source in sources:
        found, ref = source(facts, world)
        labels += found
        if ref is not None:
            refs.append(ref)
    best: dict[int, Label] = {}
    for label in labels:
        held = best.get(label.rank)
        if held is None or (label.weight, -ROLE_ORDER[label.role]) > (
            held.weight,
            -ROLE_ORDER[held.role],
        ):
            best[label.rank] = label
    if world == 1 and 0 in best and best[0].role != ORIGIN:
        held = best[0]
        best[0] = Label(0, ORIGIN, OWN_GPU, held.cite, held.weight, alive=True)
    chosen = tuple(sorted(best.values(), key=lambda x: x.rank))
    refs.sort(key=lambda r: _REF_ORDER.index(r.source) if r.source in _REF_ORDER else 9)
    return Origin(chosen, refs[0] if refs else None, world)


#: The evidence that names the diverging collective best comes first.
_REF_ORDER = ("flight recorder", "watchdog", "desync report", "NCCL RAS", "traceback", "stacks")


def job_size(facts: Facts) -> int | None:
    """The world's size (:func:`nccl_doctor.facts.job.world`)."""
    return world_size(facts)


# -- deaths ------------------------------------------------------------------------------
def _from_deaths(facts: Facts, world: int | None) -> Found:
    out: list[Label] = []
    for death in deaths(facts):
        if death.rank is None:
            continue
        error = (death.error or "").strip()
        if error and peer_gone(error):
            out.append(
                Label(
                    death.rank, MESSENGER, "exited after its peer went away", death.cite, REPORTED
                )
            )
            continue
        how = (
            error[:120]
            if error
            else f"exit code {death.exitcode}" + (f" ({death.signal})" if death.signal else "")
        )
        out.append(Label(death.rank, ORIGIN, f"it died first ({how})", death.cite, DEAD))
    why = "its watchdog timed out and took it down"
    out += [
        Label(a.rank, MESSENGER, why, a.cite, REPORTED - 5)
        for a in watchdog_aborts(facts)
        if a.rank is not None
    ]
    return out, None


# -- stacks ------------------------------------------------------------------------------
def _from_stacks(facts: Facts, world: int | None) -> Found:
    found = [
        p
        for p in positions([*facts.of(StackCapture), *facts.of(ThreadStack)])
        if p.rank is not None
    ]
    if not found:
        return [], None
    waiting = [p for p in found if p.kind == "collective"]
    counts = Counter(p.op for p in waiting)
    common = counts.most_common(1)[0][0] if counts else None
    out: list[Label] = []
    for pos in found:
        rank = pos.rank if pos.rank is not None else -1
        if pos.kind == "gone":
            out.append(Label(rank, ORIGIN, _gone(pos), pos.cite, GONE))
        elif not waiting:
            continue
        elif pos.kind == "elsewhere":
            out.append(
                Label(
                    rank, ORIGIN, f"never joined {common}: {elsewhere(pos)}", pos.cite, STACKS, True
                )
            )
        elif len(counts) > 1 and counts[pos.op] < counts[common]:
            why = (
                f"stuck in a different collective: {pos.op} (called at {frame_text(pos.call)}) "
                f"while the others wait in {common}"
            )
            out.append(Label(rank, ORIGIN, why, pos.cite, STACKS, alive=True))
        else:
            out.append(Label(rank, MESSENGER, f"waits in {pos.op}", pos.cite, WAITING))
    if not waiting:
        return out, None
    return out, CollectiveRef(common, source="stacks")


def _gone(pos: Position) -> str:
    return f"dead: its process (pid {pos.pid}) had exited when the stacks were captured"


# -- logs ------------------------------------------------------------------------------
def _from_logs(facts: Facts, world: int | None) -> Found:
    out: list[Label] = []
    ref: CollectiveRef | None = None
    timeouts = facts.of(CollectiveTimeout)
    for t in timeouts:
        if t.rank is not None:
            what = f"{t.op_type or 'its collective'}" + (f" SeqNum={t.seq}" if t.seq else "")
            out.append(
                Label(t.rank, MESSENGER, f"its watchdog timed out in {what}", t.cite, REPORTED)
            )
    out += _behind_watchdogs(facts)
    if timeouts:
        t = timeouts[0]
        size = f"{t.numel_in} elements" if t.numel_in else None
        ref = CollectiveRef(t.op_type, t.seq, size, t.pg, "watchdog")
    for rank, (fn, cite) in waiting_in(facts).items():
        out.append(Label(rank, MESSENGER, f"timed out waiting in {fn}", cite, REPORTED))
        ref = ref or CollectiveRef(fn, source="traceback")
    for hit in facts.seen(GLOO_WAIT, prose=False):
        if hit.rank is not None:
            out.append(
                Label(
                    hit.rank, MESSENGER, "timed out waiting for its peers", hit.cite, REPORTED - 1
                )
            )
    for err in facts.of(DistributedError):
        if err.rank is not None and err.category in _CASCADE_CATEGORIES:
            out.append(
                Label(
                    err.rank, MESSENGER, "saw a peer close the connection", err.cite, REPORTED - 2
                )
            )
    for tb in facts.of(PythonTraceback):
        if tb.rank is not None and tb.exc_type and peer_gone(tb.message or ""):
            out.append(
                Label(tb.rank, MESSENGER, "saw a peer close the connection", tb.cite, REPORTED - 2)
            )
    why = "timed out waiting for the others to join"
    out += [Label(r.rank, MESSENGER, why, r.cite, REPORTED) for r in facts.of(RendezvousTimeout)
            if r.rank is not None]  # fmt: skip
    reporting = {x.rank for x in out}
    if reporting:
        quiet = _quiet(facts, reporting)
        out += quiet + _silent(facts, reporting, reporting | {x.rank for x in quiet}, world)
    return out, ref


def _behind_watchdogs(facts: Facts) -> list[Label]:
    """Reporting ranks whose last completed collective is lower than the others'."""
    states = [s for s in facts.of(WatchdogState) if s.rank is not None and s.last_completed]
    done = {s.rank: s for s in states if s.rank is not None}
    if len({s.last_completed for s in done.values()}) < 2:
        return []
    high = max(s.last_completed or 0 for s in done.values())
    return [
        Label(
            r,
            LAGGING,
            f"behind: its last completed collective is {s.last_completed}, the others' {high}",
            s.cite,
            REPORTED + 5,
        )
        for r, s in sorted(done.items())
        if (s.last_completed or 0) < high
    ]


def _quiet(facts: Facts, reporting: set[int]) -> list[Label]:
    """Ranks the launcher had to stop (SIGTERM) that printed no error of their own.

    Only when they are fewer than the ranks that reported: a launcher that stops
    everyone after the first rank's timeout leaves many quiet ranks, none of them
    the origin for that.
    """
    stopped = sorted(
        {
            c.rank: c
            for c in facts.of(ChildFailure)
            if c.rank is not None
            and c.rank not in reporting
            and c.signal_name in ("SIGTERM", "SIGINT")
        }.items()
    )
    if not stopped or len(stopped) > len(reporting):
        return []
    why = (
        "stuck: no error of its own before the launcher stopped it, while the others timed out "
        "waiting for it"
    )
    return [Label(r, ORIGIN, why, c.cite, QUIET, alive=True) for r, c in stopped]


#: Facts about a rank that are not its own output (a job-wide report, a capture's bookkeeping).
_NOT_OUTPUT = (
    StackCapture,
    ThreadStack,
    RasRank,
    RasOpCount,
    FlightDump,
    FlightGroup,
    FlightEntry,
    ChildFailure,
    WorkerExit,
    LauncherSignal,
)


def _silent(
    facts: Facts, reporting: set[int], labelled: set[int], world: int | None
) -> list[Label]:
    """Ranks whose output is here but that reported nothing while the others failed waiting.

    Only when they are fewer than the ranks that reported (a log cut short, or
    kept for one rank only, leaves many ranks without their error).
    """
    if not world or world > 4096:
        return []
    failed = {f.rank for f in facts.of(PythonTraceback) if f.rank is not None and f.exc_type}
    last: dict[int, Cite] = {}
    for fact in facts.all:
        if fact.rank is not None and 0 <= fact.rank < world and not isinstance(fact, _NOT_OUTPUT):
            last[fact.rank] = fact.cite
    silent = sorted(set(last) - labelled - failed)
    if not silent or len(silent) > len(reporting):
        return []
    # a person's paste that leaves ranks out ("rank 2 ... rank 5 ... ..."): a rank whose only
    # lines are elsewhere in it (its init, pasted as a sample) is not shown silent
    sources = {last[r].source for r in silent}
    pasted = any(said.prose and said.cite.source in sources for said in facts.lines)
    if pasted and len(set(last) | reporting) < world:
        return []
    out: list[Label] = []
    for rank in silent:
        said = " ".join(last[rank].text.split())[-100:]
        why = (
            "never joined: its output is here but no error of its own while the others timed "
            f"out waiting for it (stuck or exited before joining; its last line: {said})"
        )
        out.append(Label(rank, ORIGIN, why, last[rank], SILENT, alive=True))
    return out
