"""Failures in the evidence, for finding the first one: which are the cascade.

A failure is a fact that says something broke on a rank: a traceback, an
NCCL error report, a CUDA error, a timeout, a store or rendezvous error. Each
falls in one of three tiers of causal precedence:

- an error that names what went wrong (an OOM, a CUDA error, an exception
  of the application, a collective mismatch);
- a timeout: the rank waited for peers (the watchdog's collective timeout, a
  store or rendezvous timeout, gloo's recv timeout). It is what the others
  see while one rank is stuck or gone, so it never beats a real error;
- the cascade: what the survivors print after another rank broke (the peer
  closed or reset the connection, the communicator was aborted, the
  launcher's SIGTERM).

The launcher's own lines (child failures, exits) come after the fact.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from nccl_doctor.facts import told
from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.catalogue import failing_warn, harmless, lead_of, signature_of
from nccl_doctor.facts.gpu import DcgmReport
from nccl_doctor.facts.literals import prefiltered
from nccl_doctor.facts.messages import PEER_GONE_TEXT, peer_gone
from nccl_doctor.facts.nccl import NcclCommInit, NcclTestRow, NcclTestSummary, NcclWarn
from nccl_doctor.facts.run import (
    C10dSocketError,
    ChildFailure,
    CollectiveTimeout,
    CppException,
    CudaError,
    CudaOutOfMemory,
    DistributedError,
    LauncherSignal,
    NcclErrorReport,
    PythonTraceback,
    RendezvousTimeout,
    WorkerExit,
)
from nccl_doctor.facts.store import Facts, is_prose

#: What survivors print once a peer is gone (:data:`~nccl_doctor.facts.messages.PEER_GONE_TEXT`),
#: or once they are told to stop.
CASCADE_TEXT = re.compile(
    PEER_GONE_TEXT + r"|process group (?:was|has been) aborted|"
    r"SignalException|Signals?\.SIGTERM|received signal SIGTERM|"
    r"Got signal: ?15|KeyboardInterrupt|ProcessGroupNCCL is shutting down|"
    r"Terminating the process after|another rank failed|peer (?:rank )?\d* ?(?:closed|exited)|"
    # c10d's TCPStore client once the store's host (rank 0) has gone
    r"remote (?:server|end) shutdown or crash|"
    # Horovod on every rank once one rank raised or left (horovod/common/common.h; before
    # v0.20 'This has been caused by an exception on one of the rank')
    r"Horovod has been shut down\.",
    re.IGNORECASE,
)

#: The user (or a scheduler's interactive cancel) stopped the job: Ctrl-C, SIGINT.
INTERRUPT_TEXT = re.compile(
    r"\bKeyboardInterrupt\b|Signals?\.SIGINT|received signal SIGINT|Got signal: ?2\b|"
    r"\bSIGINT\b.{0,40}(?:received|death signal)",
    re.IGNORECASE,
)

#: A rank that gave up waiting for its peers (a timeout, not a fault of its own).
WAITING_TEXT = re.compile(
    r"collective operation timeout|timed out in blocking wait|"
    r"\btimed out\b(?<!launch timed out)|\btime[ -]?out (?:waiting|after)|wait timeout|"
    r"Timeout\(ms\)=|socket timeout|DistStoreError|waiting for clients",
    re.IGNORECASE,
)
_cascade_text = prefiltered(CASCADE_TEXT)

#: DistributedError categories that are the cascade of an earlier failure.
CASCADE_CATEGORIES = frozenset(
    {
        "connection_closed",
        "connection_reset",
        "broken_pipe",
        "recv_failed",
        "comm_aborted",
        "process_down",
        "heartbeat_timeout",
        "watchdog_stuck",
        "store_get_failed",
        "rendezvous_closed",
        "dump_signal",
        "dump_global_timeout",
        "dump_signal_observed",
        "dump_signal_first",
    }
)

#: DistributedError categories of the flight recorder's own dump: no failure. PyTorch logs
#: them at ERROR level (ProcessGroupNCCL::dumpDebuggingInfo) whoever asked for the dump: the
#: watchdog at a timeout (whose own lines are the failure), a peer's signal, or a person or
#: nccl-doctor's pre-mortem through the debug pipe while the job still runs. Without a
#: failure they say the job's collectives were looked at: a stall (see the differential).
DUMP_NOTICES = frozenset({"dump_preparing", "dump_finished", "dump_disabled"})

_TIME = re.compile(
    r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?|[IWEF]\d{4} \d\d:\d\d:\d\d(?:\.\d+)?"
    r"|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d|\d\d:\d\d:\d\d(?:\.\d+)?|\[\s*\d+\.\d+\]"
)

#: Exceptions the launcher raises about its children, after they failed.
_LAUNCHER_EXC = (
    "torch.distributed.elastic.",
    "ChildFailedError",
    "subprocess.CalledProcessError",
    "torch.multiprocessing.spawn.ProcessRaisedException",
    "torch.multiprocessing.spawn.ProcessExitedException",
)

#: A c10d connect attempt logged as a warning and retried (IPv6 first, then IPv4).
_RETRIED = re.compile(r"^\s*(?:\[rank\d+\]:)?\[?W\d{4} |errno: 9[79]\b")

_GLOG = re.compile(r"[IWEF](?P<mo>\d\d)(?P<d>\d\d) (?P<t>[\d:.]+)")

#: An NCCL WARN that reports a failure rather than a notice.
_WARN_FAILURE = re.compile(r"fail|error|abort|timeout|timed out|refused|unreachable", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Failure:
    """A failure fact, where it stands in reading order, and what kind it is."""

    fact: Fact
    order: int
    message: str
    cascade: bool = False
    launcher: bool = False
    #: a timeout waiting for peers (see the module doc)
    waiting: bool = False
    #: the rank the launcher's summary names, for a failure printed without one
    launcher_rank: int | None = None

    @property
    def rank(self) -> int | None:
        """The rank that failed, if known."""
        return self.fact.rank if self.fact.rank is not None else self.launcher_rank

    @property
    def interrupt(self) -> bool:
        """Whether this is the job being stopped by the user (Ctrl-C, SIGINT)."""
        fact = self.fact
        if isinstance(fact, ChildFailure | WorkerExit | LauncherSignal) and (
            fact.signal_name == "SIGINT"
        ):
            return True
        return bool(INTERRUPT_TEXT.search(self.message))

    @property
    def tier(self) -> int:
        """Causal precedence: 0 an error that names the fault, 1 a timeout, 2 the cascade."""
        return 2 if self.cascade else 1 if self.waiting else 0

    @property
    def time_text(self) -> str | None:
        """The timestamp as printed on the cited line, if any."""
        if self.fact.time_s is None:
            return None
        match = _TIME.search(self.fact.cite.text)
        if match is None:
            return None
        text = match.group(0)
        glog = _GLOG.fullmatch(text)
        return f"{glog['mo']}-{glog['d']} {glog['t']}" if glog else text.strip("[]")


def _message(fact: Fact) -> str | None:
    """The failure's message, or ``None`` when the fact is not a failure."""
    if isinstance(fact, PythonTraceback | CppException):
        if not fact.exc_type:
            return None
        return f"{fact.exc_type}: {fact.message}".strip().rstrip(":")
    if isinstance(fact, RendezvousTimeout) and "Waiting in store based barrier" in fact.cite.text:
        return None  # c10d's notice every 10 s while it waits: still waiting, not failed
    if isinstance(fact, NcclErrorReport | CudaOutOfMemory | RendezvousTimeout):
        return fact.message or fact.cite.text.strip()
    if isinstance(fact, CudaError):
        if fact.kind == "async_note":
            return None
        code = f" {fact.code}" if fact.code is not None else ""
        return f"CUDA error{code}: {fact.error}" if fact.error else fact.cite.text.strip()
    if isinstance(fact, NcclWarn):
        lead = lead_of(fact.message)  # (one look-up for both questions)
        if lead is not None and harmless(lead):
            return None  # a WARN NCCL goes on after (its catalogue row is class info)
        failed = _WARN_FAILURE.search(fact.message) or (lead is not None and failing_warn(lead))
        return fact.message if failed else None
    if isinstance(fact, C10dSocketError) and _RETRIED.search(fact.cite.text):
        return None
    if isinstance(fact, C10dSocketError) and fact.action == "resolve":
        # a look-up for one address family: c10d tries the next, and only its connect fails
        # (even a resolver that fails the IPv6 look-up may leave /etc/hosts' IPv4 address)
        return None
    if isinstance(fact, DistributedError) and fact.category in DUMP_NOTICES:
        return None
    if isinstance(fact, C10dSocketError | DistributedError) and fact.message:
        return fact.message
    if isinstance(fact, CollectiveTimeout | C10dSocketError | DistributedError):
        return fact.cite.text.strip()
    if isinstance(fact, ChildFailure):
        return fact.cite.text.strip()
    if isinstance(fact, WorkerExit) and fact.source == "wrapper":
        how = f" ({fact.signal_name})" if fact.signal_name else ""
        return f"the job exited with status {fact.exitcode}{how} (nccl-doctor run)"
    if isinstance(fact, WorkerExit):
        # mpirun's 'noticed that process rank N ... exited on' is a signal's end even where
        # the line that names it (PRRTE prints it next) was not kept
        failed = (
            fact.exitcode not in (None, 0)
            or fact.signal_name is not None
            or fact.source == "mpirun"
        )
        return fact.cite.text.strip() if failed else None
    if isinstance(fact, LauncherSignal):
        return fact.cite.text.strip()
    if isinstance(fact, NcclTestSummary | NcclTestRow):
        return _wrong_values(fact)
    if isinstance(fact, DcgmReport):  # a health check DCGM failed (its warnings are notes)
        return (fact.message or None) if fact.failed else None
    return None


