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

from collections.abc import Callable
from dataclasses import dataclass, field

from nccl_doctor.differential.checks import NEXT_CHECK
from nccl_doctor.differential.prose import cues_of
from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.gpu import GpuProcess
from nccl_doctor.facts.host import EnvVar
from nccl_doctor.facts.job import gpu_models, job_pids, world_size
from nccl_doctor.facts.live import HostRuntime, ShmInfo
from nccl_doctor.facts.nccl import NcclCommLayout, NcclNet, NcclWarn
from nccl_doctor.facts.net import IbPort
from nccl_doctor.facts.software import CpuInfo, SoftwareVersions
from nccl_doctor.facts.store import Facts
from nccl_doctor.knowledge.gpu_boards import consumer_board, nvlink_board
from nccl_doctor.knowledge.topics import ID_TOPICS
from nccl_doctor.signs.gpu import CONSUMER_BOARD, NVLINK_BOARD
from nccl_doctor.signs.nccl import P2P_PLATFORM
from nccl_doctor.signs.settings import Worked, settings_that_worked

_TRUE = frozenset({"1", "true", "yes", "on"})


@dataclass(frozen=True, slots=True)
class Context:
    """What the evidence says about the job's setting; ``None`` where it says nothing."""

    container: bool | None = None
    shm_mib: int | None = None
    local_ranks: int | None = None
    nodes: int | None = None
    ib: bool | None = None
    p2p_disabled: bool = False
    shm_disabled: bool = False
    ib_disabled: bool = False
    foreign_gpu_processes: int = 0
    #: PCIe ACS, an IOMMU or a hypervisor under the GPUs (they break peer-to-peer)
    p2p_platform: bool = False
    #: GeForce/TITAN boards, which have no PCIe peer-to-peer between cards
    consumer_gpus: bool = False
    #: whether the GPUs sit on an NVLink/NVSwitch board (SXM, HGX/DGX); ``None``: not said
    nvlink_board: bool | None = None
    wsl: bool = False
    #: the reporter's discriminating sentences (:data:`.prose.CUES`), by cue name
    said: dict[str, Cite] = field(default_factory=dict)
    #: IB completion statuses (ibv_wc_status) the evidence shows
    ib_status: frozenset[int] = frozenset()
    roce: bool = False

    #: the settings someone says made the job work (:mod:`nccl_doctor.signs.settings`)
    worked: tuple[Worked, ...] = ()

    def worked_on(self, rule_id: str) -> Worked | None:
        """The setting that made the job work and steers what ``rule_id`` is about, if any."""
        return next((w for w in self.worked if rule_id in steered(w.topics)), None)

    @property
    def multi_node(self) -> bool:
        """Whether the job spans nodes: the evidence's hosts, else the reporter's words."""
        return (self.nodes or 0) > 1 or (self.nodes is None and self.says("multi_node"))

    def says(self, cue: str) -> bool:
        """Whether the reporter's words hold cue ``cue``."""
        return cue in self.said


def _env(facts: Facts, name: str) -> str | None:
    for var in facts.of(EnvVar):
        if var.name == name:
            return (var.value or "").strip().lower()
    return None


def context_of(facts: Facts) -> Context:
    """Read the discriminating facts once."""
    runtime = next(iter(facts.of(HostRuntime)), None)
    said = cues_of(facts)
    container: bool | None = runtime.container if runtime is not None else None
    if container is None and "container" in said:
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
    wsl = (
        bool(runtime is not None and runtime.wsl)
        or any(s.wsl for s in facts.of(SoftwareVersions))
        or "wsl" in said
    )
    consumer = any(consumer_board(n) for n in gpu_models(facts)) or facts.saw(CONSUMER_BOARD)
    return Context(
        container=container,
        shm_mib=min(shm) if shm else None,
        local_ranks=local,
        nodes=nodes,
        ib=ib,
        p2p_disabled=_env(facts, "NCCL_P2P_DISABLE") in _TRUE,
        shm_disabled=_env(facts, "NCCL_SHM_DISABLE") in _TRUE,
        ib_disabled=_env(facts, "NCCL_IB_DISABLE") in _TRUE,
        foreign_gpu_processes=len(foreign),
        p2p_platform=facts.saw(P2P_PLATFORM) or any(c.hypervisor_vendor for c in facts.of(CpuInfo)),
        consumer_gpus=consumer,
        nvlink_board=_board(facts, consumer),
        wsl=wsl,
        said=said,
        worked=settings_that_worked(facts),
        ib_status=frozenset(w.ib_status for w in facts.of(NcclWarn) if w.ib_status is not None),
        roce=any((n.net or "") == "RoCE" for n in nets)
        or any((dev[2] or "").lower() == "roce" for n in nets for dev in n.ib_devices)
        or _env(facts, "NCCL_IB_GID_INDEX") is not None,
    )


def _board(facts: Facts, consumer: bool) -> bool | None:
    """NVLink/NVSwitch board or not: the GPUs' own names first, then the evidence's words."""
    names = gpu_models(facts)
    if any(nvlink_board(n) for n in names) or (not names and facts.saw(NVLINK_BOARD)):
        return True
    if names or consumer:
        return False
    return None


