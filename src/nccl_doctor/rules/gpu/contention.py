"""Other processes hold memory or compute on the GPUs the job uses.

What it means
-------------
The GPU process list (nvidia-smi, NVML) shows processes that are not the
job's on the GPUs its ranks use, or PyTorch's out-of-memory message names
another process (``Process 707 has 120.51 GiB memory in use``) beside "this
process". Users often notice it first as uneven memory use across the job's
GPUs.

Why it matters
--------------
A GPU shared with another training run or an inference server leaves the job
less memory than it planned for and competes for the SMs. NCCL allocates its
buffers and CUDA contexts at communicator creation, so the failure often
shows at the first collective (inside DDP's parameter check) as an
out-of-memory, "unhandled cuda error" or CUDA error 999 rather than as a
plain out-of-memory in the model.

Evidence
--------
Process rows of ``nvidia-smi`` / ``nvidia-smi -q`` / ``-q -x`` /
``--query-compute-apps`` on the job's GPUs whose PIDs are not the job's (with no PID
of the job known, the job is one program's run of PIDs within 512 of each other that
covers every listed GPU: a launcher starts its ranks one after another, and a rank's
stray context on another GPU is still the job); the PIDs named in a torch OOM
message, less the job's own (those its launcher signals, and their siblings: a PID
within 512 of one of them holding within a factor of two of what it holds, every
rank crowded onto GPU 0) and contexts under 512 MiB; the rank-to-GPU mapping from
NCCL's init lines or, on one node, local rank r on GPU r (also where only such a
launch on GPUs 0..n-1 shows it). Confidence is high only when the failing rank's GPU
is read from machine evidence and no other rank sat on a GPU at least as crowded
without failing; an assumed mapping, GPUs numbered from a process list's bus ids
alone, or a more crowded GPU that did not fail first makes it medium, and the
finding says which. With no process list, an OOM beside the reporter's words that a
process not the job's holds GPU memory ("a python process using about 11 GB on GPU
1", "a process whose user is not me") is the finding at medium confidence; words
that the listed processes are the job's own ("they are all mine") keep it silent.

Fix
---
Stop or move the other processes (``nvidia-smi`` shows their PIDs), or run on
free GPUs with ``CUDA_VISIBLE_DEVICES``; on a shared node, have the scheduler
allocate GPUs exclusively.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.failures import failures_of
from nccl_doctor.facts.gpu import CONTEXT_MIB, GPU_KINDS, Gpu, GpuProcess
from nccl_doctor.facts.job import RankGpu, job_pids, rank_gpus
from nccl_doctor.facts.run import CudaOutOfMemory
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.rules.base import Rule
from nccl_doctor.signs.gpu import FOREIGN_HOLDER, OOM_TEXT, OWN_HOLDERS, SMALL_BATCH

RULE = Rule(
    id="gpu.contention",
    title="Other processes are using the job's GPUs",
    severity=Severity.CRITICAL,
    explains=("gpu.oom", "launch.rank_crash", "app.hang"),
)

#: Memory a foreign process must hold to matter on its own (MiB).
_MATERIAL_MIB = 1024


def _name(proc: GpuProcess) -> str:
    name = proc.name or "?"
    return name.rsplit("/", 1)[-1] if "/" in name else name


def _with_siblings(
    mine: set[int], held: Iterable[tuple[int, float | None]], own_mib: float | None
) -> set[int]:
    """``mine`` with the processes (PID, MiB held) that are a known worker's sibling ranks:
    started by the same launcher (a PID within a launch's span of it) and holding about what
    it holds (the same program at the same step: within a factor of two). Ranks that all
    crowd onto GPU 0 when none selects its own GPU are the job's, not another user's; a
    process holding far more or far less is someone else's even with a PID close by (a
    container numbers every process low)."""
    if not own_mib:
        return mine
    return mine | {
        pid
        for pid, mib in held
        if mib
        and own_mib / 2 <= mib <= own_mib * 2
        and any(abs(pid - own) <= _LAUNCH_SPAN for own in mine)
    }


def _from_oom(facts: Facts) -> list[Finding]:
    findings = []
    known = job_pids(facts)
    for oom in facts.of(CudaOutOfMemory):
        mine = _with_siblings(known, oom.other_processes, oom.process_mib)
        others = [(pid, mib) for pid, mib in oom.other_processes if pid and pid not in mine]
        # (contexts alone, a sibling rank's stray ones on GPU 0 among them, are the job's own
        # out-of-memory: gpu.oom's)
        if not any(mib >= CONTEXT_MIB for _, mib in others):
            continue
        gpu = "?" if oom.gpu_index is None else str(oom.gpu_index)
        held = ", ".join(f"PID {pid} holds {mib / 1024:.1f} GiB" for pid, mib in others)
        rank = f"rank {oom.rank}" if oom.rank is not None else "the job"
        tried = f" asking for {oom.tried_mib / 1024:.1f} GiB" if oom.tried_mib else ""
        findings.append(
            RULE.finding(
                summary=f"{rank} ran out of memory on GPU {gpu}{tried} while {held} there",
                fix=[
                    f"Stop or move PID {others[0][0]} (`nvidia-smi` shows what it is)",
                    "Or run on free GPUs: set CUDA_VISIBLE_DEVICES to GPUs with no processes",
                    "On a shared node, have the scheduler allocate GPUs exclusively",
                ],
                evidence=[oom],
                ranks=[oom.rank] if oom.rank is not None else [],
                gpus=[gpu],
            )
        )
    return findings


def _indexed(facts: Facts, procs: tuple[GpuProcess, ...]) -> tuple[tuple[GpuProcess, ...], bool]:
    """Processes with their GPU index where only the bus id was given, and whether an index
    was read from the bus order alone.

    A GPU list that gives bus ids (a table, ``-q``, XML, a CSV query) names each GPU's index.
    Without one, the GPUs of a process list on one host are numbered in bus-id order, the
    order nvidia-smi and (for one GPU model) CUDA count them in: right when every GPU of the
    node holds a process, which the caller cannot know, so such an index is a guess.
    """
    by_bus: dict[str, int] = {}
    for tool in sorted({g.tool for g in facts.of(Gpu)}):
        cards = [g for g in facts.of(Gpu) if g.tool == tool]
        for position, gpu in enumerate(cards):
            if gpu.bus_id:
                by_bus.setdefault(gpu.bus_id, gpu.index if gpu.index is not None else position)
    guessed = False
    unplaced = {p.gpu_bus_id for p in procs if p.gpu_index is None and p.gpu_bus_id}
    if unplaced and not by_bus and len({p.host for p in procs}) == 1:
        by_bus = {bus: n for n, bus in enumerate(sorted(unplaced))}
        guessed = True
    placed = tuple(
        replace(p, gpu_index=by_bus[p.gpu_bus_id])
        if p.gpu_index is None and p.gpu_bus_id in by_bus
        else p
        for p in procs
    )
    return placed, guessed


#: How far apart the PIDs of one launch's ranks may lie: a launcher starts them one after
#: another, a few PIDs apart (threads and helpers of each take some between them).
_LAUNCH_SPAN = 512


def _launched_together(procs: tuple[GpuProcess, ...]) -> set[int]:
    """With no PID of the job known: as many processes of one program as there are listed
    GPUs, together on all of them, whose PIDs lie close together (a launcher starts its
    ranks one after another, within ``_LAUNCH_SPAN``), when the list holds more processes
    than GPUs or more rows than processes; else none.

    A rank that also made a context on another GPU (a stray ``cuda:0``) lists its PID twice
    and still counts once.
    """
    gpus_of: dict[int, set[int]] = defaultdict(set)
    program: dict[int, str] = {}
    for proc in procs:
        if proc.gpu_index is not None:
            gpus_of[proc.pid].add(proc.gpu_index)
            program[proc.pid] = _name(proc)
    gpus: set[int] = set().union(*gpus_of.values())
    pids = sorted(gpus_of)
    spread = any(len(held) > 1 for held in gpus_of.values())
    if len(gpus) < 2 or len(pids) < len(gpus) or (len(pids) == len(gpus) and not spread):
        return set()
    windows: list[list[int]] = [
        window
        for n in range(len(pids) - len(gpus) + 1)
        if (window := pids[n : n + len(gpus)])[-1] - window[0] <= _LAUNCH_SPAN
        and len({program[pid] for pid in window}) == 1
        and set().union(*(gpus_of[pid] for pid in window)) == gpus
    ]
    spans = sorted((w[-1] - w[0], n) for n, w in enumerate(windows))
    return set(windows[spans[0][1]]) if spans else set()


def _busy_node(facts: Facts, procs: tuple[GpuProcess, ...], mine: set[int]) -> list[Finding]:
    """No job in the evidence (a live check): say who already holds the GPUs."""
    busy = [p for p in procs if p.pid not in mine and p.gpu_index is not None]
    if not busy:
        return []
    live = facts.has("live-host")
    rows = ", ".join(
        f"GPU {p.gpu_index}: PID {p.pid} ({_name(p)})"
        + (f" {p.memory_used_mib} MiB" if p.memory_used_mib is not None else "")
        for p in busy[:6]
    )
    return [
        RULE.finding(
            summary=f"The GPUs are already in use: {rows}"
            + (" - a job started here now shares them" if live else ""),
            fix=[
                (
                    f"Check what PID {busy[0].pid} is (`ps -o user,etime,cmd -p {busy[0].pid}`) "
                    "and stop it, or start the job on other GPUs (CUDA_VISIBLE_DEVICES)"
                ),
                "On a shared node, have the scheduler allocate GPUs exclusively",
            ],
            evidence=list(busy[:6]),
            severity=Severity.WARNING if live else Severity.INFO,
            confidence=Confidence.HIGH,
            gpus=[str(g) for g in dict.fromkeys(p.gpu_index for p in busy)],
            cause=live,
        )
    ]


def _looks_like_the_job(procs: list[GpuProcess], job_gpus: set[int]) -> bool:
    """One python process on every GPU of the job, and nothing else: the job itself."""
    per_gpu: dict[int, list[GpuProcess]] = defaultdict(list)
    for proc in procs:
        per_gpu[proc.gpu_index or 0].append(proc)
    return set(per_gpu) == job_gpus and all(
        len(rows) == 1 and "python" in (rows[0].name or "").lower() for rows in per_gpu.values()
    )


def gpu_ranks_failing(failing: list[int], by_rank: dict[int, RankGpu]) -> set[int | None]:
    """The GPUs of the failing ranks."""
    return {by_rank[r].gpu_index for r in failing if r in by_rank}


def _held_elsewhere(facts: Facts) -> list[Finding]:
    """The OOM message's own numbers: capacity minus free minus this process is someone else."""
    for oom in facts.of(CudaOutOfMemory):
        total, free, mine = oom.total_mib, oom.free_mib, oom.process_mib
        if total is None or free is None or mine is None or oom.other_processes:
            continue
        others = total - free - mine
        if others < max(2048.0, 0.25 * total):
            continue
        gpu = "?" if oom.gpu_index is None else str(oom.gpu_index)
        return [
            RULE.finding(
                summary=f"GPU {gpu} has {total / 1024:.1f} GiB, {free / 1024:.1f} GiB free, and "
                f"this process holds only {mine / 1024:.1f} GiB: {others / 1024:.1f} GiB are "
                "held outside the job's process (another process, perhaps in another "
                "container, so the OOM message cannot name it)",
                fix=[
                    "Run `nvidia-smi` on the host (not in the container) to see who holds it",
                    "Stop or move that process, or run on a free GPU (CUDA_VISIBLE_DEVICES)",
                ],
                evidence=[oom],
                ranks=[oom.rank] if oom.rank is not None else [],
                gpus=[gpu],
                confidence=Confidence.MEDIUM,
            )
        ]
    return []