#: Quote marks that end a message quoted in a sentence.
_QUOTES = "'\"`\u201d\u2019"


def _anchor(fact: Fact, text: str) -> tuple[int, int] | None:
    """Where in its line a failure's message begins, and its first words end (the words a
    sentence quotes: up to a closing quote mark, at most 40 characters), if the line holds it."""
    lowered = text.lower()
    for said in (_message(fact), getattr(fact, "message", None), getattr(fact, "error", None)):
        if not isinstance(said, str) or not (said := said.strip().lstrip(_QUOTES)):
            continue
        key = said[:40]
        cut = min((i for i in (key.find(q) for q in _QUOTES) if i >= 8), default=len(key))
        key = key[:cut].lower()
        at = lowered.find(key)
        if at >= 0:
            return at, at + len(key)
    return None


def told_over(fact: Fact) -> bool:
    """Whether ``fact`` is a failure a person's sentence tells as not happening: a message it
    quotes with a denial just before ("we no longer get 'Duplicate GPU detected'") or said
    to be over after it ("'Address already in use' no longer shows up since ..."). Such a
    fact is no failure of the job's (a workaround it is gone under leaves it one)."""
    if not is_prose(fact.cite.text) or _message(fact) is None:
        return False  # (a program's line first: most facts are, and that test is the cheap one)
    anchor = _anchor(fact, fact.cite.text)
    return anchor is not None and told.told_over(fact.cite.text, *anchor)


