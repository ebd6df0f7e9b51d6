"""Joins across kinds of evidence: which GPU each rank used, which PIDs are the job's.

A rank's GPU is read, most direct first, from NCCL's own init line
(``cudaDev 2 busId 41000``), from an error that names the device
(``GPU 2 has a total capacity``, ``cuda:2``), and, for a single-node job with
no ``CUDA_VISIBLE_DEVICES``, from the convention every launcher follows:
local rank ``r`` takes GPU ``r`` (``device_ids=[rank]``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.flight import FlightEntry, FlightGroup
from nccl_doctor.facts.gpu import Gpu
from nccl_doctor.facts.host import EnvVar
from nccl_doctor.facts.messages import torchrun_log_file
from nccl_doctor.facts.nccl import NcclCommInit, NcclLogFact, NcclTestCommand, NcclTestRank
from nccl_doctor.facts.ras import RasOpCount, RasRank
from nccl_doctor.facts.run import (
    ChildFailure,
    CollectiveTimeout,
    CudaOutOfMemory,
    DesyncReport,
    LauncherSignal,
    PgInitOptions,
    PythonTraceback,
    WatchdogState,
    WorkerExit,
    default_group,
)
from nccl_doctor.facts.software import SoftwareVersions
from nccl_doctor.facts.span import launched, nodes_by_variable
from nccl_doctor.facts.stacks import StackCapture
from nccl_doctor.facts.store import Facts
from nccl_doctor.signs.launch import DEEPSPEED_COMMAND, ELASTIC_LOGGER, SLURM_LINE, TORCHRUN_NAMED

_CUDA_DEV = re.compile(r"\bcuda:(\d{1,2})\b")


@dataclass(frozen=True, slots=True)
class RankGpu:
    """The GPU one rank used, and how that is known (``nccl``, ``error``, ``convention``)."""

    rank: int
    gpu_index: int | None
    bus_id: str | None
    how: str
    cite: Cite | None


@dataclass(frozen=True, slots=True)
class World:
    """The job's world size, the lines that state it and how it is known."""

    size: int | None
    cites: tuple[Cite, ...] = ()
    #: "process group" (the default one), "largest group", "nccl" (the largest communicator),
    #: "WORLD_SIZE", "launcher", "flight recorder", "stacks" or "NCCL RAS"
    how: str = ""


def world(facts: Facts) -> World:
    """The job's size, from the most direct statement (computed once per evidence).

    The default process group's own init line first, then the largest group
    or NCCL communicator (no group is larger than the world), then the
    ``WORLD_SIZE`` variable, then the launcher's ``--nproc-per-node`` times
    ``--nnodes`` (an elastic ``--nnodes 1:4`` says no size), then the largest
    group a flight-recorder dump, a pre-mortem's stacks, a desync report or NCCL RAS
    shows.
    """
    return facts.derived("world", _world)


def world_size(facts: Facts) -> int | None:
    """The job's world size where the evidence states or implies it (:func:`world`)."""
    return world(facts).size


