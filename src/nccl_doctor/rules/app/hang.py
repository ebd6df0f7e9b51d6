"""A collective timed out, or the job stopped making progress: a rank is stuck, slow, or elsewhere.

What it means
-------------
A collective (all-reduce, all-gather, barrier ...) was issued on some ranks
and did not complete within the process-group timeout (30 minutes by
default, 10 in many recipes). NCCL only finishes a collective when every
rank of the group joins it, so one rank that is behind - stuck in I/O such
as a checkpoint save, busy with rank-local work such as tokenisation or
evaluation, out of data one batch early, or dead - holds all others.

Why it matters
--------------
The watchdog then aborts every communicator and takes each process down;
the ranks that report the timeout are usually the healthy ones, waiting.

Evidence
--------
``Watchdog caught collective operation timeout: WorkNCCL(SeqNum=19,
OpType=ALLREDUCE, ..., Timeout(ms)=1800000) ran for 1800093 milliseconds``,
``Timeout at NCCL work: 19, last enqueued NCCL work: 19, last completed NCCL
work: 18`` (a rank whose last completed work is lower is behind; equal
counters on every reporting rank point at a rank that is not reporting),
store-based barriers failing with ``Socket Timeout`` after ~30 minutes of
one rank's preprocessing, gloo's ``Timed out waiting 1800000ms for recv
operation``, heartbeat-monitor aborts; the ranks PyTorch itself names:
the desync report (``TORCH_NCCL_DESYNC_DEBUG=1``: ``ranks [1, 3] are the
lagging ranks ... never joined any collectives``, ``[2] finished collective
#5, but didn't join collective #6``) and a ``monitored_barrier()`` the job
called (``[Rank 0]: Ranks 2, 3 failed to pass monitoredBarrier``, or the
root's ``timed out in monitoredBarrier`` with the ranks it processed before
the one it waited on); while the job still
hangs, ``nccl-doctor run``'s capture: ranks' Python stacks waiting in a
collective while one is elsewhere or gone, flight-recorder dumps where one
rank never enqueued the collective the others did, NCCL RAS counting one
rank short, dead or in error. Each rank is labelled: the **origin** (never
joined, dead, stuck in a different collective, an error of its own, or its
own GPU work ahead of the collective did not finish), **lagging** (behind,
waiting on the origin) or **messenger** (it only reports), and the
collective where they diverge is named. The flight recorder's stack of the
timed-out collective (``Stack trace of the failed collective:`` then ``#0
all_reduce from <file>:<line>``) names the line each rank issued it from, and
says so when the ranks asked from different code. A timeout at the default group's
first collective with none completed, and nothing showing a rank elsewhere
(no rank missing from the timeouts, no long progress bar, no checkpoint),
is not asserted here: the ranks may never have connected, and the ranked
causes weigh the GPU path and the network beside a late rank.

Fix
---
Find the rank that is not at that SeqNum (its log, ``py-spy dump`` of its
PID, or the flight recorder with ``TORCH_FR_BUFFER_SIZE``; before torch 2.11
``TORCH_NCCL_TRACE_BUFFER_SIZE``), then
make the ranks issue the same collectives: equal batch counts per rank (or
``DistributedSampler``/``Join``), collective-free rank-0-only work, long
preprocessing done before the group is needed. Raise the timeout
(``init_process_group(timeout=...)``) only for work that is legitimately
long.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.flight import FlightDump
from nccl_doctor.facts.job import first_collective_timeout
from nccl_doctor.facts.ranks import ranks_text
from nccl_doctor.facts.ras import RasReport
from nccl_doctor.facts.run import CollectiveTimeout, DistributedError, WatchdogState
from nccl_doctor.facts.stacks import StackCapture, ThreadStack, capture_of, positions, verdict
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import ORIGIN, Confidence, Finding, Severity
from nccl_doctor.rules.app._barrier import barrier_miss
from nccl_doctor.rules.app._common import (
    behind_text,
    dump_summary,
    guarded_collective,
    issued_text,
    longest_elapsed,
    ms_text,
)
from nccl_doctor.rules.app._origin import Origin, analyse
from nccl_doctor.rules.app._recorders import flight_progress, flight_state
from nccl_doctor.rules.base import Rule
from nccl_doctor.rules.launch._common import (
    deaths,
    hang_cues,
    missing_from_timeout,
    timed_out_ranks,
    waiting_in,
    watchdog_aborts,
)
from nccl_doctor.signs.app import (
    CHECK_TIMEOUT_FRAME,
    CHECKPOINT_WORDS,
    GLOO_WAIT,
    INIT_WORDS,
    NUMEL_IN,
    OP_TYPE,
    RAN_FOR,
    TIMEOUT_MS,
    TIMEOUT_RAN,
    WATCHDOG_CAUGHT,
)
from nccl_doctor.signs.common import HANG_WORDS

RULE = Rule(
    id="app.hang",
    title="A collective timed out",
    severity=Severity.CRITICAL,
)

#: The title where no collective has timed out yet (a pre-mortem capture, flight-recorder
#: dumps taken while the job waits, a hang in the reporter's words, a stuck watchdog).
_STALLED = "The job stopped making progress"

_TEARDOWN_FIX = (
    "If the stall is legitimately long (checkpointing, evaluation), raise the group timeout "
    "(init_process_group(timeout=timedelta(minutes=60))) - after ruling out a stuck rank."
)


def _from_timeouts(facts: Facts) -> Finding | None:
    timeouts = facts.of(CollectiveTimeout)
    if not timeouts:
        return None
    key = Counter((t.pg, t.seq, t.op_type) for t in timeouts).most_common(1)[0][0]
    group = [t for t in timeouts if (t.pg, t.seq, t.op_type) == key]
    first = group[0]
    timeout_ms = next((t.timeout_ms for t in group if t.timeout_ms), None)
    ran_ms = max((t.ran_ms for t in group if t.ran_ms), default=None)
    wrapped = facts.seen(TIMEOUT_RAN)
    if timeout_ms is None and wrapped:
        timeout_ms = int(wrapped[0].match["limit_ms"])
        ran_ms = ran_ms or int(wrapped[0].match["ran_ms"])
    reporters = sorted(timed_out_ranks(facts))
    states = [s for s in facts.of(WatchdogState) if s.work_seq in (None, first.seq)]
    op = first.op_type or "a collective"
    seq = f" SeqNum={first.seq}" if first.seq is not None else ""
    numel = f", NumelOut={first.numel_out}" if first.numel_out else ""
    origin = analyse(facts)
    missing, _ = missing_from_timeout(facts)
    if _named(origin):
        summary = (
            f"{op}{seq}{numel} timed out after {ms_text(ran_ms)} (timeout {ms_text(timeout_ms)}); "
            + origin.sentence()
        )
    else:
        who = ranks_text(reporters) if reporters else "the reporting rank"
        summary = (
            f"{op}{seq}{numel} timed out on {who} after {ms_text(ran_ms)} "
            f"(timeout {ms_text(timeout_ms)})" + behind_text(states, first.seq, origin.world)
        )
        if missing:
            summary += f"; {ranks_text(missing)} did not report the timeout"
    issued, issued_cites = issued_text(facts)
    summary += issued
    if timeout_ms and ran_ms and ran_ms > 3 * timeout_ms:
        summary += (
            f"; it ran {ran_ms / timeout_ms:.0f}x the timeout before the watchdog noticed, so "
            "the watchdog thread itself was starved (GIL held, CPU stalled)"
        )
    ckpt = [h.cite for h in facts.seen_prose(CHECKPOINT_WORDS)][:1]
    if ckpt:
        summary += (
            "; it coincides with a checkpoint save: the saving rank (usually rank 0) was most "
            "likely still writing (slow, full or failing storage) while the others waited"
        )
    crashed = bool(deaths(facts)) or (bool(missing) and not hang_cues(facts))
    busy = _busy(facts, timeout_ms)
    if busy is not None and not _named(origin):
        secs, bar = busy
        summary += (
            f"; a progress bar had run {secs // 60}:{secs % 60:02d} when the others timed out: "
            "a rank was at long work of its own (tokenisation, a dataset map, evaluation) while "
            "the others waited for it in this collective"
        )
        issued_cites = [*issued_cites, bar]
    at_first = first_collective_timeout(facts) is not None
    unconnected = at_first and not _named(origin) and busy is None
    if unconnected:
        summary += (
            f"; it is the group's first collective (SeqNum {first.seq}) and none has completed, "
            "so the ranks may never have connected: the transport between the GPUs (P2P) or "
            "the network is as likely as a rank still busy before it"
        )
    fix = [
        (
            "Find the rank that is not at this collective: its own log, py-spy dump --pid PID on "
            "each rank, or the flight recorder (TORCH_FR_BUFFER_SIZE=2000, before torch 2.11 "
            "TORCH_NCCL_TRACE_BUFFER_SIZE=2000; TORCH_NCCL_DUMP_ON_TIMEOUT=1)."
        ),
        (
            "Make every rank issue the same collectives: the same number of batches per rank "
            "(DistributedSampler, drop_last, or DDP's Join for uneven inputs), no collectives in "
            "rank-0-only code."
        ),
    ]
    if origin.world == 1:
        fix = [
            (
                "Find what the rank's own GPU stream was doing before the collective: a long or "
                "hung kernel, a huge copy, a kernel stuck after a GPU fault (dmesg -T | grep -i "
                "xid); py-spy dump --pid PID shows where the host code waits."
            ),
            (
                "Run the step with CUDA_LAUNCH_BLOCKING=1 or time it with torch.cuda.synchronize() "
                "around it: the kernel that takes longer than the timeout is the cause."
            ),
        ]
    if unconnected:
        fix.insert(
            0,
            "Rerun the first steps with NCCL_DEBUG=INFO and, on one node, NCCL_P2P_DISABLE=1: if "
            "it then runs, the GPU-to-GPU path is at fault (PCIe ACS, IOMMU); across nodes check "
            "the 'NET/' and 'Connected all rings' lines of each.",
        )
    if busy is not None and not _named(origin):
        fix.insert(
            0,
            "Do the long single-rank work (tokenisation, dataset map or caching) before the "
            "distributed job, or on every rank with a shared cache (the group's timeout, "
            "below, only buys it time).",
        )
    if ckpt:
        fix.insert(
            0,
            "Check the saving rank's storage: free space (df -h), write speed and kernel I/O "
            "errors (dmesg -T | grep -i -E 'I/O error|ext4|xfs'); save asynchronously or to "
            "local disk.",
        )
    fix.append(_TEARDOWN_FIX)
    return RULE.finding(
        summary=summary + ".",
        fix=fix,
        evidence=[
            *origin.cites(2),
            *(t.cite for t in group[:3]),
            *(s.cite for s in states[:2]),
            *issued_cites,
            *ckpt,
        ],
        ranks=reporters,
        # (a busy rank at the first collective: the likely reading, not a proof that the
        # others connected)
        confidence=Confidence.MEDIUM
        if crashed or unconnected or (busy is not None and at_first)
        else Confidence.HIGH,
    )


def _from_store_timeout(facts: Facts) -> Finding | None:
    sock = [d for d in facts.of(DistributedError) if d.category == "socket_timeout"]
    if not sock:
        return None
    elapsed = longest_elapsed(facts)
    if elapsed is None or elapsed[0] < 1200:
        return None
    secs, cite = elapsed
    summary = (
        f"A store-based barrier failed with Socket Timeout while one rank's progress bar had "
        f"run {secs // 60}:{secs % 60:02d} (the default process-group timeout is 30 min): the "
        "other ranks waited in a barrier (e.g. main_process_first) for that rank's long "
        "single-process work and timed out. The network is not at fault."
    )
    return RULE.finding(
        summary=summary,
        fix=[
            (
                "Run the long preprocessing (tokenisation, dataset map/caching) once before the "
                "distributed job, or on every rank with a shared cache."
            ),
            (
                "Or raise the process-group timeout (init_process_group(timeout=...), "
                "TrainingArguments(ddp_timeout=...)) above the preprocessing time."
            ),
        ],
        evidence=[sock[0].cite, cite],
        title="A store-based barrier timed out",
        confidence=Confidence.MEDIUM,
    )


def _from_monitor(facts: Facts) -> Finding | None:
    errs = [
        d
        for d in facts.of(DistributedError)
        if d.category in ("heartbeat_timeout", "watchdog_stuck")
    ]
    recv = facts.seen(GLOO_WAIT, prose=False)
    if not errs and not recv:
        return None
    cites = [*(d.cite for d in errs[:2]), *(h.cite for h in recv[:2])]
    ranks = [d.rank for d in errs if d.rank is not None]
    ranks += [h.rank for h in recv if h.rank is not None]
    waits = waiting_in(facts)
    origin = analyse(facts)
    if recv and waits:
        fns = ", ".join(f + "()" for f in sorted({fn for fn, _ in waits.values()}))
        if _named(origin):
            summary = f"Gloo's {fns} timed out ({recv[0].match.group(0)}); {origin.sentence()}"
        else:
            who = ranks_text(waits)
            their = "its" if len(waits) == 1 else "their"
            summary = (
                f"{who[0].upper()}{who[1:]} timed out waiting for {their} peers in {fns} "
                f"({recv[0].match.group(0)}): a peer never joined the collective in time"
            )
        cites += [c for _, c in waits.values()][:2]
    else:
        summary = "A rank stopped making progress: " + (
            errs[0].message[:160] if errs else recv[0].cite.text.strip()[:160]
        )
        if _named(origin):
            summary += "; " + origin.sentence()
    return RULE.finding(
        summary=summary + ".",
        fix=[
            "Dump the stacks of every rank (py-spy dump --pid PID) to see where each one is.",
            (
                "Look for a rank in different code (rank-0-only work, a dataloader stall, a "
                "collective only some ranks call)."
            ),
        ],
        evidence=[*origin.cites(2), *cites],
        ranks=ranks,
        title=None if recv else _STALLED,
        confidence=Confidence.MEDIUM,
    )


def _from_dump(facts: Facts) -> Finding | None:
    """A flight-recorder dump signal: another rank's watchdog saw a timeout."""
    found = dump_summary(facts)
    if found is None:
        return None
    summary, src, first, states = found
    return RULE.finding(
        summary=summary + ".",
        fix=[
            (
                f"Read the log of {src}: its 'Watchdog caught collective operation timeout' line "
                "names the collective (OpType, SeqNum) and the timeout."
            ),
            (
                "Analyse the flight-recorder dumps (TORCH_NCCL_DEBUG_INFO_TEMP_FILE) with "
                "'python -m torch.distributed.flight_recorder.fr_trace' to see which rank never "
                "joined which collective."
            ),
            _TEARDOWN_FIX,
        ],
        evidence=[first.cite, *(s.cite for s in states[:1])],
        ranks=[r for r in (first.peer_rank, first.rank) if r is not None],
        confidence=Confidence.MEDIUM,
    )


