"""The facts that tell causes apart, read once from the evidence.

An expert who hears "NCCL system error" asks: in a container? how big is
/dev/shm? several GPUs on one node? several nodes? InfiniBand? did
``NCCL_P2P_DISABLE=1`` help? another process on the GPUs? which boards, on
what platform? :class:`Context` holds the answers; :mod:`.shifts` says how
each moves the weights. The answers come from typed facts and signs; the
reporter's own sentences (prose lines, :mod:`.prose`) give the cues nothing
else types ("inside docker", "hangs", "after an upgrade").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from nccl_doctor.differential.cues import cues_of
from nccl_doctor.facts.base import Cite, local_alias
from nccl_doctor.facts.catalogue import plugin_failure
from nccl_doctor.facts.failures import store_served_after
from nccl_doctor.facts.gpu import Gpu, GpuProcess
from nccl_doctor.facts.job import (
    collectives_completed,
    first_collective_timeout,
    gpu_models,
    job_pids,
    world_size,
)
from nccl_doctor.facts.last_error import truncated_at_init
from nccl_doctor.facts.live import HostRuntime, ShmInfo
from nccl_doctor.facts.nccl import (
    NcclCommInit,
    NcclEvent,
    NcclLogFact,
    NcclNet,
    NcclTestCommand,
    NcclTestConfig,
    NcclTestRow,
    NcclWarn,
    corrupt_only_past_int32,
)
from nccl_doctor.facts.net import IbPort, link_local
from nccl_doctor.facts.run import C10dSocketError, NcclErrorReport
from nccl_doctor.facts.settings import taken
from nccl_doctor.facts.software import CpuInfo, SoftwareVersions
from nccl_doctor.facts.span import local_ranks, span_of
from nccl_doctor.facts.store import Facts, Hit
from nccl_doctor.facts.versions import versions_of
from nccl_doctor.knowledge.gpu_boards import consumer_board, nvlink_board, nvswitch_model
from nccl_doctor.knowledge.nccl_versions import MIN_NCCL_FOR_GPU, compare_versions
from nccl_doctor.knowledge.topics import steered
from nccl_doctor.knowledge.units import to_mib
from nccl_doctor.knowledge.workarounds import is_switch, mask_of, path_off
from nccl_doctor.knowledge.xid import xid_info
from nccl_doctor.signs.cuda import SYMMETRIC_MEMORY
from nccl_doctor.signs.gpu import (
    CONSUMER_BOARD,
    GPUS_PER_NODE_SAID,
    NVLINK_BOARD,
    SHARING_LAYER,
    XID_SAID,
)
from nccl_doctor.signs.host import SHM_SIZE_SAID, SHM_SIZE_SHOWN
from nccl_doctor.signs.launch import GLOO_BACKEND, NCCL_NAMED
from nccl_doctor.signs.nccl import (
    CONTAINER_SHM,
    CONTAINER_START,
    NEW_GPUS,
    P2P_PLATFORM,
)
from nccl_doctor.signs.net import GPU_MR_REFUSED, HOST_NETWORK, LINK_LOCAL_PEER
from nccl_doctor.signs.settings import (
    SaidSetting,
    settings_that_did_not_help,
    settings_that_worked,
)

_TRUE = frozenset({"1", "true", "yes", "on"})
#: A GPU name that says PCIe card (``NVIDIA H100 PCIe``, ``Tesla V100-PCIE-32GB``), or a
#: model only sold as one.
_PCIE = re.compile(r"PCIe|\b(?:T4|L4|L40S?|A2|A10G?|A16|A40|RTX A\d{4}|Quadro)\b", re.IGNORECASE)
#: GPUs of one node an HGX board holds.
_HGX_GPUS = 8


@dataclass(frozen=True, slots=True)
class Context:
    """What the evidence says about the job's setting; ``None`` where it says nothing."""

    container: bool | None = None
    shm_mib: int | None = None
    local_ranks: int | None = None
    #: GPUs per node the reporter counts in words ("8x H100 nodes"), where nothing else counts
    gpus_said: int | None = None
    nodes: int | None = None
    #: machine output says the job spans nodes without counting them (a hostfile launch)
    spans_nodes: bool = False
    #: only the reporter's words say the job runs on one node ("on my machine")
    one_node_said: bool = False
    #: the job's world size where the evidence states it (:func:`~nccl_doctor.facts.job.world_size`)
    world: int | None = None
    ib: bool | None = None
    #: a container start line that sizes /dev/shm or shares the host's (--shm-size, --ipc=host)
    shm_sized: bool = False
    #: a container on the host's network (no bridge address of its own)
    host_network: bool = False
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
    #: the GPU the evidence names whose support came in a later NCCL than the one in use, and
    #: that release (``("RTX 5090", "2.26.2")``)
    gpu_newer_than_nccl: tuple[str, str] | None = None
    #: NCCL reads the machine's topology or graphs from a file (NCCL_TOPO_FILE,
    #: NCCL_GRAPH_FILE, or a "Loading topology file" line) instead of detecting them
    topology_file: bool = False
    #: NCCL's bootstrap got a message of another size than its own structure before any
    #: transport was set up (:func:`~nccl_doctor.facts.last_error.truncated_at_init`)
    truncated_at_init: bool = False
    #: NCCL's log shows NVLS multicast set-up and no communicator finished its init
    nvls_setup_unfinished: bool = False
    #: torch.distributed runs on gloo and nothing of NCCL shows (no NCCL line, no word of it)
    gloo_only: bool = False
    #: torch's symmetric memory is named beside the failure (a frame of its module, or its
    #: rendezvous)
    symmetric_memory: bool = False
    #: a GPU-sharing layer (HAMi-core's libvgpu.so) intercepts the job's CUDA driver and NVML
    #: calls
    sharing_layer: bool = False
    #: the job is NCCL's own benchmark (nccl-tests): its collectives match on every rank
    benchmark: bool = False
    #: nccl-tests found wrong values only at sizes of 2 GiB or more (32-bit arithmetic's end)
    corrupt_past_int32: bool = False
    #: every watchdog timeout is at the default group's first collectives, none completed
    first_collective: bool = False
    #: a collective of the job completed before it stalled: its ranks met and connected
    #: (:func:`~nccl_doctor.facts.job.collectives_completed`)
    connected: bool = False
    #: the reporter's discriminating sentences (:data:`.cues.CUES`), by cue name
    said: dict[str, Cite] = field(default_factory=dict)
    #: an RDMA memory registration refused with EFAULT: the NIC could not pin the buffer
    gpu_mr_refused: bool = False
    #: the catalogue ids of the Xids the evidence names by number (the Xid table's reading)
    xid_ids: frozenset[str] = frozenset()
    #: IB completion statuses (ibv_wc_status) the evidence shows
    ib_status: frozenset[int] = frozenset()
    roce: bool = False
    #: the library versions the evidence names (``nccl``, ``torch``, ...: the first read of each)
    releases: tuple[tuple[str, str], ...] = ()
    #: a host whose name the c10d store client could not look up at all (the resolver
    #: failed, not merely one address family missing)
    unresolved: str | None = None
    #: the peer address of a connect, failed or retried, where it is link-local (169.254.x.x,
    #: fe80::)
    link_local_peer: str | None = None
    #: what nvidia-smi's table reads on the GPUs that hold a job's memory, two or more:
    #: ``"full"`` (every one at 90% or more), ``"idle"`` (every one at 5% or less), else ``None``
    gpus_read: str | None = None

    #: the settings someone says made the job work (:mod:`nccl_doctor.signs.settings`)
    worked: tuple[SaidSetting, ...] = ()
    #: the switches someone says turned a path off and left the failure as it was
    no_help: tuple[SaidSetting, ...] = ()

    def release(self, library: str) -> str | None:
        """The version of ``library`` the evidence names, if any."""
        return next((v for name, v in self.releases if name == library), None)

    def worked_on(self, rule_id: str) -> SaidSetting | None:
        """The setting that made the job work and steers what ``rule_id`` is about, if any."""
        return next((w for w in self.worked if rule_id in steered(w.topics)), None)

    def worked_elsewhere(self, rule_id: str) -> SaidSetting | None:
        """A setting that made the job work where none of those said steers what ``rule_id``
        is about, if any (NCCL_NVLS_ENABLE=0 worked: the P2P path was not what failed)."""
        if not self.worked or self.worked_on(rule_id) is not None:
            return None
        return self.worked[0]

    def did_not_help(self, rule_id: str) -> SaidSetting | None:
        """The switch said to turn ``rule_id``'s path off without changing the failure, if any
        (none where a setting about it is also said to have made the job work)."""
        if self.worked_on(rule_id) is not None:
            return None
        return next((s for s in self.no_help if rule_id in steered(s.topics)), None)

    @property
    def multi_node(self) -> bool:
        """Whether the job spans nodes: the evidence's hosts or launch, else the reporter's
        words (not where they compare two machines, each running its own job)."""
        if (self.nodes or 0) > 1:
            return True
        # (words of two machines compared side by side are no job across them)
        said = self.says("multi_node") and not self.says("machines_compared")
        return self.nodes is None and (self.spans_nodes or said)

    def says(self, cue: str) -> bool:
        """Whether the reporter's words hold cue ``cue``."""
        return cue in self.said

    @property
    def ran_first(self) -> bool:
        """Whether the job ran before it failed or stalled: a collective of it completed, or the
        reporter says training ran (steps, epochs, hours: the cue ``ran_before``)."""
        return self.connected or self.says("ran_before")

    @property
    def gpu_load(self) -> str | None:
        """What the job's GPUs run, by nvidia-smi's table or the reporter's words: ``"full"``
        (a kernel on each, as NCCL's polls while it waits for a peer) or ``"idle"`` (none:
        the ranks wait on the host); ``None`` where nothing says, or the two disagree."""
        full = self.gpus_read == "full" or self.says("gpus_full")
        idle = self.gpus_read == "idle" or self.says("gpus_idle")
        if full == idle:
            return None
        return "full" if full else "idle"


