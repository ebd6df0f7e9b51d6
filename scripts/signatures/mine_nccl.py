"""Mine NCCL's WARN (and the key INFO) format strings into ``signatures/nccl.jsonl``.

Usage: ``python scripts/signatures/mine_nccl.py /path/to/nccl/git-dir``

Reads ``src/`` at each tag of :data:`nccl_source.TAGS` with ``git show`` (no
work tree). Which messages are kept, their symptom class and the catalogue
ids they point to are decided by the tables below; the ncclResult_t that a
WARN leads to (read from the statements around it) decides the symptom where
the source shows one.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import PRINTF, pattern_for, slug, write_jsonl
from nccl_source import TAGS, Message, read_tag

# files whose WARNs describe NCCL's own ring/tree bookkeeping, other OSes, or optional
# plugins' internals: nothing a user can act on (graph/search.cc and graph/tuning.cc are
# read: NCCL_GRAPH_FILE, NCCL_ALGO and NCCL_PROTO are parsed there)
SKIP_PATHS = re.compile(
    r"src/(os/windows|graph/(connect|rings|trees)\.cc|misc/(tuner|profiler)|"
    r"plugin/(profiler|tuner)|device/|scheduler/|rma/rma_proxy_launch|ras/client)"
)
SKIP_TEXT = re.compile(
    r"List loop at element|Proxy append|out of bounds|unknown desc type|descriptor is not a|"
    r"XML Export|Could not find id|^PARAM: Duplicate|NULL request|inflight credit"
)
# INFO lines worth a signature: versions, choices NCCL made, and soft failures
KEEP_INFO = re.compile(
    r"^Bootstrap ?: Using|^NET/IB ?: Using|^NET/Socket ?: Using%s|^NET/IB : No device found|"
    r"^Using network |NET/Plugin|set by environment to|- Init COMPLETE|- (Abort|Destroy|%s) COMPLETE|"
    r"^cudaDriverVersion|Cuda failure|returned %s, retrying|connect returned|^P2P is disabled|"
    r"P2P not supported between|GPU Direct RDMA|^NVLS multicast support|NVLink SHARP|multicast-bind|"
    r"via (P2P|SHM|NET|COLLNET)|^peer query failed|^Legacy IPC not supported|"
    r"cuMem host allocations do not appear|mkstemp: Failed|fallocate: Failed|unlink shared memory|"
    r"^Invalid value %s for %s|nNodes %d|^MNNVL .*(state|healthMask)|RAS initialization error|"
    r"^NCCL_COMM_ID cannot|Ip address|mismatched physical devices|different number of devices|"
    r"^Call to %s (not supported|failed with error)|Call to ibv_modify_qp failed|"
    r"socketProgressOpt: abort|Connection closed by localRank|^GDRCOPY enabled|^Setting affinity|"
    r"^Connected all rings|^PXN Disabled|^dlsym failed|Tried merging multiple devices"
)
RESULT_SYMPTOM = {
    "ncclSystemError": "nccl_system",
    "ncclInternalError": "nccl_internal",
    "ncclInvalidArgument": "nccl_invalid",
    "ncclInvalidUsage": "nccl_invalid",
    "ncclRemoteError": "nccl_remote",
    "ncclUnhandledCudaError": "nccl_unhandled_cuda",
    "ncclTimeout": "collective_timeout",
}
FAILURE_WORDS = re.compile(
    (
        r"fail|error|cannot|can't|unable|invalid|mismatch|abort|timeout|timed out|closed|refused|"
        r"not supported|unsupported|too many|exceed|corrupt|lost|unexpected"
    ),
    re.IGNORECASE,
)
CUDA_WORDS = re.compile(r"Cuda failure|CUDA error|\bcu[A-Z]\w+|\bcuda[A-Z]\w+|CUDA")
NETWORK_PATHS = re.compile(r"transport/|bootstrap|socket|ibv|net\.cc|proxy|shm|gdr|ras/")

# (regex over "path format", catalogue ids); every matching row adds its ids
HINTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"transport/shm\.cc|shmutils|[Ss]hared memory|/dev/shm|fallocate|mkstemp|SHM", ("nccl.shm",)),
    (r"Duplicate GPU", ("nccl.duplicate_gpu",)),
    (
        r"[Vv]ersion mismatch|Mismatched NCCL version|version of NCCL|NCCL library (version|is)",
        ("nccl.version_mismatch",),
    ),
    (
        r"no socket interface|NCCL_SOCKET_IFNAME|[Nn]o usable listening interface|interface",
        ("net.socket_interface",),
    ),
    (
        (
            # (2.29 moved the socket calls to os/linux.cc: ncclOsSocketPollConnect ...)
            r"(socket|bootstrap|os/linux)\.cc .*([Cc]onnect|[Cc]losed|refused|reset|[Tt]imeout|"
            r"timed out|"
            r"getaddrinfo|resolve|[Pp]oll|recv|send)"
        ),
        ("net.unreachable",),
    ),
    (
        r"Connection closed by remote peer|Connection reset|[Cc]onnection refused",
        ("net.unreachable", "launch.rank_crash"),
    ),
    (r"Address already in use|EADDRINUSE", ("launch.port_in_use",)),
    # the Unix-domain sockets local ranks pass cuMem handles over (P2P buffers, 2.19+;
    # os/linux_ipcsocket.cc from 2.29): abstract names need one network namespace, plain
    # ones a shared /tmp, so ranks of one node in separate containers cannot reach each other
    (r"UDS: (Socket creation|Binding|Receiving|Sending)", ("nccl.p2p", "driver.container")),
    (r"NVLS|NVLink SHARP|[Mm]ulticast", ("nccl.nvls",)),
    (r"transport/p2p\.cc|P2P|[Pp]eer access|cudaIpc|cuIpc|IPC handle", ("nccl.p2p",)),
    (
        r"net_ib.*(completion|CQE|async|[Ee]vent|status=|wc_status|retry|Retry|fatal error)",
        ("net.ib_transport",),
    ),
    (
        (
            r"(net_ib|ibv).*(reg_mr|ibv_reg|memlock|RLIMIT|GID|[Gg]id|HCA|No device|[Nn]o IB|"
            r"link layer|ROCE|RoCE|Roce|ibv_open|ibv_get_device|port)"
        ),
        ("net.ib_config",),
    ),
    (r"(net_ib|ibv).*([Pp]ort .*(state|DOWN|down|ACTIVE)|link is not active)", ("net.ib_link",)),
    # ibvwrap's "Call to %s failed": a verbs call at set-up (register memory, open a device,
    # move a queue pair to RTR/RTS): the RDMA configuration (memlock, GID, MTU, HCA)
    (r"ibvwrap\.cc .*Call to", ("net.ib_config",)),
    (
        r"GDR|GPU Direct RDMA|[Pp]eermem|nv_peer_mem|dmabuf|DMA-BUF|gdrcopy|gdr_|gdrwrap",
        ("net.gdr",),
    ),
    (r"MNNVL|IMEX|[Ff]abric", ("gpu.fabric_manager",)),
    (
        (
            r"Invalid value %s for %s|set by environment to|NCCL_[A-Z_]+ .*(invalid|not supported|"
            r"must|should|[Ii]gnor)|NCCL_[A-Z_]+=%d is out of range|Invalid NCCL_COMM_ID|"
            r"when NCCL_COMM_ID is set|Fusing NET devices"
        ),
        ("nccl.env",),
    ),
    (r"hostHash|[Hh]ost hash|NCCL_HOSTID", ("nccl.host_identity",)),
    (r"Too many open files|EMFILE|[Cc]annot allocate memory|ulimit|RLIMIT", ("host.resources",)),
    (r"Failed to CUDA (host )?(malloc|calloc|alloc)|cuMemCreate|out of memory", ("gpu.oom",)),
    (r"nvml.*(fail|Failed)|NVML", ("gpu.lost",)),
    # 2.30 opens NVML itself (os/linux.cc): the library is the driver's, which a container
    # gets only from the NVIDIA container runtime
    (r"Failed to open libnvidia-ml", ("driver.container",)),
    # ncclCommInitAll's device list (one process, several GPUs: DataParallel, nccl-tests -g)
    # names a device beyond those CUDA shows the process
    (r"Invalid device %d \(totalnDev", ("cuda.device_visibility",)),
)
HINT_RES = tuple((re.compile(rx), ids) for rx, ids in HINTS)
#: messages whose result the site scan does not see, read by hand: a connection of another
#: socket type is refused with ncclInternalError (src/misc/socket.cc, 2.12 to 2.30: the state
#: is set and the socket closed between the WARN and the return; a wrong magic is ignored
#: instead), and from 2.29 the IB completion error is printed by a helper that returns
#: ncclSuccess to its caller, which then returns ncclRemoteError (transport/net_ib/p2p.cc).
#: An IB async fatal event (device, CQ or QP; 2.23+) only counts the fault, in the adapter's
#: thread: the communicator's next send, receive or test finds the count and returns
#: ncclSystemError ("communicator encountered a fatal error"). The SRQ event counts nothing.
_ASYNC_FATAL = "NET/IB : %s:%d async fatal event"
#: A missing algorithm returns ncclInvalidUsage only when NCCL_ALGO/NCCL_PROTO is set, and the
#: message then says so (rule nccl.env reads that form): the bare message is an internal error.
RESULT_FIXES = {
    "Error : no algorithm/protocol available for function %s with datatype %s.%s%s": (
        "ncclInternalError"
    ),
    "No algorithm/protocol available for function %s with datatype %s.%s%s": "ncclInternalError",
    f"{_ASYNC_FATAL}: %s": "ncclSystemError",
    f"{_ASYNC_FATAL} on CQ (%p): %s": "ncclSystemError",
    f"{_ASYNC_FATAL} on QP (%p): %s": "ncclSystemError",
    f"{_ASYNC_FATAL} on CQ (%p) handle=%u cqe=%d: %s": "ncclSystemError",
    (
        f"{_ASYNC_FATAL} on QP (%p) qpn=%u handle=%u send_cq=%u recv_cq=%u state=%d sq_psn=%u "
        "rq_psn=%u: %s"
    ): "ncclSystemError",
    "socketFinalizeAccept from %s: wrong type %d != %d": "ncclInternalError",
    "socketFinalizeAccept: wrong type %d != %d": "ncclInternalError",
    (
        "NET/IB: Got completion from peer %s with status=%s(%d) opcode=%s(%d) vendor_err=%u "
        "%s%s%s%s hca %s"
    ): "ncclRemoteError",
}
#: what a message means where its words do not say, read by hand: the ids it points to and a note
_SMEM = (
    ("nccl.internal", "nccl.version_mismatch"),
    (
        "NCCL's kernels ask for more shared memory than this GPU gives: an NCCL build that predates "
        "the GPU's architecture (a newer release supports it)"
    ),
)
_ROOT = (
    ("launch.duplicate_launch",),
    (
        "NCCL's bootstrap root (src/bootstrap.cc) collects each rank once: a second process with the "
        "same rank, or one counting another world size, makes its thread give up, and every rank "
        "waits in init (two launches or nested launchers, a rank computed from the local rank, "
        "two jobs sharing a store or NCCL_COMM_ID)"
    ),
)
#: ncclIbIsend's sanity check "to catch user collective call count/size mismatches": the peer
#: posted a smaller receive than this rank sends (counts differ, or the ranks cut the data
#: differently: another NCCL_BUFFSIZE/PROTO/ALGO, or another NCCL release on some ranks)
_IB_MISMATCH = (
    ("app.collective_mismatch", "nccl.version_mismatch", "nccl.env"),
    (
        "a peer posted a smaller receive than this rank sent: the ranks called the collective "
        "with other counts, or cut it differently (another NCCL_BUFFSIZE, NCCL_PROTO, release)"
    ),
)
#: NCCL parses XML only from a file it was pointed at (NCCL_TOPO_FILE or NCCL_GRAPH_FILE, often
#: set by a network plugin or an image; a VM's /var/run/nvidia-topologyd/virtualTopology.xml):
#: its own detection builds the tree in memory (src/graph/xml.cc)
_TOPO_FILE = (
    ("nccl.env",),
    (
        "a topology or graph XML that NCCL read from a file (NCCL_TOPO_FILE, NCCL_GRAPH_FILE, set "
        "by hand, by a network plugin or by the image; a VM's virtual topology) is malformed: "
        "NCCL parses XML only from such files, its own detection writes none"
    ),
)
#: ncclSocketInit refuses an address whose family is neither IPv4 nor IPv6: the address it was
#: handed was never filled in (an interface named by NCCL_SOCKET_IFNAME or NCCL_OOB_NET_IFNAME
#: that no host has leaves it zeroed; 2.27 goes on instead of failing at the lookup)
_NO_ADDRESS = (
    ("net.socket_interface", "nccl.env"),
    (
        "the socket address NCCL was to connect to was never filled in: the interface its "
        "lookup wanted (NCCL_SOCKET_IFNAME, NCCL_OOB_NET_IFNAME) matched nothing on this host"
    ),
)
READINGS: dict[str, tuple[tuple[str, ...], str]] = {
    **dict.fromkeys(
        (
            "XML Parse : Unexpected EOF",
            "XML Parse : Expected (double) quote.",
            "XML Parse : Unexpected value with name %s",
            "XML Parse error : unterminated comment",
            "XML Parse error : expecting '<', got '%c'",
            "XML Parse error : unexpected trailing %c in closing tag %s",
            "XML Parse : expected >, got '%c'",
            "XML Parse : unterminated %s",
            "XML Mismatch : %s / %s",
            "ncclTopoGetSystemFromXml: system node not found in XML",
        ),
        _TOPO_FILE,
    ),
    **dict.fromkeys(
        (
            (
                "ncclSocketInit: connecting to address %s with family %d is neither AF_INET(%d) nor "
                "AF_INET6(%d)"
            ),
            "Error : connecting to address with family %d is neither AF_INET(%d) nor AF_INET6(%d)",
        ),
        _NO_ADDRESS,
    ),
    # bootstrapNetRecv (src/bootstrap.cc) reads the size the peer sent first: a larger one than
    # this rank's structure is a peer built from another NCCL release (or a stranger on the port)
    **dict.fromkeys(
        (
            "Message truncated : received %d bytes instead of %d",
            "Message truncated : received %d,%d bytes instead of %d,%d",
        ),
        (
            ("nccl.version_mismatch", "nccl.internal"),
            (
                "a bootstrap peer sent a larger message than this rank's own structure: the "
                "ranks run different NCCL releases, or another program reached the port"
            ),
        ),
    ),
    # pthread_create failed (EAGAIN): the process or the container hit its thread or pid limit
    "Thread creation failed: %s": (
        ("host.resources",),
        "pthread_create failed: the user's or the container's process limit (ulimit -u, pids.max)",
    ),
    **dict.fromkeys(
        (
            "%s:%d Unrecoverable error detected: malloc(size=%llu) returned null.",
            "Unrecoverable error detected: malloc(size=%llu) returned null.",
        ),
        (("host.resources",), "malloc returned NULL: the host's memory is exhausted"),
    ),
    # the 2.4-2.6 watchdog of init.cc: a rank waits for a collective the others never call
    **dict.fromkeys(
        (
            (
                "Mismatched collective detected, please check your collective calls at and around "
                "rank %d. You can use NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=COLL to see the "
                "collective logs"
            ),
            (
                "Your program may be hanging, this may be caused by a collective mismatch around rank "
                "%d. Please check your collective calls at and around this rank. You can use "
                "NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=COLL to see the collective logs"
            ),
        ),
        (
            ("app.collective_mismatch",),
            "NCCL's own check found the ranks calling different collectives around the rank named",
        ),
    ),
    **dict.fromkeys(
        (
            (
                "NET/IB : Can't connect net devices with different link_layer. i=%d remMeta.ndevs=%d "
                "link_layer=%d rem_link_layer=%d"
            ),
            (
                "NET/IB : Can't merge net devices with different link_layer. i=%d remMeta.ndevs=%d "
                "link_layer=%d rem_link_layer=%d"
            ),
        ),
        (
            ("net.ib_config",),
            "the two sides' RDMA ports differ in link layer (InfiniBand against RoCE/Ethernet)",
        ),
    ),
    **dict.fromkeys(
        (
            "Error : no algorithm/protocol available for function %s with datatype %s.%s%s",
            "No algorithm/protocol available for function %s with datatype %s.%s%s",
        ),
        (
            ("nccl.internal",),
            (
                "ncclInternalError when neither NCCL_ALGO nor NCCL_PROTO is set (an NCCL that "
                "has no kernel for the collective and type here); when one is, the message "
                "ends 'NCCL_ALGO was set to X.', the call fails with ncclInvalidUsage and "
                "nccl.env names the setting (sign nccl.algo_forced)"
            ),
        ),
    ),
    (
        "Detected mixed local Net device counts across ranks (min %d, max %d). Set "
        "NCCL_IGNORE_NET_MISMATCH=1 to continue."
    ): (
        ("net.ib_config", "net.ib_link"),
        (
            "2.30: the nodes see different numbers of network devices (a port down or an HCA "
            "missing on some, NCCL_IB_HCA set differently, other hardware); init fails with "
            "ncclSystemError, and rank 0 lists the ranks with fewer in INFO lines"
        ),
    ),
    (
        "Detected mixed local CollNet device counts across ranks (min %d, max %d). Set "
        "NCCL_IGNORE_COLLNET_MISMATCH=1 to continue."
    ): (
        ("net.ib_config",),
        "2.30: the nodes see different numbers of CollNet (SHARP) devices; init fails",
    ),
    (
        "Multiple Ranks are using the same GPU/Partition. Set NCCL_MULTI_RANK_GPU_ENABLE=1 to "
        "enable this configuration."
    ): (
        ("nccl.duplicate_gpu",),
        (
            "2.30.7's form of 'Duplicate GPU detected': two ranks of one communicator on one GPU (the "
            "same UUID on one host), refused unless NCCL_MULTI_RANK_GPU_ENABLE=1"
        ),
    ),
    "Bootstrap Root : rank %d of %d ranks has already checked in": _ROOT,
    "Bootstrap Root : mismatch in rank count from procs %d : %d": _ROOT,
    (
        "Bootstrap Root : mismatch in info from procs, nranks %d vs %d, nroots %d vs %d, "
        "iroot %d vs %d"
    ): _ROOT,
    (
        "Bootstrap Root : mismatch in info from procs, nranks %d vs %d, nroots %d vs %d, "
        "iroot %d vs %d, offset %d vs %d"
    ): _ROOT,
    "cudaArch %d dynamic smem %d exceeds device/fn maxSharedMem %d": _SMEM,
    "cudaArch %d ncclMaxSharedMem %d exceeds device/fn maxSharedMem %zu": _SMEM,
    "NET/IB : req %d/%d tag %x peer %s collective mismatch error, local size %d remote size %d": (
        _IB_MISMATCH
    ),
    # the same check before 2.12 (an ncclInternalError then)
    "NET/IB : collective mismatch error local size %d remote %d addr %lx rkey %x seq %x/%x": (
        _IB_MISMATCH
    ),
    "NET/IB : peer %s collective mismatch error local size %d remote %d addr %lx rkey %x seq %x/%x": (
        _IB_MISMATCH
    ),
    # NCCL 2.14-2.16 accept only 0 or 1 here; from 2.17 NCCL_CONFIG_INITIALIZER sets every
    # attribute to NCCL_CONFIG_UNDEF_INT (INT_MIN), which those releases never see as unset
    "Invalid config blocking attribute value %d": (
        ("nccl.version_mismatch",),
        (
            "the ncclConfig_t came from a caller built against newer NCCL headers than the libnccl "
            "loaded (-2147483648 is 2.17's 'unset'; 2.14-2.16 take only 0 or 1): two NCCL builds"
        ),
    ),
    (
        "NCCL cannot be captured in a graph if either it wasn't built with CUDA runtime >= 11.3 "
        "or if the installed CUDA driver < R465."
    ): (
        ("nccl.version_mismatch", "driver.cuda_mismatch"),
        (
            "a CUDA graph captured a collective while the libnccl loaded was built for a CUDA runtime "
            "before 11.3 (a wheel or system copy for another CUDA) or the driver predates R465"
        ),
    ),
    # graph/search.cc: NCCL_GRAPH_FILE replaces the channel search with a file's channels, which
    # name the devices of the machine it was dumped on (NCCL_GRAPH_DUMP_FILE)
    **dict.fromkeys(
        ("XML Import Channel : dev %d not found.", "XML Import Channel : dev %ld not found."),
        (
            ("nccl.env",),
            (
                "NCCL_GRAPH_FILE lists a GPU or NIC this machine does not have: a graph dumped "
                "on another machine type, or the devices renumbered since"
            ),
        ),
    ),
    # graph/tuning.cc (2.24+): NCCL_ALGO and NCCL_PROTO take "[func:]list[;func:list]"; a
    # value it cannot parse fails every communicator with ncclInvalidUsage
    **dict.fromkeys(
        (
            'All entries except the first must have a prefix: "%s"',
            'Unrecognized element token "%s" when parsing "%s"',
            'Unrecognized prefix token "%s" when parsing "%s"',
        ),
        (
            ("nccl.env",),
            (
                "NCCL_ALGO or NCCL_PROTO holds a value this release cannot parse (an algorithm "
                "or protocol it does not know, or a list in another release's syntax)"
            ),
        ),
    ),
    # graph/search.cc (2.12+) with NCCL_CROSS_NIC=0: a ring between nodes must leave on the
    # NIC of the same index it came in on, and this node has no NIC of that index
    "Rank %d requires NIC %d but that NIC is not available for rank %d": (
        ("net.ib_config", "nccl.env"),
        (
            "the nodes see different NICs (an HCA missing or down on one, NCCL_IB_HCA set "
            "differently) while NCCL_CROSS_NIC=0 asks every ring to use the same NIC index"
        ),
    ),
    # graph/tuning.cc (2.5-2.6) clamps NCCL_NTHREADS / NCCL_LL128_NTHREADS and goes on
    **dict.fromkeys(
        (
            "Invalid %s %d (must be a multiple of %d)",
            "Invalid %s %d (maximum %d).",
            "Invalid %s %d (minimum %d).",
        ),
        (
            ("nccl.env",),
            "a thread-count setting out of range: NCCL clamps it and goes on (not a failure)",
        ),
    ),
    # graph/tuning.cc (2.8-2.18): rank 0 notes it, then turns ring and tree back on
    "CollNet is not supported or fails to initialize, ignoring NCCL_ALGO=COLLNET": (
        ("nccl.env",),
        "NCCL_ALGO=COLLNET without a CollNet (SHARP) plugin: NCCL ignores it and goes on",
    ),
}
#: WARNs after which NCCL goes on (with a corrected value, or without an optional library or
#: transport): a note, never a failure
GOES_ON = frozenset(
    {
        "Invalid %s %d (must be a multiple of %d)",
        "Invalid %s %d (maximum %d).",
        "Invalid %s %d (minimum %d).",
        "CollNet is not supported or fails to initialize, ignoring NCCL_ALGO=COLLNET",
        # misc/ibvwrap.cc (to 2.11, a WARN; an INFO since 2.12): the IB transport's init
        # fails, init.cc's initNet skips that network and takes the next (Socket)
        "Failed to open libibverbs.so[.1]",
        # misc/gdrwrap.cc: ncclGdrInit returns NULL and init.cc's initGdrCopy goes on without
        # GDRCopy (only NCCL_GDRCOPY_ENABLE=1 asks for it)
        "Failed to open libgdrapi.so",
        "Failed to open libgdrapi.so - %s",
    }
)
#: WARNs the source gives no hint for, read in their code one by one (session 27: what call
#: failed, what it means for the environment): their ids and the reason, as data. Messages
#: that are NCCL's own bookkeeping or an API check of its caller stay without an id; so do
#: socket errors a peer's death also causes (the cascade), and libibverbs missing (harmless
#: on a host without RDMA NICs).
REVIEWED = Path(__file__).resolve().parent / "nccl_readings.jsonl"


def _reviewed() -> dict[str, tuple[tuple[str, ...], str]]:
    out: dict[str, tuple[tuple[str, ...], str]] = {}
    for line in REVIEWED.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        out[row["format"]] = (tuple(row["hint_ids"]), f"{row['why']} ({row['confidence']})")
    return out


AREA = re.compile(r"([^/]+?)(?:_v\d+)?\.(?:cc|h|cu|cpp|c|hpp|cuh)$")


#: A WARN's own words that NCCL carries on past it ("..., disabling.", "falling back to
#: graphStreamOrdering=1", "- skipping", "ignoring address"): read with no failing result
#: after it in the source, a note
GOES_ON_WORDS = re.compile(r"\b(?:falling back|ignoring|disabling|skipping|defaulting to)\b")


def _symptom(kind: str, text: str, results: Counter[str], path: str) -> str:
    """The class of a message (``text`` with its string macros inlined: the words printed)."""
    if kind == "info" or text.strip() in GOES_ON:
        return "info"
    if not results and GOES_ON_WORDS.search(text):
        return "info"
    if results:
        return RESULT_SYMPTOM[results.most_common(1)[0][0]]
    if not FAILURE_WORDS.search(text):
        return "info"
    if CUDA_WORDS.search(text):
        return "nccl_unhandled_cuda"
    return "nccl_system" if NETWORK_PATHS.search(path) else "nccl_internal"


def _hints(text: str, path: str, symptom: str) -> list[str]:
    key = f"{path} {text}"
    ids: list[str] = []
    for rx, row in HINT_RES:
        if rx.search(key):
            ids.extend(i for i in row if i not in ids)
    if symptom == "nccl_internal" and "nccl.internal" not in ids:
        ids.append("nccl.internal")
    return ids


#: string macros a format's %s is filled with: inlined, so the pattern holds the words
#: (gdrwrap.cc's "Failed to open %s" would otherwise match any program's "Failed to open")
STRING_MACROS = {"GDRAPI_LIBNAME": "libgdrapi.so"}


def _inline_macros(text: str, args: list[str]) -> tuple[str, list[str]]:
    """``text`` with each ``%s`` whose argument is a :data:`STRING_MACROS` name replaced by
    its value, and the arguments left."""
    specs = [m for m in PRINTF.finditer(text) if m["conv"] != "%"]
    if len(specs) != len(args) or not any(a.strip() in STRING_MACROS for a in args):
        return text, args
    out, kept, at = [], [], 0
    for spec, arg in zip(specs, args, strict=True):
        out.append(text[at : spec.start()])
        if spec["conv"] == "s" and arg.strip() in STRING_MACROS:
            out.append(STRING_MACROS[arg.strip()].replace("%", "%%"))
        else:
            out.append(spec.group(0))
            kept.append(arg)
        at = spec.end()
    return "".join(out) + text[at:], kept


def _version(tag: str) -> str:
    return tag[1:].split("-", 1)[0]


def entries(messages: dict[tuple[str, str], Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    ids: Counter[str] = Counter()
    reviewed = _reviewed()
    for (kind, text), msg in messages.items():
        sites = [s for ss in msg.sites.values() for s in ss]
        path = Counter(s.path for s in sites).most_common(1)[0][0]
        if SKIP_PATHS.search(path) or SKIP_TEXT.search(text):
            continue
        literal = PRINTF.sub("", text)
        if len(re.findall(r"[A-Za-z]", literal)) < 10:
            continue
        if kind == "info" and not KEEP_INFO.search(text):
            continue
        if kind == "info" and ("/ras/" in path or "resiliency" in path):
            continue
        inlined, args = _inline_macros(text, list(msg.args))
        pattern, fields = pattern_for(inlined, "printf", args)
        results = Counter(s.result for s in sites if s.result)
        if text in RESULT_FIXES:
            results = Counter({RESULT_FIXES[text]: 1})
        symptom = _symptom(kind, inlined, results, path)
        area = AREA.search(path)
        base = f"nccl.{kind}.{area.group(1) if area else 'src'}.{slug(text, 40)}".lower()
        base = re.sub(r"[^a-z0-9_.]", "_", base)
        ids[base] += 1
        ident = base if ids[base] == 1 else f"{base}_{ids[base]}"
        where: dict[str, list[str]] = {}
        for tag in TAGS:
            for s in msg.sites.get(tag, []):
                where.setdefault(f"{s.path}:{s.line}", []).append(tag)
        seen = [_version(t) for t in TAGS if t in msg.sites]
        row: dict[str, Any] = {
            "id": ident,
            "library": "nccl",
            "level": kind,
            "where": [f"{loc}@{','.join(tags)}" for loc, tags in where.items()],
            "versions": {"first": seen[0], "last": seen[-1], "seen": seen},
            "format": inlined.strip(),
            "format_style": "printf",
            "pattern": pattern,
            "fields": fields,
            "symptom": symptom,
            "hint_ids": _hints(text, path, symptom),
        }
        if results:
            row["result"] = results.most_common(1)[0][0]
        if text.strip() in READINGS:
            hints, row["note"] = READINGS[text.strip()]
            row["hint_ids"] = list(hints)
        elif not row["hint_ids"] and text.strip() in reviewed:
            hints, row["note"] = reviewed[text.strip()]
            row["hint_ids"] = list(hints)
        out.append(row)
    return out


def main(argv: list[str]) -> int:
    mirror = Path(argv[1]) if len(argv) > 1 else Path("/work/.mirror/NVIDIA+nccl/repo")
    messages: dict[tuple[str, str], Message] = {}
    for tag in TAGS:
        read_tag(mirror, tag, messages)
    rows = entries(messages)
    found = {row["id"]: row for row in rows}
    for hand in HAND_ROWS:
        row = hand
        if "where" not in hand:  # a refinement: printed where the row it refines is
            head, tail = list(hand.items())[:3], list(hand.items())[3:]
            base = found[hand["refines"][0]]
            row = dict([*head, ("where", base["where"]), ("versions", base["versions"]), *tail])
        rows.append(row)
    path = write_jsonl("nccl", rows)
    print(f"{len(rows)} signatures -> {path}")
    return 0


# lines NCCL prints that are not WARN/INFO calls of one format: the debug-line
# prefix (src/debug.cc) and the version banner (src/init.cc, showVersion)
_ALL = [t[1:].split("-")[0] for t in TAGS]
_VERSIONS = {"first": _ALL[0], "last": _ALL[-1], "seen": _ALL}
# host:pid:tid come first on the line but are left to the line parser: a pattern that
# starts with a host name class is tried at every offset; this one starts at "[dev] "
_PREFIX = r"\[(?P<cuda_dev>-?\d{1,5})\] "
#: NCCL 2.30.3 and 2.30.4 (between the releases mined) refuse several ranks on one GPU in
#: words of their own (src/graph/topo.cc ncclCheckMultiRank), and name the pair in an INFO line
_MULTI_RANK_WHERE = ["src/graph/topo.cc ncclCheckMultiRank@v2.30.3-1,v2.30.4-1"]
_MULTI_RANK_VERSIONS = {"first": "2.30.3", "last": "2.30.4", "seen": ["2.30.3", "2.30.4"]}
HAND_ROWS: list[dict[str, Any]] = [
    {
        "id": "nccl.warn.topo.multiple_ranks_detected_using_the_same_gpu",
        "library": "nccl",
        "level": "warn",
        "where": _MULTI_RANK_WHERE,
        "versions": _MULTI_RANK_VERSIONS,
        "format": (
            "Multiple ranks detected using the same GPU on this node. Set "
            "NCCL_MULTI_RANK_GPU_ENABLE=1 to enable this configuration."
        ),
        "format_style": "literal",
        "pattern": (
            r"Multiple ranks detected using the same GPU on this node\. Set "
            r"NCCL_MULTI_RANK_GPU_ENABLE=1 to enable this configuration\."
        ),
        "fields": [],
        "symptom": "nccl_invalid",
        "hint_ids": ["nccl.duplicate_gpu"],
        "result": "ncclInvalidUsage",
        "note": "2.30.3-2.30.4's form of 'Duplicate GPU detected' (ncclCheckMultiRank)",
    },
    {
        "id": "nccl.info.topo.detected_ranks_sharing_gpu_with_bus",
        "library": "nccl",
        "level": "info",
        "where": _MULTI_RANK_WHERE,
        "versions": _MULTI_RANK_VERSIONS,
        "format": "Detected ranks %d and %d sharing GPU with bus %lX on this node",
        "format_style": "printf",
        "pattern": (
            r"Detected ranks (?P<rank_a>-?\d{1,20}) and (?P<rank_b>-?\d{1,20}) sharing GPU "
            r"with bus (?P<bus>[0-9A-Fa-f]{1,16}) on this node"
        ),
        "fields": ["rank_a", "rank_b", "bus"],
        "symptom": "info",
        "hint_ids": ["nccl.duplicate_gpu"],
        "note": "the pair of ranks on one GPU, printed by the host's first rank before the WARN",
    },
    {
        "id": "nccl.line.warn",
        "library": "nccl",
        "level": "warn",
        "where": ["src/debug.cc:172@v2.18.6-1", "src/debug.cc:345@v2.30.7-1"],
        "versions": _VERSIONS,
        "format": "[%d] %s:%d (%s) NCCL WARN %s",
        "format_style": "printf",
        "pattern": _PREFIX
        + r"(?:(?P<file>[\w./-]{1,200}):(?P<line>\d{1,10}) (?:\((?P<func>[\w:~<>]{1,100})\) )?)?"
        r"NCCL WARN (?P<message>[^\n]{0,4000})",
        "fields": ["cuda_dev", "file", "line", "func", "message"],
        "symptom": "info",
        "hint_ids": [],
        "note": (
            "the prefix of every NCCL WARN line after host:pid:tid; the message part is matched "
            "by the nccl.warn.* signatures (2.30 adds the function name in parentheses, "
            "NCCL_DEBUG_TIMESTAMP_FORMAT a leading timestamp)"
        ),
    },
    *(
        {
            "id": f"nccl.warn.socket.wrong_type_net_transports{suffix}",
            "library": "nccl",
            "level": "warn",
            # where and versions: those of the row refined (see main)
            "format": f"socketFinalizeAccept{middle}: wrong type %d != %d",
            "format_style": "printf",
            "pattern": (
                f"socketFinalizeAccept{group}: wrong type (?P<got>[34]) != (?P<expected>[34])"
            ),
            "example": f"socketFinalizeAccept{sample}: wrong type 3 != 4",
            "fields": [*fields, "got", "expected"],
            "symptom": "nccl_internal",
            "hint_ids": ["net.ib_config"],
            "result": "ncclInternalError",
            "refines": [refined],
            "note": (
                "socket types 3 and 4 are ncclSocketTypeNetSocket and ncclSocketTypeNetIb "
                "(src/include/socket.h): a rank using the Socket transport reached a rank "
                "listening for the IB transport's handshake (or the reverse), so the nodes chose "
                "different inter-node transports: IB usable or enabled on one node, not the other"
            ),
        }
        for suffix, middle, group, sample, fields, refined in (
            (
                "",
                " from %s",
                " from (?P<address>[^\\n]{0,200}?)",
                " from 10.20.0.12<47312>",
                ["address"],
                "nccl.warn.socket.socketfinalizeaccept_from_wrong_type",
            ),
            ("_old", "", "", "", [], "nccl.warn.socket.socketfinalizeaccept_wrong_type"),
        )
    ),
    {
        # src/graph/xml.cc: every cpu node NCCL's detection creates goes through
        # ncclTopoGetXmlFromCpu, which sets arch and vendor (familyid, modelid on x86) when absent
        "id": "nccl.warn.xml.attribute_of_node_cpu_not_found",
        "library": "nccl",
        "level": "warn",
        # where and versions: those of the row refined (see main)
        "format": "Attribute %s of node cpu not found",
        "format_style": "printf",
        "pattern": "Attribute (?P<attribute>arch|vendor|familyid|modelid|affinity|numaid) of "
        "node cpu not found",
        "example": "Attribute arch of node cpu not found",
        "fields": ["attribute"],
        "symptom": "nccl_internal",
        "hint_ids": ["nccl.env"],
        "result": "ncclInternalError",
        "refines": ["nccl.warn.xml.attribute_of_node_not_found"],
        "note": (
            "NCCL's own detection gives every CPU node it creates these attributes "
            "(ncclTopoGetXmlFromCpu): one without them came from a topology XML NCCL read "
            "(NCCL_TOPO_FILE, set by hand, by a network plugin or the image; a VM's virtual "
            "topology), which some releases complete only for the CPUs of the GPUs in use"
        ),
    },
    {
        # 2.30 no longer fails the accept: it logs the other transport's handshake and goes on
        # listening, so the peer's connection is dropped (src/misc/socket.cc socketFinalizeAccept)
        "id": "nccl.info.socket.wrong_socket_type_net_transports",
        "library": "nccl",
        "level": "info",
        "where": ["src/misc/socket.cc socketFinalizeAccept@v2.30.7-1"],
        "versions": {"first": "2.30.7", "last": "2.30.7", "seen": ["2.30.7"]},
        "format": (
            "socketFinalizeAccept from %s: wrong socket type (peer %d != expected %d -- peer "
            "connected to wrong NCCL socket), discarding peer connection"
        ),
        "format_style": "printf",
        "pattern": (
            "socketFinalizeAccept from (?P<address>[^\\n]{0,200}?): wrong socket type \\(peer "
            "(?P<got>[34]) != expected (?P<expected>[34]) -- peer connected to wrong NCCL socket"
            "\\), discarding peer connection"
        ),
        "example": (
            "socketFinalizeAccept from 10.20.0.12<47312>: wrong socket type (peer 3 != expected "
            "4 -- peer connected to wrong NCCL socket), discarding peer connection"
        ),
        "fields": ["address", "got", "expected"],
        "symptom": "info",
        "hint_ids": ["net.ib_config"],
        "note": (
            "socket types 3 and 4 (NetSocket, NetIb): the nodes chose different inter-node "
            "transports; from 2.30 the listener drops the connection instead of failing"
        ),
    },
    {
        "id": "nccl.line.info",
        "library": "nccl",
        "level": "info",
        "where": ["src/debug.cc:175@v2.18.6-1", "src/debug.cc:354@v2.30.7-1"],
        "versions": _VERSIONS,
        "format": "[%d] NCCL INFO %s",
        "format_style": "printf",
        "pattern": _PREFIX + r"NCCL INFO (?P<message>[^\n]{0,4000})",
        "fields": ["cuda_dev", "message"],
        "symptom": "info",
        "hint_ids": [],
        "note": "the prefix of every NCCL INFO line after host:pid:tid",
    },
    {
        "id": "nccl.info.version",
        "library": "nccl",
        "level": "info",
        "where": ["src/init.cc:448@v2.18.6-1", "src/init.cc:694@v2.30.7-1"],
        "versions": _VERSIONS,
        "format": "NCCL version %d.%d.%d%s+cuda%d.%d",
        "format_style": "printf",
        "pattern": (
            r"NCCL version (?P<nccl_version>\d{1,3}\.\d{1,3}\.\d{1,3})"
            r"(?P<suffix>[\w.-]{0,32})\+cuda(?P<cuda_version>\d{1,3}\.\d{1,3})"
        ),
        "fields": ["nccl_version", "suffix", "cuda_version"],
        "symptom": "info",
        "hint_ids": ["nccl.version_mismatch"],
        "note": "VERSION_STRING, printed once per process (INFO, or bare with NCCL_DEBUG=VERSION/WARN)",
    },
]

if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