def _wrong_values(fact: NcclTestSummary | NcclTestRow) -> str | None:
    """nccl-tests' validation failed: the collective's results differ from the expected ones."""
    if isinstance(fact, NcclTestSummary):
        if not fact.out_of_bounds and fact.out_of_bounds_ok is not False:
            return None
        return (
            f"nccl-tests found {fact.out_of_bounds or 'some'} wrong values (Out of bounds values)"
        )
    wrong = max(fact.wrong or 0, fact.in_place_wrong or 0)
    if not wrong:
        return None
    return f"nccl-tests found {wrong} wrong values at {fact.size_bytes} bytes (#wrong)"


def _cascade(fact: Fact, message: str) -> bool:
    if isinstance(fact, ChildFailure | WorkerExit) and fact.signal_name in ("SIGTERM", "SIGINT"):
        return True
    if isinstance(fact, DistributedError):
        return fact.category in CASCADE_CATEGORIES
    if isinstance(fact, LauncherSignal):
        return True
    return bool(_cascade_text(message)) or _catalogued_as(fact, message, _PEER_LOST)


def _waiting(fact: Fact, message: str) -> bool:
    if isinstance(fact, CollectiveTimeout | RendezvousTimeout):
        return True
    if isinstance(fact, CudaError | CudaOutOfMemory | NcclErrorReport | NcclWarn):
        return False  # CUDA's own "launch timed out", an IB transport timeout: real faults
    return bool(WAITING_TEXT.search(message)) or _catalogued_as(fact, message, _WAITED)


