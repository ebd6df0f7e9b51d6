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
left on device`` (errno 28), ``Cannot allocate memory`` (errno 12),
``DefaultCPUAllocator: can't allocate memory``, the kernel's ``Out of
memory: Killed process``, ``can't start new thread`` / ``Resource
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

from dataclasses import dataclass

from nccl_doctor.facts.run import CollectiveTimeout
from nccl_doctor.facts.store import Facts, Hit
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.rules.base import Rule

RULE = Rule(
    id="host.resources",
    title="A host resource limit was exhausted",
    severity=Severity.CRITICAL,
    explains=("launch.rank_crash", "app.hang", "net.unreachable"),
)


@dataclass(frozen=True, slots=True)
class _Limit:
    name: str
    pattern: str
    what: str
    fix: tuple[str, ...]


_LIMITS = (
    _Limit(
        "oom_killer",
        r"Out of memory: Kill(?:ed)? process|invoked oom-killer|oom-kill:"
        r"|Memory cgroup out of memory"
        r"|oom_reaper",
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
        "shm",
        r"unable to open shared memory object|insufficient shared memory \(shm\)"
        r"|Unexpected bus error encountered in worker|unable to write to file </torch_"
        r"|/dev/shm\b.*No space left",
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
        r"Too many open files|\[Errno 24\]|\bEMFILE\b|received 0 items of ancdata",
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
        r"No space left on device|\[Errno 28\]|\bENOSPC\b|Disk quota exceeded|\[Errno 122\]",
        "the disk (or quota) is full",
        (
            "Free space where the job writes (df -h on the checkpoint/output/cache paths).",
            "Point checkpoints and caches (HF_HOME, TMPDIR) at a volume with room.",
        ),
    ),
    _Limit(
        "ram",
        r"Cannot allocate memory|\[Errno 12\]|\bENOMEM\b|DefaultCPUAllocator: (?:can't|not enough)"
        r"|std::bad_alloc|\bMemoryError\b",
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
        r"can't start new thread|pthread_create failed|fork: (?:retry: )?Resource temporarily "
        r"unavailable|BlockingIOError: \[Errno 11\]",
        "the process/thread limit (ulimit -u, pids cgroup) was reached",
        (
            (
                "Raise ulimit -u / the container's --pids-limit, or start fewer threads "
                "(OMP_NUM_THREADS, DataLoader workers)."
            ),
        ),
    ),
)

_SIGKILL = r"exit ?code\s*[:=]?\s*-9\b|return code\s*=\s*-9\b|Signal 9 \(SIGKILL\)|\bSIGKILL\b"
_MEMORY_WORDS = (
    r"\b(?:out of (?:host |system |cpu )?memory|RAM|host memory|system memory|OOM)\b|内存"
)


def _nccl_line(hit: Hit) -> bool:
    """NCCL's own lines and verbs calls (``ibv_reg_mr ... Cannot allocate memory``: a
    registration limit, memlock or the CMA pool, which net.ib_config reads) are not host RAM."""
    text = hit.cite.text
    return "NCCL" in text or "shm/nccl-" in text or "ibv_" in text


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
    kills = facts.search(_SIGKILL)
    cues = [h for h in facts.search(_MEMORY_WORDS) if "CUDA" not in h.cite.text]
    if not kills or not cues or facts.said(r"CUDA out of memory|OutOfMemoryError"):
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
    cues = [
        h
        for h in facts.search(
            r"(?:storing|saving|save|writing)\b.{0,40}checkpoint|checkpoint.{0,40}\b(?:sav|stor|writ)"
        )
        if h.prose
    ]
    if not timeouts or not cues:
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
    for limit in _LIMITS:
        hits = [h for h in facts.search(limit.pattern) if not _nccl_line(h)]
        if hits:
            return [_finding(limit, hits)]
    for step in (_killed_with_memory_cue, _checkpoint_stall):
        found = step(facts)
        if found is not None:
            return [found]
    return []
