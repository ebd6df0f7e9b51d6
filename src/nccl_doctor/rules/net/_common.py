"""Helpers shared by the ``net.*`` rules: how many nodes a job spans, env values, failures.

Whether a network fault can be the cause depends first on whether the job
crosses hosts at all: NCCL uses sockets or IB/RoCE only between nodes (and
for its bootstrap). :func:`span_of` weighs what the evidence says about the
node count, machine output above a person's words.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.host import EnvVar
from nccl_doctor.facts.nccl import (
    NcclCommInit,
    NcclCommLayout,
    NcclEnvSetting,
    NcclLogFact,
    NcclTestFailure,
    NcclTestRank,
    NcclTransport,
    NcclWarn,
)
from nccl_doctor.facts.run import (
    ChildFailure,
    CppException,
    NcclErrorReport,
    PythonTraceback,
    WorkerExit,
)
from nccl_doctor.facts.signs import Sign
from nccl_doctor.facts.store import Facts
from nccl_doctor.signs.net import (
    HOSTFILE,
    IB_COMPLETION,
    MPI_HOSTS,
    NNODES,
    NPROC_PER_NODE,
    PROSE_MULTI_NODE,
    PROSE_SINGLE_NODE,
    SETTINGS,
    SLURM_NODES,
    STANDALONE,
)

F = TypeVar("F", bound=Fact)

_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "", "unknown"}


@dataclass(slots=True)
class Span:
    """What the evidence says about the job's node count.

    ``multi`` is ``True`` (spans nodes), ``False`` (one node) or ``None``
    (unknown); ``machine`` whether machine output (not prose) decided it;
    ``why`` a short phrase for summaries; ``cites`` the lines that say so.
    """

    multi: bool | None
    machine: bool
    why: str
    cites: list[Cite] = field(default_factory=list)
    hosts: tuple[str, ...] = ()


def real_hosts(facts: Facts) -> tuple[str, ...]:
    """Hostnames the NCCL log, nccl-tests and launcher facts name, without localhost."""
    hosts: dict[str, None] = {}
    for fact in (*facts.of(NcclLogFact), *facts.of(NcclTestRank)):
        if fact.host and fact.host.lower() not in _LOCAL_HOSTS:
            hosts[fact.host] = None
    return tuple(hosts)


def span_of(facts: Facts) -> Span:
    """How many nodes the job spans, by the strongest evidence present."""
    layouts = facts.of(NcclCommLayout)
    multi_layout = [f for f in layouts if f.n_nodes is not None and f.n_nodes > 1]
    if multi_layout:
        f = multi_layout[0]
        return Span(True, True, f"NCCL reports nNodes {f.n_nodes}", [f.cite])
    hosts = real_hosts(facts)
    if len(hosts) > 1:
        first = {}
        for fact in (*facts.of(NcclLogFact), *facts.of(NcclTestRank)):
            if fact.host in hosts and fact.host not in first:
                first[fact.host] = fact.cite
        shown = ", ".join(hosts[:4]) + (" ..." if len(hosts) > 4 else "")
        return Span(
            True,
            True,
            f"ranks run on {len(hosts)} hosts ({shown})",
            list(first.values())[:3],
            hosts,
        )
    for hit in facts.seen(NNODES):
        n = int(hit.match["m"] or hit.match["n"])
        if n > 1:
            return Span(True, True, f"launched with --nnodes {n}", [hit.cite])
    for hit in facts.seen(MPI_HOSTS):
        return Span(True, True, "mpirun lists several hosts", [hit.cite])
    for hit in facts.seen(SLURM_NODES):
        n = int(hit.match["n"])
        if n > 1:
            return Span(True, True, f"launched on {n} nodes", [hit.cite])
    transports = [t for t in facts.of(NcclTransport) if t.kind == "NET"]
    if transports:
        t = transports[0]
        return Span(True, True, f"ranks talk over {t.transport}", [t.cite])
    single = _single(facts, layouts)
    if single is not None:
        return single
    for hit in facts.seen(HOSTFILE):
        return Span(True, True, "launched with a hostfile", [hit.cite])
    prose_multi = facts.seen(PROSE_MULTI_NODE)
    if prose_multi:
        hit = prose_multi[0]
        return Span(True, False, f"the report says {hit.match.group(0)!r}", [hit.cite], hosts)
    prose_single = facts.seen(PROSE_SINGLE_NODE)
    if prose_single:
        hit = prose_single[0]
        return Span(False, False, f"the report says {hit.match.group(0)!r}", [hit.cite], hosts)
    if len(hosts) == 1:
        return Span(False, False, f"every rank shown runs on {hosts[0]}", [], hosts)
    return Span(None, False, "the node count is not shown")


def _single(facts: Facts, layouts: tuple[NcclCommLayout, ...]) -> Span | None:
    """Machine evidence of a one-node job, else ``None``."""
    counted = [f for f in layouts if f.n_nodes is not None]
    if counted and all(f.n_nodes == 1 for f in counted):
        return Span(False, True, "NCCL reports nNodes 1", [counted[0].cite])
    for hit in facts.seen(NNODES):
        return Span(False, True, "launched with --nnodes 1", [hit.cite])
    for hit in facts.seen(STANDALONE):
        return Span(False, True, "launched with --standalone", [hit.cite])
    spawned = [w for w in facts.of(WorkerExit) if w.source == "spawn"]
    if spawned:
        return Span(
            False,
            True,
            "ranks started by torch.multiprocessing.spawn on one host",
            [spawned[0].cite],
        )
    for hit in facts.seen(NPROC_PER_NODE):
        if not hit.prose:
            return Span(False, True, "launched with --nproc-per-node only (one node)", [hit.cite])
    return None


def env_values(facts: Facts, name: str) -> list[tuple[str, Cite]]:
    """Values the evidence gives ``name`` (env dumps, exports, ``-x NAME=v``, NCCL's echo).

    ``name`` is one of the variables :data:`nccl_doctor.signs.net.SETTINGS` reads
    in free text (``NAME=value`` on any line).
    """
    out: list[tuple[str, Cite]] = [
        (e.value, e.cite) for e in facts.of(EnvVar) if e.name == name and e.value is not None
    ]
    out += [
        (s.value, s.cite)
        for s in facts.of(NcclEnvSetting)
        if s.name == name and s.value is not None
    ]
    out += [(hit.match["value"], hit.cite) for hit in facts.seen(SETTINGS[name])]
    return list(dict.fromkeys(out))


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


def showing(facts: Facts, sign: Sign, items: Sequence[F]) -> list[F]:
    """The facts of ``items`` on whose cited line (or message) ``sign`` shows, in order."""
    at = {(h.cite.source, h.cite.line) for h in facts.seen_on(sign, items)}
    return [i for i in items if (i.cite.source, i.cite.line) in at]


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
