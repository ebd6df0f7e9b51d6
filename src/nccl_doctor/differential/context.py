"""The facts that tell causes apart, and how each shifts the weights.

An expert who hears "NCCL system error" asks: in a container? how big is
/dev/shm? several GPUs on one node? several nodes? InfiniBand? did
``NCCL_P2P_DISABLE=1`` help? another process on the GPUs? Each question is a
:class:`Shift`: when its condition holds it multiplies one id's weight, and it
says why. The answers come from typed facts; the reporter's own sentences
(prose lines) are the one place words are still matched here, for the cues
nothing else types (a workaround that worked, "inside docker", "hangs").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.gpu import GpuProcess
from nccl_doctor.facts.host import EnvVar
from nccl_doctor.facts.job import job_pids, world_size
from nccl_doctor.facts.live import HostRuntime, ShmInfo
from nccl_doctor.facts.nccl import NcclCommLayout, NcclNet
from nccl_doctor.facts.net import IbPort
from nccl_doctor.facts.software import SoftwareVersions
from nccl_doctor.facts.store import Facts

_TRUE = frozenset({"1", "true", "yes", "on"})
_CONTAINER_SAID = re.compile(
    r"\b(?:docker|container|kubernetes|k8s|pod|singularity|apptainer|enroot)\b", re.IGNORECASE
)
_P2P_WORKED = re.compile(
    r"NCCL_P2P_(?:DISABLE|LEVEL)\s*=\s*\S+.{0,80}\b(?:work|fix|solv|help|resolv|runs?\b|fine)"
    r"|\b(?:work|fix|solv|help|resolv|fine)\w*\b.{0,80}NCCL_P2P_(?:DISABLE|LEVEL)",
    re.IGNORECASE,
)
_HANG_SAID = re.compile(
    r"\b(?:hangs?|hanging|hung|freez\w*|frozen|stuck|no progress|deadlock\w*"
    r"|never (?:ends|returns|finishes))\b",
    re.IGNORECASE,
)
_SUSPEND_SAID = re.compile(r"\b(?:suspend\w*|resum(?:e|ed)|hibernat\w*|woke up)\b", re.IGNORECASE)
_ONE_NODE_SAID = re.compile(
    r"\bonly (?:on|with) (?:one|a single|this|that|node|machine|host)\b", re.IGNORECASE
)


@dataclass(frozen=True, slots=True)
class Context:
    """What the evidence says about the job's setting; ``None`` where it says nothing."""

    container: bool | None = None
    shm_mib: int | None = None
    local_ranks: int | None = None
    nodes: int | None = None
    ib: bool | None = None
    p2p_workaround: Cite | None = None
    p2p_disabled: bool = False
    shm_disabled: bool = False
    ib_disabled: bool = False
    foreign_gpu_processes: int = 0
    wsl: bool = False
    one_node_only: bool = False
    after_suspend: bool = False
    hang_said: Cite | None = None


def _env(facts: Facts, name: str) -> str | None:
    for var in facts.of(EnvVar):
        if var.name == name:
            return (var.value or "").strip().lower()
    return None


def _first_prose(facts: Facts, pattern: re.Pattern[str]) -> Cite | None:
    hits = facts.search(pattern, prose=True)
    return next((h.cite for h in hits if h.prose), None)


def context_of(facts: Facts) -> Context:
    """Read the discriminating facts once."""
    runtime = next(iter(facts.of(HostRuntime)), None)
    container: bool | None = runtime.container if runtime is not None else None
    if container is None and _first_prose(facts, _CONTAINER_SAID) is not None:
        container = True
    shm = [s.size_mib for s in facts.of(ShmInfo) if s.size_mib is not None]
    layouts = facts.of(NcclCommLayout)
    local = max((x.local_ranks for x in layouts if x.local_ranks), default=None)
    nodes = max((x.n_nodes for x in layouts if x.n_nodes), default=None)
    if nodes is None and len(facts.hosts) > 1:
        nodes = len(facts.hosts)
    if local is None and nodes in (None, 1) and len(facts.hosts) <= 1:
        local = world_size(facts)
    nets = facts.of(NcclNet)
    ib: bool | None = None
    if (
        facts.of(IbPort)
        or any(n.ib_devices for n in nets)
        or any((n.net or "") == "IB" for n in nets)
    ):
        ib = True
    elif any((n.net or "") == "Socket" for n in nets):
        ib = False
    pids = job_pids(facts)
    foreign = {p.pid for p in facts.of(GpuProcess) if pids and p.pid not in pids}
    wsl = bool(runtime is not None and runtime.wsl) or any(
        s.wsl for s in facts.of(SoftwareVersions)
    )
    return Context(
        container=container,
        shm_mib=min(shm) if shm else None,
        local_ranks=local,
        nodes=nodes,
        ib=ib,
        p2p_workaround=_first_prose(facts, _P2P_WORKED),
        p2p_disabled=_env(facts, "NCCL_P2P_DISABLE") in _TRUE,
        shm_disabled=_env(facts, "NCCL_SHM_DISABLE") in _TRUE,
        ib_disabled=_env(facts, "NCCL_IB_DISABLE") in _TRUE,
        foreign_gpu_processes=len(foreign),
        wsl=wsl,
        one_node_only=_first_prose(facts, _ONE_NODE_SAID) is not None,
        after_suspend=_first_prose(facts, _SUSPEND_SAID) is not None,
        hang_said=_first_prose(facts, _HANG_SAID),
    )


