"""What the flight recorder and NCCL RAS say of each rank in a hang (see :mod:`._origin`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.flight import FlightDump, FlightEntry, FlightGroup, latest
from nccl_doctor.facts.ranks import ranks_listed, ranks_text
from nccl_doctor.facts.ras import RasOpCount, RasProcess, RasRank, RasReport
from nccl_doctor.facts.signs import Sign
from nccl_doctor.facts.stacks import StackCapture, ThreadStack, capture_of, positions
from nccl_doctor.facts.store import Facts, Hit
from nccl_doctor.findings import LAGGING, MESSENGER, ORIGIN, CollectiveRef
from nccl_doctor.rules.app._labels import (
    DESYNC,
    FLIGHT,
    GONE,
    OWN_ERROR,
    OWN_GPU,
    RAS_COUNTS,
    REPORTED,
    WAITING,
    Found,
    Label,
    elsewhere,
)
from nccl_doctor.signs.app import FR_COLLECTIVE, FR_MISSING_RANKS, FR_NOT_JOINED


def python_at(facts: Facts) -> dict[int, str]:
    """Per rank of the latest capture: where its Python is, when not in a collective."""
    return {
        p.rank: elsewhere(p)
        for p in positions([*facts.of(StackCapture), *facts.of(ThreadStack)])
        if p.rank is not None and p.kind == "elsewhere"
    }


# -- flight recorder --------------------------------------------------------------------
_STAGES = ("enqueued", "started", "completed")


def flight_state(facts: Facts) -> tuple[list[FlightGroup], list[FlightEntry]]:
    """Each rank's latest dump: its process groups and entries (cached per facts)."""
    return facts.derived(
        "flight-latest",
        lambda f: latest(f.of(FlightDump), f.of(FlightGroup), f.of(FlightEntry)),
    )


def flight_progress(facts: Facts) -> dict[str, dict[int, list[int]]]:
    """Per process group and rank: the last enqueued, started and completed collective."""
    groups, entries = flight_state(facts)
    out: dict[str, dict[int, list[int]]] = {}
    for group in groups:
        if group.rank is not None and (not group.group_ranks or group.rank in group.group_ranks):
            row = out.setdefault(group.pg_id, {}).setdefault(group.rank, [0, 0, 0])
            got = (group.last_enqueued, group.last_started, group.last_completed)
            row[:] = [max(r, g or 0) for r, g in zip(row, got, strict=True)]
    for entry in entries:
        if entry.rank is None or entry.seq is None or entry.is_p2p or entry.pg_id is None:
            continue
        row = out.setdefault(entry.pg_id, {}).setdefault(entry.rank, [0, 0, 0])
        reached = {"scheduled": 1, "started": 2, "completed": 3}.get(entry.state or "", 1)
        for stage in range(reached):
            row[stage] = max(row[stage], entry.seq)
    return out


def _pending(entries: Iterable[FlightEntry]) -> dict[int, list[FlightEntry]]:
    out: dict[int, list[FlightEntry]] = {}
    for e in entries:
        if e.rank is not None and not e.is_p2p and e.state in ("scheduled", "started"):
            out.setdefault(e.rank, []).append(e)
    return out


def _entry_at(entries: Sequence[FlightEntry], pg: str, seq: int) -> FlightEntry | None:
    return next((e for e in entries if e.pg_id == pg and e.seq == seq and not e.is_p2p), None)


def collective_of(entry: FlightEntry) -> CollectiveRef:
    """The collective an entry records, as a finding names it."""
    sizes = [list(s) for s in entry.input_sizes]
    size = f"{sizes} {','.join(entry.input_dtypes)}".strip() if sizes else None
    group = _group(entry) if entry.pg_id else None
    return CollectiveRef(entry.op, entry.seq, size, group, "flight recorder")


def from_flight(facts: Facts, world: int | None) -> Found:
    _, entries = flight_state(facts)
    progress = flight_progress(facts)
    pending = _pending(entries)
    behind_in: dict[str, set[int]] = {}
    for pg, ranks in progress.items():
        enq = {r: row[0] for r, row in ranks.items()}
        if len(ranks) > 1 and min(enq.values()) < max(enq.values()):
            low = min(enq.values())
            behind_in[pg] = {r for r, v in enq.items() if v == low}
    if behind_in:
        pg = min(behind_in, key=lambda g: (g != "0", g))  # the default group first
        return _behind(pg, behind_in, progress[pg], entries, pending)
    for pg, ranks in sorted(progress.items(), key=lambda kv: (kv[0] != "0", kv[0])):
        found = _not_started(pg, ranks, entries)
        if found is not None:
            return found
    return _all_waiting(facts, world, pending)