def _from_words(facts: Facts) -> list[Finding]:
    """With no process list to read, the reporter's words: an OOM beside a process not the
    job's said to hold memory on a GPU (the finding), else an OOM that persists at a small
    batch (ask for the list)."""
    if facts.of(GpuProcess) or facts.kinds & GPU_KINDS:
        return []
    ooms = facts.told(OOM_TEXT)
    held = facts.told(FOREIGN_HOLDER)
    if facts.told(OWN_HOLDERS):
        return []  # the other processes the message lists are the job's own ranks
    if not ooms or not held:
        return _suspected(facts)
    return [
        RULE.finding(
            summary="The job runs out of GPU memory while, in the reporter's words, a process "
            f"that is not the job's holds memory on its GPU ('{held[0].match.group(0)[:120]}'): "
            "the job gets what that process leaves",
            fix=[
                (
                    "Run `nvidia-smi` (or `--query-compute-apps=pid,process_name,used_memory "
                    "--format=csv`) before the job starts and find who owns that process"
                ),
                "Stop it, or move the job to free GPUs with CUDA_VISIBLE_DEVICES",
            ],
            evidence=[held[0].cite, ooms[0].cite],
            confidence=Confidence.MEDIUM,
        )
    ]


def _suspected(facts: Facts) -> list[Finding]:
    """An OOM that persists at a small batch, with no process list to check: ask for one."""
    ooms = list(facts.seen(OOM_TEXT))
    cue = facts.seen(SMALL_BATCH)
    if not ooms or not cue:
        return []
    return [
        RULE.finding(
            summary="The GPU runs out of memory even with a small batch, and no process list "
            "was given: memory held by another process is the first thing to rule out",
            fix=[
                "Run `nvidia-smi` while the job starts and look for other processes on its GPU",
                "Stop them or pick a free GPU with CUDA_VISIBLE_DEVICES",
            ],
            evidence=[ooms[0].cite, cue[0].cite],
            severity=Severity.WARNING,
            confidence=Confidence.LOW,
        )
    ]


