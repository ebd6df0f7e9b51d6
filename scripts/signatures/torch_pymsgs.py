"""PyTorch's Python messages (torch.distributed, torch.multiprocessing, torch.cuda, DDP): the
table ``mine_torch.py`` reads. See :mod:`torch_entries` for the fields.

``Py`` finds a message by a regex over the strings of one file at each release;
``Exc`` an exception class that PyTorch raises without a message (the traceback's
last line is its name alone). ``SIGNALS`` splits a message that names the signal a
process died of into one entry per signal: the signal is the mechanism (SIGKILL the
OOM killer or a scheduler, SIGSEGV a native crash, SIGBUS a mapped file gone, SIGABRT
an abort), so each gets the class the differential gives that signal.
"""

from __future__ import annotations

from torch_entries import Exc, Py

EP = "torch/distributed/elastic/"
C10D_PY = "torch/distributed/distributed_c10d.py"
DDP_PY = "torch/nn/parallel/distributed.py"
CUDA_PY = "torch/cuda/__init__.py"
SPAWN = "torch/multiprocessing/spawn.py"
FSDP = "torch/distributed/fsdp/"
MESH = "torch/distributed/device_mesh.py"
#: DeviceMesh lived in torch.distributed._tensor up to 2.1
MESH_OLD = "torch/distributed/_tensor/device_mesh.py"
CRASH = ("launch.rank_crash",)
VISIBILITY = ("cuda.device_visibility",)


