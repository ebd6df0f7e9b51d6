"""The row of the shifts table, and what its parts share: the ids and classes rows name.

A :class:`Shift` multiplies one id's weight when its condition holds in the
:class:`~nccl_doctor.differential.context.Context` (for the symptom classes
it names), and says why. The rows live by what they read: :mod:`.machine` (the
job's shape and the machine under it), :mod:`.words` (the reporter's sentences),
:mod:`.signs` (what the failure's own lines and the settings tried point at).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nccl_doctor.differential.context import Context
from nccl_doctor.differential.symptoms import LABELS
from nccl_doctor.knowledge.cuda_errors import CUDA_CLASSES
from nccl_doctor.knowledge.topics import steered, variable_topics
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


NET_IDS = (
    "net.socket_interface",
    "net.unreachable",
    "net.ib_config",
    "net.ib_transport",
    "net.ib_link",
)

#: Causes on the path of an RDMA NIC: its set-up, transport and ports, and GPUDirect RDMA (the
#: NIC reaching GPU memory), which carries only traffic between nodes, over IB or RoCE.
RDMA_IDS = (*NET_IDS[2:], "net.gdr")

#: Causes only NCCL's own code can have: its transports (P2P, SHM, NVLS, IB, GPUDirect), its
#: bugs, builds and settings, its view of GPUs and hosts. A job on gloo alone has none of them.
NCCL_PATHS = (
    "nccl.p2p",
    "nccl.shm",
    "nccl.nvls",
    "nccl.internal",
    "nccl.env",
    "nccl.version_mismatch",
    "nccl.duplicate_gpu",
    "nccl.host_identity",
    "net.ib_config",
    "net.gdr",
)

#: Causes that need two ranks or more: a transport between them, a second GPU of the job, a
#: rank to disagree with or to fail first. (Not the sockets: NCCL's bootstrap connects even a
#: single rank to its root thread, and the c10d store to MASTER_ADDR: a firewall still stalls
#: one rank. Nor P2P and SHM: a world of one has one local rank, and the "one rank per node"
#: shift already weighs them for that fact.)
BETWEEN_RANKS = (
    *NET_IDS[2:],
    "launch.rank_crash",
    "app.collective_mismatch",
    "nccl.duplicate_gpu",
    "nccl.nvls",
    "gpu.nvlink",
)


def alone(ctx: Context) -> bool:
    return ctx.world == 1


#: Classes whose failure comes from the GPU stack under NCCL or CUDA.
GPU_STACK = frozenset(
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
STALLS = frozenset({"hang", "collective_timeout", "aborted"})
#: Classes where CUDA itself could not start: no NCCL code ran.
CUDA_START = frozenset({"cuda_driver", "cuda_init"})
#: The other classes: NCCL may have run.
PAST_CUDA_START = frozenset(LABELS) - CUDA_START
#: The ids whose path a switch turns off altogether (NCCL_P2P_DISABLE: nccl.p2p, ...).
OFF_IDS = tuple(sorted({i for m in MASKS if m.off for i in steered(variable_topics(m.name))}))


def setting_shift(
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