def _world(facts: Facts) -> World:
    options = [o for o in facts.of(PgInitOptions) if o.size]
    default = [o for o in options if default_group(o.pg)]
    if default:
        best = max(default, key=lambda o: o.size or 0)
        return World(best.size, (best.cite,), "process group")
    stated: list[tuple[int, Cite, str]] = [(o.size or 0, o.cite, "largest group") for o in options]
    stated += [(i.nranks, i.cite, "nccl") for i in facts.of(NcclCommInit) if i.nranks]
    if stated:
        size, cite, how = max(stated, key=lambda s: s[0])
        return World(size, (cite,), how)
    for env in facts.of(EnvVar):
        if env.name == "WORLD_SIZE" and env.value and env.value.isdigit():
            return World(int(env.value), (env.cite,), "WORLD_SIZE")
    nproc = facts.search(r"--nproc[_-]per[_-]node[= ]+(\d+)")
    if nproc:
        nodes = launched(facts)
        if (nodes is not None and nodes.fixed is None) or nodes_by_variable(facts):
            return World(None)  # an elastic --nnodes MIN:MAX or --nnodes=$N states no size
        n = int(nproc[0].match.group(1))
        cites = [nproc[0].cite]
        if nodes is not None:
            n *= nodes.least
            cites.append(nodes.hit.cite)
        return World(n, tuple(cites), "launcher")
    seen: list[tuple[int, Cite, str]] = [
        (len(g.group_ranks), g.cite, "flight recorder")
        for g in facts.of(FlightGroup)
        if g.group_ranks
    ]
    seen += [(c.world_size, c.cite, "stacks") for c in facts.of(StackCapture) if c.world_size]
    # a desync report with no rank missing lists every rank of its group in its snapshot
    seen += [
        (len({r for *_, ranks in d.snapshot for r in ranks}), d.cite, "desync report")
        for d in facts.of(DesyncReport)
        if d.snapshot and not d.never_joined
    ]
    seen += [(r.comm_size, r.cite, "NCCL RAS") for r in facts.of(RasRank) if r.comm_size]
    seen += [(r.comm_size, r.cite, "NCCL RAS") for r in facts.of(RasOpCount) if r.comm_size]
    # nccl-tests lists every rank's GPU ("#  Rank  0 Group  0 Pid ... device  0 ..."), once
    if test_ranks := {(r.host, r.rank, r.device) for r in facts.of(NcclTestRank)}:
        seen.append((len(test_ranks), facts.of(NcclTestRank)[0].cite, "nccl-tests"))
    # ... unless the paste is cut: the launch says how many (processes x threads x GPUs each)
    seen += [(c.ranks, c.cite, "nccl-tests") for c in facts.of(NcclTestCommand) if c.ranks]
    if seen:
        size, cite, how = max(seen, key=lambda s: s[0])
        return World(size, (cite,), how)
    return World(None)


def _visible_devices(facts: Facts) -> str | None:
    for var in facts.of(EnvVar):
        if var.name == "CUDA_VISIBLE_DEVICES":
            return var.value or ""
    hits = facts.search(r"CUDA_VISIBLE_DEVICES\s*=\s*([\w,-]*)", prose=False)
    return hits[0].match.group(1) if hits else None


def rank_gpus(facts: Facts) -> dict[int, RankGpu]:
    """Each rank's GPU, from the most direct evidence available."""
    found: dict[int, RankGpu] = {}
    for init in facts.of(NcclCommInit):
        rank = init.comm_rank if init.comm_rank is not None else init.rank
        if rank is None or rank in found or (init.cuda_dev is None and init.bus_id is None):
            continue
        if len(facts.hosts) > 1 and init.host is None:
            continue
        found[rank] = RankGpu(rank, init.nvml_dev or init.cuda_dev, init.bus_id, "nccl", init.cite)
    for oom in facts.of(CudaOutOfMemory):
        if oom.rank is not None and oom.rank not in found and oom.gpu_index is not None:
            found[oom.rank] = RankGpu(oom.rank, oom.gpu_index, None, "error", oom.cite)
    for tb in facts.of(PythonTraceback):
        match = _CUDA_DEV.search(tb.message)
        if tb.rank is not None and tb.rank not in found and match:
            found[tb.rank] = RankGpu(tb.rank, int(match.group(1)), None, "error", tb.cite)
    size = world_size(facts)
    single_host = len(facts.hosts) <= 1
    if size and single_host and not _visible_devices(facts):
        for rank in range(size):
            found.setdefault(rank, RankGpu(rank, rank, None, "convention", None))
    return found


def gpu_models(facts: Facts) -> list[str]:
    """The GPU model names the evidence gives: NVML's/nvidia-smi's GPUs, then collect_env's."""
    names = [g.name for g in facts.of(Gpu) if g.name]
    for versions in facts.of(SoftwareVersions):
        names += [name for _, name in versions.gpu_models or ()]
    return names


