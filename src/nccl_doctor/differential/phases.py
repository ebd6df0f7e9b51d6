"""Where in PyTorch's start-up a traceback failed, from its frames.

A report that keeps a traceback but not a message the catalogue knows (the
exception line cut off in the paste, or a message no library catalogue
holds) still says *where* the program was: constructing the c10d store,
initialising CUDA, or running the first collective, which is where NCCL
builds its communicator. An expert reads that place first; each place opens
its own symptom class with its own prior (:mod:`.priors`).

The functions are PyTorch's own, from its source (the files named with
each entry, stable across 1.x-2.x): the innermost frame that is one of them
names the phase. Frames of the user's code and of other libraries are
passed over, so a traceback that never entered these functions opens none.
"""

from __future__ import annotations

from nccl_doctor.facts.run import PythonTraceback

#: (file suffix, function) -> symptom class. Files are matched by their tail, as
#: tracebacks print site-packages paths of any prefix.
_PHASES: dict[tuple[str, str], str] = {
    # torch/distributed/rendezvous.py: init_process_group's rendezvous handlers build the store
    ("torch/distributed/rendezvous.py", "_tcp_rendezvous_handler"): "store_create",
    ("torch/distributed/rendezvous.py", "_env_rendezvous_handler"): "store_create",
    ("torch/distributed/rendezvous.py", "_create_c10d_store"): "store_create",
    # torch/distributed/elastic: torchrun's static and c10d rendezvous stores
    ("rendezvous/c10d_rendezvous_backend.py", "_create_tcp_store"): "store_create",
    ("rendezvous/c10d_rendezvous_backend.py", "create_backend"): "store_create",
    ("rendezvous/static_tcp_rendezvous.py", "next_rendezvous"): "store_create",
    ("elastic/utils/distributed.py", "create_c10d_store"): "store_create",
    ("elastic/utils/distributed.py", "_check_full_rank"): "store_create",
    # torch/cuda/__init__.py: the first CUDA call initialises the driver and the device
    ("torch/cuda/__init__.py", "_lazy_init"): "cuda_init",
    ("torch/cuda/__init__.py", "set_device"): "cuda_init",
    ("torch/cuda/__init__.py", "current_device"): "cuda_init",
    ("torch/cuda/__init__.py", "get_device_properties"): "cuda_init",
    ("torch/cuda/__init__.py", "get_device_capability"): "cuda_init",
    # DDP's construction broadcasts the model: the first collective builds NCCL's communicator
    ("torch/nn/parallel/distributed.py", "_verify_param_shape_across_processes"): "comm_init",
    ("torch/nn/parallel/distributed.py", "_sync_module_states"): "comm_init",
    ("torch/nn/parallel/distributed.py", "_sync_params_and_buffers"): "comm_init",
    ("torch/nn/parallel/distributed.py", "_distributed_broadcast_coalesced"): "comm_init",
    ("torch/distributed/utils.py", "_verify_param_shape_across_processes"): "comm_init",
    ("torch/distributed/utils.py", "_sync_module_states"): "comm_init",
    ("torch/distributed/utils.py", "_sync_params_and_buffers"): "comm_init",
    # torch/distributed/distributed_c10d.py: a collective (NCCL connects lazily, at the first)
    ("torch/distributed/distributed_c10d.py", "barrier"): "comm_init",
    ("torch/distributed/distributed_c10d.py", "broadcast"): "comm_init",
    ("torch/distributed/distributed_c10d.py", "all_reduce"): "comm_init",
    ("torch/distributed/distributed_c10d.py", "all_gather"): "comm_init",
    ("torch/distributed/distributed_c10d.py", "all_gather_into_tensor"): "comm_init",
    ("torch/distributed/distributed_c10d.py", "reduce_scatter_tensor"): "comm_init",
    ("torch/distributed/distributed_c10d.py", "broadcast_object_list"): "comm_init",
    ("torch/distributed/distributed_c10d.py", "all_gather_object"): "comm_init",
}
_FILES = frozenset(file for file, _ in _PHASES)
#: How each phase is told in a report ("where" of its symptom).
WHERE = {
    "store_create": "constructing the c10d TCPStore (rendezvous)",
    "cuda_init": "initialising CUDA (the first CUDA call)",
    "comm_init": "the first collective (NCCL builds its communicator there)",
}


def _file_key(path: str) -> str | None:
    normal = path.replace("\\", "/")
    return next((f for f in _FILES if normal.endswith(f)), None)


def phase_of(tb: PythonTraceback) -> tuple[str, str] | None:
    """The phase a traceback failed in and the frame that shows it, innermost first."""
    for path, line, func in reversed(tb.frames):
        key = _file_key(path)
        if key is not None and func is not None and (cls := _PHASES.get((key, func))):
            tail = key.rsplit("/", 1)[-1]
            return cls, f"{tail}:{line} in {func}" if line is not None else f"{tail} in {func}"
    return None
