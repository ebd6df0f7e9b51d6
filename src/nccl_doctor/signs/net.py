"""Signs read by the network rules (``rules/net``): node span, NCCL's socket and IB messages."""

from __future__ import annotations

from nccl_doctor.facts.signs import Sign, sign
from nccl_doctor.signs.common import setting
from nccl_doctor.signs.languages import MULTI_NODE_OTHER

# -- how many nodes the job spans (facts/span.span_of) ----------------------

NPROC_PER_NODE = sign(
    "net.nproc_per_node",
    r"--nproc[_-]per[_-]node\b",
    "a launch that sets --nproc-per-node (alone, without --nnodes, it means one node)",
    case=True,
)
#: How many workers a launch starts on each node: torchrun's and torch.distributed.launch's
#: --nproc-per-node, the deepspeed launcher's --num_gpus, srun's --ntasks-per-node, mpirun's
#: -npernode / --map-by ppr:N:node (a number, not "gpu" or "auto")
PER_NODE = sign(
    "net.per_node",
    r"--nproc[_-]per[_-]node[= ](?P<a>\d{1,3})\b|--num[_-]gpus[= ](?P<b>\d{1,3})\b"
    r"|--ntasks-per-node[= ](?P<c>\d{1,3})\b|-npernode (?P<d>\d{1,3})\b"
    r"|--map-by ppr:(?P<e>\d{1,3}):node\b",
    "the number of workers a launch starts on each node",
    case=True,
)
STANDALONE = sign(
    "net.standalone",
    r"--standalone\b",
    "torchrun --standalone: a single-node launch with a local rendezvous",
    case=True,
)
MPI_HOSTS = sign(
    "net.mpi_hosts",
    r"(?:\s-H|\s--host)\s+(?P<h>[\w.-]+(?::\d+)?(?:,[\w.-]+(?::\d+)?)+)",
    "mpirun -H/--host with a comma list of several hosts: the job spans nodes",
    case=True,
)
HOSTFILE = sign(
    "net.hostfile",
    r"\s(?:-hostfile|--hostfile|-machinefile|--machinefile)\s+\S+",
    "an MPI launch from a hostfile or machinefile (usually several nodes)",
    case=True,
)
SLURM_NODES = sign(
    "net.slurm_nodes",
    r"(?:--nodes[= ]|SLURM_NNODES=|\bNNODES=)(?P<n>\d{1,5})\b",
    "the node count of a Slurm allocation (--nodes N, SLURM_NNODES=N, NNODES=N)",
    case=True,
)
#: Chinese for several machines or nodes: multi-machine, two machines, multi-node, N (or
#: several) machines/servers/nodes, across machines or nodes (the sign below and the
#: differential's multi_node cue read it)
MULTI_NODE_ZH = (
    r"多机|双机|多节点|双节点|(?:两|多|[2-9])(?:台|个)\s?(?:机器|服务器|节点)|跨(?:机|节点|机器)"
)
PROSE_MULTI_NODE = sign(
    "net.prose_multi_node",
    r"\b(?:two|three|four|eight|multiple|several|2|3|4|8|\d{2})\s+(?:(?!gpus?\b|cards?\b)[a-z-]+\s+)?"
    r"(?:nodes?|machines|servers|hosts)\b|\bmu?l?ti-?\s?nodes?\b|\binter-?node\b|\bcross-?node\b"
    r"|\bacross\s+(?:nodes|machines)"
    # ("Two HGX H100 nodes", "a 2-node job", "on both nodes")
    r"|\b(?:two|three|four|eight|multiple|several|2|3|4|8|\d{2})\s+"
    r"(?:(?!gpus?\b|cards?\b)[\w-]{1,20}\s+){2}(?:nodes|machines|servers|hosts)\b"
    r"|\b(?:two|three|four|eight|2|3|4|8|\d{2})-(?:nodes?|machines?|servers?|hosts?)\b"
    r"|\bboth (?:nodes|machines|servers|hosts)\b"
    rf"|{MULTI_NODE_ZH}|{MULTI_NODE_OTHER}",
    "a person saying the job runs on several nodes or machines",
)
PROSE_SINGLE_NODE = sign(
    "net.prose_single_node",
    r"\b(?:single|one|1)[- ](?:node|machine|server|host)\b|\bsame (?:node|machine)\b"
    r"|\b(?:on|in) my (?:machine|server|workstation|computer|PC|desktop)\b"
    r"|单机|单节点|单台(?:机器|服务器)",  # (Chinese: one machine, one node)
    "a person saying the job runs on one node or machine",
)