def _from_code(facts: Facts) -> Finding | None:
    hang = list(facts.seen_prose(HANG_WORDS))
    if hang:
        init = facts.lines_of(INIT_WORDS)
        hang = [h for h in hang if h.said not in init]
    if not hang:
        return None
    found = guarded_collective(facts)
    if found is None:
        return None
    said, nxt = found
    summary = (
        f"The job hangs and the code guards a collective by the rank "
        f"('{said.text.strip()[:80]}' then '{nxt.text.strip()[:80]}'): if the other "
        "ranks are elsewhere (or have exited), this rank waits in it forever."
    )
    return RULE.finding(
        summary=summary,
        fix=[
            (
                "Make every rank reach this collective (move it out of the rank "
                "check), or skip it when only one rank runs this code "
                "(e.g. rank-0 evaluation)."
            ),
            (
                "Run with TORCH_DISTRIBUTED_DEBUG=DETAIL and a timeout to get the "
                "mismatch reported instead of a silent hang."
            ),
        ],
        evidence=[said.cite, nxt.cite, hang[0].cite],
        severity=Severity.WARNING,
        title=_STALLED,
        confidence=Confidence.MEDIUM,
    )


def _from_wrapped(facts: Facts) -> Finding | None:
    """The watchdog's timeout message, wrapped or quoted so no parser took it whole."""
    caught = facts.seen(WATCHDOG_CAUGHT)
    if not caught:
        return None
    op = facts.seen(OP_TYPE)
    limit = facts.seen(TIMEOUT_MS)
    ran = facts.seen(RAN_FOR)
    numel = facts.seen(NUMEL_IN)
    what = op[0].match["op"] if op else "a collective"
    parts = [f"{what} timed out"]
    if ran:
        parts.append(f"after {ms_text(int(ran[0].match['ms']))}")
    if limit:
        parts.append(f"(timeout {ms_text(int(limit[0].match['ms']))})")
    summary = " ".join(parts)
    if numel and numel[0].match["numel"] == "1":
        summary += "; a one-element collective is a barrier-like sync, so one rank skipped a "
        summary += "barrier the others entered (a collective inside rank-0-only code)"
    return RULE.finding(
        summary=summary + ".",
        fix=[
            (
                "Find the rank that is not at this collective: code under `if rank == 0` / "
                "`is_global_zero` that calls a collective (checkpoint save, logging, barrier)"
            ),
            "Make every rank call the same collectives in the same order",
            _TEARDOWN_FIX,
        ],
        evidence=[caught[0].cite, *(h.cite for h in (op or ran)[:1])],
        ranks=[h.rank for h in caught if h.rank is not None],
        confidence=Confidence.HIGH if not all(h.prose for h in caught) else Confidence.MEDIUM,
    )