def _behind(
    pg: str,
    behind_in: dict[str, set[int]],
    ranks: dict[int, list[int]],
    entries: Sequence[FlightEntry],
    pending: dict[int, list[FlightEntry]],
) -> Found:
    """Ranks that never enqueued the collective the others did (in group ``pg``).

    A rank behind here that waits in a collective of another group, where
    another rank is behind in turn, only lags: the origin is that other rank,
    and the collective they diverge at is the one it never joined there.
    """
    low = min(row[0] for row in ranks.values())
    ahead = [r for r, row in ranks.items() if row[0] > low]
    missed = next((e for r in ahead if (e := _at(entries, r, pg, low + 1))), None)
    what = f"{missed.op} seq {low + 1}" if missed else f"collective seq {low + 1}"
    out: list[Label] = []
    waited_on: dict[int, tuple[FlightEntry, list[int]]] = {}  # holder -> (entry, waiters)
    for rank in sorted(behind_in[pg]):
        own = [e for e in pending.get(rank, ()) if e.pg_id != pg]
        cite = next((e.cite for e in own), None) or _last_cite(entries, rank, pg)
        if own:
            other = own[0]
            there = f"{other.op} seq {other.seq} of process group {_group(other)}"
            held = behind_in.get(other.pg_id or "", set()) - {rank}
            if held:
                why = f"never issued {what}: it waits in {there}, held by {ranks_text(held)}"
                out.append(Label(rank, LAGGING, why, cite, FLIGHT))
                for holder in held:
                    waited_on.setdefault(holder, (other, []))[1].append(rank)
            else:
                why = f"stuck in a different collective: {there} never completed, so it never "
                out.append(Label(rank, ORIGIN, why + f"issued {what}", cite, FLIGHT))
        else:
            last = f"its last enqueued collective is {low}" if low else "it enqueued none"
            out.append(Label(rank, ORIGIN, f"never joined {what} ({last})", cite, FLIGHT))
    ref = collective_of(missed) if missed else CollectiveRef(None, low + 1, None, pg)
    for i, label in enumerate(out):
        if label.role == ORIGIN and label.rank in waited_on:
            entry, waiters = waited_on[label.rank]
            why = (
                f"never joined {entry.op} seq {entry.seq} of process group {_group(entry)}, "
                f"which {ranks_text(waiters)} {'waits' if len(waiters) == 1 else 'wait'} in"
            )
            out[i] = Label(label.rank, ORIGIN, why, label.cite, label.weight)
            ref = collective_of(entry)
    for rank in sorted(ahead):
        issued = _at(entries, rank, pg, low + 1)
        if issued is not None and issued.state != "completed":
            out.append(Label(rank, MESSENGER, f"issued {what} and waits", issued.cite, FLIGHT - 5))
    return out, ref


def _group(entry: FlightEntry) -> str:
    return f"{entry.pg_id}" + (f" ({entry.pg_desc})" if entry.pg_desc else "")


def _at(entries: Sequence[FlightEntry], rank: int, pg: str, seq: int) -> FlightEntry | None:
    return next(
        (e for e in entries if e.rank == rank and e.pg_id == pg and e.seq == seq and not e.is_p2p),
        None,
    )


def _last_cite(entries: Sequence[FlightEntry], rank: int, pg: str) -> Cite:
    mine = [e for e in entries if e.rank == rank and e.pg_id == pg]
    return mine[-1].cite if mine else Cite("flight recorder", 1, "")


def _not_started(
    pg: str, ranks: dict[int, list[int]], entries: Sequence[FlightEntry]
) -> Found | None:
    """All enqueued it; some started it, some never did: their own stream held it.

    Only where start times were recorded (``TORCH_NCCL_ENABLE_TIMING``): without
    them no entry is ever ``started`` and nothing can be told.
    """
    if len(ranks) < 2 or not any(row[1] for row in ranks.values()):
        return None
    started = {r: row[1] for r, row in ranks.items()}
    high = max(started.values())
    late = sorted(r for r, v in started.items() if v < high)
    if not late:
        return None
    entry = next((e for r in ranks for e in [_at(entries, r, pg, high)] if e), None)
    what = f"{entry.op} seq {high}" if entry else f"collective seq {high}"
    out = [
        Label(
            rank,
            ORIGIN,
            f"its own GPU work ahead of {what} did not finish: the collective was enqueued but "
            "never started on its stream",
            _last_cite(entries, rank, pg),
            FLIGHT,
        )
        for rank in late
    ]
    out += [
        Label(r, MESSENGER, f"started {what} and waits", _last_cite(entries, r, pg), FLIGHT - 5)
        for r in sorted(ranks)
        if r not in late
    ]
    return out, collective_of(entry) if entry else None