#: Catalogue classes of a survivor's report that a peer is gone (a supervisor's "worker died",
#: SGLang's "other ranks that didn't finish loading"), and of a rank that gave up waiting.
_PEER_LOST = frozenset({"peer_lost"})
_WAITED = frozenset({"collective_timeout", "store_timeout"})


def _catalogued_as(fact: Fact, message: str, classes: frozenset[str]) -> bool:
    """Whether the catalogue reads an exception's ``message`` as one of ``classes`` (its
    source says so). Typed facts say what they are already; an exception is what a library
    raises when it gives up (SGLang's ValueError for ranks that never finished loading)."""
    return isinstance(fact, PythonTraceback | CppException) and _class_of(message) in classes


@functools.lru_cache(maxsize=4096)
def _class_of(message: str) -> str | None:
    """The catalogue's class of the failure message ``message`` holds (one lookup per text:
    the cascade and the wait ask both)."""
    sig = signature_of(message)
    return sig.symptom if sig is not None else None


#: At one line, the fact that best states the failure comes first.
_PRIORITY: tuple[type[Fact], ...] = (
    PythonTraceback,
    NcclErrorReport,
    CudaOutOfMemory,
    CudaError,
    CppException,
)


def _priority(fact: Fact) -> int:
    return next((i for i, cls in enumerate(_PRIORITY) if isinstance(fact, cls)), len(_PRIORITY))


def store_served_after(facts: Facts, cite: Cite) -> bool:
    """Whether an NCCL communicator finished its init later in the log of ``cite``.

    NCCL's bootstrap goes through the c10d store, so a store bind/listen error
    followed by ``Init COMPLETE`` was no failure: the store served (torchrun's
    agent whose bind lost to another agent of the same host joins as the
    store's client, and the job runs on).
    """
    return any(
        init.phase == "complete" and init.cite.source == cite.source and init.cite.line > cite.line
        for init in facts.of(NcclCommInit)
    )


def failures_of(facts: Facts) -> list[Failure]:
    """Every failure, in log order: source, line, then the best statement first."""
    return list(facts.derived("failures", _failures))


def _failures(facts: Facts) -> tuple[Failure, ...]:
    sources: dict[str, int] = {}
    found = []
    for fact in facts.all:
        message = _message(fact)
        if message is None:
            continue
        if isinstance(fact, C10dSocketError) and store_served_after(facts, fact.cite):
            continue
        if isinstance(fact, PythonTraceback) and fact.message_lines:
            tail = fact.message_lines[-1].strip()
            if tail and tail not in message:
                message = f"{message} ... {tail}"
        launcher = isinstance(fact, ChildFailure | WorkerExit | LauncherSignal) or (
            isinstance(fact, PythonTraceback) and (fact.exc_type or "").startswith(_LAUNCHER_EXC)
        )
        source = sources.setdefault(fact.cite.source, len(sources))
        key = (source, fact.cite.line, _priority(fact))
        found.append((key, fact, message, launcher))
    found.sort(key=lambda item: item[0])
    found = _without_quotes(found)
    told: set[tuple[str, int]] = set()  # (source, rank): the rank said a peer is gone
    out = []
    for order, (_, fact, message, launcher) in enumerate(found):
        # (the launcher's word about a rank is not the rank's own: it keeps its reading)
        who = (fact.cite.source, fact.rank) if fact.rank is not None and not launcher else None
        # what a rank raises after it saw its peer go (NCCL's 'Connection closed by remote
        # peer', then 'unhandled system error') is the peer's death, not a fault of its own
        cascade = _cascade(fact, message) or (who is not None and who in told)
        if who is not None and peer_gone(message):
            told.add(who)
        out.append(
            Failure(fact, order, message[:400], cascade, launcher, waiting=_waiting(fact, message))
        )
    return tuple(out)


def _statement(fact: Fact, message: str) -> tuple[type[Fact], str]:
    """What a failure says: its fact's type and its category where it has one, else its
    message."""
    category = getattr(fact, "category", None)
    return type(fact), category if isinstance(category, str) else message