def _from_barrier(facts: Facts) -> Finding | None:
    """A monitored_barrier() the job called gave up: it names the rank(s) that never came."""
    miss = barrier_miss(facts)
    if miss is None:
        return None
    waited = f" after {ms_text(miss.waited_ms)}" if miss.waited_ms else ""
    if not miss.late:
        who = "a rank never reached it"
    elif miss.in_order:
        who = (
            f"{ranks_text(miss.late)}, the next it waited on in order, never reached it (ranks "
            "after it were not asked yet)"
        )
    else:
        who = f"{ranks_text(miss.late)} never reached it"
    late = ranks_text(miss.late) if miss.late else "the ranks that did not arrive"
    return RULE.finding(
        summary=(
            f"monitored_barrier() gave up{waited}: {who}. A rank that never reaches the barrier "
            "is stuck (in its own code, a data loader, I/O, a collective of another group), "
            "slow, or dead."
        ),
        fix=[
            (
                f"Look at {late}: its log for an error of its own, then its stack "
                "(py-spy dump --pid PID) to see where it is."
            ),
            (
                "Make every rank reach the barrier: the same code path and the same amount of "
                "work before it (no rank-0-only work longer than the barrier's timeout)."
            ),
        ],
        evidence=list(miss.cites),
        ranks=list(miss.late),
        title="A monitored barrier timed out",
        confidence=Confidence.HIGH if miss.late else Confidence.MEDIUM,
    )


