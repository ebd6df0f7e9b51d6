"""Where in the job a failure happened: communicator set-up or the model.

A failure raised inside DDP's parameter check, ``init_process_group``, the
first ``barrier`` or NCCL's ``commInit`` is a failure to build the
communicator (GPU, driver, transport), not a bug in the model: the model has
not run yet.
"""

from __future__ import annotations

from nccl_doctor.facts.run import PythonTraceback
from nccl_doctor.facts.store import Facts
from nccl_doctor.signs.context import COMM_INIT, NCCL_WARN

#: Frames that mean "the communicator is being created or first used".
INIT_FRAMES = frozenset(
    {
        "_verify_param_across_processes",
        "_verify_params_across_processes",
        "_verify_param_shape_across_processes",
        "_verify_params_shape_across_processes",
        "_sync_module_states",
        "_sync_params_and_buffers",
        "init_process_group",
        "new_group",
        "barrier",
        "_store_based_barrier",
        "_new_process_group_helper",
        "broadcast_object_list",
        "_broadcast_coalesced",
        "_sync_module_buffers",
    }
)


def init_phase(facts: Facts, rank: int | None = None) -> str | None:
    """How the failure of ``rank`` (any rank when ``None``) sits in communicator set-up."""
    for tb in facts.of(PythonTraceback):
        if rank is not None and tb.rank is not None and tb.rank != rank:
            continue
        names = [name for _, _, name in tb.frames if name]
        hit = next((n for n in reversed(names) if n in INIT_FRAMES), None)
        if hit is None:
            continue
        ddp = any(n == "__init__" for n in names) and any("verify" in n for n in names)
        if ddp:
            return f"while DistributedDataParallel.__init__ checked parameters ({hit})"
        return f"in {hit}, the first use of the communicator"
    if facts.saw(COMM_INIT, prose=False) and facts.saw(NCCL_WARN, prose=False):
        return "while NCCL created the communicator"
    return None