#: The container shares the host's network: Docker's and Podman's option, Kubernetes' pod
#: field, compose's network mode (the reporter's "--network=host" counts as well).
HOST_NETWORK = sign(
    "net.host_network",
    r"--net(?:work)?[= ]host\b|\bhostNetwork:\s*true\b|\bnetwork_mode:\s*[\"']?host\b"
    r"|\bhost network(?:ing)?\b",
    "a container that shares the host's network (docker --network=host, hostNetwork: true)",
)

# -- environment settings written as NAME=value in any text -----------------

#: One sign per variable the network rules read.
SETTINGS: dict[str, Sign] = {
    name: setting("net", name)
    for name in ("NCCL_IB_HCA", "NCCL_IB_GID_INDEX", "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME")
}

# -- GPUDirect RDMA (rules/net/gdr) -----------------------------------------

_GDR = r"\b(?:GDR|GDRDMA|GPU ?Direct(?:[ -]RDMA)?|nvidia[_-]peermem|nv_peer_mem)\b"
_GDR_TROUBLE = (
    r"\b(?:enabl(?:e|ing)|not (?:used|working|enabled|loaded)|disabled?|can'?t|cannot|fail\w*"
    r"|problem|issue|doesn'?t|won'?t|unable|no)\b"
)
GDR_PROBLEM = sign(
    "net.gdr_problem",
    # in one clause with it: "nvidia-peermem is not loaded", "can't enable GDR"; not "training
    # fails with an NCCL error. nvidia-peermem is loaded and working"
    rf"{_GDR}[^.;\n]{{0,40}}?{_GDR_TROUBLE}|{_GDR_TROUBLE}[^.;\n]{{0,40}}?{_GDR}",
    "GPUDirect RDMA or its module named with words of a problem or of enabling it, in one "
    "clause: GDR is not in use",
)

#: A memory registration the kernel refused with EFAULT ("Call to ibv_reg_mr failed with error
#: Bad address", "ibv_reg_mr_iova2 failed with error Bad address"): it could not pin the
#: buffer's pages, which for a GPU buffer means no peer-memory path (nvidia-peermem or dma-buf)
#: lets the NIC reach GPU memory
GPU_MR_REFUSED = sign(
    "net.gpu_mr_refused",
    r"\bibv_reg_(?:dmabuf_)?mr\w{0,10}\b[^\n]{0,60}?(?:Bad address|\bEFAULT\b|errno:? 14\b)",
    "an RDMA memory registration refused with EFAULT (Bad address): the NIC cannot pin the "
    "(GPU) buffer",
)

# -- IB/RoCE configuration (rules/net/ib_config) ----------------------------

IB_INCOMPATIBLE = sign(
    "net.ib_incompatible",
    r"incompatible devices|device is incompatible with the local",
    "NCCL refused to connect IB devices of different kinds (IB with RoCE)",
)
HPCX_VERSION = sign(
    "net.hpcx_version",
    r"hpc-?x(?:[ _-]?v(?:ersion)?)?[\s:=-]*v?(?P<v>2\.\d{1,2})",
    "the HPC-X release in use (its UCX/SHARP NCCL plugin is built for one MLNX OFED)",
)
OFED_VERSION = sign(
    "net.ofed_version",
    r"(?:MLNX[_ ]OFED(?:_LINUX)?|DOCA[_ -]OFED|\bOFED)(?:[ _-]?version)?[\s:=-]*"
    r"(?P<v>\d{1,2}\.\d{1,2})",
    "the installed MLNX/DOCA OFED release",
)
IB_GID_INDEX = sign(
    "net.ib_gid_index",
    r"local GID index (?P<index>-?\d{1,10})",
    "the GID index a failed ibv_modify_qp names",
    case=True,
)
IB_RETRY_EXCEEDED = sign(
    "net.ib_retry_exceeded",
    r"(?:completion|status)\D{0,20}(?:with )?error\D{0,3}12\b|error 12,|status=12\b",
    "an IB completion with status 12 (transport retry counter exceeded) quoted anywhere",
    case=True,
)
ROCE = sign(
    "net.roce",
    r"\bRoCE\b|link_layer:\s*Ethernet|/RoCE\b",
    "a RoCE (Ethernet link layer) RDMA device named in a line",
)

# -- IB ports (rules/net/ib_link) -------------------------------------------

SETUP_HANG = sign(
    "net.setup_hang",
    r"\bhang(?:s|ing)?\b.{0,40}(?:connect|connection|init|setup|bootstrap)"
    r"|(?:connect|connection|init|setup|bootstrap)\w{0,30}.{0,40}\bhang(?:s|ing)?\b"
    r"|hanging at \S*connect",
    "a job said to hang while it sets up its connections (init, bootstrap, connect)",
)

