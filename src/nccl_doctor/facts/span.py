"""How many nodes the job spans: the one reader of the node count.

Whether a network fault can be the cause depends first on whether the job
crosses hosts at all (NCCL uses sockets or IB/RoCE only between nodes, and
for its bootstrap); the world size multiplies ``--nproc-per-node`` by the
launch's node count; the differential weighs network causes down on one
node. All three read the count here. :func:`span_of` weighs the evidence,
machine output above a person's words: NCCL's own ``nNodes``, the hosts
its lines name, the launch (``--nnodes``, ``mpirun -H``, Slurm's node
count, ``--standalone``, a hostfile), NET channels, then sentences.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nccl_doctor.facts.base import Cite, local_alias
from nccl_doctor.facts.nccl import (
    NcclCommLayout,
    NcclLogFact,
    NcclTestRank,
    NcclTransport,
    NcclWarn,
)
from nccl_doctor.facts.run import WorkerExit
from nccl_doctor.facts.store import Facts, Hit
from nccl_doctor.signs.launch import NNODES, SRUN_LAUNCHER, TASKS_PER_NODE
from nccl_doctor.signs.net import (
    HOSTFILE,
    MPI_HOSTS,
    NPROC_PER_NODE,
    PER_NODE,
    PROSE_MULTI_NODE,
    PROSE_SINGLE_NODE,
    SLURM_NODES,
    STANDALONE,
)


@dataclass(slots=True)
class Span:
    """What the evidence says about the job's node count.

    ``multi`` is ``True`` (spans nodes), ``False`` (one node) or ``None``
    (unknown); ``machine`` whether machine output (not prose) decided it;
    ``why`` a short phrase for summaries; ``cites`` the lines that say so;
    ``count`` the number of nodes where the evidence states one (at least
    that many where it is the hosts the lines name); ``said`` whether a
    person's words decided it.
    """

    multi: bool | None
    machine: bool
    why: str
    cites: list[Cite] = field(default_factory=list)
    hosts: tuple[str, ...] = ()
    count: int | None = None
    said: bool = False


@dataclass(frozen=True, slots=True)
class Launched:
    """A launch's ``--nnodes``: ``least`` nodes, at most ``most`` for an elastic ``MIN:MAX``."""

    least: int
    most: int | None
    hit: Hit

    @property
    def fixed(self) -> int | None:
        """The node count when the launch fixes it (``--nnodes 2``), ``None`` for a range."""
        return self.least if self.most is None else None


def launches(facts: Facts) -> tuple[Launched, ...]:
    """Every node count a launch states with a number (``--nnodes``, ``--num_machines``,
    ``--num_nodes``), machine output before sentences."""
    found: list[Launched] = []
    for hit in sorted(facts.seen(NNODES), key=lambda h: h.prose):
        least, most = hit.match["n"], hit.match["m"]
        if least is not None:
            found.append(Launched(int(least), int(most) if most else None, hit))
    return tuple(found)


def nodes_by_variable(facts: Facts) -> bool:
    """Whether a launch gives ``--nnodes`` but no number (``--nnodes=$SLURM_NNODES``)."""
    return not launches(facts) and facts.saw(NNODES)


def launched(facts: Facts) -> Launched | None:
    """The first ``--nnodes`` the evidence states (:func:`launches`)."""
    found = launches(facts)
    return found[0] if found else None


def real_hosts(facts: Facts) -> tuple[str, ...]:
    """Hostnames the NCCL log, nccl-tests and launcher facts name, without localhost."""
    hosts: dict[str, None] = {}
    for fact in (*facts.of(NcclLogFact), *facts.of(NcclTestRank)):
        if fact.host and not local_alias(fact.host):
            hosts[fact.host] = None
    return tuple(hosts)


def nccl_local_ranks(facts: Facts) -> int | None:
    """The most ranks NCCL's communicator layout lines put on one node, if any say."""
    return max((x.local_ranks for x in facts.of(NcclCommLayout) if x.local_ranks), default=None)


def launched_per_node(facts: Facts) -> int | None:
    """The workers a launch starts on each node, where every line that gives a count agrees
    (``None`` where none gives one or they differ)."""
    counts = {int(next(v for v in h.match.groups() if v is not None)) for h in facts.seen(PER_NODE)}
    return counts.pop() if len(counts) == 1 else None


def nested_srun(facts: Facts) -> tuple[Hit, Hit] | None:
    """Slurm's ``--ntasks-per-node`` above one (every such count: an srun line's own ``=1``
    overrides #SBATCH's 8) with srun running a launcher that starts a worker per GPU itself:
    the lines that say so. Each task then starts its own set of workers, so ranks are not laid
    out in node blocks."""
    tasks = facts.seen(TASKS_PER_NODE)
    inside = facts.seen(SRUN_LAUNCHER)
    if tasks and inside and all(int(h.match["n"]) > 1 for h in tasks):
        return tasks[0], inside[0]
    return None


