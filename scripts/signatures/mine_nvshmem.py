"""Write ``nvshmem.jsonl``: what NVSHMEM (the GPU-initiated communication library under DeepEP,
torch's symmetric memory and the MoE inference engines) prints when it cannot set up or move
data, read from its own source at a release tag.

Usage: ``python scripts/signatures/mine_nvshmem.py`` (a git mirror of NVIDIA/nvshmem under
``/work/.mirror``; another root as the first argument).

NVSHMEM's error macros (``src/include/non_abi/nvshmemx_error.h``) print the source file and
line before the message: ``<path>:<line>: non-zero status: <n> <message>`` for a failed call
that unwinds (``NVSHMEMI_*_ERROR_JMP``), ``<path>:<line>: NULL value <message>`` for an
allocation or look-up that returned nothing, ``<path>:<function>:<line>: <message>`` for
``NVSHMEMI_ERROR_PRINT`` and ``NVSHMEMI_ERROR_EXIT``; ``NVSHMEMI_WARN_PRINT`` prints
``WARN: <message>`` to stdout. Each rank writes them unbuffered, so in a job's output the
path and the message are often cut apart by other ranks' lines.

Two kinds of rows come of that:

- **the messages kept** (:data:`KEEP`): the ~1,000 formats are mostly a chain of "step X
  failed" as an error unwinds; kept are those that say why (GPUDirect RDMA missing, memory
  registration refused, the NIC's doorbell not mappable, the hosts taken for one, the
  symmetric heap full, fabric handles without an IMEX channel, a QP that cannot connect);
- **the module a failure came from** (:data:`MODULES`): the path every error line starts
  with names the transport or subsystem that failed (``modules/transport/ibgda``,
  ``host/mem``...), which a line cut from its message still tells. Older releases (2.x) kept
  the transports under ``src/comm/transports``; both layouts are read (the symmetric heap's
  and the topology's only where they are now).

NVSHMEM locates its peers by host name alone (``nvshmemu_getHostHash``: the hash of
``gethostname``), so two hosts of one name are one node to it: PEs it takes for local
exchange CUDA IPC handles over a Unix socket (``/tmp/nvshmem-socket-<pid>-<pid>``) that does
not exist on this host.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from clex import blank_comments, find_calls, read_format
from common import PRI_MACROS, first_line, write_jsonl
from gitsrc import git
from keeps import Fill, Keep, Seen, rows

TAGS = ("v3.4.5-0",)  # the release the public repository holds
_CLASS = "nvshmem"
#: each error macro and how many arguments come before its format
MACROS = {
    "NVSHMEMI_ERROR_EXIT": 0, "NVSHMEMI_ERROR_PRINT": 0, "NVSHMEMI_WARN_PRINT": 0,
    "NVSHMEMI_ERROR_JMP": 3, "NVSHMEMI_NULL_ERROR_JMP": 4, "NVSHMEMI_NZ_ERROR_JMP": 3,
    "NVSHMEMI_EQ_ERROR_JMP": 4, "NVSHMEMI_NE_ERROR_JMP": 4, "NVSHMEMI_CHECK_ERROR_JMP": 4,
    "NVSHMEMI_NZ_EXIT": 1, "NVSHMEMI_NZ_SYSCHECK_EXIT": 1,
    # the IPC socket helpers report with perror: the message, ": ", then strerror(errno)
    "perror": 0,
}  # fmt: skip
_GDR = "the IB transports register GPU memory with the NIC (GPUDirect RDMA)"
_IMEX = (
    "fabric handles (multi-node NVLink, NVLS) need the IMEX service and a channel the process "
    "may open (/dev/nvidia-caps-imex-channels; NVIDIA_IMEX_CHANNELS in a container)"
)
_QP = (
    "a queue pair could not be moved to connect to its peer: on RoCE the GID index "
    "(NVSHMEM_IB_GID_INDEX) or traffic class, on IB the peer's port or path"
)
_SAME_HOST = (
    "NVSHMEM groups PEs into nodes by host name alone: hosts (or containers) of one name are "
    "one node to it"
)

KEEP = (
    Keep("nvshmem.transport.no_peermem", r"^neither nv_peer_mem, or nvidia_peermem detected",
         _CLASS, ("net.gdr",),
         f"{_GDR}: neither nvidia_peermem nor nv_peer_mem is loaded, so the transport is "
         "skipped (modprobe nvidia-peermem on the host)"),
    Keep("nvshmem.ib.mem_registration_failed", r"^mem registration failed\. Reason: ", _CLASS,
         ("net.gdr", "host.resources"),
         f"{_GDR}, and the NIC refused the buffer: the reason says whether the GPU path or "
         "the locked-memory limit", fills=(
             Fill("bad_address", r"Reason: %s", ("Bad address",), _CLASS, ("net.gdr",),
                  "the NIC may not map GPU memory: nvidia_peermem (or DMA-BUF) is missing"),
             Fill("memlock", r"Reason: %s", ("Cannot allocate memory",), _CLASS,
                  ("host.resources", "net.ib_config"),
                  "the NIC could not pin the buffer: the locked-memory limit (ulimit -l, a "
                  "container's --ulimit memlock) is below the symmetric heap"),
         )),
    Keep("nvshmem.ibgda.devx_uar", r"^cannot allocate mlx5dv_devx_uar", _CLASS,
         ("driver.container",),
         "IBGDA asks the NIC's driver (DEVX) for a doorbell page of its own: a container "
         "without the privileges or RDMA devices for DEVX is refused it"),
    Keep("nvshmem.transport.init_failed_ibgda", r"^init failed for transport: IBGDA", _CLASS,
         ("net.gdr", "driver.container", "net.ib_config"),
         "the GPU-initiated IB transport did not start: it needs mlx5 NICs, the driver's "
         "PeerMappingOverride=1 setting, GPUDirect RDMA and the rights to DEVX"),
    Keep("nvshmem.transport.init_failed_p2p", r"^init failed for transport: P2P", _CLASS,
         ("nccl.p2p",), "the GPUs of this node could not map each other's memory"),
    Keep("nvshmem.transport.none", r"^Unable to initialize any transports", _CLASS,
         ("net.gdr", "net.ib_config", "driver.container"),
         "no transport reaches the PEs of other nodes: the lines before it say which "
         "transport failed and why"),
    Keep("nvshmem.topo.no_nics", r"^No NICs were assigned to our PE", _CLASS,
         ("net.ib_config", "driver.container"),
         "NVSHMEM found no usable NIC for this GPU: none visible (a container without "
         "/dev/infiniband), none active, or NVSHMEM_HCA_LIST naming others"),
    Keep("nvshmem.init.uneven_pes", r"^NVSHMEM requires the same number of PEs on all nodes",
         _CLASS, ("nccl.host_identity",),
         f"{_SAME_HOST}: PEs of two hosts counted as one node make the counts differ (or the "
         "launch put a different number of processes on each node)"),
    Keep("nvshmem.topo.pe_count_mismatch", r"^Number of PEs found doesn't match", _CLASS,
         ("nccl.host_identity",), f"{_SAME_HOST}: the PEs it counted on this node are not "
         "the ones the node holds"),
    Keep("nvshmem.ipc.send_failed", r"^IPC failure: Sending data over socket failed", _CLASS,
         ("nccl.host_identity", "nccl.p2p"),
         "a PE could not pass its CUDA IPC handle to a peer it took for local", fills=(
             Fill("no_peer_socket", r"failed: %s", ("No such file or directory",), _CLASS,
                  ("nccl.host_identity",),
                  f"the peer's socket is not on this host: {_SAME_HOST}"),
         )),
    Keep("nvshmem.heap.symmetric_size_exceeded", r"^nvshmem malloc failed \(hint: ", _CLASS,
         ("gpu.oom",), "the symmetric heap is full: NVSHMEM_SYMMETRIC_SIZE (1 GiB by default) "
         "is below what the job allocates in it", upto=r"symmetric size",
         example="src/host/mem/mem_heap.cpp:allocate_symmetric_memory:2266: nvshmem malloc failed (hint: check if total "
         "allocation has exceeded NVSHMEM symmetric size = 1073741824, NVSHMEM symmetric size "
         "can be increased using NVSHMEM_SYMMETRIC_SIZE environment variable) "),
    Keep("nvshmem.heap.cumemcreate_failed", r"^cuMemCreate failed", _CLASS,
         ("driver.container", "gpu.oom"),
         f"the heap's physical memory could not be created: {_IMEX}, or the GPU is full"),
    # the status before it is the CUresult cuMemCreate returned: 2 is CUDA_ERROR_OUT_OF_MEMORY
    Keep("nvshmem.heap.cumemcreate_out_of_memory", r"^cuMemCreate failed", _CLASS,
         ("gpu.oom", "gpu.contention"),
         "the GPU had no memory left for the heap's next chunk (CUDA_ERROR_OUT_OF_MEMORY): the "
         "job asked for more symmetric memory than the GPU holds, or another process holds it",
         after="non-zero status: 2 ", refines=("nvshmem.heap.cumemcreate_failed",),
         example="src/host/mem/mem_heap.cpp:1762: non-zero status: 2 cuMemCreate failed "),
    Keep("nvshmem.nvls.fabric_export_failed",
         r"^cuMemExportToShareableHandle failed for fabric handles", _CLASS,
         ("driver.container", "gpu.fabric_manager"), _IMEX),
    Keep("nvshmem.nvls.fabric_import_failed",
         r"^cuMemImportFromShareableHandle failed for fabric handles", _CLASS,
         ("driver.container", "gpu.fabric_manager"), _IMEX),
    Keep("nvshmem.nvls.multicast_create_failed", r"^cuMulticastCreate failed", _CLASS,
         ("nccl.nvls", "gpu.fabric_manager"),
         "the NVLink SHARP multicast object could not be created: the fabric manager or the "
         "NVSwitch does not offer multicast here"),
    # (with the macro's words before it: NCCL's own line says "Call to ibv_modify_qp failed")
    Keep("nvshmem.ib.modify_qp_failed", r"^ibv_modify_qp failed", _CLASS,
         ("net.ib_config", "net.ib_link"), _QP, after="non-zero status: %d ",
         example="src/modules/transport/ibrc/ibrc.cpp:427: non-zero status: 110 ibv_modify_qp "
         "failed "),
    Keep("nvshmem.ibgda.dct_connect_failed", r"^ibv_modify_qp init2rtr for dct failed", _CLASS,
         ("net.ib_config", "net.ib_link"), _QP, after="non-zero status: %d ",
         example="src/modules/transport/ibgda/ibgda.cpp:2306: non-zero status: 7 ibv_modify_qp "
         "init2rtr for dct failed."),
    Keep("nvshmem.bootstrap.init_failed", r"^bootstrap_init failed", _CLASS,
         ("net.socket_interface", "net.unreachable", "launch.rendezvous"),
         "the PEs could not meet through the bootstrap (the unique-id bootstrap's sockets, "
         "MPI or PMI): an interface that does not reach the others, or PEs that never came"),
    Keep("nvshmem.init.failed", r"^nvshmem initialization failed, exiting", _CLASS, (),
         "NVSHMEM gave up starting; the lines before it say which step failed"),
    Keep("nvshmem.warn.not_mlx5", r"^device %s is not enumerated as an mlx5 device", "info",
         (), "a NIC that is not Mellanox/NVIDIA mlx5 (an EFA or eRDMA device) is passed over",
         level="warning"),
)  # fmt: skip

#: The modules an error line's path names (a file of each at the tag read, for its example
#: line), the ids a failure there points to, and why.
MODULES = (
    ("ibgda", r"(?:modules|comm)/transports?/ibgda/", "modules/transport/ibgda/ibgda.cpp",
     ("net.ib_config", "net.gdr", "driver.container"),
     ("the GPU-initiated IB transport (IBGDA) failed: NIC set-up, GPUDirect RDMA, or the "
      "rights to map the NIC")),
    ("ibrc", r"(?:modules|comm)/transports?/(?:ibrc|ibdevx)/", "modules/transport/ibrc/ibrc.cpp",
     ("net.ib_config", "net.gdr", "host.resources"),
     ("the proxy-driven IB transport (IBRC or IBDEVX) failed: queue pairs, memory "
      "registration, locked memory")),
    ("net", r"(?:modules|comm)/transports?/(?:ucx|libfabric)/", "modules/transport/ucx/ucx.cpp",
     ("net.ib_config", "net.unreachable"),
     "the UCX or libfabric transport failed: its provider or the path to the peer"),
    ("bootstrap", r"(?:modules/|host/)?bootstrap/(?:\w{1,40}/){0,2}", "modules/bootstrap/uid/bootstrap_uid.cpp",
     ("net.socket_interface", "net.unreachable", "launch.rendezvous"),
     "the bootstrap through which PEs meet failed: its sockets, MPI or PMI"),
    ("heap", r"host/mem/", "host/mem/mem_heap.cpp", ("gpu.oom", "driver.container"),
     "the symmetric heap failed: GPU memory, or the handles it shares between PEs"),
    ("p2p", r"(?:host|comm)/transports?/p2p/", "host/transport/p2p/p2p.cpp", ("nccl.p2p",),
     "the GPUs of the node could not reach each other's memory"),
    ("nvls", r"host/team/\w{1,40}_nvls", "host/team/team_internal_nvls.cpp",
     ("nccl.nvls", "gpu.fabric_manager"), "NVLink SHARP multicast set-up failed"),
    ("topo", r"host/topo/", "host/topo/topo.cpp", ("nccl.host_identity", "net.ib_config"),
     "mapping PEs to nodes, GPUs and NICs failed"),
)  # fmt: skip
#: What follows the path where a macro failed (the error macros' own words, or a function)
_AFTER = r"\.(?:cpp|cu|h|hpp):\d{1,6}: (?:non-zero status|NULL value|error status)"


def _module_rows() -> list[dict[str, Any]]:
    """One row per module: the path an error line starts with, read as its module's failure."""
    out = []
    for name, path, example, hints, note in MODULES:
        out.append({
            "id": f"nvshmem.module.{name}", "library": "nvshmem", "level": "error",
            "where": [f"src/include/non_abi/nvshmemx_error.h@{TAGS[-1]}"],
            "versions": {"first": "3.4.5", "last": "3.4.5", "seen": ["3.4.5"]},
            "format": f"{example}:%d: non-zero status: %d",
            "format_style": "doc", "pattern": rf"src/{path}\w{{0,40}}{_AFTER}", "fields": [],
            "symptom": _CLASS, "hint_ids": list(hints), "note": note,
            "example": f"/opt/nvshmem/src/{example}:12: non-zero status: 7",
        })  # fmt: skip
    return out


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path("/work/.mirror")
    mirror = root / "NVIDIA+nvshmem" / "repo"
    seen: dict[tuple[str, str], Seen] = {}
    calls = r"\b(" + "|".join(map(re.escape, MACROS)) + r")\s*\("
    for tag in TAGS:
        for ref in git(mirror, "grep", "-l", "-E", calls, tag, "--", "src").split():
            path = ref.split(":", 1)[1]
            if path.endswith("nvshmemx_error.h") or not path.endswith((".cpp", ".cu", ".h")):
                continue
            src = blank_comments(git(mirror, "show", ref).replace("\\\n", "  "))
            for macro, line, args, _ in find_calls(src, tuple(MACROS)):
                rest = args[MACROS[macro] :]
                fmt = read_format(rest[0], rest[1:], PRI_MACROS) if rest else None
                if fmt is None:
                    continue
                text = first_line(fmt.text).rstrip()
                if macro == "perror":
                    text += ": %s"  # perror prints strerror(errno) after the message
                for keep in KEEP:
                    if re.search(keep.anchor, text):
                        item = seen.setdefault((keep.id, text), Seen(keep, text, fmt.args, {}))
                        item.where.setdefault(tag, []).append(f"{path}:{line}")
    missing = {k.id for k in KEEP} - {s.keep.id for s in seen.values()}
    if missing:
        raise SystemExit(f"not found at any tag read: {sorted(missing)}")
    messages = rows("nvshmem", seen, TAGS, lambda t: t.lstrip("v").rsplit("-", 1)[0])
    # (a module's row is less specific than any message's: the lookup tries it after them)
    print(write_jsonl("nvshmem", [*messages, *_module_rows()]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