def _without_quotes(
    found: list[tuple[tuple[int, int, int], Fact, str, bool]],
) -> list[tuple[tuple[int, int, int], Fact, str, bool]]:
    """The failures, less a reporter's sentence (a title, a line of prose) that quotes a
    failure the same source shows later as output: the quote is not a failure of its own,
    and the output is the line that proves it (a title "... Socket Timeout" above c10d's
    ``store->get('0') got error: Socket Timeout``). A line with a rank or a time is a
    rank's output, whatever its words."""
    last: dict[tuple[int, tuple[type[Fact], str]], int] = {}
    for key, fact, message, _ in found:
        last[(key[0], _statement(fact, message))] = key[1]
    kept = []
    for item in found:
        (source, line, _), fact, message, _ = item
        later = last[(source, _statement(fact, message))]
        quote = fact.rank is None and fact.time_s is None and is_prose(fact.cite.text)
        if quote and later > line:
            continue
        kept.append(item)
    return kept


def launcher_root(facts: Facts) -> Failure | None:
    """The child failure torchrun's summary marks as the root cause, if any.

    Not a worker the launcher stopped itself (SIGTERM, SIGINT): torchrun orders its failures
    by a timestamp of one-second grain, so on a busy host the survivor it terminated can tie
    with the worker that died first and be named; the child that failed of its own is then
    the root. For the same reason a survivor that exited on its own (code 1, after its peer's
    connection reset) does not outrank a worker a crash signal killed in the same second: the
    signal is the fault, the exit its echo.
    """
    children = [f for f in failures_of(facts) if isinstance(f.fact, ChildFailure)]
    root = next(
        (f for f in children if isinstance(f.fact, ChildFailure) and f.fact.root_cause), None
    )
    if root is None:
        return None
    if root.cascade:
        return next((f for f in children if not f.cascade), root)
    when = root.fact.time_text if isinstance(root.fact, ChildFailure) else None
    if not _killed(root.fact) and when is not None:
        tied = (
            f
            for f in children
            if isinstance(f.fact, ChildFailure) and _killed(f.fact) and f.fact.time_text == when
        )
        return next(tied, root)
    return root


def _by_time(ranked: Sequence[Failure]) -> Failure | None:
    """The earliest failure by time, when time can order them all, else ``None``.

    Time orders failures only when each one is placed on one clock: it has a
    timestamp on that clock, or its rank has a timed failure of this tier (the
    untimed traceback printed beside a timed watchdog line). A failure with no
    time of its own or of its rank could have come at any moment: it does not
    lose to a timed one by default.
    """
    clocks = Counter(f.fact.clock for f in ranked if f.fact.time_s is not None)
    if not clocks:
        return None
    clock = clocks.most_common(1)[0][0]
    when: dict[int | None, float] = {}
    for f in ranked:
        if f.fact.time_s is not None and f.fact.clock == clock:
            when[f.rank] = min(when.get(f.rank, f.fact.time_s), f.fact.time_s)
    if any(f.rank not in when or f.rank is None for f in ranked if f.fact.time_s is None):
        return None
    if any(f.fact.time_s is not None and f.fact.clock != clock for f in ranked):
        return None
    first: dict[int | None, int] = {}
    for f in ranked:
        first[f.rank] = min(first.get(f.rank, f.order), f.order)
    rank = min(when, key=lambda r: (when[r], first[r]))
    timed = [f for f in ranked if f.rank == rank and f.fact.time_s is not None]
    return min(timed, key=lambda f: (f.fact.time_s or 0.0, f.order))


def interruption(failures: Sequence[Failure]) -> Failure | None:
    """The user's Ctrl-C/SIGINT, when that is all that stopped the job (else ``None``).

    A job stopped by its user has not failed; the interrupt is not a failure
    to chase. An error or a timeout on a rank (a hang the user gave up on)
    is one, and wins.
    """
    interrupts = [f for f in failures if f.interrupt]
    if not interrupts:
        return None
    if any(f.tier < 2 and not f.launcher and not f.interrupt for f in failures):
        return None
    if any(
        f.launcher and isinstance(f.fact, ChildFailure | WorkerExit) and _crash_signal(f.fact)
        for f in failures
    ):
        return None
    return interrupts[0]


#: Signals that end a worker from outside its own code paths: the kernel's OOM killer, a
#: native crash. Not SIGABRT: ProcessGroupNCCL's watchdog aborts a rank whose collective
#: timed out, so the timeout is the first failure there.
_KILLING = frozenset({"SIGKILL", "SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE"})


def _killed(fact: Fact) -> bool:
    """A child the launcher says the kernel or a native crash killed."""
    return isinstance(fact, ChildFailure) and fact.signal_name in _KILLING