def local_ranks(facts: Facts) -> int | None:
    """The ranks on one node: NCCL's own layout, else what the launch starts per node."""
    return nccl_local_ranks(facts) or launched_per_node(facts)


def span_of(facts: Facts) -> Span:
    """How many nodes the job spans, by the strongest evidence present (computed once)."""
    return facts.derived("span", _span)


def _span(facts: Facts) -> Span:
    layouts = facts.of(NcclCommLayout)
    multi_layout = [f for f in layouts if f.n_nodes is not None and f.n_nodes > 1]
    if multi_layout:
        f = max(multi_layout, key=lambda x: x.n_nodes or 0)
        return Span(True, True, f"NCCL reports nNodes {f.n_nodes}", [f.cite], count=f.n_nodes)
    hosts = real_hosts(facts)
    if len(hosts) > 1:
        return _hosts(facts, hosts)
    for launch in launches(facts):
        if (launch.most or launch.least) > 1:
            why = f"launched with --nnodes {launch.most or launch.least}"
            return Span(True, True, why, [launch.hit.cite], count=launch.fixed)
    for hit in facts.seen(MPI_HOSTS):
        return Span(
            True,
            True,
            "mpirun lists several hosts",
            [hit.cite],
            count=len(hit.match["h"].split(",")),
        )
    for hit in facts.seen(SLURM_NODES):
        n = int(hit.match["n"])
        if n > 1:
            return Span(True, True, f"launched on {n} nodes", [hit.cite], count=n)
    transports = [t for t in facts.of(NcclTransport) if t.kind == "NET"]
    if transports:
        t = transports[0]
        return Span(True, True, f"ranks talk over {t.transport}", [t.cite])
    # an RDMA completion from a peer's address: the IB/RoCE transport runs between nodes
    completions = [w for w in facts.of(NcclWarn) if w.ib_status is not None and w.peer]
    if completions:
        w = completions[0]
        why = f"NCCL's IB transport got a completion from peer {w.peer}"
        return Span(True, True, why, [w.cite])
    single = _single(facts, layouts)
    if single is not None:
        return single
    for hit in facts.seen(HOSTFILE):
        return Span(True, True, "launched with a hostfile", [hit.cite])
    prose_multi = facts.seen(PROSE_MULTI_NODE)
    if prose_multi:
        hit = prose_multi[0]
        why = f"the report says {hit.match.group(0)!r}"
        return Span(True, False, why, [hit.cite], hosts, said=True)
    prose_single = facts.seen(PROSE_SINGLE_NODE)
    if prose_single:
        hit = prose_single[0]
        why = f"the report says {hit.match.group(0)!r}"
        return Span(False, False, why, [hit.cite], hosts, 1, said=True)
    if len(hosts) == 1:
        return Span(False, False, f"every rank shown runs on {hosts[0]}", [], hosts, 1)
    return Span(None, False, "the node count is not shown")


def _hosts(facts: Facts, hosts: tuple[str, ...]) -> Span:
    first: dict[str, Cite] = {}
    for fact in (*facts.of(NcclLogFact), *facts.of(NcclTestRank)):
        if fact.host in hosts and fact.host not in first:
            first[fact.host] = fact.cite
    shown = ", ".join(hosts[:4]) + (" ..." if len(hosts) > 4 else "")
    why = f"ranks run on {len(hosts)} hosts ({shown})"
    return Span(True, True, why, list(first.values())[:3], hosts, len(hosts))


def _single(facts: Facts, layouts: tuple[NcclCommLayout, ...]) -> Span | None:
    """Machine evidence of a one-node job, else ``None``."""
    counted = [f for f in layouts if f.n_nodes is not None]
    if counted and all(f.n_nodes == 1 for f in counted):
        return Span(False, True, "NCCL reports nNodes 1", [counted[0].cite], count=1)
    for launch in launches(facts):
        return Span(False, True, "launched with --nnodes 1", [launch.hit.cite], count=1)
    for hit in facts.seen(STANDALONE):
        return Span(False, True, "launched with --standalone", [hit.cite], count=1)
    spawned = [w for w in facts.of(WorkerExit) if w.source == "spawn"]
    if spawned:
        why = "ranks started by torch.multiprocessing.spawn on one host"
        return Span(False, True, why, [spawned[0].cite], count=1)
    if facts.saw(NNODES):
        return None  # a node count given by a variable (--nnodes=$SLURM_NNODES): not one node
    for hit in facts.seen(NPROC_PER_NODE):
        if not hit.prose:
            why = "launched with --nproc-per-node only (one node)"
            return Span(False, True, why, [hit.cite], count=1)
    return None
