"""Signs read by the NCCL rules (``rules/nccl``)."""

from __future__ import annotations

from nccl_doctor.facts.signs import sign

SHM_ERROR = sign(
    "nccl.shm_error",
    r"Error while (?P<verb>creating|attaching to) shared memory segment|failed to extend /dev/shm|"
    r"(?:posix_fallocate|shm_open|ftruncate|mmap)\b.{0,40}(?:/dev/shm|failed).{0,60}"
    r"No space left on device|/dev/shm\S{0,200}.{0,60}No space left on device|"
    r"unable to (?:allocate|create) shared memory|shared memory segment.{0,40}failed",
    "NCCL (or the C library under it) could not create, grow or attach a /dev/shm segment",
)
SHM_PATH = sign(
    "nccl.shm_path",
    r"(?P<path>/dev/shm/[^\s)`'\"]{1,200})",
    "the /dev/shm file a shared-memory message names",
)
SHM_SIZE = sign(
    "nccl.shm_size",
    r"\bsize (?P<size>\d{1,20})",
    "the segment size (bytes) a shared-memory message names",
)
CONTAINER_START = sign(
    "nccl.container_start",
    r"\bdocker (?:run|create)\b|\bnvidia-docker run\b|\bpodman run\b",
    "a container was started by hand (its flags say how much /dev/shm it got)",
)
CONTAINER_SHM = sign(
    "nccl.container_shm",
    r"--shm-size|--ipc[= ]host",
    "a container start that sizes /dev/shm or shares the host's IPC namespace",
)

# -- duplicate GPU, several machines (nccl.duplicate_gpu, nccl.host_identity) --------------

DUPLICATE_GPU = sign(
    "nccl.duplicate_gpu",
    r"Duplicate GPU detected(?:\s*:\s*rank (?P<rank_a>\d+) and rank (?P<rank_b>\d+) "
    r"both on CUDA device (?P<device>[0-9a-f]+))?",
    "NCCL refused two ranks on one GPU (bus id in NCCL's hex form), and which ranks",
)
TWO_MACHINES = sign(
    "nccl.two_machines",
    r"\b(?:two|2|multiple|several) (?:nodes|machines|servers|hosts)\b",
    "the job is said to run on more than one machine",
)
SEVERAL_MACHINES = sign(
    "nccl.several_machines",
    r"\b(?:two|2|three|3|four|4|multiple|several) (?:nodes|machines|servers|hosts)\b",
    "the job is said to run on two to four (or several) machines",
)
MULTI_NODE = sign(
    "nccl.multi_node",
    r"multi-?node|multiple nodes|several nodes",
    "the job is called multi-node",
)
LAUNCH_HOSTS = sign(
    "nccl.launch_hosts",
    r"(?:^|\s)(?:-H|--?host)\s+(?P<hosts>[\w.:,-]+)",
    "the host list of an mpirun/horovodrun -H/--host option (name[:slots],...)",
    case=True,
)
LAUNCH_NODES = sign(
    "nccl.launch_nodes",
    r"--nnodes[=\s]+(?P<nnodes>\d+)|(?:^|\s)(?:srun|salloc|sbatch)\b.{0,2000}?\s-N\s*(?P<slurm>\d+)",
    "how many nodes a torchrun --nnodes or a Slurm -N asks for",
    case=True,
)
LAUNCH_SLOTS = sign(
    "nccl.launch_slots",
    r"(?:-npernode|--npernode|--nproc[-_]per[-_]node|--ntasks-per-node)[=\s]+(?P<slots>\d+)|"
    r"--map-by\s+ppr:(?P<ppr>\d+):node|(?:^|\s)(?P<pernode>-pernode|--pernode)\b",
    "how many ranks per machine a launch command asks for",
    case=True,
)
INTRA_TRANSPORT = sign(
    "nccl.intra_transport",
    r"\bvia (?P<via>(?:P2P|SHM)\b.*)",
    "NCCL connected two ranks with an intra-host transport (P2P or SHM), and which",
)
RING_EDGE = sign(
    "nccl.ring_edge",
    r"\b(?P<a>\d+)\[(?P<da>\d+)\] -> (?P<b>\d+)\[(?P<db>\d+)\] via (?P<t>P2P|SHM)\S*",
    "a ring/channel edge of an intra-host transport: rank[device] -> rank[device]",
    case=True,
)
GPUS_PER_NODE = sign(
    "nccl.gpus_per_node",
    r"(?<!\d)(?P<n>\d+) (?:nodes?|machines?|servers?),? (?:each )?with (?P<g>\d+) ?(?:x )?gpus?"
    r"|--nproc[_-]per[_-]node[= ](?P<p>\d+)",
    "how many nodes of how many GPUs each the job uses",
)
