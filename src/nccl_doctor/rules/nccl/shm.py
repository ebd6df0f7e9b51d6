"""NCCL's shared-memory transport could not get its segment (/dev/shm too small or absent).

What it means
-------------
Ranks on one host that cannot use P2P exchange data, and NCCL's proxies
exchange control state, through files in ``/dev/shm`` (``/dev/shm/nccl-*``,
several MB per peer connection). Creating or growing such a file failed:
``Error while creating shared memory segment /dev/shm/nccl-XXXX (size N)``,
``failed to extend /dev/shm/... to N bytes``, ``posix_fallocate failed : No
space left on device``. Inside Docker the default ``/dev/shm`` is 64 MB, which
a few GPUs exhaust; some NCCL releases crashed with SIGBUS instead of
reporting it.

Why it matters
--------------
Communicator setup fails (``unhandled system error``) or the process dies
with ``Bus error``, on every run, until the container gets more shared memory.

Evidence
--------
The NCCL shared-memory messages above (NCCL WARN lines, PyTorch's ``Last
error:``, or a quote of them), ``No space left on device`` about
``/dev/shm``; a SIGSEGV/SIGBUS inside ``ncclShmOpen`` (a backtrace's frame
beside the signal, or a line naming both); a ``docker run`` without
``--shm-size`` or ``--ipc=host``. Without any of those, a rank the launcher says
SIGBUS killed (exit code -7) with no error of its own (low confidence, medium
beside such a ``docker run``).

Fix
---
Start the container with ``--ipc=host`` or ``--shm-size=1g`` (or more); in
Kubernetes mount an ``emptyDir`` with ``medium: Memory`` at ``/dev/shm``;
check ``df -h /dev/shm``. Remove stale ``/dev/shm/nccl-*`` files of killed jobs.
``NCCL_SHM_DISABLE=1`` only works around it, at a speed cost.
"""

from __future__ import annotations

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.catalogue import points_to
from nccl_doctor.facts.failures import deaths_by
from nccl_doctor.facts.nccl import NcclWarn
from nccl_doctor.facts.run import ChildFailure
from nccl_doctor.facts.store import Facts, Hit
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.rules._probe import isolated_transport
from nccl_doctor.rules.base import Rule, first_distinct
from nccl_doctor.signs.nccl import (
    CONTAINER_SHM,
    CONTAINER_START,
    FATAL_SIGNAL,
    SHM_CRASH,
    SHM_ERROR,
    SHM_FRAME,
    SHM_PATH,
    SHM_SIZE,
)

RULE = Rule(
    id="nccl.shm",
    title="Shared memory (/dev/shm) too small for NCCL",
    severity=Severity.CRITICAL,
    explains=("launch.rank_crash", "host.resources", "cuda.unknown_error", "nccl.internal"),
)


def _segment(facts: Facts) -> tuple[list[Cite | Fact], str | None, int | None, bool]:
    """(evidence, path, size, from machine output) of the shared-memory failure."""
    out: list[Cite | Fact] = []
    path, size = None, None
    for warn in facts.of(NcclWarn):
        if points_to(warn.message, "nccl.shm") or (warn.path or "").startswith("/dev/shm"):  # noqa: S108
            out.append(warn)
            path, size = path or warn.path, size or warn.size_bytes
    out.extend(h.cite for h in facts.seen(SHM_ERROR, prose=False))
    out.extend(h.cite for h in _crashes(facts) if not h.prose)
    if out:
        return first_distinct(out, 3), path, size, True
    quoted = [h.cite for h in (*facts.seen(SHM_ERROR), *_crashes(facts))[:2]]
    return list(quoted), None, None, False


def _crashes(facts: Facts) -> tuple[Hit, ...]:
    """A SIGSEGV/SIGBUS in NCCL's shared-memory set-up: one line saying both, or a frame there
    (a debugger's backtrace) beside the signal."""
    frames = facts.seen(SHM_FRAME) if facts.saw(FATAL_SIGNAL) else ()
    return (*facts.seen(SHM_CRASH), *frames)


def _bus_deaths(facts: Facts) -> list[Fact]:
    """Ranks the launcher says a SIGBUS killed (exit code -7: a page of a mapped file could
    not be backed), with no error of their own."""
    return [
        e for e in deaths_by(facts, "SIGBUS") if not (isinstance(e, ChildFailure) and e.own_error)
    ]