def _held_mib(rows: list[GpuProcess]) -> int:
    return sum(p.memory_used_mib or 0 for p in rows)


def _confidence(
    per_gpu: dict[int, list[GpuProcess]],
    gpu_ranks: dict[int, list[int]],
    by_rank: dict[int, RankGpu],
    failing: list[int],
    failed_ranks: set[int],
) -> tuple[Confidence, list[str]]:
    """How far the evidence ties the foreign processes to the failure, and what weakens it.

    High only when the failing rank's GPU is known from machine evidence (NCCL's
    init line, the error's own device), not assumed, and no other rank sat on a
    GPU at least as crowded without failing. Without a failing rank on a shared
    GPU, the finding rests on the mapping alone.
    """
    hit_ranks = sorted({r for g in per_gpu for r in gpu_ranks[g]})
    if not failing:
        how = {by_rank[r].how for r in hit_ranks}
        return (Confidence.HIGH if how <= {"nccl", "error"} else Confidence.MEDIUM), []
    doubts = []
    assumed = sorted(r for r in failing if by_rank[r].how == "convention")
    if assumed:
        doubts.append(
            f"rank {', '.join(map(str, assumed))}'s GPU is assumed (no NCCL init line or error "
            "names it): the process list is not tied to the failing rank for certain"
        )
    failing_gpus = {by_rank[r].gpu_index for r in failing}
    least = min(_held_mib(per_gpu[g]) for g in failing_gpus if g in per_gpu)
    fine = [
        (g, rows)
        for g, rows in sorted(per_gpu.items())
        if g not in failing_gpus
        and _held_mib(rows) >= least
        and not set(gpu_ranks[g]) & failed_ranks
    ]
    for gpu, rows in fine[:2]:
        ranks = "/".join(str(r) for r in gpu_ranks[gpu])
        doubts.append(
            f"rank {ranks} on GPU {gpu} shared it with more ({_held_mib(rows)} MiB held by other "
            f"processes) and did not fail first: the crowding alone does not explain why rank "
            f"{failing[0]} failed"
        )
    return (Confidence.MEDIUM if doubts else Confidence.HIGH), doubts


