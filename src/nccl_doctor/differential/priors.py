"""Priors: for each symptom class, how often each catalogue id is the cause.

A data table, read by :func:`nccl_doctor.differential.rank`. Each weight
says how often, among failures of that class, the id turns out to be the
cause, before any other fact is weighed; each row carries its reason and its
source. Weights of a class need not sum to one (they are normalised).

Sources, named in each row:
- ``nccl-docs``: NCCL's troubleshooting guide (docs.nvidia.com/deeplearning/nccl,
  "Troubleshooting": /dev/shm in Docker, ACS and P2P, IB and GDR, socket
  interfaces) and the messages that print each result in NCCL's src/.
- ``torch-docs``: PyTorch's distributed docs and ProcessGroupNCCL's own
  messages (watchdog, desync, store).
- ``judgement``: the maintainers' reading of how these failures resolve in
  public threads, to be replaced by counts from the development corpus as it
  grows (``scripts/derive_priors.py`` prints them).
- ``dev-corpus``: counts of the development corpora's incidents (never a
  blind one: ``incidents-blind-2026-12*``) whose lead symptom is that class,
  as ``scripts/derive_priors.py`` prints them.
- ``llama3``: Meta's Llama 3 paper, 419 unexpected interruptions in 54 days:
  GPU 58.7% (of which HBM 17.2%), software 12.9%, network 8.4%, host 2.9%.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True, slots=True)
class Prior:
    """One id's weight within a symptom class, why, and from where."""

    id: str
    weight: float
    why: str
    source: str


def _p(rule_id: str, weight: float, why: str, source: str = "nccl-docs") -> Prior:
    return Prior(rule_id, weight, why, source)


#: The silent hang's causes (the reporter's words), also the first causes of a job the
#: scheduler ended at its time limit.
# the development corpora (30 hangs): P2P 7, rendezvous 3, then 2 each for the app, an
# NCCL bug, NVLink, an IB link, a double launch, the interface
# the development corpora (with the retired blind ones, session 11): 63 hangs said in
# words: P2P 20, unreachable 5, NCCL bugs 5, socket interface 5, rendezvous 4, the
# application 3 (+3 collective mismatches), twos (NVLS, duplicate GPU or launch, versions,
# IB links), ones; no shared memory, one IB set-up
_HANG = (
    _p("nccl.p2p", 0.24, "P2P transfers that never complete are the classic silent hang"),
    _p("app.hang", 0.10, "a rank stuck in its own code", "torch-docs"),
    _p("net.socket_interface", 0.09, "bootstrap waits on the wrong interface", "dev-corpus"),
    _p("net.unreachable", 0.08, "the nodes cannot reach each other's ports", "dev-corpus"),
    _p("nccl.internal", 0.08, "an NCCL bug that deadlocks (fixed in a later release)"),
    _p("launch.rendezvous", 0.07, "not every process joined: the others wait", "dev-corpus"),
    # (with the retired 12d and 12e, 98 hangs: the ranks in different collectives 10)
    _p("app.collective_mismatch", 0.09, "ranks wait in different collectives", "dev-corpus"),
    _p("net.ib_link", 0.04, "an IB/RoCE port down: the ring waits on it", "dev-corpus"),
    _p("gpu.nvlink", 0.04, "NVLink errors stall peer traffic", "dev-corpus"),
    _p(
        "launch.duplicate_launch",
        0.04,
        "ranks of two launches wait on each other",
        "dev-corpus",
    ),
    _p("gpu.xid", 0.04, "a GPU that stopped responding", "llama3"),
    _p("nccl.duplicate_gpu", 0.03, "two ranks on one GPU wait on each other", "dev-corpus"),
    _p("nccl.version_mismatch", 0.03, "ranks on different NCCL builds", "dev-corpus"),
    _p("nccl.nvls", 0.03, "NVLS multicast set-up that never completes", "dev-corpus"),
    _p("net.ib_config", 0.03, "IB set-up that never completes", "dev-corpus"),
    _p("nccl.shm", 0.02, "SHM stuck on a small /dev/shm", "dev-corpus"),
)