def deaths_by(facts: Facts, *signals: str) -> list[ChildFailure | WorkerExit]:
    """The workers a launcher (or ``nccl-doctor run``) says one of ``signals`` ended
    (``SIGBUS``: the parsers name the signal of every negative exit code)."""
    exits: tuple[ChildFailure | WorkerExit, ...] = (*facts.of(ChildFailure), *facts.of(WorkerExit))
    return [e for e in exits if e.signal_name in signals]


def _crash_signal(fact: ChildFailure | WorkerExit) -> bool:
    return fact.signal_name not in (None, "SIGINT", "SIGTERM", "SIGHUP")


def first_failure(facts: Facts) -> tuple[Failure | None, str | None]:
    """The earliest real failure, and a note when it corrects the launcher.

    Causal precedence first (an error that names the fault, then a timeout,
    then the cascade), then time where time can order the failures of that
    tier, else the launcher's root cause, else log order. A job only
    interrupted by its user has no first failure: the note says so.
    """
    return facts.derived("first_failure", _first_failure)


def _first_failure(facts: Facts) -> tuple[Failure | None, str | None]:
    failures = failures_of(facts)
    if not failures:
        return None, None
    stopped = interruption(failures)
    if stopped is not None:
        ranks = sorted({f.rank for f in failures if f.interrupt and f.rank is not None})
        where = f" (ranks {', '.join(map(str, ranks))})" if len(ranks) > 1 else ""
        where = f" (rank {ranks[0]})" if len(ranks) == 1 else where
        return None, (
            f"the job was stopped by its user (Ctrl-C / SIGINT{where}, {stopped.fact.cite.source}:"
            f"{stopped.fact.cite.line}): an interruption, not a failure to diagnose"
        )
    launcher = launcher_root(facts)
    ranked = [f for f in failures if not f.cascade and not f.launcher]
    if not ranked:
        # only the survivors' cascade on the ranks: the launcher saw who died
        if launcher is not None:
            return launcher, None
        ranked = [f for f in failures if f.launcher and not f.cascade] or failures
    tier = min(f.tier for f in ranked)
    if tier > 0 and launcher is not None and _killed(launcher.fact):
        return launcher, None  # a worker a signal killed names its fault; the rest waited
    ranked = [f for f in ranked if f.tier == tier]
    how = "time"
    chosen = _by_time(ranked)
    if chosen is None and launcher is not None and launcher.rank is not None:
        how = "launcher"
        chosen = next((f for f in ranked if f.rank == launcher.rank), None)
    if chosen is None:
        how = "order"
        chosen = min(ranked, key=lambda f: f.order)
    if chosen.rank is None and launcher is not None and all(f.rank is None for f in ranked):
        # nothing on the ranks says whose it is (an error before the rank prefixes
        # start): the launcher's root cause is the best attribution there is
        chosen = replace(chosen, launcher_rank=launcher.rank)
    return chosen, _note(chosen, ranked, launcher, how)


def _note(
    chosen: Failure, ranked: Sequence[Failure], launcher: Failure | None, how: str
) -> str | None:
    """Say how the first failure was chosen where the evidence could be read another way."""
    ranks = sorted({f.rank for f in ranked if f.rank is not None})
    if (
        launcher is not None
        and launcher.rank is not None
        and chosen.rank is not None
        and chosen.rank != launcher.rank
    ):
        why = {
            "time": "the logs show rank {r} failed first",
            "order": "rank {r}'s error comes first in the logs",
        }.get(how, "rank {r} failed first")
        if chosen.tier == 0 and launcher.rank not in ranks:
            why = "rank {r}'s error names the fault; rank {l}'s is its consequence"
        elif chosen.tier == 1 and launcher.rank not in ranks:
            why = "rank {r} timed out waiting; rank {l}'s error followed (the cascade)"
        return (
            f"the launcher's Root Cause names rank {launcher.rank} (the first to exit); "
            + why.format(r=chosen.rank, l=launcher.rank)
        )
    if how != "time" and len(ranks) > 1:
        shown = ", ".join(map(str, ranks[:8])) + (" ..." if len(ranks) > 8 else "")
        by = "the launcher's Root Cause" if how == "launcher" else "the order of the logs"
        return (
            f"ranks {shown} failed with no timestamps on one clock to order them; "
            f"rank {chosen.rank} is taken as the first by {by}"
        )
    return None
