"""A collective timed out: some rank is stuck, slow, or took another code path.

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
one rank's preprocessing, heartbeat-monitor aborts.

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

import re
from collections import Counter
from dataclasses import replace

from nccl_doctor.facts.flight import FlightEntry, FlightGroup
from nccl_doctor.facts.job import world_size
from nccl_doctor.facts.run import ChildFailure, CollectiveTimeout, DistributedError, WatchdogState
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.rules.app._common import (
    behind_text,
    dump_summary,
    guarded_collective,
    longest_elapsed,
    ms_text,
)
from nccl_doctor.rules.base import Rule
from nccl_doctor.rules.launch._common import (
    HANG_WORDS,
    deaths,
    hang_cues,
    missing_from_timeout,
    timed_out_ranks,
    waiting_in,
    watchdog_aborts,
)

RULE = Rule(
    id="app.hang",
    title="A collective timed out",
    severity=Severity.CRITICAL,
)

_WRAPPED = re.compile(r"(?:Timeout\(ms\)|ut\(ms\)|\(ms\))=(\d+)\)? ran for (\d+) milliseconds")
_CHECKPOINT = r"checkpoint\w*|saving|save_\w+|storing|torch\.save"
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
    wrapped = facts.search(_WRAPPED)
    if timeout_ms is None and wrapped:
        timeout_ms = int(wrapped[0].match.group(1))
        ran_ms = ran_ms or int(wrapped[0].match.group(2))
    reporters = sorted(timed_out_ranks(facts))
    states = [s for s in facts.of(WatchdogState) if s.work_seq in (None, first.seq)]
    op = first.op_type or "a collective"
    seq = f" SeqNum={first.seq}" if first.seq is not None else ""
    numel = f", NumelOut={first.numel_out}" if first.numel_out else ""
    who = f"rank(s) {', '.join(map(str, reporters))}" if reporters else "the reporting rank"
    summary = (
        f"{op}{seq}{numel} timed out on {who} after {ms_text(ran_ms)} "
        f"(timeout {ms_text(timeout_ms)})" + behind_text(states, first.seq, world_size(facts))
    )
    missing, _ = missing_from_timeout(facts)
    if missing:
        summary += f"; rank(s) {', '.join(map(str, missing))} did not report the timeout"
    if timeout_ms and ran_ms and ran_ms > 3 * timeout_ms:
        summary += (
            f"; it ran {ran_ms / timeout_ms:.0f}x the timeout before the watchdog noticed, so "
            "the watchdog thread itself was starved (GIL held, CPU stalled)"
        )
    ckpt = [h.cite for h in facts.search(_CHECKPOINT) if h.prose][:1]
    if ckpt:
        summary += (
            "; it coincides with a checkpoint save: the saving rank (usually rank 0) was most "
            "likely still writing (slow, full or failing storage) while the others waited"
        )
    crashed = bool(deaths(facts)) or (bool(missing) and not hang_cues(facts))
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
    if world_size(facts) == 1:
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
        evidence=[*(t.cite for t in group[:3]), *(s.cite for s in states[:2]), *ckpt],
        ranks=reporters,
        confidence=Confidence.MEDIUM if crashed else Confidence.HIGH,
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
        confidence=Confidence.MEDIUM,
    )


def _from_monitor(facts: Facts) -> Finding | None:
    errs = [
        d
        for d in facts.of(DistributedError)
        if d.category in ("heartbeat_timeout", "watchdog_stuck")
    ]
    recv = facts.search(r"Timed out waiting \d+ms for (?:recv|send) operation", prose=False)
    if not errs and not recv:
        return None
    cites = [*(d.cite for d in errs[:2]), *(h.cite for h in recv[:2])]
    ranks = [d.rank for d in errs if d.rank is not None]
    ranks += [h.rank for h in recv if h.rank is not None]
    waits = waiting_in(facts)
    if recv and waits:
        parts = ", ".join(f"rank {r} in {fn}()" for r, (fn, _) in sorted(waits.items()))
        summary = (
            f"{parts[0].upper()}{parts[1:]} timed out waiting for its peers "
            f"({recv[0].match.group(0)}): a peer never joined the collective in time"
        )
        cites += [c for _, c in waits.values()][:2]
        quiet = _quiet_ranks(facts, set(ranks) | set(waits))
        if quiet:
            names = ", ".join(str(c.rank) for c in quiet)
            summary += (
                f"; rank {names} reported no error before the launcher stopped it, so it is "
                "the rank that was behind (stuck or slow)"
            )
            cites += [c.cite for c in quiet[:2]]
    else:
        summary = "A rank stopped making progress: " + (
            errs[0].message[:160] if errs else recv[0].cite.text.strip()[:160]
        )
    return RULE.finding(
        summary=summary + ".",
        fix=[
            "Dump the stacks of every rank (py-spy dump --pid PID) to see where each one is.",
            (
                "Look for a rank in different code (rank-0-only work, a dataloader stall, a "
                "collective only some ranks call)."
            ),
        ],
        evidence=cites,
        ranks=ranks,
        confidence=Confidence.MEDIUM,
    )


def _quiet_ranks(facts: Facts, reporting: set[int]) -> list[ChildFailure]:
    """Ranks the launcher had to stop (SIGTERM) that printed no error of their own."""
    stopped = [
        c
        for c in facts.of(ChildFailure)
        if c.rank is not None and c.signal_name in ("SIGTERM", "SIGINT") and c.rank not in reporting
    ]
    return sorted({c.rank: c for c in stopped}.values(), key=lambda c: c.rank or 0)


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
    hang = [
        h
        for h in facts.search(HANG_WORDS)
        if h.prose
        and not re.search(r"initiali|init_process|rendezvous", h.cite.text, re.IGNORECASE)
    ]
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
        confidence=Confidence.MEDIUM,
    )


def _from_wrapped(facts: Facts) -> Finding | None:
    """The watchdog's timeout message, wrapped or quoted so no parser took it whole."""
    caught = facts.search(r"(?:Watchdog caught|Caught) collective operation timeout")
    if not caught:
        return None
    op = facts.search(r"OpType=(\w+)")
    limit = facts.search(r"Timeout\(ms\)=(\d+)")
    ran = facts.search(r"ran for (\d+) milliseconds before timing out")
    numel = facts.search(r"NumelIn=(\d+)")
    what = op[0].match.group(1) if op else "a collective"
    parts = [f"{what} timed out"]
    if ran:
        parts.append(f"after {ms_text(int(ran[0].match.group(1)))}")
    if limit:
        parts.append(f"(timeout {ms_text(int(limit[0].match.group(1)))})")
    summary = " ".join(parts)
    if numel and numel[0].match.group(1) == "1":
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