def _all_waiting(facts: Facts, world: int | None, pending: dict[int, list[FlightEntry]]) -> Found:
    """Every dumped rank issued the same collective and waits in it."""
    if not pending:
        return [], None
    first = {r: min(es, key=lambda e: e.seq or 0) for r, es in pending.items()}
    entry = next(iter(first.values()))
    what = f"{entry.op} seq {entry.seq}"
    python = python_at(facts)
    out: list[Label] = []
    for rank, e in sorted(first.items()):
        if world == 1:
            why = OWN_GPU + f" ({what} enqueued, never completed"
            why += f"; its Python is {python[rank]})" if rank in python else ")"
            out.append(Label(rank, ORIGIN, why, e.cite, FLIGHT))
        else:
            out.append(Label(rank, MESSENGER, f"issued {what} and waits", e.cite, WAITING))
    return out, collective_of(entry)


# -- NCCL RAS ----------------------------------------------------------------------------
def _latest_ras(facts: Facts) -> tuple[list[RasRank], list[RasOpCount], list[RasProcess]]:
    reports = facts.of(RasReport)
    if not reports:
        return [], [], []
    last = max(reports, key=lambda r: (capture_of(r.cite.source) or 0, r.cite.line))
    src = last.cite.source
    ranks = [r for r in facts.of(RasRank) if r.cite.source == src]
    counts = [c for c in facts.of(RasOpCount) if c.cite.source == src]
    procs = [p for p in facts.of(RasProcess) if p.cite.source == src]
    return ranks, counts, procs


_RAS_STATE = {
    "dead": (GONE, "dead: NCCL RAS considers its process dead (unreachable)"),
    "unresponsive": (GONE - 5, "unresponsive: NCCL RAS got no answer from its process"),
    "missing": (GONE - 5, "NCCL RAS got no data from its process (unresponsive or dead)"),
}


def from_ras(facts: Facts, world: int | None) -> Found:
    ranks, counts, procs = _latest_ras(facts)
    size = max([r.comm_size or 0 for r in ranks] + [c.comm_size or 0 for c in counts], default=0)
    ranks = [r for r in ranks if r.rank is not None and (r.comm_size or 0) == size]
    counts = [c for c in counts if (c.comm_size or 0) == size]
    out: list[Label] = []
    for r in ranks:
        rank = r.rank if r.rank is not None else -1
        if r.state in _RAS_STATE:
            weight, why = _RAS_STATE[r.state]
            out.append(Label(rank, ORIGIN, why, r.cite, weight))
        elif r.async_error and r.async_error != "Remote process error":
            out.append(
                Label(
                    rank, ORIGIN, f"an NCCL error of its own ({r.async_error})", r.cite, OWN_ERROR
                )
            )
        elif r.init_error:
            out.append(
                Label(
                    rank,
                    ORIGIN,
                    f"its communicator failed to initialise ({r.init_error})",
                    r.cite,
                    OWN_ERROR,
                )
            )
        elif r.async_error:
            out.append(
                Label(
                    rank,
                    MESSENGER,
                    "NCCL reported a remote process error: a peer failed",
                    r.cite,
                    REPORTED,
                )
            )
        elif r.status == "ABORT":
            out.append(
                Label(
                    rank,
                    MESSENGER,
                    "its communicator was aborted (its watchdog gave up)",
                    r.cite,
                    REPORTED,
                )
            )
    # RAS names a dead process by pid and address, a capture by pid and host name: the pid
    # tells the rank where it names one rank only
    by_pid: dict[int, set[int]] = {}
    pids = [(r.pid, r.rank) for r in ranks] + [(c.pid, c.rank) for c in facts.of(StackCapture)]
    for pid, who in pids:
        if pid is not None and who is not None:
            by_pid.setdefault(pid, set()).add(who)
    for proc in procs:
        named = by_pid.get(proc.pid or -1, set())
        if len(named) == 1 and proc.state == "dead":
            out.append(Label(named.pop(), ORIGIN, _RAS_STATE["dead"][1], proc.cite, GONE))
    listed = {(r.comm, op, n, r.rank) for r in ranks if r.rank is not None for op, n in r.op_counts}
    found, ref = _ras_counts(counts, size, listed)
    return out + found, ref


