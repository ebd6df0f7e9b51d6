"""Shifts from what the failure itself shows and what the reporter compared: collectives that
completed before the stall, a barrier it stalls in, a GPU fallen off the bus, an address that
does not resolve or is link-local, an IB completion status, memory short on one node only, the
store's port taken by the job itself, the other nodes running the same code; and the settings
tried (one that made it work, a switch that changed nothing)."""

from __future__ import annotations

from collections.abc import Callable

from nccl_doctor.differential.checks import NEXT_CHECK
from nccl_doctor.differential.context import Context
from nccl_doctor.differential.shifts.table import (
    OFF_IDS,
    STALLS,
    Shift,
    setting_shift,
)
from nccl_doctor.knowledge.topics import ID_TOPICS


def _xid_means(rule_id: str) -> Callable[[Context], bool]:
    """Whether the evidence names an Xid the Xid table reads as ``rule_id``."""
    return lambda c: rule_id in c.xid_ids


SIGNS: tuple[Shift, ...] = (
    *(
        Shift(
            i,
            f,
            "a collective of the job completed before the stall: its ranks had met at the store "
            "and connected through NCCL's bootstrap, so how they meet is not what stalls now",
            lambda c: c.connected,
            STALLS,
        )
        for i, f in (
            ("launch.rendezvous", 0.2),
            ("launch.duplicate_launch", 0.3),
            ("nccl.duplicate_gpu", 0.3),
            ("net.socket_interface", 0.3),
            ("net.unreachable", 0.5),
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
        STALLS,
    ),
    *(
        Shift(
            i,
            f,
            "it hangs at start-up across nodes: the rendezvous or bootstrap never completes",
            lambda c: c.says("startup_hang") and c.multi_node and not c.says("version_said"),
            STALLS,
        )
        for i, f in (("launch.rendezvous", 8.0), ("net.socket_interface", 2.0), ("nccl.p2p", 0.3))
    ),
    # NCCL's own set-up hangs across nodes: the store's rendezvous is behind it (the ranks
    # exchanged NCCL's unique id through it); its bootstrap connects over its own sockets
    *(
        Shift(
            i,
            f,
            "it hangs in NCCL's own communicator set-up across nodes: the ranks met at the "
            "store already, NCCL's bootstrap sockets are what wait",
            lambda c: c.says("nccl_init_hang") and c.multi_node,
            STALLS,
        )
        for i, f in (
            ("net.socket_interface", 3.0),
            ("net.unreachable", 2.0),
            ("launch.rendezvous", 0.3),
        )
    ),
    *(
        Shift(
            i,
            f,
            "the whole machine freezes, not only the job: hardware or driver",
            lambda c: c.says("system_freeze"),
            STALLS,
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
            STALLS,
        )
        for i, f in (("gpu.lost", 5.0), ("gpu.xid", 2.0), ("app.hang", 0.3))
    ),
    # an Xid named by its number: the driver's own code says which fault (79: the GPU off the
    # bus, 48/94/95: uncorrectable memory errors, 74: NVLink), whatever else the job printed
    *(
        Shift(
            i,
            6.0,
            "the evidence names an Xid whose meaning is this fault (the driver's own code)",
            _xid_means(i),
        )
        for i in ("gpu.lost", "gpu.ecc", "gpu.nvlink", "gpu.xid")
    ),
    # (the Xids named all mean a fault of their own diagnosis: the generic one is not theirs)
    Shift(
        "gpu.xid",
        0.3,
        "the Xids named each mean a fault of its own diagnosis (the Xid table), not a GPU "
        "fault of no known kind",
        lambda c: bool(c.xid_ids) and "gpu.xid" not in c.xid_ids,
    ),
    Shift(
        "net.socket_interface",
        6.0,
        "the host's name resolves to the loopback address: peers are told to connect to it",
        lambda c: c.says("loopback_host"),
    ),
    Shift(
        "nccl.version_mismatch",
        10.0,
        "the reporter says the builds differ between the job's nodes or processes (NCCL's, or "
        "the torch that carries it)",
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
    *(
        Shift(
            i,
            f,
            "the reporter probed a port of the peer (nc, telnet) and could not connect: the "
            "path between the hosts drops the connection",
            lambda c: c.says("port_probe_fails"),
        )
        for i, f in (("net.unreachable", 5.0), ("nccl.internal", 0.5), ("app.hang", 0.5))
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
    # a registration the kernel refused with EFAULT could not pin the buffer's pages: for a
    # GPU buffer, no peer-memory path (nvidia-peermem, dma-buf) lets the NIC reach it (a
    # memlock limit answers ENOMEM instead)
    *(
        Shift(
            i,
            f,
            "an RDMA memory registration failed with EFAULT (Bad address): the kernel could not "
            "pin the buffer, so the NIC cannot reach GPU memory (no nvidia-peermem or dma-buf, "
            "or a GPU without GPUDirect RDMA)",
            lambda c: c.gpu_mr_refused,
        )
        for i, f in (("net.gdr", 10.0), ("net.ib_config", 0.5))
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
    # queue pairs set up wrong (GID, MTU, HCA) never carry a message: an RDMA failure after the
    # job ran a while is one of the links or the transfers, not of the set-up
    *(
        Shift(
            i,
            f,
            "the job ran before the RDMA failure: its queue pairs had connected and carried "
            "data, so their set-up is not what failed",
            lambda c: c.ran_first,
            frozenset({"nccl_remote", "rdma_completion", "nccl_system"}),
        )
        for i, f in (("net.ib_config", 0.4), ("net.ib_transport", 1.5), ("net.ib_link", 1.5))
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
        # (a fault of one node's own hardware or limits: its GPUs, their links, its ports)
        Shift(i, 2.0, "it fails only on one node", lambda c: c.says("one_node_only"))
        for i in (
            "gpu.xid",
            "gpu.ecc",
            "gpu.nvlink",
            "gpu.lost",
            "gpu.pcie_degraded",
            "net.ib_link",
            "host.resources",
        )
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
        setting_shift(
            i, 6.0, Context.worked_on, "the reporter says {setting} made it work (it steers {id})"
        )
        for i in ID_TOPICS
        if i in NEXT_CHECK
    ),
    # a setting that made it work and steers another path: this one was not what failed
    *(
        setting_shift(
            i,
            0.5,
            Context.worked_elsewhere,
            "the reporter says {setting} made it work, and it does not steer {id}",
        )
        for i in OFF_IDS
    ),
    # a switch that turned a path off and changed nothing: the cause is elsewhere (an
    # environment variable set in the evidence itself weighs above, once)
    *(
        setting_shift(
            i,
            0.25,
            Context.did_not_help,
            "the reporter says {setting} did not change the failure: its path is not the cause",
        )
        for i in OFF_IDS
    ),
)
