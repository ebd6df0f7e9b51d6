"""Shifts from the job's shape and the machine under it: a container, the nodes and the ranks
per node, the board (NVLink, NVSwitch), shared memory, the network (IB or sockets), WSL.
"""

from __future__ import annotations

from nccl_doctor.differential.priors import PRIORS
from nccl_doctor.differential.shifts.table import (
    BETWEEN_RANKS,
    GPU_STACK,
    NCCL_PATHS,
    NET_IDS,
    RDMA_IDS,
    STALLS,
    Shift,
    alone,
)
from nccl_doctor.knowledge.cuda_errors import CUDA_CLASSES

_NVLINK_BOARD = "the GPUs sit on an NVLink/NVSwitch board"

#: Why WSL weighs in: its GPU paravirtualisation is not the stack NCCL was written for.
_WSL_STACK = "runs under WSL, whose GPU stack lacks what NCCL expects (PCI sysfs, P2P, IPC)"

MACHINE: tuple[Shift, ...] = (
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
    # HAMi-core answers the driver calls NCCL makes (cuMem allocations and their export, device
    # queries, NVML) with its own bookkeeping: a call it does not model fails or misleads
    Shift(
        "driver.container",
        6.0,
        "a GPU-sharing layer (HAMi-core's libvgpu.so) sits between the job and the driver: "
        "NCCL's driver calls (cuMem, device queries, NVML) go through its interception",
        lambda c: c.sharing_layer,
    ),
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
            STALLS,
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
    # at init the ranks exchange their peer information, whose size changes between NCCL
    # releases: a bootstrap message of another size there is a peer on another release
    *(
        Shift(
            i,
            f,
            "NCCL's bootstrap received a peer's structure of another size at init, before any "
            "transport was set up: the ranks run different NCCL releases",
            lambda c: c.truncated_at_init,
        )
        for i, f in (("nccl.version_mismatch", 5.0), ("nccl.internal", 0.3))
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
        STALLS,
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
    Shift("nccl.nvls", 2.0, _NVLINK_BOARD, lambda c: c.nvlink_board is True),
    # (a fabric that is not ready fails every CUDA context with a message the catalogue
    # classifies, cudaErrorSystemNotReady: beside a failure no message classifies, such a
    # board weighs less; development corpora: 3 more right first, 1 fewer)
    *(
        Shift("gpu.fabric_manager", f, _NVLINK_BOARD, lambda c: c.nvlink_board is True, cls)
        for f, cls in ((2.0, frozenset(PRIORS) - {"failure"}), (1.5, frozenset({"failure"})))
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
    # wrong values only where sizes pass 2 GiB: a broken transfer path corrupts every size,
    # 32-bit byte counts and offsets overflow only there (NCCL has fixed such bugs, e.g. 2.4's
    # all_gather at 4 GiB)
    *(
        Shift(
            i,
            f,
            "nccl-tests found wrong values only at sizes of 2 GiB or more, where 32-bit byte "
            "counts and offsets overflow; a broken transfer path would corrupt every size",
            lambda c: c.corrupt_past_int32,
            frozenset({"wrong_results"}),
        )
        for i, f in (("nccl.internal", 4.0), ("nccl.p2p", 0.4), ("net.gdr", 0.4))
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
    # a slow job whose own settings (NCCL's "set by environment" echo, an environment dump)
    # turn off the transport its ranks would use: IB between nodes (traffic over TCP sockets),
    # P2P or SHM between a node's GPUs (traffic through host memory or the network); a switch
    # the reporter says made the job work is a workaround for another cause, not this one
    Shift(
        "nccl.env",
        6.0,
        "the job's own settings turn off the transport its ranks would use (NCCL_IB_DISABLE=1 "
        "across nodes, NCCL_P2P_DISABLE=1 or NCCL_SHM_DISABLE=1 between a node's GPUs)",
        lambda c: (
            not c.worked
            and (
                (c.ib_disabled and c.multi_node)
                or (
                    (c.p2p_disabled or c.shm_disabled)
                    and ((c.local_ranks or c.gpus_said or 0) > 1 or c.nvlink_board is True)
                )
            )
        ),
        frozenset({"slow", "slow_network"}),
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
            alone,
        )
        for i in BETWEEN_RANKS
    ),
    # a job on gloo alone: gloo moves tensors over TCP between the hosts, through the same store
    # and sockets as NCCL's bootstrap, and never loads NCCL
    *(
        Shift(
            i,
            0.15,
            "the job runs on gloo and nothing of NCCL shows: NCCL's transports, builds and "
            "settings are not in use",
            lambda c: c.gloo_only,
        )
        for i in NCCL_PATHS
    ),
    # (GPUDirect RDMA too: the NIC reaches the GPU's memory only for traffic between nodes)
    *(
        Shift(i, 1.6, "the job spans several nodes", lambda c: c.multi_node)
        for i in (*NET_IDS, "net.gdr")
    ),
    *(Shift(i, 0.3, "the job runs on one node", lambda c: c.nodes == 1) for i in RDMA_IDS),
    *(
        Shift(
            i,
            0.5,
            "the reporter says the job runs on one machine",
            # (as for the interface: "two-node training fails; one node works" spans two)
            lambda c: c.one_node_said and not c.multi_node,
        )
        for i in RDMA_IDS
    ),
    # (one node's ranks bootstrap over its own interfaces, loopback included: an interface other
    # hosts cannot reach matters only where there are other hosts)
    *(
        Shift(i, 0.5, "the job runs on one node", lambda c: c.nodes == 1)
        for i in ("net.unreachable", "net.socket_interface")
    ),
    Shift(
        "net.socket_interface",
        0.5,
        "the reporter says the job runs on one machine",
        # ("two-node training freezes; single node works": the failing job spans two)
        lambda c: c.one_node_said and not c.multi_node,
    ),
    *(Shift(i, 1.5, "InfiniBand/RoCE is in use", lambda c: c.ib is True) for i in NET_IDS[2:]),
    *(
        Shift(i, 0.2, "NCCL uses sockets, not InfiniBand", lambda c: c.ib is False)
        for i in RDMA_IDS
    ),
    *(Shift(i, 0.2, "NCCL_IB_DISABLE=1 is set", lambda c: c.ib_disabled) for i in RDMA_IDS),
    Shift(
        "gpu.contention",
        4.0,
        "other processes hold the job's GPUs",
        lambda c: c.foreign_gpu_processes > 0,
    ),
    # what the stuck GPUs read (nvidia-smi's table, or the reporter's words) tells where the
    # ranks wait (measured on an H100: 100% while an all_reduce waits for a peer that never
    # joins, 0% while a rank blocks in the c10d store; tests/fixtures/captured/spin-h100)
    *(
        Shift(
            i,
            f,
            "the stuck GPUs read full: the ranks wait inside launched NCCL kernels for a peer's "
            "data, past start-up (the rendezvous and NCCL's bootstrap wait on the host, with no "
            "kernel running)",
            lambda c: c.gpu_load == "full",
            STALLS,
        )
        for i, f in (
            ("launch.rendezvous", 0.3),
            ("net.socket_interface", 0.5),
            ("net.unreachable", 0.5),
        )
    ),
    *(
        Shift(
            i,
            f,
            "the stuck GPUs read empty: no kernel runs, so the ranks wait on the host (the "
            "store, NCCL's bootstrap and connection set-up, the job's own code), not inside a "
            "collective whose data never comes",
            lambda c: c.gpu_load == "idle",
            STALLS,
        )
        for i, f in (
            ("nccl.p2p", 0.4),
            ("app.collective_mismatch", 0.5),
            ("launch.rendezvous", 2.0),
            ("net.socket_interface", 1.5),
            ("net.unreachable", 1.5),
        )
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
        _WSL_STACK,
        lambda c: c.wsl,
        GPU_STACK,
    ),
    # an error of no class from a job under WSL: its GPU stack (GPU paravirtualisation, no
    # peer-to-peer, a VM's /dev/shm) fails NCCL's set-up in ways no message of its own names
    Shift(
        "driver.wsl",
        6.0,
        _WSL_STACK,
        lambda c: c.wsl,
        frozenset({"failure"}),
    ),
    Shift(
        "host.resources",
        1.5,
        "runs under WSL, whose VM has its own memory and swap limits (.wslconfig)",
        lambda c: c.wsl,
        frozenset({"killed", "host_oom"}),
    ),
)
