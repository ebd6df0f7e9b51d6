"""Helpers shared by the ``net.*`` rules: failures, RDMA completion errors.

How many nodes the job spans, which decides whether a network fault can be
the cause at all, is read in :mod:`nccl_doctor.facts.span`.
"""

from __future__ import annotations

from dataclasses import dataclass

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.catalogue import message_of
from nccl_doctor.facts.nccl import (
    NcclCommInit,
    NcclTestFailure,
    NcclWarn,
)
from nccl_doctor.facts.run import (
    ChildFailure,
    CppException,
    NcclErrorReport,
    PythonTraceback,
    WorkerExit,
)
from nccl_doctor.facts.store import Facts
from nccl_doctor.knowledge.nccl_results import from_message
from nccl_doctor.rules.launch._common import Death, deaths
from nccl_doctor.signs.net import IB_COMPLETION


def failure_cites(facts: Facts) -> list[Cite]:
    """Lines that show the job failed: NCCL error reports, tracebacks, failed tests, exits."""
    cites: list[Cite] = [
        fact.cite
        for fact in (
            *facts.of(NcclErrorReport),
            *facts.of(NcclTestFailure),
            *facts.of(CppException),
            *facts.of(ChildFailure),
            *facts.of(WorkerExit),
        )
    ]
    cites += [
        tb.cite
        for tb in facts.of(PythonTraceback)
        if tb.exc_name and not tb.exc_name.endswith("Warning")
    ]
    return cites


def crashed(facts: Facts) -> bool:
    """Whether a process was killed by a signal (its peers' socket errors are the cascade)."""
    workers = facts.of(WorkerExit)
    children = facts.of(ChildFailure)
    return any(e.signal_number is not None or (e.exitcode or 0) < 0 for e in workers) or any(
        e.signal_number is not None or (e.exitcode or 0) < 0 for e in children
    )


def init_completed(facts: Facts) -> bool:
    """Whether some communicator finished its init (so bootstrap worked there)."""
    return any(f.phase == "complete" for f in facts.of(NcclCommInit))


def plural(n: int, word: str) -> str:
    """``1 port``, ``3 ports``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def hca_list(value: str) -> tuple[list[str], bool, bool]:
    """An NCCL_IB_HCA / NCCL_SOCKET_IFNAME value: (names without ports, excluded, exact)."""
    text = value.strip()
    excluded = text.startswith("^")
    text = text.removeprefix("^")
    exact = text.startswith("=")
    text = text.removeprefix("=")
    names = [t.strip().split(":")[0] for t in text.split(",") if t.strip()]
    return names, excluded, exact


def name_matches(name: str, wanted: list[str], exact: bool) -> bool:
    """Whether device/interface ``name`` is one NCCL selects for the list ``wanted``."""
    return any(name == w if exact else name.startswith(w) for w in wanted if w)


@dataclass(frozen=True, slots=True)
class Completions:
    """RDMA completion errors: NCCL's WARNs that carry a status, and the same message quoted
    elsewhere (PyTorch's error, a pasted line) that is no warning's own line or text."""

    warns: list[NcclWarn]
    #: (line, ibv_wc_status, peer) of each quoted completion
    quoted: list[tuple[Cite, int, str | None]]

    def of_status(self, status: int) -> list[Cite]:
        """The lines of the completions with ``status``, warnings first."""
        return [w.cite for w in self.warns if w.ib_status == status] + [
            cite for cite, code, _ in self.quoted if code == status
        ]


#: The calls that register memory with the NIC, by their names' starts: verbs'
#: (``ibv_reg_mr``, ``ibv_reg_dmabuf_mr``) and libfabric's (``fi_mr_regattr``, which NCCL's
#: libfabric plugin calls).
REGISTERS = ("ibv_reg", "fi_mr_reg")


def completions(facts: Facts) -> Completions:
    """The RDMA completion errors of the evidence, each once (see :class:`Completions`)."""
    warns = [w for w in facts.of(NcclWarn) if w.ib_status is not None]
    seen = {(w.cite.source, w.cite.line) for w in warns}
    messages = {w.message for w in warns if w.message}  # thousands of ranks print a few
    quoted: list[tuple[Cite, int, str | None]] = []
    for hit in facts.seen(IB_COMPLETION, prose=False):
        key = (hit.cite.source, hit.cite.line)
        if key in seen:
            continue  # a warning's own line
        text = hit.cite.text.strip()
        if any(text in m or m in text for m in messages):
            continue
        seen.add(key)
        quoted.append((hit.cite, int(hit.match["code"]), hit.match["peer"]))
    return Completions(warns, quoted)


#: The symptom classes of an error that is itself the network's or a peer's (a worker that
#: died of one was not the first to go).
_COMMUNICATION = frozenset(
    {
        "nccl_remote",
        "nccl_system",
        "connection",
        "rdma_completion",
        "peer_lost",
        "collective_timeout",
        "store_timeout",
        "node_lost",
    }
)


def died_first(facts: Facts) -> Death | None:
    """The first worker to die, where it died of an error of its own: a Python exception
    that names no NCCL result and is no message of the network or of a lost peer. Sends
    to it that went unacknowledged (status 12/13, flushed) followed its death."""
    found = deaths(facts)
    if not found:
        return None
    first = found[0]
    if first.inferred or first.nccl_failed or not first.error:
        return None
    if from_message(first.error) is not None:  # NCCL's own result: it failed in NCCL
        return None
    sig = message_of(first.error)
    if sig is not None and sig.symptom in _COMMUNICATION:
        return None
    return first
