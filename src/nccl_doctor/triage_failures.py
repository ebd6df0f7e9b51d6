"""Failures in the evidence, for finding the first one: which are the cascade.

A failure is a fact that says something broke on a rank: a traceback, an
NCCL error report, a CUDA error, a timeout, a store or rendezvous error. The
cascade is what the survivors print after another rank broke: the peer closed
or reset the connection, the communicator was aborted, the launcher's SIGTERM.
The launcher's own lines (child failures, exits) come after the fact.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.literals import prefiltered
from nccl_doctor.facts.nccl import NcclWarn
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
from nccl_doctor.facts.store import Facts

#: What survivors print once a peer is gone, or once they are told to stop.
CASCADE_TEXT = re.compile(
    r"Connection (?:closed|reset) by (?:remote )?peer|Broken pipe|"
    r"communicator (?:was|has been) aborted|process group (?:was|has been) aborted|"
    r"remote process exited|SignalException|Signals?\.SIGTERM|received signal SIGTERM|"
    r"Got signal: ?15|KeyboardInterrupt|ProcessGroupNCCL is shutting down|"
    r"Terminating the process after|another rank failed|peer (?:rank )?\d* ?(?:closed|exited)",
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
        "dump_preparing",
        "dump_finished",
        "dump_disabled",
    }
)

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
    #: the rank the launcher's summary names, for a failure printed without one
    launcher_rank: int | None = None

    @property
    def rank(self) -> int | None:
        """The rank that failed, if known."""
        return self.fact.rank if self.fact.rank is not None else self.launcher_rank

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
    if isinstance(fact, NcclErrorReport | CudaOutOfMemory | RendezvousTimeout):
        return fact.message or fact.cite.text.strip()
    if isinstance(fact, CudaError):
        if fact.kind == "async_note":
            return None
        code = f" {fact.code}" if fact.code is not None else ""
        return f"CUDA error{code}: {fact.error}" if fact.error else fact.cite.text.strip()
    if isinstance(fact, NcclWarn):
        return fact.message if _WARN_FAILURE.search(fact.message) else None
    if isinstance(fact, C10dSocketError) and _RETRIED.search(fact.cite.text):
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
        failed = fact.exitcode not in (None, 0) or fact.signal_name is not None
        return fact.cite.text.strip() if failed else None
    if isinstance(fact, LauncherSignal):
        return fact.cite.text.strip()
    return None


def _cascade(fact: Fact, message: str) -> bool:
    if isinstance(fact, ChildFailure | WorkerExit) and fact.signal_name in ("SIGTERM", "SIGINT"):
        return True
    if isinstance(fact, DistributedError):
        return fact.category in CASCADE_CATEGORIES
    if isinstance(fact, LauncherSignal):
        return True
    return bool(_cascade_text(message))


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


def failures_of(facts: Facts) -> list[Failure]:
    """Every failure, in log order: source, line, then the best statement first."""
    return list(facts.derived(_failures))


def _failures(facts: Facts) -> tuple[Failure, ...]:
    sources: dict[str, int] = {}
    found = []
    for fact in facts.all:
        message = _message(fact)
        if message is None:
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
    return tuple(
        Failure(fact, order, message[:400], _cascade(fact, message), launcher)
        for order, (_, fact, message, launcher) in enumerate(found)
    )


def launcher_root(facts: Facts) -> Failure | None:
    """The child failure torchrun's summary marks as the root cause, if any."""
    for failure in failures_of(facts):
        if isinstance(failure.fact, ChildFailure) and failure.fact.root_cause:
            return failure
    return None