def _from_stack(facts: Facts) -> Finding | None:
    """Only the watchdog's C++ stack survived the paste: its timeout check raised."""
    frames = facts.seen(CHECK_TIMEOUT_FRAME, prose=False)
    if not frames:
        return None
    return RULE.finding(
        summary="The NCCL watchdog's timeout check raised (WorkNCCL::checkTimeout in the "
        "stack): a collective ran past the process-group timeout; the lines naming the "
        "collective and its SeqNum are not in the evidence",
        fix=[
            (
                "Attach the full error of every rank (the 'Watchdog caught collective operation "
                "timeout: WorkNCCL(SeqNum=..., OpType=...)' line) to see which collective it was"
            ),
            (
                "Find the rank that is not at that collective: rank-0-only work (evaluation, "
                "plotting, checkpointing) that calls collectives, uneven batches per rank"
            ),
            _TEARDOWN_FIX,
        ],
        evidence=[h.cite for h in frames[:2]],
        ranks=[h.rank for h in frames if h.rank is not None],
        confidence=Confidence.MEDIUM,
    )


_STAGES = ("enqueued", "started", "completed")


def _from_flight(facts: Facts) -> Finding | None:
    """Flight-recorder dumps of several ranks: the rank whose collective sequence is behind."""
    for pg, ranks in flight_progress(facts).items():
        if len(ranks) < 2:
            continue
        behind = next(
            (
                (stage, low)
                for stage in range(len(_STAGES))
                if (low := min(row[stage] for row in ranks.values()))
                < max(row[stage] for row in ranks.values())
            ),
            None,
        )
        if behind is None:
            continue
        origin = analyse(facts)
        stage, low = behind
        late = sorted(r for r, row in ranks.items() if row[stage] == low)
        summary = (
            f"Flight-recorder dumps of {ranks_text(ranks)} (process group {pg}): "
            f"{ranks_text(late)} {'is' if len(late) == 1 else 'are'} behind, last "
            f"{_STAGES[stage]} collective {low or 'none'}"
        )
        if _named(origin):
            summary += "; " + origin.sentence()
        groups, _ = flight_state(facts)
        cites = [g.cite for g in groups if g.rank in late and g.pg_id == pg]
        return RULE.finding(
            summary=summary + ".",
            fix=[
                (
                    f"Look at what {ranks_text(late)} did instead: their stack "
                    "(py-spy dump --pid PID), their log, the code path before that "
                    "collective (rank-only work, uneven batches, a stall in I/O)."
                ),
                (
                    "Make every rank issue the same collectives in the same order "
                    "(DistributedSampler with drop_last, DDP's Join for uneven inputs)."
                ),
                _TEARDOWN_FIX,
            ],
            evidence=[*origin.cites(2), *cites[:2]],
            ranks=late,
            title=_STALLED if not facts.of(CollectiveTimeout) else None,
            confidence=Confidence.HIGH,
        )
    return None