PRIORS: dict[str, tuple[Prior, ...]] = {
    "nccl_system": (
        _p("nccl.shm", 0.22, "SHM transport cannot map /dev/shm segments (64 MB in Docker)"),
        _p("net.socket_interface", 0.16, "bootstrap or socket transport on the wrong interface"),
        _p("net.unreachable", 0.12, "peers cannot connect (firewall, routes, MASTER_ADDR)"),
        _p("nccl.p2p", 0.10, "P2P/IPC across GPUs fails (ACS, IOMMU, virtualisation)"),
        _p("host.resources", 0.10, "a system call failed on host limits (fds, memlock, memory)"),
        # the development corpora: IB set-up 5 of 13, SHM 5
        _p("net.ib_config", 0.15, "IB verbs set-up failed (memlock, GID, HCA)"),
        _p("launch.rank_crash", 0.06, "a peer died and its sockets closed", "judgement"),
        _p("nccl.version_mismatch", 0.06, "ranks speak different NCCL versions"),
        _p("driver.container", 0.06, "the container lacks devices or IPC namespace"),
        # the development corpora (with the retired blind ones): 3 of 31 were an NCCL_*
        # setting (a topology file of another machine, a buffer size the NIC cannot register)
        _p("nccl.env", 0.07, "an NCCL_* setting forced a path the machine lacks", "dev-corpus"),
    ),
    "nccl_unhandled_cuda": (
        _p("gpu.contention", 0.12, "another process holds the GPU's memory", "judgement"),
        # the development corpora (with the retired blind ones): of 8, 2 are a libnccl that does
        # not fit the CUDA stack and 2 NVLS multicast setup; the rest one each
        _p("nccl.version_mismatch", 0.15, "a libnccl built for another CUDA", "dev-corpus"),
        _p("driver.uvm", 0.14, "nvidia_uvm missing: first CUDA calls fail (999)"),
        _p("nccl.nvls", 0.10, "NVLS multicast setup failed on an NVSwitch board", "dev-corpus"),
        _p("nccl.internal", 0.06, "an NCCL bug: a kernel of a release older than the GPU"),
        _p("gpu.oom", 0.12, "the job itself ran out of memory inside NCCL"),
        _p("cuda.device_visibility", 0.10, "ranks see the wrong or the same GPU"),
        _p("gpu.fabric_manager", 0.10, "NVSwitch fabric not ready on HGX systems"),
        _p("nccl.p2p", 0.10, "peer access between GPUs fails"),
        _p("driver.cuda_mismatch", 0.08, "CUDA runtime newer than the driver"),
        _p("gpu.xid", 0.08, "the GPU faulted (Xid)", "llama3"),
        _p("driver.container", 0.06, "driver libraries in the container mismatch the host"),
    ),
    "nccl_internal": (
        _p("nccl.internal", 0.30, "an NCCL bug fixed in a later release"),
        # the development corpora: 3 of 8 were the bootstrap's missing socket interface, which
        # NCCL before 2.12 returned as an internal error
        _p(
            "net.socket_interface",
            0.18,
            "no usable socket interface (an internal error before NCCL 2.12)",
            "dev-corpus",
        ),
        _p("nccl.version_mismatch", 0.16, "two NCCL libraries or versions in one job"),
        _p("net.ib_config", 0.12, "IB/RoCE set-up NCCL did not expect (GID, HCA)"),
        _p("nccl.shm", 0.10, "shared-memory segments could not be created"),
        _p("nccl.env", 0.10, "an NCCL_* setting forced an impossible path"),
        _p("nccl.p2p", 0.08, "P2P set-up failed part-way"),
        _p("host.resources", 0.06, "a host limit hit during set-up"),
    ),
    "nccl_invalid": (
        # the development corpora: of 15, two ranks on one GPU 8, a libnccl other than the one
        # the caller was built for 3, an NCCL_* value, an NCCL bug, IB set-up, a second launch 1
        _p("nccl.duplicate_gpu", 0.34, "two ranks on one GPU", "dev-corpus"),
        _p(
            "nccl.version_mismatch",
            0.18,
            "the libnccl loaded is not the one the caller was built for",
            "dev-corpus",
        ),
        _p("cuda.device_visibility", 0.12, "rank-to-GPU mapping wrong"),
        _p("nccl.env", 0.10, "an NCCL_* value NCCL refuses"),
        _p("app.collective_mismatch", 0.08, "ranks passed different sizes or types", "torch-docs"),
        _p("net.socket_interface", 0.06, "NCCL_SOCKET_IFNAME matches no interface"),
        _p("nccl.internal", 0.05, "an NCCL bug fixed in a later release", "dev-corpus"),
        _p("launch.duplicate_launch", 0.05, "a second launch took the same ranks", "dev-corpus"),
    ),
    "nccl_remote": (
        # the development corpora: of 7, IB set-up 3, GPUDirect 2, the socket interface 2
        _p("net.ib_config", 0.22, "the queue pairs were set up wrong (GID, MTU, HCA)"),
        _p("net.ib_transport", 0.20, "RDMA completion errors (retry exceeded, link flap)"),
        _p("launch.rank_crash", 0.14, "a peer process died; its side closed", "judgement"),
        _p("net.socket_interface", 0.10, "the peers' sockets on an interface they cannot use"),
        _p("gpu.xid", 0.12, "a GPU on the peer faulted", "llama3"),
        _p("net.ib_link", 0.12, "an IB/RoCE port went down"),
        _p("net.gdr", 0.10, "the NIC may not touch the GPU buffer (remote access error)"),
        _p("host.resources", 0.08, "the peer host ran out of memory"),
    ),
    "cuda_unknown": (
        _p("driver.uvm", 0.28, "nvidia_uvm not loaded or broken (after suspend/driver reload)"),
        _p(
            "gpu.contention",
            0.14,
            "the GPU is held or in a bad state by another process",
            "judgement",
        ),
        _p("gpu.fabric_manager", 0.14, "HGX: fabric manager down or mismatched"),
        _p("driver.version_mismatch", 0.12, "kernel module and user-space driver differ"),
        _p("driver.container", 0.10, "container runtime injected the wrong driver stack"),
        _p("gpu.xid", 0.10, "the GPU faulted", "llama3"),
        _p("driver.cuda_mismatch", 0.08, "CUDA runtime needs a newer driver"),
    ),
    "collective_timeout": (
        _p("app.hang", 0.24, "one rank stuck or slow in its own work", "torch-docs"),
        _p("launch.rank_crash", 0.12, "a peer died and never joined", "judgement"),
        _p("app.collective_mismatch", 0.16, "ranks issued different collectives", "torch-docs"),
        _p("nccl.p2p", 0.14, "P2P transfers never complete (ACS/IOMMU)"),
        _p("net.ib_transport", 0.10, "RDMA stalls between nodes"),
        _p("gpu.xid", 0.10, "a GPU stopped making progress", "llama3"),
        _p("nccl.shm", 0.08, "SHM transport stuck in a small /dev/shm"),
        # NCCL connects lazily, inside the first collective: across nodes a socket that waits
        # on an interface or a port the peer cannot reach stalls it until the watchdog fires
        _p(
            "net.socket_interface",
            0.04,
            "the ranks connect over an interface the peers cannot reach",
        ),
        _p("net.unreachable", 0.04, "a port between the nodes is blocked (firewall, route)"),
    ),
    "store_timeout": (
        # the development corpora (20 with this lead, the retired 12d and 12e included): the
        # interface 6, the port taken 5, unreachable 4, a worker missing 3, then ones
        _p(
            "net.socket_interface",
            0.22,
            "the store advertised an unreachable interface",
            "dev-corpus",
        ),
        _p("net.unreachable", 0.20, "the store's address or port cannot be reached"),
        _p(
            "launch.port_in_use",
            0.18,
            "the store port is taken: the master never listens there, or the clients reach "
            "another job's store",
            "dev-corpus",
        ),
        _p("launch.rendezvous", 0.19, "not every worker joined (world size, node missing)"),
        _p(
            "app.hang",
            0.08,
            "rank 0 was still busy (data preparation) when the others' store timeout ran out",
            "torch-docs",
        ),
        _p("launch.rank_crash", 0.06, "the store's host process died", "judgement"),
        _p("launch.duplicate_launch", 0.06, "two launches share one store"),
    ),
    "gpu_oom": (
        _p("gpu.oom", 0.60, "the job's own tensors exceed the GPU", "judgement"),
        _p("gpu.contention", 0.28, "another process holds part of the GPU", "judgement"),
        _p("cuda.device_visibility", 0.12, "every rank allocates on GPU 0"),
    ),
    "killed": (
        _p("host.resources", 0.55, "the kernel's OOM killer ends the biggest process", "judgement"),
        _p("launch.rank_crash", 0.25, "a rank was killed; the others followed", "judgement"),
        _p(
            "app.hang",
            0.12,
            "a stuck rank was killed by the watchdog's heartbeat monitor or the scheduler",
            "torch-docs",
        ),
        _p(
            "gpu.xid",
            0.08,
            "the GPU faulted and the driver's recovery killed the process",
            "llama3",
        ),
    ),
    "crashed": (
        _p("nccl.version_mismatch", 0.22, "two NCCL/CUDA libraries loaded in one process"),
        _p("launch.rank_crash", 0.16, "a native crash in one rank", "judgement"),
        _p("nccl.internal", 0.14, "an NCCL bug"),
        _p("nccl.shm", 0.12, "NCCL's shared-memory segment gone or too small (a bad mapping)"),
        _p("host.resources", 0.12, "memory exhausted on the host"),
        _p("driver.cuda_mismatch", 0.08, "the CUDA libraries loaded do not match each other"),
        _p("gpu.contention", 0.06, "another process left the GPU in a bad state", "judgement"),
    ),
    # SIGBUS: a page of a memory-mapped file could not be backed. NCCL maps its SHM segments
    # from /dev/shm (NCCL's troubleshooting guide: Docker's 64 MB /dev/shm ends in SIGBUS)
    "bus_error": (
        _p("nccl.shm", 0.60, "NCCL's /dev/shm segment outgrew the tmpfs (64 MB in Docker)"),
        _p("host.resources", 0.15, "a full disk or tmpfs under another mapped file", "judgement"),
        _p(
            "launch.rank_crash",
            0.15,
            "a native crash in one rank; the others followed",
            "judgement",
        ),
        _p("nccl.version_mismatch", 0.10, "two NCCL libraries mapped into one process"),
    ),
    "aborted": (
        _p(
            "app.hang",
            0.36,
            "the watchdog aborts a process whose collective timed out",
            "torch-docs",
        ),
        _p("launch.rank_crash", 0.30, "a C++ exception or assert ended the rank", "judgement"),
        _p("cuda.illegal_access", 0.18, "a sticky CUDA error took the process down"),
        _p("nccl.internal", 0.16, "an NCCL assertion"),
    ),
    # SIGTERM, SIGINT, SIGHUP: signals a process is sent, never ones its own fault raises.
    # torchrun's agent (elastic multiprocessing api.py: close() sends SIGTERM) and mp.spawn
    # stop every other worker when one fails, and schedulers stop a job with SIGTERM first
    "terminated": (
        _p(
            "launch.rank_crash",
            0.40,
            "another process failed first and the launcher stopped the rest (its own log "
            "holds the cause)",
            "torch-docs",
        ),
        _p(
            "app.hang",
            0.30,
            "the job stopped making progress; its time limit, a person or a watchdog ended it",
            "judgement",
        ),
        _p(
            "host.resources",
            0.15,
            "memory pressure: Kubernetes' kubelet evicts with SIGTERM before SIGKILL",
            "judgement",
        ),
        _p("gpu.xid", 0.07, "a health check drained the node after a GPU fault", "llama3"),
    ),
    "hang": _HANG,
    # the scheduler's wall-clock limit ended a job that printed no error (Slurm's 'CANCELLED AT
    # ... DUE TO TIME LIMIT'): it stopped making progress (the silent hang's causes, weighed as
    # there), or it ran, too slowly for its allocation (the slow job's first causes, below them)
    "time_limit": (
        *(replace(p, weight=round(p.weight * 0.8, 3)) for p in _HANG),
        _p("net.gdr", 0.05, "it ran, but inter-node traffic went through host memory", "judgement"),
        _p("gpu.thermal_power", 0.03, "it ran, on GPUs held to low clocks", "judgement"),
    ),
    # a node of the job stopped answering its scheduler or launcher (Slurm's NODE FAILURE,
    # mpirun's lost daemon): what ends a whole node, by Llama 3's interruptions (GPU 58.7%, of
    # which HBM 17.2%; network 8.4%; host 2.9%)
    "node_lost": (
        _p("gpu.xid", 0.30, "a GPU fault that hung the node's driver or rebooted it", "llama3"),
        _p("gpu.ecc", 0.17, "HBM errors that took the GPU, and the node, down", "llama3"),
        _p("gpu.lost", 0.12, "a GPU that fell off the bus (Xid 79)", "llama3"),
        _p("net.unreachable", 0.08, "the node's network to the others failed", "llama3"),
        _p("host.resources", 0.06, "host memory ran out until the node stopped answering"),
        _p("net.ib_link", 0.04, "the node's fabric link went down", "llama3"),
    ),
    # a process of the job stopped answering the service that watches it (the coordination
    # service JAX and tf.distribute start on task 0 lost a task's heartbeats, or a task lost
    # the service): XLA's own message says the task "failed, got preempted, or crashed"; what
    # ended it is in its own log, and by Llama 3's interruptions a GPU fault most often
    "peer_lost": (
        _p(
            "launch.rank_crash",
            0.34,
            "the lost process died of its own error first; the others only report it",
            "judgement",
        ),
        _p("gpu.xid", 0.14, "a GPU fault ended the process or hung its node", "llama3"),
        _p("host.resources", 0.12, "the host ran out of memory and the kernel killed it"),
        _p("net.unreachable", 0.10, "the network between the process and the service failed"),
        _p("gpu.ecc", 0.08, "HBM errors took the GPU, and the process, down", "llama3"),
        _p("gpu.lost", 0.06, "a GPU fell off the bus under the process", "llama3"),
    ),
    # the host itself lost power or restarted under the GPUs' load: their power transients
    # (far above the cap for milliseconds) trip a power supply's over-current protection, or
    # heat trips a thermal shutdown; else a fault that panicked the kernel or reset the host
    "power_loss": (
        _p(
            "gpu.thermal_power",
            0.55,
            "the GPUs' power draw tripped the power supply's protection, or heat shut it down",
            "judgement",
        ),
        _p("gpu.xid", 0.18, "a GPU fault that panicked the driver and reset the host", "llama3"),
        _p("gpu.lost", 0.15, "a GPU that fell off the bus and took the host down", "llama3"),
        _p("gpu.ecc", 0.12, "uncorrectable memory errors that reset the host", "llama3"),
    ),
    "slow": (
        _p("net.gdr", 0.22, "inter-node traffic staged through host memory: GPUDirect RDMA off"),
        _p("nccl.p2p", 0.14, "PCIe ACS/IOMMU reroutes GPU peer traffic through the CPU"),
        _p("net.ib_link", 0.12, "a port trained below its rate, or down to one rail"),
        _p("gpu.pcie_degraded", 0.12, "a GPU's PCIe link runs below its width or generation"),
        _p("net.socket_interface", 0.10, "NCCL fell back to TCP sockets on a slow interface"),
        _p("nccl.env", 0.10, "an NCCL_* setting disabled a transport or limited channels"),
        _p("gpu.nvlink", 0.08, "NVLink links down: traffic goes over PCIe"),
        _p("launch.duplicate_launch", 0.06, "ranks ran as separate jobs: no traffic between them"),
        _p("gpu.thermal_power", 0.06, "GPUs throttled by heat or power cap", "llama3"),
    ),
    # nccl-tests across nodes far below what one node's active ports carry (measured, see
    # facts/bandwidth.py): the traffic left the RDMA fast path, or a port carries less
    "slow_network": (
        _p("net.gdr", 0.26, "GPUDirect RDMA off: traffic staged through host memory"),
        _p("net.ib_config", 0.18, "NCCL left IB for TCP sockets, or uses fewer HCAs than shown"),
        _p("net.ib_link", 0.16, "a port down or trained below its rate, or a rail missing"),
        _p("nccl.env", 0.14, "an NCCL_* setting limits NICs, channels or the protocol"),
        _p("net.socket_interface", 0.10, "the Socket transport on a slow interface"),
        _p("gpu.pcie_degraded", 0.08, "a GPU's or NIC's PCIe link below its width or generation"),
        _p("gpu.thermal_power", 0.04, "GPUs throttled by heat or power cap", "llama3"),
    ),
    # a collective that completed with wrong values (nccl-tests' validation, or said): peer
    # writes lost or reordered on the way, rarely the GPU's memory or an NCCL bug
    "wrong_results": (
        _p(
            "nccl.p2p",
            0.40,
            "P2P through an IOMMU or a PCIe switch with ACS corrupts peer writes (VMs, AMD hosts)",
        ),
        _p("net.gdr", 0.15, "GPUDirect RDMA without a working peer-memory path reads stale data"),
        _p("nccl.internal", 0.15, "an NCCL release with a data-corruption bug"),
        _p("gpu.ecc", 0.12, "a GPU whose memory errors corrupt data silently", "llama3"),
        _p("app.collective_mismatch", 0.10, "ranks passed different sizes or types", "torch-docs"),
        _p("nccl.env", 0.08, "an NCCL_* setting (protocol, algorithm) forced a broken path"),
    ),
    "gpu_imbalance": (
        _p(
            "cuda.device_visibility",
            0.60,
            "each rank also opens a context on GPU 0 (no set_device, or a checkpoint "
            "loaded without map_location)",
            "torch-docs",
        ),
        _p("gpu.contention", 0.25, "another job's processes hold the GPU", "judgement"),
        _p("nccl.duplicate_gpu", 0.15, "several ranks were given the same GPU", "torch-docs"),
        # the development corpora: 3 of 9 reports of the ranks' processes on GPU 0 were filed
        # as the memory they took from the job there (its batch no longer fits)
        _p(
            "gpu.oom",
            0.14,
            "the sibling ranks' contexts on GPU 0 take memory the job's rank 0 needed",
            "dev-corpus",
        ),
    ),
    "library_missing": (
        _p("nccl.version_mismatch", 0.40, "the NCCL the program needs is not the one on the path"),
        _p("driver.container", 0.25, "the driver's libraries were not injected into the container"),
        _p(
            "driver.cuda_mismatch",
            0.20,
            "the CUDA runtime libraries are missing or another version",
        ),
        _p(
            "nccl.env",
            0.15,
            "LD_LIBRARY_PATH or a plugin path points at the wrong place",
            "judgement",
        ),
    ),
    "driver_error": (
        _p("driver.version_mismatch", 0.50, "kernel module and user-space driver differ"),
        _p("driver.container", 0.25, "the container runtime injected the wrong driver libraries"),
        _p("gpu.lost", 0.25, "NVML cannot reach a GPU that fell off the bus", "llama3"),
    ),
    # DDP's own checks (reducer.cpp, comm.cpp): the training code, not the stack
    "ddp_usage": (
        _p(
            "app.unused_params",
            0.45,
            "parameters that get no gradient in an iteration",
            "torch-docs",
        ),
        _p(
            "app.param_mismatch",
            0.30,
            "the model differs across ranks (shapes, order)",
            "torch-docs",
        ),
        _p("app.collective_mismatch", 0.15, "ranks ran different code paths", "torch-docs"),
        _p("app.hang", 0.10, "one rank skipped or repeated an iteration", "judgement"),
    ),
    # gloo's TCP pairs (gloo/transport/tcp): a peer's socket closed, or none could be opened
    # the development corpora (session 24): 7 of 7 gloo connection failures (connectFullMesh,
    # an IoException, an address not found for an interface) were the interface gloo bound
    "connection": (
        _p(
            "net.socket_interface",
            0.28,
            "gloo bound an interface peers cannot reach",
            "dev-corpus",
        ),
        _p("launch.rank_crash", 0.24, "the peer process died and its sockets closed", "judgement"),
        _p("net.unreachable", 0.22, "the peers cannot connect (firewall, routes)"),
        _p("app.hang", 0.10, "a peer stuck past the timeout closed the pair", "judgement"),
        _p("host.resources", 0.08, "the host ran out of memory or file descriptors"),
        _p("launch.port_in_use", 0.08, "a port gloo needed was taken"),
        _p("nccl.host_identity", 0.08, "two containers took each other for the same host"),
    ),
    # an RDMA transfer that completed with an error, as a transport under the job prints it
    # (UCX's mlx5 completion errors: ib_mlx5_log.c's syndrome texts): the syndrome names the
    # fault on the path more often than the peer
    "rdma_completion": (
        _p(
            "net.ib_transport",
            0.34,
            "retry exceeded: a link or switch fault on the path",
            "judgement",
        ),
        _p("net.ib_link", 0.18, "an IB/RoCE port went down mid-run", "judgement"),
        _p(
            "launch.rank_crash",
            0.16,
            "the peer process died; its queue pairs went away",
            "judgement",
        ),
        _p("gpu.xid", 0.12, "a GPU on the peer faulted and its rank stopped", "llama3"),
        _p("net.gdr", 0.10, "the NIC may not touch the GPU buffer (protection, access)"),
        _p("net.ib_config", 0.10, "queue pairs set up wrong (GID, MTU, HCA)"),
    ),
    # PCIe AER (drivers/pci/pcie/aer.c): an uncorrectable error on a link; a fatal one resets
    # the link, and the GPU behind it stops answering (Xid 79 follows)
    "pcie_error": (
        _p("gpu.lost", 0.45, "the link reset takes the GPU off the bus (Xid 79)", "llama3"),
        _p(
            "gpu.pcie_degraded",
            0.30,
            "a marginal link, riser or slot: errors, then a lower width or speed",
            "judgement",
        ),
        _p("gpu.xid", 0.15, "the GPU faulted and its link errors followed", "llama3"),
        _p("nccl.p2p", 0.10, "peer traffic through a PCIe switch with ACS errors", "judgement"),
    ),
    # the kernel's hung-task warning for a thread of the I/O stack (jbd2, xfsaild, txg_sync):
    # the storage under the host stalled; the job waits only if it reads or writes there
    "host_io": (
        _p("host.resources", 0.55, "a full, failing or overloaded disk or network filesystem"),
        _p("app.hang", 0.30, "a rank blocked in the same I/O (checkpoint, dataset)", "judgement"),
        _p("gpu.contention", 0.15, "another process's I/O load on the same host", "judgement"),
    ),
    "desync": (
        _p("app.collective_mismatch", 0.70, "ranks called different collectives", "torch-docs"),
        _p("app.param_mismatch", 0.15, "models differ across ranks", "torch-docs"),
        _p("app.hang", 0.15, "one rank took another code path", "torch-docs"),
    ),
    # a CUDA call refused (not sticky: cudaErrorInvalidValue, InvalidResourceHandle,
    # NotSupported...): no kernel faulted (that is cuda_fault), the call itself was wrong for
    # this process, driver or library. The development corpora (session 24, 12 incidents):
    # NVLS multicast set-up 3, an NCCL bug 3, P2P/IPC imports 2, then one each for the fabric
    # manager, UVM, a library for another CUDA, the driver
    "cuda_error": (
        _p("nccl.internal", 0.20, "an NCCL bug that passes CUDA a bad argument", "dev-corpus"),
        _p("nccl.nvls", 0.18, "NVLS multicast setup failed under NCCL", "dev-corpus"),
        _p("nccl.p2p", 0.14, "a peer's memory handle could not be opened (IPC, P2P)", "dev-corpus"),
        _p("nccl.version_mismatch", 0.12, "a library built for another CUDA or GPU", "dev-corpus"),
        _p("driver.cuda_mismatch", 0.10, "the runtime needs a newer driver", "dev-corpus"),
        _p("gpu.fabric_manager", 0.08, "NVSwitch fabric not ready (HGX boards)", "dev-corpus"),
        _p("driver.uvm", 0.06, "the UVM module is missing", "dev-corpus"),
        _p("driver.container", 0.06, "the container lacks the IPC namespace or devices"),
        _p("cuda.device_visibility", 0.06, "a bad device ordinal or no device"),
        _p("cuda.illegal_access", 0.04, "an earlier kernel fault reported at a later call"),
    ),
    # CUDA's errors by family (knowledge.cuda_errors.symptom_class)
    "cuda_fault": (
        # the development corpora (with the retired blind ones): ECC 7 of 10, illegal access 2
        _p("gpu.ecc", 0.26, "HBM errors take the context down (Llama 3: HBM 17.2%)", "llama3"),
        _p("cuda.illegal_access", 0.22, "the job's own kernel touched memory it does not own"),
        _p("cuda.device_assert", 0.14, "a kernel's assertion (an index out of range)"),
        _p("gpu.xid", 0.14, "the GPU faulted under the kernel", "llama3"),
        _p("nccl.internal", 0.08, "a fault inside an NCCL kernel (fixed in a later release)"),
        _p("gpu.nvlink", 0.06, "an NVLink error under a peer access (Xid 74)"),
        _p("nccl.p2p", 0.06, "a peer-to-peer copy through a broken P2P path (ACS/IOMMU)"),
    ),
    # cudaErrorAssert: a kernel checked its own input; memory corrupted by an earlier fault can
    # make the index it checks garbage
    "cuda_assert": (
        _p("cuda.device_assert", 0.80, "the kernel's assertion: an index or value out of range"),
        _p("cuda.illegal_access", 0.20, "an earlier out-of-bounds write corrupted what it checked"),
    ),
    "cuda_device": (
        _p("cuda.device_visibility", 0.40, "the rank asks for a GPU index it cannot see"),
        _p("gpu.mig", 0.14, "MIG instances are the only devices, one per process", "judgement"),
        _p("gpu.compute_mode", 0.14, "exclusive compute mode and the GPU is taken"),
        _p("driver.container", 0.12, "the container was given no GPU devices"),
        _p("gpu.contention", 0.10, "another process holds the GPU", "judgement"),
        _p("nccl.duplicate_gpu", 0.10, "several ranks were given the same GPU", "torch-docs"),
    ),
    "cuda_driver": (
        # the development corpora: of 8, the fabric manager 3, the runtime's driver 3, the
        # container's driver libraries 2
        _p("driver.cuda_mismatch", 0.28, "the CUDA runtime needs a newer driver"),
        _p("driver.container", 0.20, "the container runtime injected the wrong driver libraries"),
        _p("driver.version_mismatch", 0.14, "kernel module and user-space driver differ"),
        _p("gpu.fabric_manager", 0.20, "HGX: the fabric manager is down (error 802)"),
        _p("driver.uvm", 0.12, "nvidia_uvm is missing: CUDA cannot start"),
        _p("driver.wsl", 0.05, "WSL's driver stack lacks what the runtime needs", "judgement"),
    ),
    "xid": (
        _p("gpu.xid", 0.60, "the driver logged a GPU fault", "llama3"),
        _p("gpu.lost", 0.20, "the GPU fell off the bus or needs a reset", "llama3"),
        _p("gpu.ecc", 0.12, "HBM errors (Xid 48/63/64/94/95)", "llama3"),
        _p("gpu.nvlink", 0.08, "NVLink errors (Xid 74)"),
    ),
    # the C library's ENOMEM / EMFILE / ENOSPC (system.jsonl), whoever printed them
    "host_limit": (
        _p("host.resources", 0.60, "host RAM, ulimit -n or a full disk", "judgement"),
        _p("nccl.shm", 0.20, "shared memory full or too small (64 MB in Docker)"),
        _p("net.ib_config", 0.12, "the locked-memory limit (ulimit -l) for registered buffers"),
        _p("driver.container", 0.08, "the container's own limits are lower than the host's"),
    ),
    "host_oom": (
        _p("host.resources", 0.75, "host RAM ran out; the OOM killer chose a rank", "judgement"),
        _p("launch.rank_crash", 0.25, "a rank was killed; the others followed", "judgement"),
    ),
    # the place a traceback failed (.phases), when no message the catalogue knows was kept
    "store_create": (
        _p("launch.port_in_use", 0.30, "the master cannot bind: the port is taken", "torch-docs"),
        _p("net.unreachable", 0.26, "a client cannot reach MASTER_ADDR:MASTER_PORT", "torch-docs"),
        _p("launch.rendezvous", 0.14, "not every worker joined before the store's timeout"),
        _p("net.socket_interface", 0.10, "the master's name resolves to an unreachable address"),
        _p("launch.duplicate_launch", 0.10, "two launches contend for one store port", "judgement"),
        _p("launch.rank_crash", 0.10, "the store's host process died", "judgement"),
    ),
    "cuda_init": (
        _p("driver.cuda_mismatch", 0.24, "torch's CUDA runtime needs a newer driver", "torch-docs"),
        _p("cuda.device_visibility", 0.18, "CUDA_VISIBLE_DEVICES or the ordinal names no GPU"),
        _p("driver.uvm", 0.16, "nvidia_uvm missing: the first CUDA call fails"),
        _p("driver.container", 0.14, "the container lacks the GPU devices or driver libraries"),
        _p("driver.version_mismatch", 0.12, "kernel module and user-space driver differ"),
        _p("gpu.compute_mode", 0.08, "exclusive compute mode and the GPU is taken", "judgement"),
        _p("gpu.lost", 0.08, "the GPU fell off the bus", "llama3"),
    ),
    "comm_init": (
        _p("nccl.shm", 0.16, "SHM segments cannot be created (/dev/shm in containers)"),
        _p("net.socket_interface", 0.14, "bootstrap on an interface peers cannot reach"),
        _p("nccl.p2p", 0.12, "P2P/IPC between the node's GPUs fails (ACS, IOMMU)"),
        _p("cuda.device_visibility", 0.12, "ranks are on the wrong or the same GPU", "torch-docs"),
        _p("gpu.contention", 0.10, "another process holds the GPU's memory", "judgement"),
        _p("net.unreachable", 0.08, "peers cannot connect (firewall, routes)"),
        _p("nccl.duplicate_gpu", 0.08, "two ranks of the communicator on one GPU"),
        _p("net.ib_config", 0.08, "IB verbs set-up failed (memlock, GID, HCA)"),
        _p("nccl.version_mismatch", 0.06, "ranks or libraries differ in NCCL version"),
        _p("driver.container", 0.06, "the container lacks devices or the IPC namespace"),
    ),
    # a builtin exception in the job's own code (KeyError, ValueError...): the rank's own bug
    "app_error": (
        _p("launch.rank_crash", 0.70, "the job's own exception ended a rank; the others followed"),
        _p("app.collective_mismatch", 0.12, "one rank took another path and failed", "judgement"),
        _p("host.resources", 0.10, "a file or resource the code reads is missing or full"),
        _p("cuda.device_visibility", 0.08, "the code asks for a device it cannot see", "judgement"),
    ),
    # a failure no message classifies: the causes are as many as the corpora hold; the
    # weights follow the development corpora's counts for the class (scripts/derive_priors.py:
    # 32 incidents, no id above 2) and, beside them, how often each id causes any failure there
    # the development corpora (with the retired blind ones, session 11): 68 failures in words
    # only: P2P 7, device visibility 5, NCCL bug 5, NCCL/CUDA builds 5, unreachable 4, fabric
    # manager 4, socket interface 4, IB set-up 3, then twos and ones (shared memory 1)
    # NVSHMEM's own failures (scripts/signatures/mine_nvshmem.py reads what each means): its
    # IB transports need GPUDirect RDMA and, for IBGDA, the rights to map the NIC; it groups
    # PEs by host name; its heap is a fixed size. No incident of the corpora yet: judgement,
    # from the library's source and its install guide's requirements
    "nvshmem": (
        _p(
            "net.ib_config",
            0.22,
            "the queue pairs or NICs are set up wrong (GID index, HCA list, RoCE)",
            "judgement",
        ),
        _p(
            "net.gdr",
            0.20,
            "the NIC may not reach GPU memory (nvidia_peermem, IBGDA's driver setting)",
            "judgement",
        ),
        _p(
            "driver.container",
            0.14,
            "a container without the rights or devices the transport needs (DEVX, IMEX channels)",
            "judgement",
        ),
        _p("nccl.host_identity", 0.10, "hosts of one name taken for one node", "judgement"),
        _p("host.resources", 0.08, "locked memory below what the heap registers", "judgement"),
        _p("gpu.oom", 0.08, "the symmetric heap is full (NVSHMEM_SYMMETRIC_SIZE)", "judgement"),
        _p(
            "net.socket_interface",
            0.06,
            "the bootstrap on an interface the others cannot reach",
            "judgement",
        ),
        _p("nccl.p2p", 0.05, "the node's GPUs cannot map each other's memory", "judgement"),
        _p("net.ib_link", 0.04, "a port down on the path to the peer", "judgement"),
    ),
    # DeepEP's kernels time out when a peer's tokens never arrive (mine_deepep.py): the peer
    # is stuck elsewhere or dead, the ranks disagree on the call, or the path between them
    # (NVLink, NVSHMEM's RDMA) does not deliver. No incident of the corpora yet: judgement
    "deepep_timeout": (
        _p("app.hang", 0.22, "a rank stuck elsewhere never entered the dispatch", "judgement"),
        _p("launch.rank_crash", 0.18, "the peer died; its tokens never came", "judgement"),
        _p(
            "net.ib_config", 0.14, "NVSHMEM's RDMA path between nodes does not deliver", "judgement"
        ),
        _p(
            "app.collective_mismatch",
            0.10,
            "ranks called dispatch or combine with different shapes or counts",
            "judgement",
        ),
        _p("net.gdr", 0.10, "the NIC may not write the peer's GPU memory", "judgement"),
        _p("gpu.nvlink", 0.06, "NVLink between the node's GPUs does not deliver", "judgement"),
        _p("gpu.xid", 0.06, "the peer's GPU faulted", "llama3"),
    ),
    "failure": (
        _p(
            "nccl.p2p",
            0.10,
            "P2P between the node's GPUs fails (ACS, IOMMU, virtualisation)",
            "dev-corpus",
        ),
        _p("nccl.version_mismatch", 0.08, "two NCCL or CUDA builds in one job", "dev-corpus"),
        _p("nccl.internal", 0.08, "an NCCL bug fixed in a later release", "dev-corpus"),
        _p("cuda.device_visibility", 0.08, "ranks on the wrong or the same GPU", "dev-corpus"),
        _p(
            "net.socket_interface",
            0.07,
            "NCCL or the store on an interface peers cannot use",
            "dev-corpus",
        ),
        _p("net.unreachable", 0.07, "a connection between the hosts failed", "dev-corpus"),
        _p("gpu.fabric_manager", 0.05, "NVSwitch fabric not ready (HGX boards)", "dev-corpus"),
        _p("net.ib_config", 0.05, "IB/RoCE set-up NCCL did not expect", "dev-corpus"),
        _p("host.resources", 0.04, "a host limit (memory, files, disk)", "dev-corpus"),
        _p("nccl.env", 0.04, "an NCCL_* setting forced an impossible path", "dev-corpus"),
        _p("driver.cuda_mismatch", 0.04, "the CUDA runtime needs a newer driver", "dev-corpus"),
        _p("gpu.xid", 0.04, "a GPU fault under the error", "llama3"),
        _p("launch.rank_crash", 0.04, "one rank failed and the others followed", "judgement"),
        _p("nccl.shm", 0.03, "shared memory too small for NCCL (64 MB in Docker)", "dev-corpus"),
    ),
}