def _bus_death(facts: Facts, deaths: list[Fact]) -> list[Finding]:
    """A rank killed by SIGBUS, no error printed: NCCL's troubleshooting guide's /dev/shm case
    (its segments are files in /dev/shm; a page the tmpfs cannot back kills the process)."""
    docker = [
        h.cite for h in facts.seen(CONTAINER_START) if h.said not in facts.lines_of(CONTAINER_SHM)
    ]
    summary = (
        "A rank was killed by SIGBUS (exit code -7) with no error of its own: a page of a "
        "memory-mapped file could not be backed, which for NCCL's shared-memory segments (and "
        "the data loader's) means /dev/shm is too small or full"
    )
    if docker:
        summary += "; the container was started without --shm-size or --ipc=host (64 MB)"
    return [
        RULE.finding(
            summary=summary,
            fix=[
                "Check the space: df -h /dev/shm inside the container (Docker's default is 64 MB)",
                (
                    "Start the container with --ipc=host or --shm-size=1g (more for many GPUs "
                    "per host); in Kubernetes mount an emptyDir with medium: Memory at /dev/shm"
                ),
                (
                    "If /dev/shm is large: check the host's memory and disk (a full file system "
                    "under another mapped file also ends in SIGBUS)"
                ),
            ],
            evidence=first_distinct([*deaths[:2], *docker[:1]], 3),
            confidence=Confidence.MEDIUM if docker else Confidence.LOW,
            ranks=[d.rank for d in deaths if d.rank is not None],
        )
    ]


def check(facts: Facts) -> list[Finding]:
    """Fire on NCCL shared-memory segment failures."""
    if probe := _probe(facts):
        return probe
    evidence, path, size, from_machine = _segment(facts)
    if not evidence:
        deaths = _bus_deaths(facts)
        return _bus_death(facts, deaths) if deaths else []
    if path is None:
        path = next((h.match["path"] for h in facts.seen_on(SHM_PATH, evidence)), None)
    if size is None:
        size = next((int(h.match["size"]) for h in facts.seen_on(SHM_SIZE, evidence)), None)
    sized = facts.lines_of(CONTAINER_SHM)
    docker = [h for h in facts.seen(CONTAINER_START) if h.said not in sized]
    where = path or "/dev/shm"  # noqa: S108
    amount = f" ({size / 2**20:.1f} MiB)" if size else ""
    verbs = {h.match["verb"] for h in facts.seen_on(SHM_ERROR, evidence)}
    attach = "attaching to" in verbs and "creating" not in verbs
    verb = "attach to the shared-memory segment" if attach else "create its shared-memory segment"
    summary = f"NCCL could not {verb} {where}{amount}"
    crashes = {h.cite for h in _crashes(facts)}
    if all(not isinstance(e, Fact) and e in crashes for e in evidence):
        summary = (
            "A process died of SIGSEGV/SIGBUS inside NCCL's shared-memory set-up (ncclShmOpen "
            f"maps a segment in {where} that cannot back its pages)"
        )
    fix = [
        (
            "Start the container with --ipc=host or --shm-size=1g (more for many GPUs per host); "
            "in Kubernetes mount an emptyDir with medium: Memory at /dev/shm"
        ),
        "Check the space: df -h /dev/shm inside the container (Docker's default is 64 MB)",
        "Remove stale /dev/shm/nccl-* files left by killed jobs",
        "Only as a stopgap: NCCL_SHM_DISABLE=1 (slower intra-node traffic)",
    ]
    if docker:
        summary += (
            "; the container was started without --shm-size or --ipc=host, so /dev/shm is "
            "Docker's 64 MB default"
        )
        evidence = [*evidence, docker[0].cite]
    elif attach:
        summary += (
            ": the rank that created it does not share this /dev/shm (separate containers "
            "without --ipc=host) or the file was removed"
        )
        fix.insert(
            1,
            "Run all ranks of a host in one IPC namespace (--ipc=host), and keep "
            "systemd from removing IPC objects (RemoveIPC=no in logind.conf)",
        )
    else:
        summary += ": /dev/shm is too small or full"
    return [
        RULE.finding(
            summary=summary,
            fix=fix,
            evidence=evidence,
            confidence=Confidence.HIGH if from_machine else Confidence.MEDIUM,
            ranks=[e.rank for e in evidence if isinstance(e, Fact) and e.rank is not None],
        )
    ]


def _probe(facts: Facts) -> list[Finding]:
    """A probe run whose transport isolation named this transport."""
    return isolated_transport(
        RULE,
        facts,
        "SHM",
        "shared-memory (SHM) transport",
        [
            (
                "Give the container a larger /dev/shm (--shm-size=8g or "
                "--ipc=host) and rerun the probe"
            ),
            "Until then, NCCL_SHM_DISABLE=1 keeps jobs running (slower)",
        ],
    )