#: A GPU holding this much memory holds a job's (a bare context takes a few hundred MiB).
_JOB_MEMORY_MIB = 1024


def _gpus_read(facts: Facts) -> str | None:
    """``"full"`` or ``"idle"`` where every GPU that nvidia-smi shows holding a job's memory
    reads so (90% or more, 5% or less), two of them at least; else ``None``. (One GPU is one
    rank: a table cut after it, or a stage of a pipeline, says nothing of where the others
    wait.)"""
    loads = [
        g.utilization_gpu_pct
        for g in facts.of(Gpu)
        if g.utilization_gpu_pct is not None and (g.memory_used_mib or 0) >= _JOB_MEMORY_MIB
    ]
    if len(loads) < 2:
        return None
    if min(loads) >= 90:
        return "full"
    if max(loads) <= 5:
        return "idle"
    return None


def context_of(facts: Facts) -> Context:
    """Read the discriminating facts once."""
    runtime = next(iter(facts.of(HostRuntime)), None)
    said = cues_of(facts)
    container: bool | None = runtime.container if runtime is not None else None
    if container is None and "container" in said:
        container = True
    shm = [s.size_mib for s in facts.of(ShmInfo) if s.size_mib is not None]
    shown = (*facts.seen(SHM_SIZE_SHOWN), *facts.seen(SHM_SIZE_SAID))
    shm += [size for h in shown if (size := _shm_mib(h))]
    local = local_ranks(facts)
    span = span_of(facts)
    nodes = span.count if span.machine else None
    named = [h for h in facts.hosts if not local_alias(h)]
    if nodes is None and len(named) > 1:
        nodes = len(named)
    world = world_size(facts)
    if local is None and (world == 1 or (nodes in (None, 1) and len(named) <= 1)):
        local = world
    nets = facts.of(NcclNet)
    ib: bool | None = None
    if (
        facts.of(IbPort)
        or any(n.ib_devices for n in nets)
        # "NET/IB : No device found." is NCCL saying it found none
        or any((n.net or "") == "IB" and not n.no_device for n in nets)
    ):
        ib = True
    elif any((n.net or "") == "Socket" for n in nets) and not any(
        plugin_failure(w.message) for w in facts.of(NcclWarn)
    ):
        # (sockets after a network plugin failed to start are its fallback: RDMA was meant)
        ib = False
    pids = job_pids(facts)
    foreign = {p.pid for p in facts.of(GpuProcess) if pids and p.pid not in pids}
    wsl = (
        bool(runtime is not None and runtime.wsl)
        or any(s.wsl for s in facts.of(SoftwareVersions))
        or "wsl" in said
    )
    models = gpu_models(facts)
    consumer = any(consumer_board(n) for n in models) or facts.saw(CONSUMER_BOARD)
    return Context(
        container=container,
        shm_mib=min(shm) if shm else None,
        local_ranks=local,
        gpus_said=max((int(h.match["n"]) for h in facts.seen(GPUS_PER_NODE_SAID)), default=None),
        nodes=nodes,
        spans_nodes=span.machine and span.multi is True,
        one_node_said=span.said and span.multi is False,
        world=world,
        ib=ib,
        shm_sized=bool(
            {h.said for h in facts.seen(CONTAINER_START)} & facts.lines_of(CONTAINER_SHM)
        ),
        # (not "we can't use host networking")
        host_network=bool(facts.told(HOST_NETWORK)),
        # (NCCL_P2P_LEVEL=LOC or 0: P2P only within one GPU, i.e. never between two)
        p2p_disabled=taken(facts, "NCCL_P2P_DISABLE") in _TRUE
        or taken(facts, "NCCL_P2P_LEVEL") in ("loc", "0"),
        shm_disabled=taken(facts, "NCCL_SHM_DISABLE") in _TRUE,
        ib_disabled=taken(facts, "NCCL_IB_DISABLE") in _TRUE,
        foreign_gpu_processes=len(foreign),
        p2p_platform=facts.saw(P2P_PLATFORM) or any(c.hypervisor_vendor for c in facts.of(CpuInfo)),
        consumer_gpus=consumer,
        nvlink_board=_board(facts, models, consumer),
        wsl=wsl,
        benchmark=bool(facts.of(NcclTestConfig) or facts.of(NcclTestCommand)),
        corrupt_past_int32=corrupt_only_past_int32(facts.of(NcclTestRow)),
        first_collective=first_collective_timeout(facts) is not None,
        connected=collectives_completed(facts) is not None,
        topology_file=any(e.event == "topology-file" for e in facts.of(NcclEvent))
        or any(taken(facts, n) for n in ("NCCL_TOPO_FILE", "NCCL_GRAPH_FILE"))
        or "topology_file_said" in said,
        truncated_at_init=truncated_at_init(facts),
        symmetric_memory=facts.saw(SYMMETRIC_MEMORY),
        sharing_layer=facts.saw(SHARING_LAYER),
        nvls_setup_unfinished=any(e.event == "nvls-setup" for e in facts.of(NcclEvent))
        and not any(i.phase == "complete" for i in facts.of(NcclCommInit)),
        # (the typed NCCL facts first: a log of NCCL lines never searches the kept lines)
        gloo_only=not facts.of(NcclLogFact)
        and not facts.of(NcclErrorReport)
        and facts.saw(GLOO_BACKEND)
        and not facts.saw(NCCL_NAMED),
        said=said,
        gpus_read=_gpus_read(facts),
        worked=tuple(w for w in settings_that_worked(facts) if w.prose and _changes(w)),
        no_help=tuple(
            s
            for s in settings_that_did_not_help(facts)
            if path_off(s.name, s.value or None) and taken(facts, s.name) is None
        ),
        gpu_mr_refused=facts.saw(GPU_MR_REFUSED),
        xid_ids=frozenset(
            info.diagnosis_id
            for h in facts.seen(XID_SAID)
            if (info := xid_info(h.match["code"])) is not None and info.severity != "info"
        ),
        ib_status=frozenset(w.ib_status for w in facts.of(NcclWarn) if w.ib_status is not None),
        roce=any((n.net or "") == "RoCE" for n in nets)
        or any((dev[2] or "").lower() == "roce" for n in nets for dev in n.ib_devices)
        or taken(facts, "NCCL_IB_GID_INDEX") is not None,
        releases=versions_of(facts),
        gpu_newer_than_nccl=_gpu_newer_than_nccl(facts),
        unresolved=next(
            (
                e.address
                for e in facts.of(C10dSocketError)
                if e.resolver_failed and e.address and not store_served_after(facts, e.cite)
            ),
            None,
        ),
        link_local_peer=next(
            (h.match["addr"] for h in facts.seen(LINK_LOCAL_PEER) if link_local(h.match["addr"])),
            None,
        ),
    )


