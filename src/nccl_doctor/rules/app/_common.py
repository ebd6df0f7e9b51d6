"""Helpers of the app rules: timeout wording, who is behind, where the timed-out collective was
issued, rank-guarded collectives."""

from __future__ import annotations

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.ranks import ranks_text
from nccl_doctor.facts.run import DistributedError, WatchdogState
from nccl_doctor.facts.stacks import CollectiveTrace, Frame, frame_text, issued_at
from nccl_doctor.facts.store import Facts, Said
from nccl_doctor.rules.app._recorders import flight_state
from nccl_doctor.signs.app import COLLECTIVE_CALL, PROGRESS_ELAPSED, RANK_GUARD


def ms_text(value: int | None) -> str:
    if value is None:
        return "?"
    return f"{value} ms ({value / 60000:.0f} min)" if value >= 60000 else f"{value} ms"


def _issued(facts: Facts) -> list[tuple[int | None, tuple[Frame, ...], Cite]]:
    """Per rank, the stack of the collective it is stuck in: the first its watchdog printed
    (one per process group that timed out), else that of the first operation its latest
    flight-recorder dump holds unfinished."""
    out: list[tuple[int | None, tuple[Frame, ...], Cite]] = []
    told: set[int | None] = set()
    for trace in facts.of(CollectiveTrace):
        if trace.rank not in told:
            told.add(trace.rank)
            out.append((trace.rank, trace.frames, trace.cite))
    _, entries = flight_state(facts)
    for entry in entries:
        if (
            entry.rank not in told
            and entry.frames
            and not entry.is_p2p
            and entry.state in ("scheduled", "started")
        ):
            told.add(entry.rank)
            out.append((entry.rank, entry.frames, entry.cite))
    return out


def issued_text(facts: Facts) -> tuple[str, list[Cite]]:
    """Where the ranks issued the collective they are stuck in (the flight recorder's stack of
    it, printed by the watchdog or in a dump), and the lines that say so; ``("", [])`` when
    no stack was kept.

    One place for every rank names the call; several mean the ranks were in different code
    when they asked for it, the shape of a collective that only some ranks reach.
    """
    sites: dict[Frame, set[int]] = {}
    cites: dict[Frame, Cite] = {}
    for rank, frames, where_cited in _issued(facts):
        site = issued_at(frames)
        if site is not None:
            sites.setdefault(site, set()).update(() if rank is None else (rank,))
            cites.setdefault(site, where_cited)
    if not sites:
        return "", []
    if len(sites) == 1:
        site, ranks = next(iter(sites.items()))
        who = ranks_text(ranks) if ranks else "the rank"
        return f"; {who} issued it at {frame_text(site)}", [cites[site]]
    named = sorted(sites.items(), key=lambda kv: min(kv[1], default=-1))
    where = ", ".join(
        f"{ranks_text(r) if r else 'a rank'} at {frame_text(site)}" for site, r in named[:4]
    )
    text = (
        f"; the ranks issued their timed-out collectives from different code ({where}): a "
        "collective that only some ranks reach, or reach in another order"
    )
    return text, [cites[site] for site, _ in named[:2]]


def behind_text(states: list[WatchdogState], seq: int | None, world: int | None = None) -> str:
    """Who is behind, from the watchdogs' last completed work (and the world's size)."""
    if not states:
        return ""
    done = {s.rank: s.last_completed for s in states if s.last_completed is not None}
    if not done:
        return ""
    low = min(done.values())
    laggards = sorted(r for r, c in done.items() if c == low and r is not None)
    if len(set(done.values())) > 1:
        return (
            f"; {ranks_text(laggards)} {'is' if len(laggards) == 1 else 'are'} behind (last "
            f"completed work {low}, others {max(done.values())})"
        )
    enq = {s.last_enqueued for s in states if s.last_enqueued is not None}
    who = ranks_text(r for r in done if r is not None)
    if world == 1:
        return (
            f"; the job's only rank completed work {low} and waits in {seq or low + 1}: no peer "
            "can be behind - the rank's own GPU work queued before the collective (a long or hung "
            "kernel, a copy, a GPU fault) did not finish within the timeout"
        )
    if world is not None and set(done) >= set(range(world)):
        return (
            f"; every rank of the job ({world}) completed work {low} and waits in "
            f"{seq or low + 1}: none is missing - the collective itself did not finish (a rank's "
            "own GPU work queued before it, or the transport between them, stalled)"
        )
    return (
        f"; {who} completed work {low} and wait in {seq or low + 1} "
        f"(last enqueued {max(enq) if enq else '?'}): they are not behind - a rank whose log "
        "is not here never joined it, or the collective itself did not finish (a rank's own GPU "
        "work queued before it, or the transport, stalled)"
    )


def longest_elapsed(facts: Facts) -> tuple[int, Cite] | None:
    best: tuple[int, Cite] | None = None
    for hit in facts.seen(PROGRESS_ELAPSED, prose=False):
        hours, minutes, seconds = hit.match["hours"], hit.match["minutes"], hit.match["seconds"]
        secs = int(hours or 0) * 3600 + int(minutes) * 60 + int(seconds)
        if best is None or secs > best[0]:
            best = (secs, hit.cite)
    return best


def guarded_collective(facts: Facts) -> tuple[Said, Said] | None:
    """A rank check (``if args.local_rank == 0:``) with a collective right under it."""
    guards = facts.seen(RANK_GUARD)
    if not guards:
        return None
    lines = facts.lines
    calls = facts.lines_of(COLLECTIVE_CALL)
    at = {said: index for index, said in enumerate(lines)}
    for said in (h.said for h in guards):
        index = at[said]
        for nxt in lines[index : index + 3]:
            if nxt in calls and nxt.cite.source == said.cite.source:
                return said, nxt
    return None


def dump_summary(
    facts: Facts,
) -> tuple[str, str, DistributedError, list[WatchdogState]] | None:
    """A flight-recorder dump signal: the summary, who signalled it, the fact, the states."""
    dumps = [
        d
        for d in facts.of(DistributedError)
        if d.category in ("dump_signal", "dump_global_timeout") and d.detail != "this local rank"
    ]
    if not dumps:
        return None
    first = dumps[0]
    states = [s for s in facts.of(WatchdogState) if s.event == "dump_signal"]
    src = f"rank {first.peer_rank}" if first.peer_rank is not None else "another rank"
    summary = f"{src[0].upper()}{src[1:]} hit a collective timeout and signalled a dump"
    enq = states[0].last_enqueued if states else None
    done = states[0].last_completed if states else None
    if enq is not None and done is not None:
        rank = states[0].rank
        who = f"rank {rank}" if rank is not None else "the dumping rank"
        summary += (
            f"; {who} had enqueued work {enq} but completed only {done} "
            f"({enq - done} collectives in flight)"
        )
    return summary, src, first, states