@dataclass(frozen=True, slots=True)
class Shift:
    """When ``applies`` holds, multiply ``id``'s weight by ``factor``, because ``why``."""

    id: str
    factor: float
    why: str
    applies: Callable[[Context], bool]
    #: the symptom classes it weighs in (empty: all)
    classes: frozenset[str] = frozenset()
    #: the reason in the context's own words, where it names what it saw
    explain: Callable[[Context], str] | None = None

    def holds(self, ctx: Context, cls: str | None) -> bool:
        """Whether it applies to a symptom of class ``cls`` in ``ctx``."""
        if self.classes and cls is not None and cls not in self.classes:
            return False
        return self.applies(ctx)


_NET_IDS = (
    "net.socket_interface",
    "net.unreachable",
    "net.ib_config",
    "net.ib_transport",
    "net.ib_link",
)

#: Classes whose failure comes from the GPU stack under NCCL or CUDA.
_GPU_STACK = frozenset(
    {
        "nccl_system",
        "nccl_unhandled_cuda",
        "nccl_internal",
        "nccl_invalid",
        "cuda_unknown",
        "cuda_error",
        "cuda_fault",
        "cuda_assert",
        "cuda_device",
        "cuda_driver",
        "hang",
        "cuda_init",
        "comm_init",
        "failure",
    }
)
#: Classes of a job that stopped making progress.
_STALLS = frozenset({"hang", "collective_timeout", "aborted"})


def _worked_shift(rule_id: str) -> Shift:
    return Shift(
        rule_id,
        6.0,
        "the reporter says a setting that steers it made the job work",
        lambda c: c.worked_on(rule_id) is not None,
        explain=lambda c: _worked_why(c, rule_id),
    )


def _worked_why(ctx: Context, rule_id: str) -> str:
    setting = ctx.worked_on(rule_id)
    said = f"{setting.name}={setting.value}" if setting is not None else "a setting"
    return f"the reporter says {said} made it work (it steers {rule_id})"


#: Topics a setting can steer that name no part where a cause could be.
_NO_PART = frozenset({"ncclvar", "debug", "nodes", "gpus"})


def steered(topics: tuple[str, ...]) -> frozenset[str]:
    """The ids a setting about ``topics`` points at: those about its first topic first.

    An id whose first topic is the setting's first (``NCCL_IB_*``: the IB
    ids) is what it steers; where none is, those with it as second topic
    (``NCCL_ALGO``: an NCCL bug).
    """
    first = next((t for t in topics if t not in _NO_PART), None)
    if first is None:
        return frozenset()
    for depth in (1, 2):
        found = frozenset(i for i, about in ID_TOPICS.items() if first in about[:depth])
        if found:
            return found
    return frozenset()


