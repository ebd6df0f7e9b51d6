"""What a difference between two runs can have to do with a diagnosis: shared topics.

When a job failed and its retry passed, an expert asks what the retry did
differently and which of those differences touches the failure: a P2P
finding and a P2P variable, an Xid and other GPUs, an NCCL bug and another
NCCL version. Each catalogue id names the topics it is about
(:data:`ID_TOPICS`); each difference names its own (:func:`variable_topics`
for a variable, the comparison for the rest). A difference shares a topic
with a finding or it does not: no weights here, only the vocabulary.

Topics: ``gpus`` (which GPUs), ``nodes`` (which hosts), ``p2p``,
``nvlink``, ``shm``, ``net``, ``ib``, ``socket``, ``gdr``, ``nvls``,
``fabric``, ``algo`` (algorithms/protocols), ``channels``, ``plugin``,
``timeout``, ``cuda``, ``driver``, ``nccl`` (the library and its version),
``ncclvar`` (any NCCL variable), ``torch``, ``launch``, ``world`` (the world
size and rank layout), ``memory``, ``container``, ``app`` (the job's own
code), ``debug``.
"""

from __future__ import annotations

import re

# fmt: off
ID_TOPICS: dict[str, tuple[str, ...]] = {
    "gpu.contention": ("gpus", "nodes", "memory"),
    "gpu.oom": ("gpus", "memory", "world"),
    "gpu.xid": ("gpus", "nodes", "driver"),
    "gpu.ecc": ("gpus", "nodes"),
    "gpu.lost": ("gpus", "nodes", "driver"),
    "gpu.pcie_degraded": ("gpus", "nodes"),
    "gpu.nvlink": ("gpus", "nodes", "nvlink", "p2p"),
    "gpu.thermal_power": ("gpus", "nodes"),
    "gpu.mig": ("gpus", "nodes"),
    "gpu.compute_mode": ("gpus", "nodes"),
    "gpu.fabric_manager": ("nodes", "fabric", "nvls", "driver"),
    "driver.cuda_mismatch": ("driver", "cuda", "torch", "nodes", "container"),
    "driver.version_mismatch": ("driver", "nodes"),
    "driver.uvm": ("driver", "nodes", "container"),
    "driver.container": ("driver", "container", "nodes"),
    "driver.wsl": ("nodes", "p2p", "driver"),
    "cuda.device_assert": ("app", "cuda"),
    "cuda.illegal_access": ("app", "cuda", "nccl", "p2p"),
    "cuda.unknown_error": ("gpus", "nodes", "driver", "cuda", "fabric"),
    "cuda.device_visibility": ("gpus", "launch", "world"),
    "nccl.duplicate_gpu": ("gpus", "launch", "world"),
    "nccl.p2p": ("p2p", "nvlink", "gpus", "nodes"),
    "nccl.nvls": ("nvls", "fabric", "nodes"),
    "nccl.host_identity": ("nodes", "net", "launch"),
    "nccl.shm": ("shm", "container", "nodes"),
    "nccl.version_mismatch": ("nccl", "torch", "cuda", "nodes"),
    "nccl.env": ("ncclvar",),
    "nccl.internal": ("nccl", "algo", "channels", "world"),
    "net.socket_interface": ("socket", "net", "nodes"),
    "net.unreachable": ("socket", "net", "nodes", "launch"),
    "net.ib_link": ("ib", "net", "nodes"),
    "net.ib_config": ("ib", "net", "plugin", "nodes"),
    "net.ib_transport": ("ib", "net", "gdr", "nodes", "timeout"),
    "net.gdr": ("gdr", "ib", "net", "nodes", "driver"),
    "launch.port_in_use": ("launch", "nodes"),
    "launch.rendezvous": ("launch", "world", "nodes", "net"),
    "launch.duplicate_launch": ("launch", "world"),
    "launch.rank_crash": ("nodes", "memory", "app"),
    "app.param_mismatch": ("app", "world"),
    "app.collective_mismatch": ("app", "world"),
    "app.hang": ("timeout", "app", "world"),
    "app.unused_params": ("app",),
    "host.resources": ("memory", "shm", "container", "nodes"),
}