def check(facts: Facts) -> list[Finding]:
    """Foreign processes on the job's GPUs, joined with the failing ranks."""
    findings = _from_oom(facts) or _held_elsewhere(facts) or _from_words(facts)
    procs = facts.of(GpuProcess)
    if not procs or findings:
        return findings
    procs, guessed = _indexed(facts, procs)
    launched = _launched_together(procs)
    known = job_pids(facts)
    own_mib = max((p.memory_used_mib or 0 for p in procs if p.pid in known), default=None)
    mine = _with_siblings(known, ((p.pid, p.memory_used_mib) for p in procs), own_mib) or launched
    by_rank = rank_gpus(facts)
    if not by_rank and not facts.ranks:
        return _busy_node(facts, procs, mine)
    if not by_rank and launched and len(facts.hosts) <= 1:
        # one launch holds GPUs 0..n-1, one process each: a launcher's local rank r runs on
        # GPU r (the convention rank_gpus assumes where it knows the world size)
        gpus = {p.gpu_index for p in procs if p.pid in launched}
        if gpus == set(range(len(gpus))):
            by_rank = {r: RankGpu(r, r, None, "convention", None) for r in facts.ranks if r in gpus}
    gpu_ranks: dict[int, list[int]] = defaultdict(list)
    for rank, where in sorted(by_rank.items()):
        if where.gpu_index is not None:
            gpu_ranks[where.gpu_index].append(rank)
    foreign = [p for p in procs if p.pid not in mine and p.gpu_index is not None]
    on_job = [p for p in foreign if p.gpu_index in gpu_ranks]
    if not gpu_ranks or not on_job:
        return findings
    if not mine and _looks_like_the_job(on_job, set(gpu_ranks)):
        return findings
    failed_ranks = {f.rank for f in failures_of(facts) if f.rank is not None}
    per_gpu: dict[int, list[GpuProcess]] = defaultdict(list)
    for proc in on_job:
        per_gpu[proc.gpu_index or 0].append(proc)
    parts = []
    for gpu, rows in sorted(per_gpu.items()):
        ranks = "/".join(str(r) for r in gpu_ranks[gpu])
        rows_text = ", ".join(
            f"PID {p.pid} ({_name(p)}) {p.memory_used_mib} MiB"
            if p.memory_used_mib is not None
            else f"PID {p.pid} ({_name(p)})"
            for p in rows
        )
        parts.append(f"GPU {gpu} (rank {ranks}): {rows_text}")
    hit_ranks = sorted({r for g in per_gpu for r in gpu_ranks[g]})
    failing = sorted(set(hit_ranks) & failed_ranks)
    material = any((p.memory_used_mib or 0) >= _MATERIAL_MIB for p in on_job)
    severity = Severity.CRITICAL if failing or material else Severity.WARNING
    how = {by_rank[r].how for r in hit_ranks}
    summary = "; ".join(parts)
    if failing:
        summary += f". Rank {', '.join(map(str, failing))} failed on a GPU it shared"
    if "convention" in how:
        summary += " (assuming rank r on GPU r: one node, no CUDA_VISIBLE_DEVICES)"
    outside = sorted(
        {p.gpu_index for p in foreign if p.gpu_index is not None and p.gpu_index not in gpu_ranks}
    )
    detail = [f"also busy, outside the job: GPU {', '.join(map(str, outside))}"] if outside else []
    confidence, doubts = _confidence(per_gpu, gpu_ranks, by_rank, failing, failed_ranks)
    if guessed:
        confidence = max(confidence, Confidence.MEDIUM, key=lambda c: c.rank)
        doubts.append(
            "the process list gives bus ids only: the GPUs are numbered in bus-id order, "
            "which holds when every GPU of the node lists a process"
        )
    detail += doubts
    first = max(
        on_job,
        key=lambda p: (p.gpu_index in gpu_ranks_failing(failing, by_rank), p.memory_used_mib or 0),
    )
    evidence: list[Cite | Fact] = list(on_job[:6])
    evidence += [c for r in hit_ranks if (c := by_rank[r].cite) is not None][:2]
    findings.append(
        RULE.finding(
            summary=summary,
            fix=[
                (
                    f"Stop or move the other processes (e.g. PID {first.pid}, {_name(first)}), "
                    "or ask their owners to"
                ),
                (
                    "Or run on free GPUs: set CUDA_VISIBLE_DEVICES to GPUs with no processes "
                    "(check `nvidia-smi` first)"
                ),
                "On a shared node, have the scheduler allocate GPUs exclusively",
            ],
            evidence=evidence,
            severity=severity,
            confidence=confidence,
            ranks=hit_ranks,
            gpus=[str(g) for g in sorted(per_gpu)],
            detail=detail,
        )
    )
    return findings
