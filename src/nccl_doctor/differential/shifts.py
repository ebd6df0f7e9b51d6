"""How each discriminating fact shifts the weights: a data table, each row with its reason.

A :class:`Shift` multiplies one id's weight when its condition holds in the
:class:`~nccl_doctor.differential.context.Context` (for the symptom classes
it names), and says why; :func:`shifted` applies every row to one id.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nccl_doctor.differential.checks import NEXT_CHECK
from nccl_doctor.differential.context import Context
from nccl_doctor.knowledge.cuda_errors import CUDA_CLASSES
from nccl_doctor.knowledge.topics import ID_TOPICS, steered, variable_topics
from nccl_doctor.knowledge.workarounds import MASKS
from nccl_doctor.signs.settings import SaidSetting


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

#: Causes on the path of an RDMA NIC: its set-up, transport and ports, and GPUDirect RDMA (the
#: NIC reaching GPU memory), which carries only traffic between nodes, over IB or RoCE.
_RDMA_IDS = (*_NET_IDS[2:], "net.gdr")

#: Causes that need two ranks or more: a transport between them, a second GPU of the job, a
#: rank to disagree with or to fail first. (Not the sockets: NCCL's bootstrap connects even a
#: single rank to its root thread, and the c10d store to MASTER_ADDR: a firewall still stalls
#: one rank. Nor P2P and SHM: a world of one has one local rank, and the "one rank per node"
#: shift already weighs them for that fact.)
_BETWEEN_RANKS = (
    *_NET_IDS[2:],
    "launch.rank_crash",
    "app.collective_mismatch",
    "nccl.duplicate_gpu",
    "nccl.nvls",
    "gpu.nvlink",
)


def _alone(ctx: Context) -> bool:
    return ctx.world == 1


#: Classes whose failure comes from the GPU stack under NCCL or CUDA.
_GPU_STACK = frozenset(
    {
        "nccl_system",
        "nccl_unhandled_cuda",
        "nccl_internal",
        "nccl_invalid",
        *CUDA_CLASSES,
        "hang",
        "cuda_init",
        "comm_init",
        "failure",
    }
)
#: Classes of a job that stopped making progress.
_STALLS = frozenset({"hang", "collective_timeout", "aborted"})
#: The ids whose path a switch turns off altogether (NCCL_P2P_DISABLE: nccl.p2p, ...).
_OFF_IDS = tuple(sorted({i for m in MASKS if m.off for i in steered(variable_topics(m.name))}))


def _setting_shift(
    rule_id: str,
    factor: float,
    which: Callable[[Context, str], SaidSetting | None],
    said: str,
) -> Shift:
    """A shift for a setting the reporter names (``which`` finds it for ``rule_id``); ``said``
    is the reason, with ``{setting}`` and ``{id}`` where it names them."""

    def explain(ctx: Context) -> str:
        setting = which(ctx, rule_id)
        named = "a setting"
        if setting is not None:
            named = setting.name + (f"={setting.value}" if setting.value else "")
        return said.format(setting=named, id=rule_id)

    return Shift(
        rule_id,
        factor,
        said.format(setting="a setting", id=rule_id),
        lambda c: which(c, rule_id) is not None,
        explain=explain,
    )


SHIFTS: tuple[Shift, ...] = (
    # a too small /dev/shm fails NCCL's set-up with an error (ncclSystemError, a bus error or
    # a crash in ncclShmOpen), never with a bare hang or a failure in words: of the
    # development corpora's 23 container cases led by a hang or a failure in words, none was
    # shared memory; a container started with --shm-size or --ipc=host has not Docker's 64 MB
    # (no weight against it either: a VM's or a full host's /dev/shm still fails)
    Shift(
        "nccl.shm",
        3.0,
        "runs in a container (Docker's /dev/shm is 64 MB)",
        lambda c: c.container is True and not c.shm_sized,
        frozenset(
            {"nccl_system", "nccl_internal", "nccl_unhandled_cuda", "bus_error", "crashed"}
            | {"host_limit", "killed", "comm_init"}
        ),
    ),
    Shift("driver.container", 2.0, "runs in a container", lambda c: c.container is True),
    # a container on a bridge network has an address of its own, private to its host: NCCL's
    # and Gloo's first interface (eth0 inside it) is one the other nodes cannot reach
    *(
        Shift(
            i,
            f,
            "the nodes talk from inside containers with no host networking: NCCL and Gloo "
            "pick the container's bridge address, private to its host",
            # (not Kubernetes pods: a pod's address is routable across the cluster)
            lambda c: (
                c.container is True
                and c.multi_node
                and not c.host_network
                and not c.says("kubernetes")
            ),
        )
        for i, f in (("net.socket_interface", 2.0), ("net.unreachable", 1.3))
    ),
    # nccl-tests issues the same collectives on every rank and has no code of the user's
    *(
        Shift(
            i,
            0.1,
            "the job is nccl-tests: every rank runs the same collectives, no application code",
            lambda c: c.benchmark,
        )
        for i in ("app.hang", "app.collective_mismatch", "app.unused_params", "app.param_mismatch")
    ),
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
    # a failure no message explains, on a job across nodes: what runs between the nodes fails
    # more often than the path between one node's GPUs (the development corpora's failures
    # said in words: P2P led 45 times and was right 11)
    Shift(
        "nccl.p2p",
        0.5,
        "the job spans several nodes: the path between them comes before one node's GPUs",
        lambda c: c.multi_node,
        frozenset({"failure"}),
    ),
    # wrong values across nodes: the network path (GPUDirect RDMA) carries the data between
    # them; within one node P2P does
    *(
        Shift(
            i,
            f,
            "the job spans several nodes: their data goes over the network, not only P2P",
            lambda c: c.multi_node,
            frozenset({"wrong_results"}),
        )
        for i, f in (("nccl.p2p", 0.5), ("net.gdr", 2.5))
    ),
    # a GPU newer than the NCCL build: its kernels or topology code do not know the part
    Shift(
        "nccl.internal",
        6.0,
        "the NCCL release in use predates the GPU's support",
        lambda c: c.gpu_newer_than_nccl is not None,
        explain=lambda c: (
            f"the NCCL release in use ({c.release('nccl')}) predates {c.gpu_newer_than_nccl[0]}"
            f" support (NCCL {c.gpu_newer_than_nccl[1]})"
            if c.gpu_newer_than_nccl
            else ""
        ),
    ),
    # a topology file describes one machine type; NCCL trusts it over what it would detect
    Shift(
        "nccl.env",
        4.0,
        "NCCL loads the machine's topology from a file (NCCL_TOPO_FILE / NCCL_GRAPH_FILE, "
        "often from an image's /etc/nccl.conf) instead of detecting it",
        lambda c: c.topology_file,
    ),
    # a stall whose log ends in NVLS multicast set-up, before any communicator finished
    Shift(
        "nccl.nvls",
        8.0,
        "NCCL's log shows NVLS multicast set-up and no communicator finished its init",
        lambda c: c.nvls_setup_unfinished,
        _STALLS,
    ),
    # torch's symmetric memory (vLLM's and torch's own fast all-reduce) binds the ranks'
    # buffers to an NVSwitch multicast object, NVLS's own mechanism; a driver error in its
    # rendezvous is that set-up failing (torch/csrc/distributed/c10d/symm_mem)
    Shift(
        "nccl.nvls",
        3.0,
        "the failure is inside torch's symmetric-memory rendezvous, which sets up NVSwitch "
        "multicast (NVLS) over the peers' buffers",
        lambda c: c.symmetric_memory,
        frozenset(CUDA_CLASSES | {"failure"}),
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
    # on an NVLink board the GPUs' peer traffic goes over NVLink: ACS and an IOMMU, which break
    # PCIe peer-to-peer, are not on its path (a hypervisor under the GPUs still is)
    Shift(
        "nccl.p2p",
        0.4,
        "the GPUs sit on an NVLink/NVSwitch board: peer traffic goes over NVLink, not through "
        "the PCIe switches where ACS or an IOMMU break it",
        lambda c: c.nvlink_board is True and not c.p2p_platform,
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
    # a world of one rank: NCCL sets up no transport to a peer (no P2P, SHM, NVLS or network
    # connection) and no other rank can issue a different collective
    *(
        Shift(
            i,
            0.1,
            "the job has a single rank: no transport to a peer, no peer to differ or fail first",
            _alone,
        )
        for i in _BETWEEN_RANKS
    ),
    # (GPUDirect RDMA too: the NIC reaches the GPU's memory only for traffic between nodes)
    *(
        Shift(i, 1.6, "the job spans several nodes", lambda c: c.multi_node)
        for i in (*_NET_IDS, "net.gdr")
    ),
    *(Shift(i, 0.3, "the job runs on one node", lambda c: c.nodes == 1) for i in _RDMA_IDS),
    *(
        Shift(i, 0.5, "the reporter says the job runs on one machine", lambda c: c.one_node_said)
        for i in _RDMA_IDS
    ),
    Shift("net.unreachable", 0.5, "the job runs on one node", lambda c: c.nodes == 1),
    *(Shift(i, 1.5, "InfiniBand/RoCE is in use", lambda c: c.ib is True) for i in _NET_IDS[2:]),
    *(
        Shift(i, 0.2, "NCCL uses sockets, not InfiniBand", lambda c: c.ib is False)
        for i in _RDMA_IDS
    ),
    *(Shift(i, 0.2, "NCCL_IB_DISABLE=1 is set", lambda c: c.ib_disabled) for i in _RDMA_IDS),
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
    # the reporter's sentences (.cues.CUES)
    Shift(
        "nccl.p2p",
        3.0,
        "the same code works with gloo or on one GPU: NCCL's GPU-to-GPU path is at fault",
        lambda c: c.says("nccl_only"),
    ),
    # the same failure with gloo: gloo shares the store, the rendezvous and the hosts'
    # network with NCCL, and none of NCCL's transports, builds or GPU paths
    *(
        Shift(
            i,
            f,
            "the reporter says gloo fails the same way: the cause is under both backends "
            "(store, rendezvous, the hosts' network), not in NCCL",
            lambda c: c.says("gloo_fails_too"),
        )
        for i, f in (
            ("nccl.p2p", 0.3),
            ("nccl.shm", 0.3),
            ("nccl.nvls", 0.3),
            ("nccl.internal", 0.5),
            ("nccl.version_mismatch", 0.5),
            ("nccl.duplicate_gpu", 0.5),
            ("net.ib_config", 0.5),
            ("net.gdr", 0.3),
            ("launch.rendezvous", 2.0),
            ("net.unreachable", 2.0),
            ("net.socket_interface", 1.5),
        )
    ),
    # the same failure with one GPU alone: no peer, so no P2P, SHM or NVLink traffic
    *(
        Shift(
            i,
            f,
            "the reporter says it fails on a single GPU too: no GPU-to-GPU path is in use there",
            lambda c: c.says("one_gpu_fails_too") and not c.says("nccl_only"),
        )
        for i, f in (
            ("nccl.p2p", 0.2),
            ("nccl.shm", 0.3),
            ("nccl.nvls", 0.3),
            ("gpu.nvlink", 0.3),
            ("nccl.duplicate_gpu", 0.5),
        )
    ),
    Shift(
        "gpu.contention",
        5.0,
        "the reporter says another job ran on the same GPUs",
        lambda c: c.says("other_job_same_gpus"),
    ),
    Shift(
        "launch.port_in_use",
        8.0,
        "the reporter says the port is taken: the store's or the rendezvous's bind failed",
        lambda c: c.says("port_taken"),
    ),
    Shift(
        "launch.port_in_use",
        6.0,
        "the reporter ran two jobs on one machine: both launchers take the same default port",
        lambda c: c.says("jobs_share_host") and not c.says("multi_node"),
    ),
    Shift(
        "gpu.mig",
        6.0,
        "the reporter names MIG: a process enumerates one MIG instance at most",
        lambda c: c.says("mig"),
        frozenset(
            {
                "cuda_device",
                "cuda_init",
                "nccl_invalid",
                "nccl_unhandled_cuda",
                "failure",
                "app_error",
                "hang",
            }
        ),
    ),
    Shift(
        "nccl.p2p",
        0.3,
        "the reporter says CUDA's own peer-to-peer test (simpleP2P, p2pBandwidthLatencyTest) "
        "passes: peer access works outside NCCL",
        lambda c: c.says("p2p_test_passed"),
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
    Shift(
        "nccl.p2p",
        2.0,
        "the timeout is at the group's first collective and none completed: the ranks may "
        "never have connected, so the path between the GPUs weighs as much as the training "
        "code (P2P hangs silently; a shared-memory failure reports an error instead)",
        lambda c: c.first_collective and not c.multi_node,
        frozenset({"collective_timeout"}),
    ),
    *(
        Shift(
            i,
            f,
            "the timeout is at the group's first collective and none completed: the ranks on "
            "different nodes may never have connected",
            lambda c: c.first_collective and c.multi_node,
            frozenset({"collective_timeout"}),
        )
        for i, f in (
            ("net.ib_transport", 2.0),
            ("net.socket_interface", 3.0),
            ("net.unreachable", 3.0),
        )
    ),
    *(
        Shift(
            i,
            f,
            "every rank computes on one GPU while the others idle: the ranks were not given "
            "their own device (torch.cuda.set_device missing, or called after CUDA work began); "
            "the work itself is there, not a stray context beside it",
            lambda c: c.says("one_gpu_does_all"),
            _STALLS | {"gpu_imbalance", "failure", "gpu_oom"},
        )
        for i, f in (
            ("nccl.duplicate_gpu", 5.0),
            ("cuda.device_visibility", 0.7),
            ("nccl.p2p", 0.5),
        )
    ),
    *(
        Shift(
            i,
            f,
            "the ranks run different code (one rank's own branch, uneven data, early stopping): "
            "the others wait in a collective it never calls",
            lambda c: c.says("rank_branch"),
            _STALLS | {"failure", "desync"},
        )
        for i, f in (
            ("app.collective_mismatch", 6.0),
            ("nccl.p2p", 0.5),
            ("net.socket_interface", 0.5),
        )
    ),
    *(
        Shift(
            i,
            f,
            "the hang comes and goes with a setting of the program's own: its path or its data "
            "decide whether the ranks meet in the same collectives",
            lambda c: c.says("own_setting_decides"),
            _STALLS,
        )
        for i, f in (
            ("app.collective_mismatch", 3.0),
            ("app.hang", 2.0),
            ("nccl.p2p", 0.5),
        )
    ),
    # a barrier the code calls is a collective every rank must reach: a hang there is often a
    # rank that took another path (a branch on rank 0, an early return). Nothing against P2P:
    # a job's first collective is often a barrier, and a broken P2P path stalls it the same
    Shift(
        "app.collective_mismatch",
        3.0,
        "the job waits at a barrier the code calls (dist.barrier, main_process_first): a "
        "rank that took another path never reaches it",
        lambda c: c.says("barrier_said"),
        _STALLS,
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
    # a GPU that fell off the bus wedges the driver: only a reboot or power cycle brings it
    # back (a freeze that lifts when the job ends is not one)
    *(
        Shift(
            i,
            f,
            "only a reboot or a power cycle brings the machine back: the driver lost a GPU",
            lambda c: c.says("power_cycle"),
            _STALLS,
        )
        for i, f in (("gpu.lost", 5.0), ("gpu.xid", 2.0), ("app.hang", 0.3))
    ),
    Shift(
        "net.socket_interface",
        6.0,
        "the host's name resolves to the loopback address: peers are told to connect to it",
        lambda c: c.says("loopback_host"),
    ),
    Shift(
        "nccl.version_mismatch",
        6.0,
        "the reporter says the NCCL versions differ between the job's nodes or processes",
        lambda c: c.says("nccl_versions_differ"),
    ),
    *(
        Shift(
            i,
            f,
            "the reporter names something that filters the hosts' TCP traffic (a firewall, "
            "SELinux, a security group, a network policy, a sidecar proxy)",
            lambda c: c.says("traffic_filtered"),
        )
        for i, f in (
            ("net.unreachable", 5.0),
            ("net.socket_interface", 0.6),
            ("launch.rendezvous", 0.5),
            ("nccl.p2p", 0.5),
        )
    ),
    # c10d resolves MASTER_ADDR (and, standalone, its own host name) before the store client
    # connects: a resolver that fails outright leaves it no address of any family, on one node
    # as on many (an EAI_NONAME for IPv6 alone is routine and not read here)
    Shift(
        "net.unreachable",
        6.0,
        "the host's name could not be looked up at all (Temporary failure in name resolution)",
        lambda c: c.unresolved is not None,
        explain=lambda c: (
            f"the name {c.unresolved!r} could not be looked up at all "
            "(Temporary failure in name resolution): no address to connect to; "
            f"'getent hosts {c.unresolved}' on that node shows whether it resolves"
        ),
    ),
    # a link-local address (169.254.0.0/16, fe80::/10) is only reachable on its own link: a
    # rank that dials a peer there was handed the address of an interface the hosts do not
    # share (a cloud's metadata or container link, an IPv6 address without its scope); as
    # strong as the failed connect's own pointer at net.unreachable, which it explains
    Shift(
        "net.socket_interface",
        6.0,
        "the failed connection was to a link-local address, which only its own link reaches",
        lambda c: c.link_local_peer is not None,
        explain=lambda c: (
            f"the failed connection was to {c.link_local_peer}, a link-local address only its "
            "own link reaches: the peer advertised an interface the hosts do not share"
        ),
    ),
    Shift(
        "net.ib_config",
        6.0,
        "the reporter names a verbs set-up call failing (ibv_reg_mr, ibv_modify_qp...)",
        lambda c: c.says("verbs_call"),
    ),
    Shift(
        "net.gdr",
        5.0,
        "the reporter names the GPUDirect RDMA stack (the peer-memory module, gdrcopy) beside "
        "the failure",
        lambda c: c.says("gdr_stack"),
    ),
    Shift(
        "net.gdr",
        3.0,
        "GPUDirect RDMA is named on GeForce boards, which NVIDIA's driver does not support it on",
        lambda c: c.says("gdr_stack") and c.consumer_gpus,
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
    # the same job fits on the other nodes: its own size is not the cause, something on this
    # node holds the memory (a stale process, another user's job)
    *(
        Shift(
            i,
            f,
            "the same job runs on other nodes: what differs is this node, not the job's size",
            lambda c: c.says("one_node_only"),
            frozenset({"gpu_oom"}),
        )
        for i, f in (("gpu.contention", 3.0), ("gpu.oom", 0.3))
    ),
    *(
        Shift(i, 2.0, "it fails only on one node", lambda c: c.says("one_node_only"))
        for i in ("gpu.xid", "gpu.ecc", "net.ib_link", "host.resources")
    ),
    # the ranks' processes on GPU 0, and the reporter speaks of the memory they take: the job's
    # own memory on that GPU is what runs short
    Shift(
        "gpu.oom",
        1.5,
        "the reporter speaks of the memory the job's processes take on that GPU",
        lambda c: c.says("memory_said"),
        frozenset({"gpu_imbalance"}),
    ),
    # the store's port taken whatever port is chosen: the job itself binds it twice (a
    # launcher inside a launcher, two launches with one node rank), not another job
    *(
        Shift(
            i,
            f,
            "another port failed the same way: no other job holds every port, the job binds "
            "its own twice",
            lambda c: c.says("other_port_same"),
            frozenset({"store_create", "store_timeout"}),
        )
        for i, f in (("launch.duplicate_launch", 6.0), ("launch.port_in_use", 0.3))
    ),
    # the same code and settings run on the other nodes: the training code, and the settings
    # every node shares, are not what differs
    *(
        Shift(
            i,
            0.4,
            "the same job runs on other nodes: its code is not what differs",
            lambda c: c.says("one_node_only"),
        )
        for i in ("app.hang", "app.collective_mismatch", "app.unused_params", "app.param_mismatch")
    ),
    # a setting that made it work points at what it steers (P2P, SHM, IB, sockets...)
    *(
        _setting_shift(
            i, 6.0, Context.worked_on, "the reporter says {setting} made it work (it steers {id})"
        )
        for i in ID_TOPICS
        if i in NEXT_CHECK
    ),
    # a switch that turned a path off and changed nothing: the cause is elsewhere (an
    # environment variable set in the evidence itself weighs above, once)
    *(
        _setting_shift(
            i,
            0.25,
            Context.did_not_help,
            "the reporter says {setting} did not change the failure: its path is not the cause",
        )
        for i in _OFF_IDS
    ),
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