def _from_capture(facts: Facts) -> Finding | None:
    """A pre-mortem capture (or stack dumps of several ranks) taken while the job hung.

    ``nccl-doctor run`` writes ``hang-<n>/`` only after a stall: stacks, flight
    recorder or RAS read from there show a job that stopped making progress.
    """
    found = verdict(positions([*facts.of(StackCapture), *facts.of(ThreadStack)]))
    numbers = [
        n
        for f in (*facts.of(StackCapture), *facts.of(FlightDump), *facts.of(RasReport))
        if (n := capture_of(f.cite.source)) is not None
    ]
    origin = analyse(facts)
    _, entries = flight_state(facts)
    pending = [
        e for e in entries if e.state in ("scheduled", "started") and capture_of(e.cite.source)
    ]
    ranked = [p for p in found.positions if p.rank is not None]
    stalled_stacks = found.hung and (bool(numbers) or (len(ranked) > 1 and bool(found.named)))
    # a recorder that names the origin (RAS's operation counts, a dump), in a capture taken
    # after a stall or beside the reporter's word that the job hangs (counts a query catches
    # one operation apart in a job that runs are no stall of their own)
    hung = bool(numbers) or bool(facts.told(HANG_WORDS))
    if not (stalled_stacks or pending or (hung and _named(origin))):
        return None
    last = max(numbers, default=0)
    caps = [c for c in facts.of(StackCapture) if (c.capture or 0) == last]
    stalled = max((c.stalled_s or 0 for c in caps), default=0)
    lead = "The job hangs"
    if last:
        lead += f" (nccl-doctor run's capture hang-{last}"
        lead += f", {stalled:.0f} s without progress)" if stalled else ")"
    summary = lead + ": " + (origin.sentence() if _named(origin) else found.summary)
    return RULE.finding(
        summary=summary + ".",
        fix=[
            (
                "Look at the origin's own code at the line its stack shows (rank-only work, I/O, "
                "a dataloader, a collective only some ranks call) or, if it is in a collective "
                "already, at the GPU work queued before it."
            ),
            (
                "Make every rank issue the same collectives in the same order; move long "
                "rank-local work out of the training loop or before the process group exists."
            ),
            (
                "The watchdog will end the job at the process-group timeout: end it now "
                "(nccl-doctor run --on-hang kill) once the origin is known."
            ),
        ],
        evidence=[*origin.cites(3), *found.cites[:2]],
        ranks=[x.rank for x in origin.of(ORIGIN)] or list(found.named),
        title=_STALLED if not facts.of(CollectiveTimeout) else None,
        confidence=Confidence.HIGH if _named(origin) else Confidence.MEDIUM,
    )