def _ras_counts(
    counts: list[RasOpCount], size: int, listed: set[tuple[str, str, int, int]]
) -> Found:
    """The ranks that launched fewer operations of one type than the others."""
    by_op: dict[tuple[str, str], list[RasOpCount]] = {}
    for c in counts:
        by_op.setdefault((c.comm, c.op), []).append(c)
    for (comm, op), groups in sorted(by_op.items()):
        merged: dict[int, RasOpCount] = {}
        for g in groups:  # text: a group's count line, then its listed ranks
            held = merged.get(g.count)
            if held is None or len(g.ranks) > len(held.ranks) or g.n_ranks > held.n_ranks:
                merged[g.count] = g
        if len(merged) < 2:
            continue
        for n, g in list(merged.items()):  # text: the ranks listed under a group's count line
            more = tuple(sorted({r for c, o, k, r in listed if (c, o, k) == (comm, op, n)}))
            if len(more) > len(g.ranks):
                merged[n] = replace(g, ranks=more)
        members = _members(merged, size)
        low, high = min(merged), max(merged)
        behind, ahead = members[low], [r for n, rs in members.items() if n > low for r in rs]
        total = sum(g.n_ranks for g in merged.values())
        what = f"{op} operation {low + 1}"
        out: list[Label] = []
        if merged[low].n_ranks * 2 <= total:
            why = f"never launched {what}, which the others launched (NCCL RAS: it launched {low})"
            out += [Label(r, ORIGIN, why, merged[low].cite, RAS_COUNTS) for r in behind]
            why = f"launched {op} up to operation {high} and waits"
            out += [Label(r, MESSENGER, why, merged[high].cite, RAS_COUNTS - 10) for r in ahead]
        else:
            why = f"behind: not yet launched {what}, which a minority launched (NCCL RAS)"
            out += [Label(r, LAGGING, why, merged[low].cite, RAS_COUNTS - 10) for r in behind]
            why = f"launched {what}, which most ranks have not (NCCL RAS)"
            out += [Label(r, MESSENGER, why, merged[high].cite, RAS_COUNTS - 10) for r in ahead]
        return out, CollectiveRef(op, None, None, f"NCCL communicator {comm}", "NCCL RAS")
    return [], None


def _members(merged: dict[int, RasOpCount], size: int) -> dict[int, list[int]]:
    """Each count's ranks; the one group the text did not list is the rest of the ranks."""
    members = {n: list(g.ranks) for n, g in merged.items()}
    unlisted = [n for n, g in merged.items() if len(g.ranks) < g.n_ranks]
    if len(unlisted) == 1 and size:
        listed = {r for n, rs in members.items() if n != unlisted[0] for r in rs}
        members[unlisted[0]] = [r for r in range(size) if r not in listed]
    return members


#: How far below fr_trace's header its missing ranks and collective are printed (lines).
_FR_BELOW = 12


def _below(facts: Facts, sign: Sign, at: Cite) -> list[Hit]:
    """The hits of ``sign`` on ``at``'s line or up to ``_FR_BELOW`` lines below it."""
    return [
        h
        for h in facts.seen(sign)
        if h.cite.source == at.source and at.line <= h.cite.line <= at.line + _FR_BELOW
    ]


def from_fr_trace(facts: Facts, world: int | None) -> Found:
    """The ranks torch's flight-recorder analyser found missing from a collective the others
    joined: the first report names the origin (later ones follow from it). Its lines read as
    words, so they count wherever they stand (a person pasting the tool's report)."""
    for head in facts.seen(FR_NOT_JOINED):
        missing = _below(facts, FR_MISSING_RANKS, head.cite)
        if not missing:
            continue
        ranks = sorted(ranks_listed(missing[0].match["ranks"]))
        collective = _below(facts, FR_COLLECTIVE, head.cite)
        op = head.match["op"] or next((h.match["op"] for h in collective), None)
        seq_text = head.match["seq"] or head.match["seq2"]
        seq = int(seq_text) if seq_text else None
        what = f"{op or 'a collective'}" + (f" (sequence number {seq})" if seq else "")
        why = f"never joined {what}, which the other ranks joined (fr_trace)"
        labels = [Label(r, ORIGIN, why, missing[0].cite, DESYNC) for r in ranks]
        return labels, CollectiveRef(op, seq, None, None, "flight recorder")
    return [], None