# -- IB completion errors (rules/net/ib_transport) --------------------------

IB_COMPLETION = sign(
    "net.ib_completion",
    r"Got completion (?:from peer (?P<peer>\S+) )?with (?:error |status=)"
    r"(?:[A-Z_]+\()?(?P<code>\d{1,3})",
    "NCCL's IB completion error (ibv_wc_status code, peer), also as quoted by PyTorch",
    case=True,
)
IB_ASYNC_EVENT = sign(
    "net.ib_async_event",
    r"NET/IB ?: (?:(?P<hca>[\w.-]+:\d+) )?(?:async fatal event|Got async event)[^\n]*",
    "an asynchronous event the RDMA adapter raised (the whole event text)",
    case=True,
)
IB_FATAL_COUNTED = sign(
    "net.ib_fatal_counted",
    r"communicator encountered a fatal error \(detected in (?P<fn>[\w:]{1,80})\)",
    "NCCL's IB transport failing a communicator's operation because the adapter raised a fatal "
    "async event earlier (net_ib, 2.23+: the event is counted, the next operation returns "
    "ncclSystemError)",
    case=True,
)
NON_FATAL = sign(
    "net.non_fatal",
    # (NCCL's own word; or libibverbs' ibv_event_type_str of an event that tells a change of
    # the fabric's state, not a fault: a subnet manager's failover, a re-registration, a LID,
    # P_Key or GID change, a port coming up, a queue pair's own life cycle. "port error" and
    # the catastrophic, CQ and work-queue errors are faults and stay)
    r"non-fatal|Got async event : (?:SM change|client reregistration|LID change|P_Key change"
    r"|GID table change|port active|communication established|send queue drained"
    r"|path migrated|last WQE reached|SRQ limit reached)\b",
    "a line that calls its event non-fatal, or an IB async event that only tells a change of "
    "the fabric's state (SM change, client reregistration)",
    case=True,
)

# -- socket interfaces (rules/net/socket_interface) -------------------------

NO_SOCKET_INTERFACE = sign(
    "net.no_socket_interface",
    r"Bootstrap ?: no socket interface found|No usable listening interface found"
    r"|NET/IB ?: No IP interface found|No interface found in the same subnet as remote address"
    r"(?: (?P<remote>\S+))?"
    r"|(?P<unable>Unable to find (?:address|interface) for:? ?\[?(?P<gloo>[\w.:-]+)?)",
    "NCCL (or Gloo: the 'unable' field) found no usable socket interface on the host",
    case=True,
)
NO_SOCKET_INTERFACE_RETOLD = sign(
    "net.no_socket_interface_retold",
    r"\b(?:found|finds|find|could(?: not|n't) find|can(?:not|'t) find) no (?:usable )?"
    r"socket interfaces?\b|\bno (?:usable )?socket interfaces? (?:was |were )?found\b",
    "a person retelling NCCL's 'Bootstrap : no socket interface found' in their own words",
)
INIT_ERROR = sign(
    "net.init_error",
    r"internal error|invalid usage|unhandled system error|ncclInternalError|ncclInvalidUsage"
    r"|ncclSystemError",
    "the NCCL results a failed bootstrap returns (internal, invalid usage, system error)",
)
SOCKET_FAMILY = sign(
    "net.socket_family",
    r"(?:Socket creation failed|socket\(\) failed|Could not create socket)\W+"
    r"(?:Address family not supported|EAFNOSUPPORT)",
    "a socket could not be made for the interface's address family (IPv6 off or v6-only)",
)
NCCL_OR_WARN = sign(
    "net.nccl_or_warn",
    r"NCCL|WARN",
    "a line NCCL printed or a warning (beside SOCKET_FAMILY: NCCL's own socket failed)",
    case=True,
)

# -- unreachable peers and store (rules/net/unreachable) --------------------