def _gpu_newer_than_nccl(facts: Facts) -> tuple[str, str] | None:
    """A GPU the evidence names that the NCCL release in use predates, and its first release."""
    version = dict(versions_of(facts)).get("nccl")
    if version is None:
        return None
    for gpu, floor in MIN_NCCL_FOR_GPU.items():
        if facts.saw(NEW_GPUS[gpu]) and (compare_versions(version, floor) or 0) < 0:
            return gpu, floor
    return None


#: Docker's /dev/shm where the container is started without --shm-size or --ipc=host, in MiB
DOCKER_SHM_MIB = 64


def _shm_mib(hit: Hit) -> int | None:
    """The size of /dev/shm a tool printed or the reporter gives, in MiB (df -h's powers of
    1024, bytes, M or G in words; Docker's default where they say the container was started
    without sizing it)."""
    groups = hit.match.groupdict()
    if groups.get("unsized") is not None:
        return DOCKER_SHM_MIB
    if groups["size"] is not None:
        size = to_mib(float(groups["size"]), f"{groups['unit']}iB")
    else:  # (the tool sign's groups hold digits only: one of the three matched)
        size = to_mib(float(groups["bytes"] or groups["shm_bytes"]), "bytes")
    return int(size) if size is not None else None


def _changes(setting: SaidSetting) -> bool:
    """Whether a setting turns something off or sets it (``NCCL_P2P_DISABLE=0`` changes nothing)."""
    return not is_switch(setting.name) or mask_of(setting.name, setting.value) is not None


def _board(facts: Facts, names: list[str], consumer: bool) -> bool | None:
    """NVLink/NVSwitch board or PCIe cards: the GPUs' own names first, then the evidence's words.

    ``None`` where neither says (a model sold both ways, named alone).
    """
    if consumer or any(_PCIE.search(n) for n in names):
        return False
    if any(nvlink_board(n) for n in names) or (not names and facts.saw(NVLINK_BOARD)):
        return True
    if len(names) >= _HGX_GPUS and any(nvswitch_model(n) for n in names):
        return True
    return None