def job_pids(facts: Facts) -> set[int]:
    """PIDs the evidence shows belong to the job (log prefixes, launcher reports, the workers
    its launcher signals, the processes ``nccl-doctor run`` captured stacks of)."""
    own = NcclLogFact | ChildFailure | WorkerExit | StackCapture
    return {
        fact.pid
        for fact in facts.all
        if isinstance(fact, own | LauncherSignal)
        and fact.pid
        # (a signal the launcher received names the receiver, not a worker)
        and not (isinstance(fact, LauncherSignal) and fact.action == "received")
    }


def first_of(facts: Facts, classes: tuple[type[Fact], ...]) -> Fact | None:
    """The first fact of any of ``classes``, in reading order."""
    return next((f for f in facts.all if isinstance(f, classes)), None)


#: The default group's first collectives: a timeout there means none ever completed on it.
FIRST_SEQS = 2


def first_collective_timeout(facts: Facts) -> CollectiveTimeout | None:
    """The timeout, when every watchdog timeout is at the default group's first collectives
    (``SeqNum`` 1 or 2) and no rank's watchdog counted a completed one.

    Nothing has then crossed the communicator yet: the ranks may never have connected
    (the GPU-to-GPU transport, the network), or one rank has not arrived (still busy
    before its first collective). A subgroup's numbering starts again at 1 mid-training,
    so only the default group counts.
    """
    timeouts = facts.of(CollectiveTimeout)
    if not timeouts or any(t.seq is None or t.seq > FIRST_SEQS for t in timeouts):
        return None
    if not all(default_group(t.pg) for t in timeouts):
        return None
    if any((w.last_completed or 0) > 0 for w in facts.of(WatchdogState)):
        return None
    return timeouts[0]


def collectives_completed(facts: Facts) -> Cite | None:
    """Where the evidence shows a collective of the job completed before it stalled: a flight
    recorder's completed entry, the watchdog's last completed work, or a timeout of the default
    group past its first collectives (the watchdog checks the oldest pending work first, so the
    ones before it completed).

    Its ranks then found each other (the store, NCCL's bootstrap) and built their communicator:
    what stalls later is not how they meet. (NCCL still connects a pair of ranks lazily at
    their first exchange, so a new peer or transport can fail later all the same.)
    """
    done = next((e for e in facts.of(FlightEntry) if e.state == "completed"), None)
    if done is not None:
        return done.cite
    state = next((w for w in facts.of(WatchdogState) if (w.last_completed or 0) > 0), None)
    if state is not None:
        return state.cite
    late = next(
        (
            t
            for t in facts.of(CollectiveTimeout)
            if t.seq is not None and t.seq > FIRST_SEQS and default_group(t.pg)
        ),
        None,
    )
    return late.cite if late is not None else None


def launcher_of(facts: Facts) -> str | None:
    """What started the ranks: ``deepspeed``, ``mp.spawn``, ``torchrun``, ``srun`` or ``None``.

    From the launcher's own lines (its exit reports and summaries), the
    spawn frames of the ranks' tracebacks, torchrun's ``--log-dir`` layout,
    then the command lines the evidence prints.
    """
    sources = {w.source for w in facts.of(WorkerExit)}
    if "deepspeed" in sources:
        return "deepspeed"
    if "spawn" in sources or any(
        (path or "").endswith("torch/multiprocessing/spawn.py")
        for tb in facts.of(PythonTraceback)
        for path, _, _ in tb.frames
    ):
        return "mp.spawn"
    if "elastic" in sources or facts.of(ChildFailure):
        return "torchrun"
    if any(torchrun_log_file(source) for source in {f.cite.source for f in facts.all}):
        return "torchrun"
    if facts.saw(ELASTIC_LOGGER, prose=False):
        return "torchrun"
    if facts.saw(SLURM_LINE, prose=False):
        return "srun"
    if facts.saw(TORCHRUN_NAMED, prose=False):
        return "torchrun"
    if facts.saw(DEEPSPEED_COMMAND, prose=False):
        return "deepspeed"
    return None