CONNECT_RETRIES = sign(
    "net.connect_retries",
    r"exceeded (?:retries|timeouts|error retry count)",
    "NCCL gave up connecting a socket after its retries or timeouts",
)
NAME_RESOLUTION = sign(
    "net.name_resolution",
    r"Name or service not known|Temporary failure in name resolution|nodename nor servname"
    r"|error encountered when getting address info|No address associated with hostname",
    "a host name that did not resolve",
)
CONNECTION_ERROR = sign(
    "net.connection_error",
    r"Connection refused|Connection timed out|No route to host|Network is unreachable",
    "the strerror text of a TCP connection that failed",
    case=True,
)
CONNECT_FAILED = sign(
    "net.connect_failed",
    r"[Cc]onnect to (?P<peer>\S+) (?:failed|returned) ?:? ?(?P<err>Connection refused"
    r"|Connection timed out|No route to host|Network is unreachable"
    r"|Software caused connection abort)(?!, retrying)",
    "NCCL's final failed connect to a peer (peer address and error), also as quoted by PyTorch",
    case=True,
)
LOOPBACK_PEER = sign(
    "net.loopback_peer",
    r"(?:\bremote=\[|\b[Cc]onnect to |\bconnect \[)(?P<addr>127(?:\.\d{1,3}){3}|::1)\b",
    "a connection that failed to a peer's loopback address (Gloo's remote=[...] and, before "
    "2019, its pair.cc 'connect [addr]:port: ...'; NCCL's Connect to ...): the peer advertised "
    "127.x, which on another host is that host itself",
    case=True,
)
LINK_LOCAL_PEER = sign(
    "net.link_local_peer",
    r"(?:\bremote=\[|\b[Cc]onnect to |\bconnect \[)\[?"
    r"(?P<addr>169\.254(?:\.\d{1,3}){2}(?!\.?\d)|[Ff][Ee]80:[0-9A-Fa-f:]*(?:%[\w.-]+)?)",
    "a connection, failed or retried, to a peer's link-local address (169.254.x.x, fe80::):"
    " only its own link reaches it, so across hosts the peer advertised an interface they do"
    " not share",
    case=True,
)
NET_TYPES_DIFFER = sign(
    "net.socket_types_differ",
    r"socketFinalizeAccept(?: from \S{1,200})?: wrong (?:socket )?type (?:\(peer )?"
    r"(?P<got>[34]) != (?:expected )?(?P<expected>[34])(?!\d)",
    "NCCL refused a handshake of the other network transport: socket types 3 and 4 are "
    "ncclSocketTypeNetSocket and ncclSocketTypeNetIb (src/include/socket.h); to 2.29 a WARN "
    "that fails the accept, from 2.30 an INFO line that drops the peer's connection",
)
NET_COUNTS_DIFFER = sign(
    "net.net_counts_differ",
    r"Detected mixed local (?P<kind>Net|CollNet) device counts across ranks "
    r"\(min (?P<least>\d{1,4}), max (?P<most>\d{1,4})\)\. Set NCCL_IGNORE",
    "NCCL 2.30 refusing a communicator whose nodes see different numbers of network devices "
    "(the WARN; with NCCL_IGNORE_NET_MISMATCH=1 it only notes it, in other words)",
    case=True,
)
OTHER_CAUSE = sign(
    "net.other_cause",
    r"shared memory|/dev/shm|Cuda failure|CUDA error|NET/IB|ibv_|Duplicate GPU|out of memory",
    "an NCCL message naming a cause other than the network between hosts",
)
NET_IB = sign(
    "net.net_ib",
    r"NET/IB",
    "a line of NCCL's IB transport (its connection errors are not TCP ones)",
    case=True,
)

#: The kernel's mlx5 driver telling a port's cable or link went away under the job
#: ("mlx5_port_module_event: ... Port module event: module 0, Cable unplugged", "mlx5_core
#: 0000:d2:00.0 ib2: Link down"), or the RDMA core's own line for an IB device's port that
#: left the ACTIVE state (IB/cache, kernels from 6.10: "mlx5_core 0000:08:00.0 mlx5_0: Port:
#: 1 Link DOWN"): a link that flapped.
LINK_FLAPPED = sign(
    "net.link_flapped",
    r"Port module event(?:\[error\])?: module \d{1,3}, Cable unplugged"
    r"|mlx5_core [0-9a-f:.]{7,16}(?: \w{1,15})?: Link down\b"
    r"|\b[\w-]{2,20} [0-9a-f:.]{7,16} [\w-]{1,20}: Port: \d{1,2} Link DOWN\b",
    "the kernel's line that a port's cable was unplugged or its link went down (the mlx5 "
    "driver's, or the RDMA core's port state change)",
    case=True,
)

#: ulimit -a's locked-memory row ("max locked memory           (kbytes, -l) 64"), the limit
#: the NIC's registrations of NCCL's buffers count against.
MEMLOCK_SHOWN = sign(
    "net.memlock_shown",
    r"max locked memory\s{1,30}\(kbytes, -l\)\s{1,10}(?P<kb>\d{1,15}|unlimited)\b",
    "ulimit -a's locked-memory limit, in KiB or unlimited",
    case=True,
)
