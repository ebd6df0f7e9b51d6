"""Host limits ran out: file descriptors, shared memory, disk, host RAM, processes.

What it means
-------------
The job hit a limit of the machine (or of its container/cgroup) rather than
of the GPU: too many open files (``ulimit -n``; DataLoader workers pass
every batch as a file descriptor), a small ``/dev/shm`` (Docker's default is
64 MB), a full disk, host RAM exhausted until the kernel's OOM killer sent
SIGKILL, or the process/thread limit.

Why it matters
--------------
The failing rank dies or stalls; the others then fail with timeouts or
connection errors that look like a network or NCCL problem.

Evidence
--------
``Too many open files`` (EMFILE, errno 24), ``received 0 items of
ancdata``, ``unable to open shared memory object``, ``Unexpected bus error
encountered in worker ... insufficient shared memory (shm)``, ``No space
left on device`` (errno 28), torch.save's ``PytorchStreamWriter failed writing
file ...: file write failed``, a health check's ``check_fs_free: ... has only 0%
free``, ``Cannot allocate memory`` (errno 12),
``DefaultCPUAllocator: can't allocate memory``, the kernel's ``Out of
memory: Killed process``, Ray's memory monitor (``Task was killed due to the node
running low on memory``), ``can't start new thread`` / ``Resource
temporarily unavailable`` from fork.

Fix
---
Raise the limit or use less: ``ulimit -n 65536`` or
``torch.multiprocessing.set_sharing_strategy('file_system')``; run the
container with ``--ipc=host`` or ``--shm-size=16g`` (a new container:
changing an existing one does not apply); free disk; fewer DataLoader
workers, smaller prefetch, checkpoints loaded with ``mmap``/one rank at a
time, or more RAM.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from nccl_doctor.facts.run import CollectiveTimeout
from nccl_doctor.facts.signs import Sign
from nccl_doctor.facts.store import Facts, Hit, Said
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.rules.base import Rule
from nccl_doctor.signs.common import CARRIES_ON
from nccl_doctor.signs.host import (
    ANCDATA,
    CHECKPOINT_SAVE,
    CUDA_OOM,
    CUDA_WORD,
    DISK_FULL,
    FD_LIMIT,
    LOADER_SHM,
    MEMORY_WORDS,
    NCCL_OWN,
    NO_HOST_MEMORY,
    OOM_KILLER,
    PID_LIMIT,
    RAY_MEMORY_MONITOR,
    SHM_EXHAUSTED,
    SIGKILL,
    STORE_ACCEPT_FAILED,
)

RULE = Rule(
    id="host.resources",
    title="A host resource limit was exhausted",
    severity=Severity.CRITICAL,
    explains=("launch.rank_crash", "app.hang", "net.unreachable"),
)


@dataclass(frozen=True, slots=True)
class _Limit:
    name: str
    sign: Sign
    what: str
    fix: tuple[str, ...]


_LIMITS = (
    _Limit(
        "oom_killer",
        OOM_KILLER,
        "the kernel's OOM killer killed a process: host RAM (or the cgroup limit) ran out",
        (
            "Give the job more host RAM (or a higher container/cgroup memory limit).",
            (
                "Use less: load checkpoints with mmap=True / map_location='cpu' on one rank at a "
                "time, fewer DataLoader workers, smaller prefetch_factor."
            ),
        ),
    ),
    _Limit(
        "ray_oom",
        RAY_MEMORY_MONITOR,
        "Ray's memory monitor killed a worker: the node's host RAM passed its kill threshold",
        (
            (
                "Use less host memory on the node: offload less (FSDP/DeepSpeed CPU offload of "
                "parameters and optimizer states), fewer or smaller workers and actors, "
                "checkpoints loaded with mmap."
            ),
            (
                "Or give the node more RAM; raising RAY_memory_usage_threshold only hands the "
                "kill to the kernel's OOM killer."
            ),
        ),
    ),
    _Limit(
        "shm",
        SHM_EXHAUSTED,
        "shared memory (/dev/shm) or the shared-memory file handles of DataLoader workers ran out",
        (
            "Check the space inside the running container: df -h /dev/shm.",
            (
                "Start a new container with --ipc=host or --shm-size=16g (adding it to an existing "
                "container does not take effect); on Kubernetes mount an emptyDir with "
                "medium: Memory at /dev/shm."
            ),
            (
                "Or use fewer DataLoader workers (num_workers), or "
                "torch.multiprocessing.set_sharing_strategy('file_system'), and raise ulimit -n."
            ),
        ),
    ),
    _Limit(
        "fds",
        FD_LIMIT,
        "the open-file limit (ulimit -n) was reached",
        (
            (
                "Raise the limit for the job: ulimit -n 65536 (or LimitNOFILE in the service / "
                "--ulimit nofile=65536:65536 for docker)."
            ),
            (
                "Or call torch.multiprocessing.set_sharing_strategy('file_system') and use fewer "
                "DataLoader workers."
            ),
        ),
    ),
    _Limit(
        "disk",
        DISK_FULL,
        "the disk (or quota) is full",
        (
            "Free space where the job writes (df -h on the checkpoint/output/cache paths).",
            "Point checkpoints and caches (HF_HOME, TMPDIR) at a volume with room.",
        ),
    ),
    _Limit(
        "ram",
        NO_HOST_MEMORY,
        "host memory could not be allocated",
        (
            (
                "Check free RAM and limits during the run (free -g, ulimit -v, the container's "
                "memory limit)."
            ),
            (
                "Use less host memory per rank (fewer workers, mmap'd checkpoints) or more RAM; "
                "for fork failures with plenty of RAM, check vm.overcommit_memory."
            ),
        ),
    ),
    _Limit(
        "pids",
        PID_LIMIT,
        "the process/thread limit (ulimit -u, pids cgroup) was reached",
        (
            (
                "Raise ulimit -u / the container's --pids-limit, or start fewer threads "
                "(OMP_NUM_THREADS, DataLoader workers)."
            ),
        ),
    ),
)


def _finding(limit: _Limit, hits: list[Hit]) -> Finding:
    machine = [h for h in hits if not h.prose]
    shown = (machine or hits)[:3]
    ranks = [h.rank for h in shown if h.rank is not None]
    text = shown[0].cite.text.strip()[:200].rstrip(".")
    summary = f"{limit.what[0].upper()}{limit.what[1:]}: {text}."
    return RULE.finding(
        summary=summary,
        fix=list(limit.fix),
        evidence=[h.cite for h in shown],
        ranks=ranks,
        confidence=Confidence.HIGH if machine else Confidence.MEDIUM,
    )


def _killed_with_memory_cue(facts: Facts) -> Finding | None:
    kills = facts.seen(SIGKILL)
    words = facts.seen(MEMORY_WORDS) if kills else ()
    if not words or facts.saw(CUDA_OOM):
        return None
    cuda = facts.lines_of(CUDA_WORD)  # "CUDA ... out of memory" is the GPU's
    cues = [h for h in words if h.said not in cuda]
    if not cues:
        return None
    return RULE.finding(
        summary=(
            "A rank was killed with SIGKILL (-9) and the evidence points at host memory: "
            f"'{cues[0].cite.text.strip()[:120]}' - the kernel's OOM killer is the usual sender."
        ),
        fix=[
            "Confirm with the kernel log: dmesg -T | grep -i -E 'killed process|out of memory'.",
            _LIMITS[0].fix[0],
            _LIMITS[0].fix[1],
        ],
        evidence=[kills[0].cite, cues[0].cite],
        confidence=Confidence.MEDIUM if not cues[0].prose else Confidence.LOW,
    )


def _checkpoint_stall(facts: Facts) -> Finding | None:
    timeouts = facts.of(CollectiveTimeout)
    if not timeouts:
        return None
    cues = [h for h in facts.seen(CHECKPOINT_SAVE) if h.prose]
    if not cues:
        return None
    return RULE.finding(
        summary=(
            "The collective timeout coincided with a checkpoint save (reporter: "
            f"'{cues[0].cite.text.strip()[:120]}'): the saving rank's storage may be slow, "
            "full or failing, stalling it past the timeout."
        ),
        fix=[
            (
                "On the saving host check free space (df -h), write speed and disk errors "
                "(dmesg -T | grep -i -E 'I/O error|blk_update_request|ext4|xfs'; smartctl -a)."
            ),
            "Save to a healthy local disk or asynchronously, then copy.",
        ],
        evidence=[timeouts[0].cite, cues[0].cite],
        severity=Severity.WARNING,
        confidence=Confidence.LOW,
    )


def check(facts: Facts) -> list[Finding]:
    """The first exhausted host limit the evidence names."""
    nccl: frozenset[Said] | None = None
    for limit in _LIMITS:
        shown = facts.told(limit.sign)
        if not shown:
            continue
        if nccl is None:
            # NCCL's own lines and verbs calls (``ibv_reg_mr ... Cannot allocate memory``: a
            # registration limit, memlock or the CMA pool, which net.ib_config reads) are
            # not the host's limits; nor is a warning its program goes on after
            nccl = facts.lines_of(NCCL_OWN) | facts.lines_of(CARRIES_ON)
        # (a person's sentence that says the limit is no longer reached holds no hit)
        loader = facts.lines_of(LOADER_SHM) | facts.lines_of(ANCDATA)
        hits = [h for h in shown if h.said not in nccl or h.said in loader]
        if hits:
            limited = _finding(limit, hits)
            # the store's server out of file descriptors turns ranks away: the rendezvous
            # that times out waiting for them follows from it
            if facts.seen_on(STORE_ACCEPT_FAILED, [h.cite for h in hits]):
                limited = replace(limited, explains=(*limited.explains, "launch.rendezvous"))
            return [limited]
    for step in (_killed_with_memory_cue, _checkpoint_stall):
        found = step(facts)
        if found is not None:
            return [found]
    return []