#: Variable names (full match) and the topics they steer, most specific first.
_VARIABLES: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = tuple(
    (re.compile(pattern), topics) for pattern, topics in (
        (r"NCCL_P2P_\w+|NCCL_CUMEM_\w+|NCCL_LEGACY_CUDA_REGISTER", ("p2p", "nvlink")),
        (r"NCCL_NVLS_\w+|NCCL_MNNVL_\w+", ("nvls", "fabric")),
        (r"NCCL_SHM_\w+", ("shm",)),
        (r"NCCL_IB_\w+|UCX_\w+|MLX5_\w+", ("ib", "net")),
        (r"NCCL_NET_GDR_\w+|NCCL_GDR\w*|NCCL_DMABUF_ENABLE", ("gdr", "net")),
        (r"NCCL_SOCKET_\w+|GLOO_SOCKET_IFNAME|NCCL_UID_STAGGER\w*", ("socket", "net")),
        (r"NCCL_NET\w*|NCCL_COLLNET_\w+|NCCL_PXN_\w+|FI_\w+", ("net", "plugin")),
        (r"NCCL_ALGO|NCCL_PROTO|NCCL_TUNER_\w+", ("algo",)),
        (r"NCCL_(?:MIN|MAX)_\w+|NCCL_NCHANNELS\w*|NCCL_BUFFSIZE", ("channels",)),
        (r"NCCL_DEBUG\w*|TORCH_DISTRIBUTED_DEBUG|TORCH_CPP_LOG_LEVEL|TORCH_SHOW_\w+",
         ("debug",)),
        ((r"\bTORCH_NCCL_\w*(?:TIMEOUT|ERROR_HANDLING|MONITORING|BLOCKING_WAIT)\w*"
         r"|NCCL_ASYNC_ERROR_HANDLING|NCCL_BLOCKING_WAIT"), ("timeout",)),
        (r"CUDA_VISIBLE_DEVICES|NVIDIA_VISIBLE_DEVICES", ("gpus",)),
        (r"PYTORCH_CUDA_ALLOC_CONF|\bPYTORCH_\w*MEM\w*", ("memory",)),
        (r"CUDA_\w+", ("cuda",)),
        (r"LD_LIBRARY_PATH|LD_PRELOAD", ("nccl", "cuda", "driver")),
        (r"MASTER_ADDR|WORLD_SIZE|LOCAL_WORLD_SIZE|TORCHELASTIC_\w+", ("launch", "world")),
        (r"NVSHMEM_\w+", ("nvls", "p2p")),
        (r"TORCH_\w+|PYTORCH_\w+", ("torch",)),
    )
)
# fmt: on


def variable_topics(name: str) -> tuple[str, ...]:
    """The topics a variable steers (``ncclvar`` for every NCCL one); empty when unknown."""
    found = next((topics for pattern, topics in _VARIABLES if pattern.fullmatch(name)), ())
    if name.startswith("NCCL_"):
        found = (*found, "ncclvar")
    return found


def id_topics(rule_id: str) -> tuple[str, ...]:
    """The topics a catalogue id is about (empty for an id this table does not know)."""
    return ID_TOPICS.get(rule_id, ())


#: Topics a setting can steer that name no part where a cause could be.
_NO_PART = frozenset({"ncclvar", "debug", "nodes", "gpus", "torch"})


def steered(topics: tuple[str, ...]) -> frozenset[str]:
    """The ids a setting about ``topics`` points at: those about its first topic first.

    An id whose first topic is the setting's first (``NCCL_IB_*``: the IB
    ids) is what it steers; where none is, those with it as second topic
    (``NCCL_ALGO``: an NCCL bug).
    """
    first = next((t for t in topics if t not in _NO_PART), None)
    if first is None:
        return frozenset()
    for depth in (1, 2):
        found = frozenset(i for i, about in ID_TOPICS.items() if first in about[:depth])
        if found:
            return found
    return frozenset()