def _from_stack(facts: Facts) -> Finding | None:
    """Only the watchdog's C++ stack survived the paste: its timeout check raised."""
    frames = facts.search(r"WorkNCCL::checkTimeout\b", prose=False)
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


def _flight_progress(facts: Facts) -> dict[str, dict[int, list[int]]]:
    """Per process group and rank: the last enqueued, started and completed collective."""
    out: dict[str, dict[int, list[int]]] = {}
    for group in facts.of(FlightGroup):
        if group.rank is not None:
            row = out.setdefault(group.pg_id, {}).setdefault(group.rank, [0, 0, 0])
            got = (group.last_enqueued, group.last_started, group.last_completed)
            row[:] = [max(r, g or 0) for r, g in zip(row, got, strict=True)]
    for entry in facts.of(FlightEntry):
        if entry.rank is None or entry.seq is None or entry.is_p2p or entry.pg_id is None:
            continue
        row = out.setdefault(entry.pg_id, {}).setdefault(entry.rank, [0, 0, 0])
        reached = {"scheduled": 1, "started": 2, "completed": 3}.get(entry.state or "", 1)
        for stage in range(reached):
            row[stage] = max(row[stage], entry.seq)
    return out


def _from_flight(facts: Facts) -> Finding | None:
    """Flight-recorder dumps of several ranks: the rank whose collective sequence is behind."""
    for pg, ranks in _flight_progress(facts).items():
        if len(ranks) < 2:
            continue
        for stage, word in enumerate(_STAGES):
            done = {rank: row[stage] for rank, row in ranks.items()}
            low, high = min(done.values()), max(done.values())
            if low == high:
                continue
            behind = sorted(r for r, v in done.items() if v == low)
            ahead = sorted(r for r, v in done.items() if v > low)
            missed = next(
                (
                    e
                    for e in facts.of(FlightEntry)
                    if e.rank in ahead and e.pg_id == pg and e.seq == low + 1 and not e.is_p2p
                ),
                None,
            )
            what = f"{missed.op} seq {low + 1}" if missed else f"collective seq {low + 1}"
            who = ", ".join(map(str, behind))
            others = ", ".join(map(str, ahead))
            summary = (
                f"Flight-recorder dumps of ranks {', '.join(map(str, sorted(ranks)))}: rank(s) "
                f"{who} are behind in process group {pg}: last {word} collective {low or 'none'}, "
                f"while rank(s) {others} reached {high}; rank(s) {who} never {word} {what}"
            )
            if missed is not None:
                sizes = [list(x) for x in missed.input_sizes]
                summary += (
                    f" (rank {missed.rank}'s entry: {missed.state}, in {sizes} "
                    f"{','.join(missed.input_dtypes)}, timeout {ms_text(missed.timeout_ms)})"
                )
            cites = [g.cite for g in facts.of(FlightGroup) if g.rank in behind and g.pg_id == pg]
            return RULE.finding(
                summary=summary + ".",
                fix=[
                    (
                        f"Look at what rank(s) {who} did instead of {what}: their stack "
                        "(py-spy dump --pid PID), their log, the code path before that "
                        "collective (rank-only work, uneven batches, a stall in I/O)."
                    ),
                    (
                        "Make every rank issue the same collectives in the same order "
                        "(DistributedSampler with drop_last, DDP's Join for uneven inputs)."
                    ),
                    _TEARDOWN_FIX,
                ],
                evidence=[*cites[:2], *([missed.cite] if missed else [])],
                ranks=behind,
                confidence=Confidence.HIGH,
            )
    return None


def check(facts: Facts) -> list[Finding]:
    """Watchdog timeouts, long store barriers, stalled ranks, rank-guarded collectives.

    A rank its watchdog took down after the timeout is folded under the hang.
    """
    found = _check(facts)
    if found and watchdog_aborts(facts) and "launch.rank_crash" not in found[0].explains:
        found = [replace(found[0], explains=(*found[0].explains, "launch.rank_crash"))]
    return found


def _check(facts: Facts) -> list[Finding]:
    steps = (
        _from_flight,
        _from_timeouts,
        _from_wrapped,
        _from_store_timeout,
        _from_monitor,
        _from_dump,
        _from_code,
    )
    for step in (*steps, _from_stack):
        found = step(facts)
        if found is not None:
            return [found]
    return []