def _named(origin: Origin) -> bool:
    """Whether the evidence names a rank as the origin (or one as lagging)."""
    return any(x.role != "messenger" for x in origin.labels)


def check(facts: Facts) -> list[Finding]:
    """Watchdog timeouts, long store barriers, stalled ranks, rank-guarded collectives.

    The finding carries the ranks' roles (origin, lagging, messenger) and the
    collective where they diverge, where the evidence tells them. A rank its
    watchdog took down after the timeout is folded under the hang.
    """
    found = _check(facts)
    if not found:
        return []
    origin = analyse(facts)
    finding = replace(found[0], roles=origin.roles(), collective=origin.collective)
    if watchdog_aborts(facts) and "launch.rank_crash" not in finding.explains:
        finding = replace(finding, explains=(*finding.explains, "launch.rank_crash"))
    return [finding]


#: The default group's timeout when the timeout line gives none (10 min since torch 2.2).
_DEFAULT_MS = 600_000


def _unconnected(facts: Facts) -> bool:
    """Whether the only stall is at the default group's first collectives, none completed, with
    no rank shown elsewhere (no origin named, none missing from the timeouts, no checkpoint):
    the ranks may never have connected, and whether the transport, the network or a late rank
    is at fault is the differential's to rank, not this rule's to assert."""
    timeout = first_collective_timeout(facts)
    if timeout is None or _named(analyse(facts)):
        return False
    if _busy(facts, timeout.timeout_ms) is not None:
        return False
    return not missing_from_timeout(facts)[0] and not facts.seen_prose(CHECKPOINT_WORDS)


def _busy(facts: Facts, timeout_ms: int | None) -> tuple[int, Cite] | None:
    """A progress bar that ran for half the group's timeout or more (seconds, and its line): a
    rank was at its own work while the others waited."""
    busy = longest_elapsed(facts)
    if busy is not None and busy[0] * 2000 >= (timeout_ms or _DEFAULT_MS):
        return busy
    return None


def _check(facts: Facts) -> list[Finding]:
    if _unconnected(facts):
        return []
    steps = (
        _from_flight,
        _from_timeouts,
        _from_wrapped,
        _from_barrier,
        _from_store_timeout,
        _from_monitor,
        _from_dump,
        _from_capture,
        _from_code,
    )
    for step in (*steps, _from_stack):
        found = step(facts)
        if found is not None:
            return [found]
    return []