SHIFTS: tuple[Shift, ...] = (
    Shift(
        "nccl.shm",
        3.0,
        "runs in a container (Docker's /dev/shm is 64 MB)",
        lambda c: c.container is True,
    ),
    Shift("driver.container", 2.0, "runs in a container", lambda c: c.container is True),
    # a job that stalls across nodes: the network and the launch first (the development
    # corpora: none of 10 multi-node hangs was P2P, 7 of 20 single-node ones were)
    *(
        Shift(
            i,
            f,
            "it stalls across nodes: the network and the launch come before the GPUs of one node",
            lambda c: c.multi_node,
            _STALLS,
        )
        for i, f in (
            ("nccl.p2p", 0.3),
            ("nccl.shm", 0.5),
            ("launch.rendezvous", 1.5),
            ("launch.duplicate_launch", 1.5),
        )
    ),
    # NVSwitch's fabric manager exists only on NVLink boards (HGX/DGX, SXM parts)
    *(
        Shift(i, 2.0, "the GPUs sit on an NVLink/NVSwitch board", lambda c: c.nvlink_board is True)
        for i in ("gpu.fabric_manager", "nccl.nvls")
    ),
    *(
        Shift(
            i,
            0.1,
            "the GPUs are PCIe cards, not an NVSwitch board: no fabric manager, no NVLS",
            lambda c: c.nvlink_board is False,
        )
        for i in ("gpu.fabric_manager", "nccl.nvls")
    ),
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
        "nccl.p2p", 0.2, "NCCL_P2P_DISABLE=1 is set and it still fails", lambda c: c.p2p_disabled
    ),
    Shift(
        "nccl.p2p",
        3.0,
        "PCIe ACS, an IOMMU or a hypervisor sits under the GPUs: each can break peer-to-peer",
        lambda c: c.p2p_platform and c.local_ranks != 1,
    ),
    Shift(
        "net.gdr",
        3.0,
        "PCIe ACS, an IOMMU or a hypervisor sits under the GPUs: each reroutes the NIC's "
        "GPUDirect traffic too",
        lambda c: c.p2p_platform and c.multi_node,
    ),
    Shift(
        "nccl.p2p",
        2.0,
        "GeForce/TITAN cards: no PCIe peer-to-peer between them, and NCCL's P2P set-up has "
        "hung where the driver claimed it",
        lambda c: c.consumer_gpus and c.local_ranks != 1,
    ),
    *(Shift(i, 1.6, "the job spans several nodes", lambda c: c.multi_node) for i in _NET_IDS),
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
        lambda c: c.says("after_suspend"),
    ),
    Shift(
        "driver.wsl",
        20.0,
        "runs under WSL, whose GPU stack lacks what NCCL expects (PCI sysfs, P2P, IPC)",
        lambda c: c.wsl,
        _GPU_STACK,
    ),
    Shift(
        "host.resources",
        1.5,
        "runs under WSL, whose VM has its own memory and swap limits (.wslconfig)",
        lambda c: c.wsl,
        frozenset({"killed", "host_oom"}),
    ),
    # the reporter's sentences (.prose.CUES)
    Shift(
        "nccl.p2p",
        3.0,
        "the same code works with gloo or on one GPU: NCCL's GPU-to-GPU path is at fault",
        lambda c: c.says("nccl_only"),
    ),
    Shift(
        "nccl.shm",
        1.5,
        "the same code works with gloo or on one GPU: NCCL's GPU-to-GPU path is at fault",
        lambda c: c.says("nccl_only"),
    ),
    Shift(
        "nccl.host_identity",
        8.0,
        "several containers share one machine: NCCL's host hash decides what they share",
        lambda c: c.says("containers_same_host"),
    ),
    *(
        Shift(
            i,
            f,
            "it fails only when certain nodes are combined: they are set up differently",
            lambda c: c.says("node_groups"),
        )
        for i, f in (("nccl.version_mismatch", 6.0), ("nccl.env", 2.0))
    ),
    *(
        Shift(i, f, "it comes and goes with a library version", lambda c: c.says("version_said"))
        for i, f in (("nccl.internal", 6.0), ("nccl.version_mismatch", 5.0))
    ),
    *(
        Shift(
            i,
            f,
            "the hang comes after training ran (end of epoch, checkpoint): application-side",
            lambda c: c.says("late_hang"),
            _STALLS,
        )
        for i, f in (
            ("app.hang", 3.0),
            ("app.collective_mismatch", 2.0),
            ("nccl.p2p", 0.3),
            ("net.socket_interface", 0.3),
            ("nccl.shm", 0.5),
        )
    ),
    *(
        Shift(
            i,
            f,
            "it hangs at start-up across nodes: the rendezvous or bootstrap never completes",
            lambda c: c.says("startup_hang") and c.multi_node and not c.says("version_said"),
            _STALLS,
        )
        for i, f in (("launch.rendezvous", 8.0), ("net.socket_interface", 2.0), ("nccl.p2p", 0.3))
    ),
    *(
        Shift(
            i,
            f,
            "the whole machine freezes, not only the job: hardware or driver",
            lambda c: c.says("system_freeze"),
            _STALLS,
        )
        for i, f in (("gpu.nvlink", 6.0), ("gpu.xid", 3.0), ("app.hang", 0.3))
    ),
    Shift(
        "net.socket_interface",
        6.0,
        "the host's name resolves to the loopback address: peers are told to connect to it",
        lambda c: c.says("loopback_host"),
    ),
    Shift(
        "net.ib_config",
        6.0,
        "the reporter names a verbs set-up call failing (ibv_reg_mr, ibv_modify_qp...)",
        lambda c: c.says("verbs_call"),
    ),
    # IB completion statuses (ibv_wc_status, rdma-core's verbs.h)
    *(
        Shift(
            i,
            f,
            "IB completion status 4/8/10 (protection or access error): "
            "the NIC may not touch the GPU buffer",
            lambda c: bool(c.ib_status & {4, 8, 10}),
        )
        for i, f in (("net.gdr", 8.0), ("nccl.p2p", 2.0))
    ),
    Shift(
        "net.ib_config",
        4.0,
        "IB completion status 12 (retry exceeded) on RoCE: GID, MTU or lossless settings",
        lambda c: 12 in c.ib_status and c.roce,
    ),
    *(
        Shift(i, 2.0, "it fails only on one node", lambda c: c.says("one_node_only"))
        for i in ("gpu.xid", "gpu.ecc", "net.ib_link", "host.resources")
    ),
    # a setting that made it work points at what it steers (P2P, SHM, IB, sockets...)
    *(_worked_shift(i) for i in ID_TOPICS if i in NEXT_CHECK),
)


def shifted(
    ctx: Context, rule_id: str, cls: str | None = None
) -> tuple[float, list[str], list[str]]:
    """The product of the shifts that apply to ``rule_id`` (for class ``cls``), with reasons."""
    factor = 1.0
    pro: list[str] = []
    con: list[str] = []
    for shift in SHIFTS:
        if shift.id == rule_id and shift.holds(ctx, cls):
            factor *= shift.factor
            why = shift.explain(ctx) if shift.explain is not None else shift.why
            (pro if shift.factor > 1 else con).append(why)
    return factor, pro, con
