"""Shifts from the reporter's sentences (:data:`~nccl_doctor.differential.cues.CUES`): what
works with gloo or one GPU, another job on the GPUs, a port said taken, MIG, versions,
containers sharing a machine, and the like.
"""

from __future__ import annotations

from nccl_doctor.differential.shifts.table import (
    CUDA_START,
    NCCL_PATHS,
    PAST_CUDA_START,
    STALLS,
    Shift,
)

WORDS: tuple[Shift, ...] = (
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
    # nvidia-smi works and CUDA does not: NVML opens the control and GPU device nodes through
    # a library that must match the kernel module; CUDA also needs /dev/nvidia-uvm
    *(
        Shift(
            i,
            f,
            "the reporter says nvidia-smi works: the kernel module answers NVML through a "
            "matching library and the GPUs are on the bus; what CUDA needs beyond that is the "
            "unified-memory module and its device node",
            lambda c: c.says("smi_works"),
            frozenset({"cuda_init", "cuda_driver", "cuda_unknown"}),
        )
        for i, f in (
            ("driver.uvm", 2.0),
            ("driver.version_mismatch", 0.3),
            ("gpu.lost", 0.3),
        )
    ),
    Shift(
        "driver.version_mismatch",
        8.0,
        "the reporter says the driver's kernel module and its libraries differ, or that the "
        "driver's packages were upgraded and the machine not rebooted since: the new libraries "
        "then talk to the old module, which refuses them",
        lambda c: (
            c.says("driver_halves_differ") or (c.says("driver_upgraded") and c.says("not_rebooted"))
        ),
    ),
    Shift(
        "gpu.contention",
        5.0,
        "the reporter says another job, an earlier run's processes or a display server held "
        "the same GPUs",
        lambda c: c.says("other_job_same_gpus") or c.says("gpu_held_by_other"),
    ),
    Shift(
        "gpu.nvlink",
        8.0,
        "the reporter says the GPUs' NVLink is down or unused: their traffic goes over PCIe",
        lambda c: c.says("nvlink_unused"),
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
    # a container that sees no GPU at all was given none: the runtime injects the device nodes
    # and the driver's libraries (--gpus, the NVIDIA runtime); a wrong index leaves the others
    *(
        Shift(
            i,
            f,
            "the container sees no GPU at all: its runtime gave it no device or driver library "
            "(no --gpus, not the NVIDIA runtime)",
            lambda c: c.container is True and c.says("no_gpu_seen"),
            frozenset({"cuda_device", "cuda_driver", "cuda_init", "failure"}),
        )
        for i, f in (("driver.container", 4.0), ("cuda.device_visibility", 0.7))
    ),
    Shift(
        "nccl.env",
        6.0,
        "an NCCL setting came from elsewhere (a shell profile, nccl.conf, another cluster): it "
        "may name devices, interfaces or files this machine does not have",
        lambda c: c.says("inherited_setting"),
    ),
    Shift(
        "net.ib_config",
        6.0,
        "the reporter gives a small locked-memory limit (ulimit -l): the RDMA adapter cannot "
        "pin the queue pairs and buffers NCCL registers",
        lambda c: c.says("memlock_small"),
    ),
    Shift(
        "gpu.fabric_manager",
        8.0,
        "the reporter names the fabric manager: on an NVSwitch board CUDA waits for it (802) "
        "and it must match the driver's version",
        lambda c: c.says("fabric_manager_said"),
    ),
    *(
        Shift(
            i,
            f,
            "the job works on the host's network, not on the pods' or containers' own: the "
            "overlay's interfaces or addresses are what NCCL or the store could not use",
            lambda c: c.says("host_network_fixes"),
        )
        for i, f in (("net.socket_interface", 5.0), ("net.unreachable", 2.0))
    ),
    Shift(
        "launch.rendezvous",
        6.0,
        "the reporter says not every node joined, or the job waits in the rendezvous",
        lambda c: c.says("rendezvous_wait"),
    ),
    Shift(
        "launch.rendezvous",
        6.0,
        "the batch script runs the program without srun: sbatch runs it on the first node "
        "alone, so the other nodes' ranks never start",
        lambda c: c.says("no_srun") and c.multi_node,
    ),
    Shift(
        "nccl.version_mismatch",
        5.0,
        "the reporter changed the software of one node and not the others: they run different "
        "builds",
        lambda c: c.says("one_node_changed"),
    ),
    Shift(
        "nccl.version_mismatch",
        4.0,
        "a second NCCL is put in front of PyTorch's own (LD_PRELOAD, the system's libnccl): "
        "the process runs a build its callers were not made for",
        lambda c: c.says("other_nccl_loaded"),
    ),
    *(
        Shift(
            i,
            f,
            "two of the job's own processes share a GPU (colocated, more processes than "
            "GPUs): NCCL refuses a communicator with two ranks on one device",
            lambda c: c.says("ranks_share_gpu"),
        )
        for i, f in (("nccl.duplicate_gpu", 8.0), ("gpu.contention", 0.5))
    ),
    Shift(
        "app.param_mismatch",
        8.0,
        "the reporter says the ranks' models differ: DDP checks that every rank holds the same "
        "parameters",
        lambda c: c.says("model_differs"),
    ),
    Shift(
        "nccl.host_identity",
        8.0,
        "the hosts say the same name: NCCL takes their ranks for one machine's and tries "
        "shared memory and peer access between them",
        lambda c: c.says("same_hostname"),
    ),
    Shift(
        "driver.container",
        6.0,
        "it works once the container runs privileged: the pod lacked devices or capabilities "
        "the library asks for",
        lambda c: c.says("privileged_works"),
    ),
    Shift(
        "nccl.env",
        5.0,
        "one process sets an NCCL variable the others do not: the members of a communicator "
        "must agree on how they allocate and connect",
        lambda c: c.says("setting_differs"),
    ),
    *(
        Shift(
            i,
            f,
            "the reporter points at the job's own kernels or memory touched outside its "
            "bounds: a fault of the code, not of the GPU",
            lambda c: c.says("own_kernel"),
            frozenset({"cuda_fault", "cuda_assert", "nccl_unhandled_cuda", "failure"}),
        )
        for i, f in (("cuda.illegal_access", 3.0), ("gpu.ecc", 0.5), ("gpu.xid", 0.5))
    ),
    Shift(
        "net.ib_config",
        8.0,
        "the reporter says a RoCE GID changed or is the wrong one: the queue pairs address "
        "their peers by it",
        lambda c: c.says("gid_trouble"),
    ),
    *(
        Shift(
            i,
            f,
            "the ranks wait in the job's own code, not in a collective: no GPU path or network "
            "is what they wait for",
            lambda c: c.says("stuck_in_own_code"),
            STALLS,
        )
        for i, f in (("app.hang", 5.0), ("nccl.p2p", 0.5), ("launch.rendezvous", 0.5))
    ),
    Shift(
        "driver.uvm",
        8.0,
        "the reporter says /dev/nvidia-uvm is missing, or that reloading nvidia_uvm fixed it: "
        "CUDA needs the unified-memory module and its node",
        lambda c: c.says("uvm_missing") or c.says("uvm_reload_worked"),
    ),
    # what made the job work names the cause
    *(
        Shift(
            i,
            f,
            "the reporter says giving the container shared memory (--shm-size, --ipc=host) "
            "made it work",
            lambda c: c.says("shm_fix_worked"),
        )
        # (the peers' own path, P2P, needs neither: the fix speaks for SHM)
        for i, f in (("nccl.shm", 8.0), ("host.resources", 2.0), ("nccl.p2p", 0.5))
    ),
    *(
        Shift(
            i,
            f,
            "the reporter says the DataLoader's workers ran out of shared memory, or that the "
            "failure goes with them: the loader's /dev/shm, not NCCL's",
            lambda c: c.says("loader_shm"),
        )
        for i, f in (("host.resources", 6.0), ("nccl.shm", 0.3))
    ),
    Shift(
        "launch.port_in_use",
        8.0,
        "the reporter says another port made it work: the first one was taken",
        lambda c: c.says("port_change_worked"),
    ),
    Shift(
        "app.collective_mismatch",
        5.0,
        "the reporter says equal batches on every rank (drop_last, Join) made it work: a rank "
        "ran one collective more or fewer",
        lambda c: c.says("even_batches_worked"),
    ),
    *(
        Shift(
            i,
            f,
            "the reporter says a change to the data loading (workers, shards, sampler) made it "
            "work: a rank's input pipeline held the job, not its communicators",
            lambda c: c.says("data_loading_worked"),
            STALLS,
        )
        for i, f in (("app.hang", 5.0), ("app.collective_mismatch", 2.0), ("nccl.p2p", 0.3))
    ),
    # another collective ran on the same ranks: they met (store, bootstrap) and connected;
    # what stalls is the collective's own path, its algorithm or an NCCL bug under it
    *(
        Shift(
            i,
            f,
            "the reporter says another collective runs on the same ranks: they met and "
            "connected, so the stall is in this collective's own path (its algorithm, its "
            "transport, an NCCL bug), not in how the ranks find each other",
            lambda c: c.says("other_collective_runs"),
            STALLS | {"failure"},
        )
        for i, f in (
            ("nccl.internal", 4.0),
            ("nccl.env", 1.5),
            ("net.socket_interface", 0.3),
            ("net.unreachable", 0.3),
            ("launch.rendezvous", 0.2),
            ("launch.duplicate_launch", 0.3),
        )
    ),
    # a stall that comes and goes at the same point of the same code: the ranks' code paths are
    # the same each time, so one that always differs is less likely than a rank-local step
    # whose length varies (a save to a busy file system, a straggler)
    *(
        Shift(
            i,
            f,
            "the same job at the same point sometimes gets through: what varies from run to run "
            "(a slow save, a straggler) more than a code path that always differs",
            lambda c: c.says("intermittent"),
            STALLS,
        )
        for i, f in (("app.collective_mismatch", 0.3), ("app.hang", 2.0))
    ),
    # the rank they wait for was still at its own work (evaluating, writing a checkpoint) when
    # the others timed out: a long step on one rank, which would have joined late; not a
    # collective it never calls
    *(
        Shift(
            i,
            f,
            "the rank the others wait for was still at its own work when they timed out "
            "(evaluating, saving a checkpoint): a long step on one rank, not a collective it "
            "never calls",
            lambda c: c.says("origin_busy"),
            STALLS,
        )
        for i, f in (("app.hang", 4.0), ("app.collective_mismatch", 0.3))
    ),
    # what holds a job's GPUs back where nothing fails: their clocks, or a PCIe link trained
    # below its width or generation (the peer and host copies over it run slower)
    Shift(
        "gpu.thermal_power",
        6.0,
        "the reporter says the GPUs' clocks are held down (throttled by heat or a power cap)",
        lambda c: c.says("gpu_throttled"),
        STALLS | {"slow", "slow_network"},
    ),
    Shift(
        "gpu.pcie_degraded",
        6.0,
        "the reporter says a GPU's PCIe link runs below its width or generation",
        lambda c: c.says("pcie_downtrained"),
        STALLS | {"slow", "slow_network"},
    ),
    Shift(
        "gpu.pcie_degraded",
        3.0,
        "the reporter names PCIe hardware that was changed or is suspect (a riser, a reseated "
        "GPU): a link through it can train below its width",
        lambda c: c.says("pcie_hardware") and not c.says("pcie_downtrained"),
        frozenset({"slow", "slow_network"}),
    ),
    # two launchers nested: every worker the outer one starts spawns a world of its own, so
    # more processes meet at the store than the world size (or each forms its own group)
    Shift(
        "launch.duplicate_launch",
        15.0,
        "the reporter runs a launcher (torchrun, deepspeed, accelerate) around a script that "
        "spawns its own workers (mp.spawn): each worker starts a world of its own",
        lambda c: c.says("nested_launch"),
    ),
    # a port of the fabric without a link: the rings and trees through it stall or fail, or
    # NCCL leaves the HCA out and runs slower
    Shift(
        "net.ib_link",
        6.0,
        "the reporter says an IB/RoCE port is down, polling or flapping",
        lambda c: c.says("ib_port_down"),
        STALLS
        | {"slow", "slow_network", "nccl_remote", "nccl_system", "rdma_completion", "failure"},
    ),
    Shift(
        "net.ib_link",
        6.0,
        "the reporter says an IB/RoCE port runs at a lower rate than its siblings: its link "
        "trained down, and the job moves at that rail's pace",
        lambda c: c.says("ib_port_slow"),
        frozenset({"slow", "slow_network"}),
    ),
    Shift(
        "nccl.host_identity",
        8.0,
        "several containers share one machine: NCCL's host hash decides what they share",
        lambda c: c.says("containers_same_host"),
    ),
    Shift(
        "nccl.host_identity",
        8.0,
        "the reporter says the machines share a hostname, or that NCCL connects ranks on "
        "different machines through P2P/SHM: their host hashes collide",
        lambda c: c.says("hosts_look_alike"),
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
    # the crash comes with no NCCL in the process: not NCCL's bug, build or transports; the
    # job's own code or data, in the rank that died first
    *(
        Shift(
            i,
            0.2,
            "the reporter says it crashes without NCCL too (the data loader alone, no DDP): "
            "NCCL's code is not what fails",
            lambda c: c.says("crashes_without_nccl"),
        )
        for i in NCCL_PATHS
    ),
    Shift(
        "launch.rank_crash",
        2.0,
        "the reporter says it crashes without NCCL too: the rank's own code or data crashed",
        lambda c: c.says("crashes_without_nccl"),
    ),
    # (where NCCL ran: a CUDA that cannot start ran no NCCL code, and the version that
    # decides is the CUDA runtime a build of torch carries against the driver)
    *(
        Shift(
            i,
            f,
            "it comes and goes with a library version",
            lambda c: c.says("version_said"),
            PAST_CUDA_START,
        )
        for i, f in (("nccl.internal", 6.0), ("nccl.version_mismatch", 5.0))
    ),
    Shift(
        "driver.cuda_mismatch",
        4.0,
        "CUDA cannot start and it comes and goes with a library version: the CUDA runtime of "
        "one build of torch is newer than the driver",
        lambda c: c.says("version_said"),
        CUDA_START,
    ),
    *(
        Shift(
            i,
            f,
            "the hang comes after training ran (end of epoch, checkpoint): application-side",
            lambda c: c.says("ran_before"),
            STALLS,
        )
        for i, f in (
            ("app.hang", 3.0),
            ("app.collective_mismatch", 2.0),
            ("nccl.p2p", 0.3),
            ("net.socket_interface", 0.3),
            ("nccl.shm", 0.5),
        )
    ),
    # a failure the catalogue does not classify, after training ran (steps, epochs, hours):
    # the communicators had connected and carried traffic, so what is set up once (the GPUs'
    # peer path, the interfaces, the builds, the devices each rank sees) had worked; what
    # fails later is what changes as the job runs (memory, data, a GPU or link that faults,
    # a rank's own branch, an NCCL bug under load)
    *(
        Shift(
            i,
            f,
            "it failed after training ran: the set-up had worked, so the cause is one that "
            "comes with running (memory, data, a faulting GPU, the ranks' own code)",
            lambda c: c.ran_first,
            frozenset({"failure"}),
        )
        for i, f in (
            ("nccl.p2p", 0.3),
            ("net.socket_interface", 0.3),
            ("nccl.version_mismatch", 0.4),
            ("cuda.device_visibility", 0.3),
            ("gpu.fabric_manager", 0.3),
            ("net.ib_config", 0.4),
            ("nccl.env", 0.5),
            ("driver.cuda_mismatch", 0.3),
            ("nccl.shm", 0.5),
            ("gpu.oom", 5.0),
            ("cuda.device_assert", 5.0),
            ("gpu.xid", 2.0),
            ("host.resources", 2.0),
            ("launch.rank_crash", 2.0),
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
            STALLS | {"gpu_imbalance", "failure", "gpu_oom"},
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
            "one rank failed with its own error first and the others then waited on it: the "
            "peer that left is the cause, their timeouts follow",
            lambda c: c.says("rank_failed_first"),
            # (a connection a peer closed is one way the others see it leave; a native crash
            # said of the rank that went first is that rank's own)
            STALLS | {"failure", "peer_lost", "connection", "crashed"},
        )
        for i, f in (("launch.rank_crash", 5.0), ("app.hang", 0.5))
    ),
    *(
        Shift(
            i,
            f,
            "the ranks run different code (one rank's own branch, uneven data, early stopping): "
            "the others wait in a collective it never calls",
            lambda c: c.says("rank_branch"),
            STALLS | {"failure", "desync"},
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
            STALLS,
        )
        for i, f in (
            ("app.collective_mismatch", 3.0),
            ("app.hang", 2.0),
            ("nccl.p2p", 0.5),
        )
    ),
)