@dataclass(frozen=True, slots=True)
class Shift:
    """When ``applies`` holds, multiply ``id``'s weight by ``factor``, because ``why``."""

    id: str
    factor: float
    why: str
    applies: Callable[[Context], bool]


_NET_IDS = (
    "net.socket_interface",
    "net.unreachable",
    "net.ib_config",
    "net.ib_transport",
    "net.ib_link",
)

SHIFTS: tuple[Shift, ...] = (
    Shift(
        "nccl.shm",
        3.0,
        "runs in a container (Docker's /dev/shm is 64 MB)",
        lambda c: c.container is True,
    ),
    Shift("driver.container", 2.0, "runs in a container", lambda c: c.container is True),
    Shift(
        "nccl.shm",
        6.0,
        "shared memory (/dev/shm) is under 512 MiB",
        lambda c: c.shm_mib is not None and c.shm_mib < 512,
    ),
    Shift(
        "nccl.shm",
        0.2,
        "shared memory (/dev/shm) is 1 GiB or more",
        lambda c: c.shm_mib is not None and c.shm_mib >= 1024,
    ),
    Shift("nccl.shm", 0.1, "NCCL_SHM_DISABLE=1 is set: SHM is not used", lambda c: c.shm_disabled),
    Shift(
        "nccl.shm",
        1.5,
        "several ranks share a node (SHM/P2P are used)",
        lambda c: (c.local_ranks or 0) > 1,
    ),
    Shift(
        "nccl.p2p",
        1.5,
        "several ranks share a node (SHM/P2P are used)",
        lambda c: (c.local_ranks or 0) > 1,
    ),
    Shift("nccl.shm", 0.2, "one rank per node: SHM is not used", lambda c: c.local_ranks == 1),
    Shift("nccl.p2p", 0.2, "one rank per node: P2P is not used", lambda c: c.local_ranks == 1),
    Shift(
        "nccl.p2p",
        6.0,
        "the reporter says a P2P setting made it work",
        lambda c: c.p2p_workaround is not None,
    ),
    Shift(
        "nccl.p2p", 0.2, "NCCL_P2P_DISABLE=1 is set and it still fails", lambda c: c.p2p_disabled
    ),
    *(Shift(i, 1.6, "the job spans several nodes", lambda c: (c.nodes or 0) > 1) for i in _NET_IDS),
    *(Shift(i, 0.3, "the job runs on one node", lambda c: c.nodes == 1) for i in _NET_IDS[2:]),
    Shift("net.unreachable", 0.5, "the job runs on one node", lambda c: c.nodes == 1),
    *(Shift(i, 1.5, "InfiniBand/RoCE is in use", lambda c: c.ib is True) for i in _NET_IDS[2:]),
    *(
        Shift(i, 0.2, "NCCL uses sockets, not InfiniBand", lambda c: c.ib is False)
        for i in _NET_IDS[2:]
    ),
    *(Shift(i, 0.2, "NCCL_IB_DISABLE=1 is set", lambda c: c.ib_disabled) for i in _NET_IDS[2:]),
    Shift(
        "gpu.contention",
        4.0,
        "other processes hold the job's GPUs",
        lambda c: c.foreign_gpu_processes > 0,
    ),
    Shift(
        "driver.uvm",
        4.0,
        "it began after a suspend/resume (nvidia_uvm often breaks there)",
        lambda c: c.after_suspend,
    ),
    Shift("driver.wsl", 20.0, "runs under WSL", lambda c: c.wsl),
    *(
        Shift(i, 2.0, "it fails only on one node", lambda c: c.one_node_only)
        for i in ("gpu.xid", "gpu.ecc", "net.ib_link", "host.resources")
    ),
)


def shifted(ctx: Context, rule_id: str) -> tuple[float, list[str], list[str]]:
    """The product of the shifts that apply to ``rule_id``, with reasons for and against."""
    factor = 1.0
    pro: list[str] = []
    con: list[str] = []
    for shift in SHIFTS:
        if shift.id == rule_id and shift.applies(ctx):
            factor *= shift.factor
            (pro if shift.factor > 1 else con).append(shift.why)
    return factor, pro, con
