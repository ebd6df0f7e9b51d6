"""A rank died first (signal, host OOM kill, Python exception) and the others failed after it.

What it means
-------------
One worker process ended on its own: it was killed by a signal (SIGKILL from
the kernel's OOM killer, SIGSEGV, SIGABRT, SIGBUS), or it raised a Python
exception and exited non-zero. The launcher (torchrun, DeepSpeed, mp.spawn)
then stopped the others, or the others waited for it in a collective until
the watchdog fired, or saw the connection to it close (``Connection closed by
peer``, ``Connection reset by peer``). Exit codes -9, -11 and -6 are SIGKILL,
SIGSEGV and SIGABRT.

Why it matters
--------------
The survivors' errors (collective timeouts, "Connection reset by peer",
"remote process exited", the launcher's SIGTERMs) are the cascade, not the
cause. Debugging the network or NCCL from those lines is wasted effort: the
first rank to die holds the real error.

Evidence
--------
The launcher's ``ChildFailedError`` summary (``Root Cause``, exitcode,
``Signal 9 (SIGKILL) received by PID``), the elastic agent's ``failed
(exitcode: -9) local_rank: 3``, DeepSpeed's ``exits with return code = -9``,
``process 1 terminated with signal SIGKILL`` from mp.spawn, and the dying
rank's own traceback. Where no launcher line says who died (a torchrun
``--log-dir`` folder, a Slurm log), the first failure across ranks, when it is
a rank's own uncaught exception that names a fault (not a timeout, not the
cascade), is that death. When the launcher summary is missing, a rank of a
group of known size that never reports the collective timeout every other
rank reports is inferred to have died or stalled first (not when one rank
alone reports it and no other rank shows in the evidence: that is one rank's
own log, where the others are absent, not silent). Where the paste shows only
the others' watchdog timeouts, the reporter's own timeline ("the earliest
error is rank 17's FileNotFoundError, 30 minutes before the other ranks'
timeouts") names that death, with medium confidence.

A rank whose own error is PyTorch's report of an NCCL call that failed on
its side (any result but ``ncclRemoteError``; or, when it exited with an
error code and its traceback is not kept, the job's only such report) names
who went first and leaves the cause open: why the call failed is that error's
question. (A rank killed by a signal raised nothing, so this never holds for
it.) The finding is then context (information, not the root cause), and the
differential of the NCCL error leads.

Deaths that are all of messages whose catalogued source reading names other
causes (Lightning's ``devices=8`` against Slurm's ``--ntasks-per-node=1``,
accelerate refusing a ``device_map='auto'`` model under several processes) give
no finding, however often torchrun tells them (its ``failed (exitcode: 1)``
line and its Root Cause block name one process twice): no rank's death
followed another's, and the differential ranks the causes the rows name. A
wrapper whose chained cause names a rank's own crash still counts (torch's
``DataLoader worker ... exited unexpectedly`` raised from ``is killed by
signal: Segmentation fault``).

A rank killed by SIGKILL with nothing of its own (no traceback, no message)
names who went first, not what killed it: the kernel's OOM killer most often,
else a cgroup or scheduler limit or a person. The finding stays critical (the
job lost a rank) but is no root cause, and the kill's ranked causes lead the
answer.

Fix
---
Read the first failing rank's own log (its traceback or the kernel log of
its host): ``dmesg -T | grep -i -E 'killed process|out of memory'`` for a
SIGKILL, the core dump or ``faulthandler`` output for a SIGSEGV. Fix that
error; raising timeouts or changing NCCL settings will not help.
"""

from __future__ import annotations

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.catalogue import blames_elsewhere, points_to
from nccl_doctor.facts.ranks import ranks_text
from nccl_doctor.facts.run import CollectiveTimeout, DistributedError, LauncherSignal
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import LAGGING, MESSENGER, Confidence, Finding, Severity
from nccl_doctor.rules.app._origin import analyse, with_roles
from nccl_doctor.rules.base import Rule
from nccl_doctor.rules.launch._common import (
    Death,
    deaths,
    hang_cues,
    missing_from_timeout,
    watchdog_aborts,
)
from nccl_doctor.signs.app import WATCHDOG_CAUGHT
from nccl_doctor.signs.launch import MEMORY_WORDS, RANK_FAILED_FIRST, RANK_STILL_BUSY

RULE = Rule(
    id="launch.rank_crash",
    title="A rank died first and the others failed after it",
    severity=Severity.CRITICAL,
    explains=("app.hang", "net.unreachable"),
)


