"""Helpers shared by the launch and app rules: group size, who died, hang cues, a store port
in use."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.failures import first_failure, store_served_after
from nccl_doctor.facts.job import world
from nccl_doctor.facts.messages import (
    launch_phase,
    peer_gone,
    timed_out,
    watchdog_teardown,
)
from nccl_doctor.facts.run import (
    C10dSocketError,
    ChildFailure,
    CollectiveTimeout,
    CppException,
    DistributedError,
    LauncherSignal,
    NcclErrorReport,
    PythonTraceback,
    WatchdogState,
    WorkerExit,
)
from nccl_doctor.facts.store import Facts, Hit
from nccl_doctor.knowledge.signals import STOP_SIGNALS, signal_name
from nccl_doctor.rules.base import first_distinct
from nccl_doctor.signs.common import CARRIES_ON, HANG_POINTS, HANG_WORDS
from nccl_doctor.signs.launch import (
    ADDRESS_IN_USE,
    INIT_PASSED,
    INIT_PHASE,
    JOB_STOPPED,
    STORE_CONNECT_TIMED_OUT,
    STORE_NOT_LISTENING,
)


def address_in_use(facts: Facts) -> tuple[list[Cite], bool]:
    """Where the store's bind failed with EADDRINUSE, and whether c10d's own socket error
    said so (``direct``) rather than only the bare message.

    A program that went on after it (another port, a retry: tensorboard's 6006) did not
    fail, nor did a store that then served (an NCCL communicator finished its init).
    """
    evidence: list[Cite] = []
    direct = False
    for err in facts.of(C10dSocketError):
        if err.action in ("bind", "listen") and (err.errno == 98 or err.error_name == "EADDRINUSE"):
            evidence.append(err.cite)
            direct = True
    evidence += [d.cite for d in facts.of(DistributedError) if d.category == "address_in_use"]
    goes_on = facts.lines_of(CARRIES_ON)
    goes_on_cites = {said.cite for said in goes_on}
    evidence = first_distinct(
        [c for c in evidence if c not in goes_on_cites and not store_served_after(facts, c)]
    )
    if not evidence:  # the bare message
        evidence = [
            h.cite
            for h in facts.seen(ADDRESS_IN_USE, prose=False)
            if h.said not in goes_on and not store_served_after(facts, h.cite)
        ][:2]
    return evidence, direct


def timed_out_ranks(facts: Facts) -> set[int]:
    """Ranks of the default group that report a collective timeout."""
    ranks: set[int] = set()
    for fact in (*facts.of(CollectiveTimeout), *facts.of(WatchdogState)):
        if fact.rank is not None:
            ranks.add(fact.rank)
    return ranks


def hang_cues(facts: Facts) -> list[Cite]:
    """A person's words that the job sits there (cited lines)."""
    return [h.cite for h in facts.seen(HANG_WORDS) if h.prose]


#: How far below a sentence that points at the next lines ("it hangs at:") the line it shows
#: may sit: past a blank line and a code fence's opening.
_BELOW = 3


#: What ends a sentence inside a line (a paragraph is often one line).
_SENTENCE_ENDS = (". ", "? ", "! ", "; ")


def _one_sentence(a: Hit, b: Hit) -> bool:
    """Whether two hits on a line are of one sentence: nothing that ends one between them
    ("it hangs at init_process_group", not "init_process_group timeout set to 600 s ... two
    hours later, right before the hang")."""
    start = min(a.match.start(), b.match.start())
    end = max(a.match.end(), b.match.end())
    return not any(stop in a.said.text[start:end] for stop in _SENTENCE_ENDS)


def init_hang_cues(facts: Facts) -> list[Hit]:
    """A person's words that the job sits in its initialisation (DDP, the process group, the
    rendezvous), where no rank's own error came first.

    The words and the initialisation on one line ("it hangs at init_process_group"), or a
    sentence that points at what follows ("it never returns from:") with the initialisation
    shown just below it. A line that says the initialisation got through puts the hang after
    it ("init_process_group returns fine, then the first all_reduce hangs"). Where a rank's
    own error comes first (not a wait, not the cascade of another's), the others sit there
    because that rank is gone: launch.rank_crash's story, not a hang of the initialisation.
    """
    init = facts.lines_of(INIT_PHASE) - facts.lines_of(INIT_PASSED)
    phase = {h.said: h for h in facts.seen(INIT_PHASE)}
    cues = [
        h
        for h in facts.seen(HANG_WORDS)
        if h.prose and h.said in init and _one_sentence(h, phase[h.said])
    ]
    at = {(s.cite.source, s.cite.line) for s in init}
    cues += [
        h
        for h in facts.seen(HANG_POINTS)
        if h.prose and any((h.cite.source, h.cite.line + k) in at for k in range(1, _BELOW + 1))
    ]
    if not cues:
        return []
    failure, _ = first_failure(facts)
    if failure is not None and not (failure.waiting or failure.cascade or failure.launcher):
        return []
    return cues


@dataclass(frozen=True, slots=True)
class Death:
    """A rank that ended first, as the launcher or the rank itself told it."""

    cite: Cite
    rank: int | None
    local_rank: int | None
    host: str | None
    exitcode: int | None
    signal: str | None
    error: str | None
    inferred: bool = False
    extra: tuple[Cite, ...] = ()
    #: its own error is PyTorch's report of an NCCL call that failed on its side (not
    #: ncclRemoteError): the stack under the job failed, and why is that error's question
    nccl_failed: bool = False
    #: the earlier exceptions its error was raised from (``type: message``, printed order):
    #: a wrapper's cause ("DataLoader worker (pid 7) is killed by signal: Segmentation fault"
    #: under "... exited unexpectedly")
    chain: tuple[str, ...] = ()


def _chain(tb: PythonTraceback | None) -> tuple[str, ...]:
    """The exceptions a traceback's own was raised from, as ``type: message``."""
    return tuple(f"{kind}: {message}".strip() for kind, message in tb.causes) if tb else ()


def _traceback_of(
    facts: Facts, rank: int | None, others: Collection[Cite] = ()
) -> PythonTraceback | None:
    """The rank's own exception (not the launcher's ChildFailedError), none of ``others`` (the
    exceptions of other processes)."""
    own = [
        t
        for t in facts.of(PythonTraceback)
        if t.exc_type
        and t.exc_name not in ("ChildFailedError", "SignalException", "KeyboardInterrupt")
        and (rank is None or t.rank in (None, rank))
        and t.cite not in others
    ]
    ranked = [t for t in own if rank is not None and t.rank == rank]
    chosen = ranked or own
    return chosen[0] if chosen else None


def _nccl_failed(facts: Facts, sig: str | None, rank: int | None, cites: tuple[Cite, ...]) -> bool:
    """Whether a death's own error, on one of ``cites``, is PyTorch's report of an NCCL call
    that failed on its side (every result but ncclRemoteError, which says a peer or the
    network went away).

    With no cite (a rank that exited with an error code and whose error is not in the
    evidence), whether every such report the evidence holds is the rank's or no one's: the
    one error the job printed. A rank killed by a signal raised nothing: an NCCL error beside
    it is another's.
    """
    if sig is not None:
        return False
    own = [r for r in facts.of(NcclErrorReport) if r.result_name != "ncclRemoteError"]
    if not cites:
        return bool(own) and all(r.rank in (None, rank) for r in own)
    at = {(c.source, c.line) for c in cites}
    return any((r.cite.source, r.cite.line) in at for r in own)


def _is_teardown(
    facts: Facts, rank: int | None, error: str | None, local_rank: int | None = None
) -> bool:
    """Whether the rank ended because the watchdog or a launch-phase error stopped it.

    A death the launcher names only by local rank (the elastic agent's ``failed
    (exitcode: -6) local_rank: 0``) is the rank torchrun's summary gives that
    local rank, or, on a one-host job, the rank of that number.
    """
    if error and (watchdog_teardown(error) or launch_phase(error)):
        return True
    if rank is None and local_rank is not None:
        named = {c.rank for c in facts.of(ChildFailure) if c.local_rank == local_rank}
        if len(named) == 1:
            rank = named.pop()
        elif not named and len(facts.hosts) <= 1:
            rank = local_rank
    if rank is None:
        return False
    for fact in (*facts.of(CollectiveTimeout), *facts.of(WatchdogState)):
        if fact.rank == rank:
            return True
    return any(
        d.rank == rank and d.category in ("process_down", "heartbeat_timeout")
        for d in facts.of(DistributedError)
    )


def watchdog_aborts(facts: Facts) -> list[Death]:
    """Ranks their own watchdog took down after a collective timed out (SIGABRT, or exit 1).

    These deaths are the hang's consequence: ``deaths`` leaves them out, the
    hang's finding folds them.
    """
    if not facts.of(CollectiveTimeout):
        return []
    return [
        d
        for d in (*_child_deaths(facts), *_worker_deaths(facts))
        if not (d.error and launch_phase(d.error))
        and (
            _is_teardown(facts, d.rank, d.error, d.local_rank)
            or _bare_abort_beside_timeout(facts, d)
        )
    ]


def _bare_abort_beside_timeout(facts: Facts, death: Death) -> bool:
    """A SIGABRT with no error of its own where a collective timed out on its host.

    ProcessGroupNCCL's watchdog ends its process by throwing on its own thread (std::terminate,
    then abort: exit -6), and the launcher reports that exit by local rank while the timeout
    is often printed by another rank alone ("ranks 1, 2 print the same"). A rank that aborted
    on its own first would have had its peers stopped by the launcher before their timeout
    ran out, unless they live on other hosts, so only a timeout of the same host counts.
    """
    if death.signal != "SIGABRT" or death.error:
        return False
    return any(
        death.host is None or t.host is None or t.host == death.host
        for t in facts.of(CollectiveTimeout)
    )


def _child_deaths(facts: Facts) -> list[Death]:
    out: list[Death] = []
    children = sorted(facts.of(ChildFailure), key=lambda c: not c.root_cause)
    for child in children:
        sig = signal_name(child.exitcode, child.signal_name)
        if child.exitcode in (None, 0) or sig in STOP_SIGNALS:
            continue
        # (not the launcher's pointer to its docs, nor its word of the signal: ChildFailure's
        # own_error; a line of an error file's traceback naming a signal is no error either)
        error = child.own_error
        if child.traceback_lines:
            error = child.traceback_lines[-1].strip() or error
        tb = None
        if not error or "Signal" in error:
            tb = _traceback_of(facts, child.rank)
            error = f"{tb.exc_type}: {tb.message}".strip() if tb is not None else None
        cites = (child.cite, *([tb.cite] if tb is not None else [])) if error else ()
        out.append(
            Death(
                child.cite,
                child.rank,
                child.local_rank,
                child.host,
                child.exitcode,
                sig,
                error,
                nccl_failed=_nccl_failed(facts, sig, child.rank, cites),
                chain=_chain(tb),
            )
        )
    return out


def _worker_deaths(facts: Facts) -> list[Death]:
    out: list[Death] = []
    # one exception, one process: a traceback an exit took is not another process's error (a
    # second host's launcher names only its local rank; its rank's error is not in the paste)
    owner: dict[Cite, object] = {}
    for exit_ in facts.of(WorkerExit):
        if exit_.source == "wrapper":
            continue  # the whole job's status as nccl-doctor run saw it, not one rank's
        sig = signal_name(exit_.exitcode, exit_.signal_name)
        if exit_.exitcode in (None, 0) and sig is None and not exit_.raised:
            continue
        if sig in STOP_SIGNALS:
            continue
        who = exit_.pid if exit_.pid is not None else (exit_.host, exit_.local_rank, exit_.rank)
        others = [cite for cite, process in owner.items() if process != who]
        tb = _traceback_of(facts, exit_.rank if exit_.names_rank else None, others)
        if tb is not None:
            owner.setdefault(tb.cite, who)
        error = f"{tb.exc_type}: {tb.message}".strip() if tb else None
        out.append(
            Death(
                exit_.cite,
                exit_.rank,
                exit_.local_rank,
                exit_.host,
                exit_.exitcode,
                sig,
                error,
                nccl_failed=_nccl_failed(facts, sig, exit_.rank, (tb.cite,) if tb else ()),
                chain=_chain(tb),
            )
        )
    return out


def _raised_death(facts: Facts) -> list[Death]:
    """A rank's own uncaught exception, where no launcher line says who died.

    The layout of torchrun ``--log-dir`` (each rank's stderr in its own
    file), a Slurm log, a rank's pasted traceback: the first failure is a
    rank's exception that names a fault (not a timeout, not the cascade),
    and another rank is in the evidence to have failed after it.
    """
    failure, _ = first_failure(facts)
    if failure is None or failure.tier != 0 or failure.launcher or failure.rank is None:
        return []
    if not isinstance(failure.fact, PythonTraceback | CppException):
        return []
    if len(set(facts.ranks)) < 2 or launch_phase(failure.message):
        return []
    return [
        Death(
            failure.fact.cite,
            failure.rank,
            None,
            failure.fact.host,
            None,
            None,
            failure.message,
            inferred=True,
            nccl_failed=_nccl_failed(facts, None, failure.rank, (failure.fact.cite,)),
        )
    ]


def _stopped(facts: Facts) -> list[Cite]:
    """Where the job was stopped from outside: Slurm cancelled it (scancel, preemption, a
    requeue), or its launcher received a termination signal (``Received 15 death signal``)."""
    cites = [h.cite for h in facts.seen(JOB_STOPPED, prose=False)]
    cites += [s.cite for s in facts.of(LauncherSignal) if s.action == "received"]
    return cites


def _after_stop(death: Death, stops: list[Cite]) -> bool:
    """Whether a death is told after the job was stopped, in the same source (a task's exit
    that follows it is the teardown; an earlier one, or one in another file, may be the
    failure the stop answered)."""
    return any(s.source == death.cite.source and s.line <= death.cite.line for s in stops)


def deaths(facts: Facts) -> list[Death]:
    """Ranks that died on their own (not stopped by the launcher, the scheduler or the
    watchdog).

    From the launcher's lines, else from a rank's own uncaught exception.
    """
    stops = _stopped(facts)
    found = [
        d
        for d in (*_child_deaths(facts), *_worker_deaths(facts))
        if not _is_teardown(facts, d.rank, d.error, d.local_rank)
        and not _bare_abort_beside_timeout(facts, d)
        and not _after_stop(d, stops)
    ]
    if not found and not facts.of(ChildFailure):
        found = [
            d
            for d in _raised_death(facts)
            if not _is_teardown(facts, d.rank, d.error, d.local_rank)
        ]
    # A rank whose own error is "the peer went away" did not die first: prefer the others.
    found.sort(key=lambda d: bool(d.error and peer_gone(d.error)))
    return found


#: torch.distributed functions that are collectives (where a rank waits for its peers).
COLLECTIVES = frozenset(
    {
        "all_reduce",
        "all_reduce_coalesced",
        "broadcast",
        "all_gather",
        "all_gather_into_tensor",
        "all_gather_object",
        "_all_gather_base",
        "reduce_scatter",
        "reduce_scatter_tensor",
        "_reduce_scatter_base",
        "all_to_all",
        "all_to_all_single",
        "barrier",
        "monitored_barrier",
        "reduce",
        "gather",
        "gather_object",
        "scatter",
        "scatter_object_list",
        "broadcast_object_list",
        "send",
        "recv",
        "isend",
        "irecv",
    }
)


def waiting_in(facts: Facts) -> dict[int, tuple[str, Cite]]:
    """Per rank, the collective its timed-out traceback was waiting in."""
    out: dict[int, tuple[str, Cite]] = {}
    for tb in facts.of(PythonTraceback):
        if tb.rank is None or tb.rank in out or not tb.exc_type:
            continue
        if not timed_out(tb):
            continue
        for file, _, fn in reversed(tb.frames):
            if fn in COLLECTIVES and "distributed" in file:
                out[tb.rank] = (fn, tb.cite)
                break
    return out


def collective_calls(facts: Facts) -> dict[int, tuple[str, Cite, bool]]:
    """Per rank, the collective its (first) traceback was in, and whether it timed out there."""
    out: dict[int, tuple[str, Cite, bool]] = {}
    for tb in facts.of(PythonTraceback):
        if tb.rank is None or tb.rank in out or not tb.exc_type:
            continue
        for file, _, fn in reversed(tb.frames):
            if fn in COLLECTIVES and "distributed" in file:
                out[tb.rank] = (fn, tb.cite, timed_out(tb))
                break
    return out


def missing_from_timeout(facts: Facts) -> tuple[list[int], list[Cite]]:
    """Ranks of a known-size group that did not report a timeout the others report."""
    timeouts = facts.of(CollectiveTimeout)
    reporters = timed_out_ranks(facts)
    if not timeouts or not reporters:
        return [], []
    stated = world(facts)
    if stated.how not in ("process group", "WORLD_SIZE", "launcher"):
        return [], []  # a communicator or a dump may be a subgroup: its absent ranks prove nothing
    size, cites = stated.size, list(stated.cites)
    if size is None or size > 4096 or max(reporters) >= size:
        return [], []
    missing = [r for r in range(size) if r not in reporters]
    if len(reporters) == 1 and not set(missing) & set(facts.ranks):
        return [], []  # one rank's own log: the others' silence is only their absence from it
    # lines a person pasted into a report: a paste of every rank's lines but one says that
    # one was silent; one that leaves out several ranks may only have been cut short
    sources = {t.cite.source for t in timeouts}
    if len(missing) > 1 and any(said.prose and said.cite.source in sources for said in facts.lines):
        return [], []
    return missing, cites


@dataclass(frozen=True, slots=True)
class StoreRetries:
    """How the store client's connect attempts ended before it gave up (socket.cpp).

    ``unanswered``: attempts that timed out with no answer (their warnings);
    ``retried``: its every-30-seconds retry notices. Retries with no unanswered
    attempt and no failed name look-up were refused: the host answered and
    nothing listened on the port.
    """

    unanswered: tuple[Hit, ...]
    retried: tuple[Hit, ...]
    unresolved: bool

    @property
    def refused(self) -> bool:
        """Whether every retry was a refusal (nothing listened on the store's port)."""
        return bool(self.retried) and not self.unanswered and not self.unresolved


def store_retries(facts: Facts) -> StoreRetries:
    """The store client's retries before a connect timeout, and how they ended."""
    unresolved = any(e.action == "resolve" and e.resolver_failed for e in facts.of(C10dSocketError))
    return StoreRetries(
        facts.seen(STORE_CONNECT_TIMED_OUT),
        facts.seen(STORE_NOT_LISTENING),
        unresolved,
    )