PY: tuple[Py, ...] = (
    # --- torchrun / the elastic agent
    Py("torch.elastic.worker_failed", EP + "multiprocessing/api.py",
       r"^failed \(exitcode: %s\) local_rank: %s \(pid: %s\) of binary", "failure", CRASH),
    Py("torch.elastic.worker_failed_fn", EP + "multiprocessing/api.py",
       r"^failed \(exitcode: %s\) local_rank: %s \(pid: %s\) of fn", "failure", CRASH),
    Py("torch.elastic.signal_exception", EP + "multiprocessing/api.py", r"got signal: ", "killed",
       ("launch.rank_crash", "host.resources")),
    Py("torch.elastic.closing_signal", EP + "multiprocessing/api.py", r"^Sending process %s closing signal",
       "info", CRASH, level="warning"),
    Py("torch.elastic.unable_to_shutdown", EP + "multiprocessing/api.py",
       r"^Unable to shutdown process %s via %s, forcefully exiting via", "info", level="warning",
       note="a worker ignored the agent's SIGTERM during the teardown after a failure"),
    Py("torch.elastic.death_signal", EP + "agent/server/api.py", r"death signal, shutting down workers",
       "killed", CRASH),
    Py("torch.elastic.restart_group", EP + "agent/server/api.py", r"attempts left; will restart worker group",
       "failure", CRASH),
    Py("torch.elastic.exit_barrier_error", EP + "agent/server/api.py", r"^Error waiting on exit barrier",
       "store_timeout", ("launch.rendezvous",)),
    Py("torch.elastic.rendezvous_complete", EP + "agent/server/api.py", r"Rendezvous complete for workers",
       "info"),
    Py("torch.elastic.child_failed_root_cause", EP + "multiprocessing/errors/__init__.py",
       r"Root Cause \(first observed failure\)", "failure", CRASH),
    Py("torch.elastic.child_failed_exitcode", EP + "multiprocessing/errors/__init__.py",
       r"^  exitcode  : ", "failure", CRASH),
    Py("torch.elastic.child_failed_rank", EP + "multiprocessing/errors/__init__.py",
       r"^  rank      : ", "failure", CRASH),
    Py("torch.elastic.local_rank_exceeds_gpus", EP + "agent/server/local_elastic_agent.py",
       r"exceeds available GPUs in CUDA_VISIBLE_DEVICES=", "cuda_device", VISIBILITY,
       note="more processes per node than the GPUs CUDA_VISIBLE_DEVICES leaves"),
    Py("torch.elastic.rdzv_store_connection_failed", EP + "rendezvous/c10d_rendezvous_backend.py",
       r"The connection to the C10d store has failed", "store_timeout",
       ("net.unreachable", "launch.rendezvous")),
    Py("torch.elastic.rdzv_state_corrupt", EP + "rendezvous/dynamic_rendezvous.py",
       r"The rendezvous state is corrupt", "store_timeout", ("launch.duplicate_launch",)),
    Py("torch.elastic.members_join_timeout", EP + "utils/distributed.py",
       r"timed out waiting for all .* members to join", "store_timeout", ("launch.rendezvous",)),
    Py("torch.elastic.store_server_timeout", EP + "utils/distributed.py",
       r"^timed out waiting for tcp store's server", "store_timeout", ("net.unreachable", "launch.rendezvous"),
       note="torch 1.9-1.x: a worker could not reach the agent's store"),
    Py("torch.elastic.port_in_use", EP + "utils/distributed.py", r"^on .*, port: .* already in use",
       "store_timeout", ("launch.port_in_use",)),
    Py("torch.elastic.port_in_use_retry", EP + "utils/distributed.py", r"already in use, attempt: \[",
       "store_timeout", ("launch.port_in_use",),
       note="the agent retries the same port: taken by another job or a leftover process"),
    Py("torch.elastic.store_barrier_timeout", EP + "utils/store.py", r"^Timed out waiting on barrier on rank",
       "store_timeout", ("launch.rendezvous", "launch.rank_crash"),
       note="the agents' barrier (exit or start): some never arrived (dead, or still busy)"),
    Py("torch.elastic.store_create", EP + "utils/distributed.py", r"^Creating c10d store on", "info"),
    Py("torch.elastic.omp_threads", "torch/distributed/run.py",
       r"Setting OMP_NUM_THREADS environment variable for each process", "info", level="warning",
       note="torchrun's notice for every multi-process launch: not a failure"),
    Py("torch.launch.omp_threads", "torch/distributed/launch.py",
       r"Setting OMP_NUM_THREADS environment variable for each process", "info", level="warning",
       note="torch.distributed.launch's notice (1.x): not a failure"),
    Py("torch.launch.deprecated", "torch/distributed/launch.py",
       r"^The module torch.distributed.launch is deprecated", "info", level="warning",
       note="a FutureWarning: the launch still runs"),
    # --- torch.multiprocessing.spawn
    Py("torch.mp.exit_code", SPAWN, r"^process .{0,20} terminated with exit code", "failure", CRASH),
    Py("torch.mp.raised", SPAWN, r"-- Process .{0,20} terminated with the following error", "failure",
       CRASH, note="the child's traceback follows: its own error is the cause"),
    # --- c10d's Python API
    Py("torch.c10d.store_barrier_timeout", C10D_PY,
       r"Timed out initializing process group in store based barrier", "store_timeout",
       ("launch.rendezvous", "launch.duplicate_launch")),
    Py("torch.c10d.store_barrier_done", C10D_PY, r"Completed store-based barrier for key", "info"),
    Py("torch.c10d.no_nccl_built", C10D_PY, r"Distributed package doesn't have NCCL built in",
       "library_missing", VISIBILITY),
    Py("torch.c10d.no_gloo_built", C10D_PY, r"Distributed package doesn't have Gloo built in",
       "library_missing"),
    Py("torch.c10d.not_initialized", C10D_PY, r"^Default process group has not been initialized",
       "app_error", note="a collective before init_process_group: the script run without its launcher, "
       "or a code path that skips the initialisation"),
    Py("torch.c10d.init_twice", C10D_PY, r"^trying to initialize the default process group twice",
       "app_error"),
    Py("torch.c10d.barrier_device", C10D_PY, r"^barrier\(\): using the device under current context",
       "info", level="warning", note="2.4+: a warning; the barrier runs on the current device"),
    Py("torch.c10d.env_not_set", "torch/distributed/rendezvous.py",
       r"environment variable .{1,10} expected, but not set", "app_error",
       note="env:// needs MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE: the script was not started by "
       "torchrun (or the launcher that sets them)"),
    # --- DDP's Python checks
    Py("torch.ddp.no_grad_module", DDP_PY,
       r"^DistributedDataParallel is not needed when a module doesn't have any parameter", "ddp_usage"),
    Py("torch.ddp.device_ids_mismatch", DDP_PY,
       r"^DistributedDataParallel device_ids and output_device arguments only work with", "ddp_usage",
       note="the module's parameters are not (all) on the device given in device_ids"),
    Py("torch.ddp.uninitialized_params", DDP_PY,
       r"^Modules with uninitialized parameters can't be used with", "ddp_usage"),
    # --- torch.cuda
    Py("torch.cuda.fork_reinit", CUDA_PY, r"^Cannot re-initialize CUDA in forked subprocess", "app_error",
       note="CUDA was initialised before fork (multiprocessing's 'fork' start method, or DataLoader "
       "workers that touch CUDA): the job's own code"),
    Py("torch.cuda.lazy_init_failed", CUDA_PY, r"^CUDA call failed lazily at initialization with error",
       "cuda_init", note="a CUDA call queued before initialisation failed when it ran; its error follows", relays=True),
    Py("torch.cuda.device_not_visible", CUDA_PY, r"is not visible \(CUDA_VISIBLE_DEVICES=", "cuda_device",
       VISIBILITY),
    Py("torch.cuda.not_compiled", CUDA_PY, r"^Torch not compiled with CUDA enabled", "library_missing",
       ("driver.cuda_mismatch",),
       note="torch._C has no CUDA: a CPU-only wheel (the default index on some platforms, or a "
       "dependency's install that replaced the CUDA build) where the job asks for a GPU"),
    # --- FSDP: its checks at construction and its forward-order check
    Py("torch.fsdp.order_count_differs", FSDP + "_exec_order_utils.py",
       r"is all-gathering \{\w+\} parameters while rank", "desync",
       ("app.collective_mismatch", "app.param_mismatch"),
       moved=(FSDP + "fully_sharded_data_parallel.py",),
       note="TORCH_DISTRIBUTED_DEBUG=DETAIL: FSDP all-gathered each rank's forward order and the ranks "
       "differ; left alone, their all-gathers pair up wrongly and hang or corrupt"),
    Py("torch.fsdp.order_params_differ", FSDP + "_exec_order_utils.py",
       r"is all-gathering parameters for \{\w+\} while rank", "desync",
       ("app.collective_mismatch", "app.param_mismatch"),
       moved=(FSDP + "fully_sharded_data_parallel.py",)),
    Py("torch.fsdp.no_accelerator", FSDP + "_init_utils.py",
       r"^FSDP needs a non-CPU accelerator device, but no accelerator device is detected", "cuda_device",
       ("cuda.device_visibility", "driver.container"),
       note="2.6+: torch sees no GPU at all (CUDA_VISIBLE_DEVICES empty, a container without GPUs, "
       "CUDA failed to start, or a CPU-only build)"),
    Py("torch.fsdp.device_id_mismatch", FSDP + "_init_utils.py",
       r"^Inconsistent compute device and `device_id` on rank", "cuda_device", VISIBILITY,
       moved=(FSDP + "fully_sharded_data_parallel.py",),
       note="device_id names another GPU than the current device: the rank did not call "
       "torch.cuda.set_device(local_rank), or computes its index from the wrong rank"),
    # --- DeviceMesh: the mesh against the ranks and GPUs the launch gave
    Py("torch.device_mesh.heterogeneous", MESH, r"^DeviceMesh only support homogeneous hardware",
       "cuda_device", VISIBILITY, moved=(MESH_OLD,),
       note="the world size is no multiple of the GPUs one host shows: --nproc_per_node or "
       "CUDA_VISIBLE_DEVICES differs from the GPUs each host has"),
    Py("torch.device_mesh.bigger_than_world", MESH, r"^Mesh should not be bigger than default world size",
       "app_error", moved=(MESH_OLD,),
       note="the mesh's shape asks for more ranks than were launched (the parallel sizes against "
       "--nnodes x --nproc_per_node)"),
    Py("torch.device_mesh.rank_in_two_groups", MESH,
       r"^Each device mesh dimension should get only one process group, but got", "desync",
       ("app.collective_mismatch",), moved=(MESH_OLD,),
       note="the ranks built different meshes (a mesh tensor computed per rank, or ranks that "
       "disagree on the parallel sizes): a rank fell in two groups of one dimension"),
    Py("torch.device_mesh.invalid_mesh_for_group", MESH, r"^Invalid mesh .* for ProcessGroup with ranks",
       "app_error", ("app.collective_mismatch",),
       note="DeviceMesh.from_group: the mesh given does not hold the group's ranks"),
    Py("torch.dtensor.shape_differs_across_ranks", "torch/distributed/tensor/_utils.py",
       r"^Non-sharded dimensions should have identical size across ranks", "desync",
       ("app.param_mismatch", "app.collective_mismatch"),
       note="DTensor.from_local with uneven shards: the ranks' local tensors differ in a dimension "
       "that is not sharded (each rank built or loaded a different shape)"),
)  # fmt: skip

#: messages naming the signal a process died of: (id, file, anchor, placeholder of the signal name)
SIGNALS: tuple[tuple[str, str, str, str], ...] = (
    ("torch.mp.exit_signal", SPAWN, r"^process .{0,20} terminated with signal", "name"),
    (
        "torch.elastic.child_failed_signal",
        EP + "multiprocessing/errors/__init__.py",
        r"^Signal \{.*received by PID",
        "signal_name",
    ),
)

EXC: tuple[Exc, ...] = (
    Exc("torch.elastic.rdzv_timeout", EP + "rendezvous/api.py", "RendezvousTimeoutError", "store_timeout",
        ("launch.rendezvous",), note="raised without a message: fewer nodes than --nnodes joined in time"),
    Exc("torch.elastic.rdzv_connection", EP + "rendezvous/api.py", "RendezvousConnectionError",
        "store_timeout", ("net.unreachable", "launch.rendezvous")),
    Exc("torch.elastic.rdzv_closed", EP + "rendezvous/api.py", "RendezvousClosedError", "store_timeout",
        ("launch.rendezvous", "launch.rank_crash"),
        note="the rendezvous was closed (the job ended on another node) before this node joined"),
)  # fmt: skip