def _who(death: Death) -> str:
    if death.rank is not None:
        who = f"rank {death.rank}"
        if death.local_rank is not None and death.local_rank != death.rank:
            who += f" (local rank {death.local_rank})"
    elif death.local_rank is not None:
        who = f"local rank {death.local_rank}"
    else:
        who = "a worker"
    return who + (f" on {death.host}" if death.host else "")


def _cascade_cites(facts: Facts) -> list[Cite]:
    """A few lines of what the survivors printed after the death."""
    cites: list[Cite] = [t.cite for t in facts.of(CollectiveTimeout)[:2]]
    cites += [
        d.cite
        for d in facts.of(DistributedError)
        if d.category in ("connection_closed", "connection_reset", "broken_pipe", "recv_failed")
    ][:2]
    cites += [s.cite for s in facts.of(LauncherSignal)[:1]]
    return cites


def _from_death(facts: Facts, death: Death) -> Finding:
    code = f"exit code {death.exitcode}" if death.exitcode is not None else "a failure"
    if death.inferred:
        code = "an uncaught exception"
    sig = f" ({death.signal})" if death.signal else ""
    summary = f"{_who(death).capitalize()} died first with {code}{sig}"
    fix: list[str] = []
    memory = [h.cite for h in facts.seen(MEMORY_WORDS)][:2]
    # killed with nothing of its own: who went first is known, what killed it is not (the
    # kernel's OOM killer, a cgroup or scheduler limit, a person): the kill's differential
    # ranks those, and this finding is not their root cause
    bare_kill = death.signal == "SIGKILL" and not death.error
    if death.error:
        summary += f": {death.error[:200]}"
    elif bare_kill:
        summary += (
            " and no Python traceback: something outside Python killed it, most often the "
            "kernel's OOM killer when host RAM runs out (the possible causes are ranked below)"
        )
    summary += "; the other ranks' errors followed from it."
    if death.signal == "SIGKILL":
        fix.append(
            "Check the kernel log of that host for the OOM killer: "
            "dmesg -T | grep -i -E 'killed process|out of memory' "
            "(or the scheduler's memory-limit message)."
        )
        fix.append(
            "If it was host memory: load checkpoints with mmap/map_location='cpu' one rank at a "
            "time, lower DataLoader num_workers, or use a node with more RAM."
        )
    elif death.signal == "SIGSEGV":
        fix.append(
            "Rerun with PYTHONFAULTHANDLER=1 (and ulimit -c unlimited) to get the native stack "
            "of the segfault."
        )
    elif death.signal == "SIGABRT":
        fix.append("Look for 'terminate called after throwing' or a failed assert just above it.")
    else:
        fix.append(f"Read the full traceback of {_who(death)}; fix that error first.")
    fix.append(
        "Ignore the other ranks' timeouts/connection errors and the launcher's SIGTERMs: "
        "they are the cascade of this exit."
    )
    return RULE.finding(
        summary=summary,
        fix=fix,
        evidence=[death.cite, *death.extra, *memory, *_cascade_cites(facts)][:6],
        ranks=[death.rank] if death.rank is not None else [],
        hosts=[death.host] if death.host else [],
        confidence=Confidence.MEDIUM,
        cause=not bare_kill,
    )


def _inferred(facts: Facts) -> Finding | None:
    missing, size_cites = missing_from_timeout(facts)
    if not missing or hang_cues(facts):
        return None
    busy = {int(h.match["rank"]) for h in facts.told(RANK_STILL_BUSY)}
    if busy and all(r in busy for r in missing):
        return None  # said alive at its own work when the others timed out: app.hang
    origin = analyse(facts)
    if all(origin.stuck(r) for r in missing):
        return None  # its own output shows it alive and elsewhere: the hang's origin, app.hang
    timeouts = facts.of(CollectiveTimeout)
    first = timeouts[0]
    reporters = sorted({t.rank for t in timeouts if t.rank is not None})
    names = ranks_text(missing)
    op = f"{first.op_type} SeqNum={first.seq}" if first.seq is not None else f"{first.op_type}"
    summary = (
        f"{names[0].upper()}{names[1:]} never reported the {op} timeout that "
        f"{ranks_text(reporters)} hit: "
        f"{'they' if len(missing) > 1 else 'it'} most likely died or stalled first (an "
        "exception, a kill, or a long rank-local step such as a checkpoint save) and the "
        "others waited for it."
    )
    return RULE.finding(
        summary=summary,
        fix=[
            (
                f"Get the log of rank {missing[0]} (its own stdout/stderr and the launcher's "
                "ChildFailedError summary): its error is the root cause."
            ),
            (
                "Check what that rank does alone at this point (rank-0-only checkpointing, "
                "evaluation, logging) and whether it raised there."
            ),
            (
                "Do not tune NCCL or the network for the others' timeouts until that rank's "
                "error is known."
            ),
        ],
        evidence=[first.cite, *[t.cite for t in timeouts[1:3]], *size_cites],
        ranks=missing,
        confidence=Confidence.MEDIUM,
    )


def _from_abort(death: Death) -> Finding:
    """A rank its own watchdog took down: the hang's consequence, folded under it."""
    code = f"exit code {death.exitcode}" if death.exitcode is not None else "an abort"
    sig = f" ({death.signal})" if death.signal else ""
    return RULE.finding(
        summary=(
            f"{_who(death).capitalize()} ended with {code}{sig} after its collective timed out: "
            "ProcessGroupNCCL's watchdog takes the process down to avoid running on corrupted "
            "data. This is the hang's consequence, not a crash of its own."
        ),
        fix=["Find why the collective did not finish (the hang above); the abort follows it."],
        evidence=[death.cite, *death.extra],
        ranks=[death.rank] if death.rank is not None else [],
        hosts=[death.host] if death.host else [],
        cause=False,
        explains=(),
    )


def _from_nccl_failure(death: Death) -> Finding:
    """A rank whose NCCL call failed on its own side: who went first, not why."""
    return RULE.finding(
        summary=(
            f"{_who(death).capitalize()} ended first, on a failed NCCL call"
            f"{': ' + death.error[:200] if death.error else ''}; the other ranks' errors "
            "followed from it."
        ),
        fix=["Find why that NCCL call failed on that rank; the others' errors follow from it."],
        evidence=[death.cite, *death.extra],
        ranks=[death.rank] if death.rank is not None else [],
        hosts=[death.host] if death.host else [],
        severity=Severity.INFO,
        cause=False,
        explains=(),
    )


def check(facts: Facts) -> list[Finding]:
    """A rank that died on its own, one missing from the others' timeout, or a watchdog abort."""
    found = deaths(facts)
    if found and all(_elsewhere(d) for d in found):
        # every death told (one process is often told twice: torchrun's "failed (exitcode: 1)
        # local_rank: 1" line and its Root Cause block) is of a message whose source names its
        # causes (Lightning's "devices=8 ... --ntasks-per-node=1 does not match", accelerate's
        # device_map refusal): no cascade to explain, and the deaths are not the cause; the
        # differential ranks the causes the catalogue row names
        return []
    if found and found[0].nccl_failed:
        return [with_roles(facts, _from_nccl_failure(found[0]), tell=(LAGGING, MESSENGER))]
    if found:
        return [with_roles(facts, _from_death(facts, found[0]), tell=(LAGGING, MESSENGER))]
    inferred = _inferred(facts)
    if inferred:
        return [with_roles(facts, inferred, tell=(LAGGING, MESSENGER))]
    aborts = watchdog_aborts(facts)
    if aborts:
        return [_from_abort(aborts[0])]
    said = _said_first(facts)
    return [said] if said is not None else []


def _elsewhere(death: Death) -> bool:
    """Whether a death's error is a message whose source names other causes, and no
    exception it was raised from names this one (torch's "DataLoader worker ... exited
    unexpectedly" wraps the worker's own "killed by signal: Segmentation fault")."""
    if not death.error or not blames_elsewhere(death.error, RULE.id):
        return False
    return not any(points_to(cause, RULE.id) for cause in death.chain)


def _said_first(facts: Facts) -> Finding | None:
    """No death in the evidence, but the reporter tells the order: one rank failed with its own
    error first, the others then timed out waiting for it, and the paste holds those timeouts
    (the watchdog's message, which would stand as the cause). Words alone, with no timeout
    shown, are the differential's to weigh."""
    told = facts.told(RANK_FAILED_FIRST)
    if not told or not (facts.of(CollectiveTimeout) or facts.seen(WATCHDOG_CAUGHT)):
        return None
    hit = told[0]
    return RULE.finding(
        summary="The report says one rank failed with its own error first and the others "
        f"then waited for it ({hit.match.group(0).strip()[:200]!r}): the others' timeouts "
        "follow from it.",
        fix=[
            (
                "Read that rank's own error (its log and the launcher's ChildFailedError "
                "summary): it is the root cause; fix it there."
            ),
            (
                "Do not tune NCCL timeouts or the network for the others' timeouts until that "
                "error is fixed."
            ),
        ],
        evidence=[hit.cite],
        confidence=Confidence.MEDIUM,
    )
