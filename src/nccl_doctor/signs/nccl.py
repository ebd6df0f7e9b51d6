"""Signs read by the NCCL rules (``rules/nccl``)."""

from __future__ import annotations

from nccl_doctor.facts.signs import sign
from nccl_doctor.knowledge.nccl_versions import KNOWN_ISSUES, MIN_NCCL_FOR_GPU
from nccl_doctor.signs.common import NAME_START, setting

SHM_ERROR = sign(
    "nccl.shm_error",
    r"Error while (?P<verb>creating|attaching to) shared memory segment|failed to extend /dev/shm|"
    r"(?:posix_fallocate|shm_open|ftruncate|mmap)\b.{0,40}(?:/dev/shm|failed).{0,60}"
    r"No space left on device|/dev/shm\S{0,200}.{0,60}No space left on device|"
    r"unable to (?:allocate|create) shared memory|shared memory segment.{0,40}failed|"
    # the errno's text first, then what was being made (a person's retelling of the WARN)
    r"No space left on device\b[^.;\n]{0,40}\bshared memory (?:segment|region|file)",
    "NCCL (or the C library under it) could not create, grow or attach a /dev/shm segment",
)
SHM_CRASH = sign(
    "nccl.shm_crash",
    r"\b(?:segfault\w{0,4}|Segmentation fault|SIGSEGV|SIGBUS|[Bb]us error)\b.{0,60}"
    r"\b(?:ncclShm\w{0,20}|shmOpen)\b"
    r"|\b(?:ncclShm\w{0,20}|shmOpen)\b.{0,120}"
    r"\b(?:segfault\w{0,4}|Segmentation fault|SIGSEGV|SIGBUS|[Bb]us error)\b",
    "a process died of SIGSEGV/SIGBUS in NCCL's shared-memory set-up (ncclShmOpen maps the "
    "segment; touching pages /dev/shm cannot back faults there)",
)
SHM_FRAME = sign(
    "nccl.shm_frame",
    r"\bin (?:nccl::)?(?:ncclShm\w{0,20}|shmOpen) ?\(",
    "a debugger's or a backtrace's frame in NCCL's shared-memory set-up",
)
FATAL_SIGNAL = sign(
    "nccl.fatal_signal",
    r"Segmentation fault|SIGSEGV|SIGBUS|\b[Bb]us error\b|signal 11\b|signal 7\b",
    "a process died of a segmentation fault or a bus error",
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
    r"both on CUDA device (?P<device>[0-9a-f]+))?"
    r"|Multiple ranks (?:are using|detected using) the same GPU"
    r"|Detected ranks (?P<pair_a>\d{1,7}) and (?P<pair_b>\d{1,7}) sharing GPU with bus "
    r"(?P<bus>[0-9a-f]{1,16})",
    "NCCL refused two ranks on one GPU (bus id in NCCL's hex form), and which ranks: "
    "'Duplicate GPU detected' to 2.29, 'Multiple ranks ... using the same GPU' in 2.30 (with "
    "2.30.3-2.30.4's INFO naming the pair)",
)
TWO_MACHINES = sign(
    "nccl.two_machines",
    r"\b(?:two|2|multiple|several) (?:nodes|machines|servers|hosts)\b",
    "the job is said to run on more than one machine",
)
SEVERAL_MACHINES = sign(
    "nccl.several_machines",
    # ("2 different H100 nodes", "two separate machines")
    r"\b(?:two|2|three|3|four|4|multiple|several) (?:different |separate |distinct |physical )?"
    r"(?:[A-Z][\w-]{1,10} )?(?:nodes|machines|servers|hosts)\b",
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

# -- NVLS (nccl.nvls) -----------------------------------------------------------------------

NVLS_FAILED = sign(
    "nccl.nvls_failed",
    r"Failed to (?:bind|create|map|allocate) NVLink SHARP|NVLS\b.{0,40}\b(?:failed|error)",
    "NCCL could not set up NVLink SHARP (NVSwitch multicast) memory",
)
CUDA_ERROR_QUOTED = sign(
    "nccl.cuda_error_quoted",
    r"CUDA error (?P<code>\d+) '(?P<name>[^']*)'",
    "a CUDA error number and name as NCCL quotes them (CUDA error 401 'name')",
    case=True,
)

# -- peer-to-peer (nccl.p2p) ----------------------------------------------------------------

PEER_ACCESS_FAILED = sign(
    "nccl.peer_access_failed",
    r"peer access is not supported|peer mapping resources exhausted|"
    r"cudaErrorPeerAccess\w+|CUDA_ERROR_PEER_ACCESS\w+|"
    r"(?:cudaIpcOpenMemHandle|cuIpcOpenMemHandle|cuMemImportFromShareableHandle)\S{0,200} failed|"
    r"P2P/IPC\S{0,200} (?:failed|error)",
    "CUDA or NCCL could not open peer access or a CUDA IPC handle between two GPUs",
)
P2P_PLATFORM = sign(
    "nccl.p2p_platform",
    # (not ACS said to be off: "setting the PCIe ACS off in the BIOS", "ACS is disabled")
    r"\bACS\b(?! (?:is |was |are |were )?(?:off|disabled)\b)(?<!disabled ACS)|\bIOMMU\b"
    r"|amd_iommu|intel_iommu|iommu=pt|"
    r"\b(?:virtual machine|hypervisor|KVM|VMware|Hyper-V|passthrough|vfio)\b",
    "PCIe ACS, an IOMMU or a hypervisor, which break GPU peer-to-peer",
)

# -- NCCL settings (nccl.env) ---------------------------------------------------------------

ALGO_FORCED = sign(
    "nccl.algo_forced",
    r"no algorithm/protocol available for function (?P<fn>\w+)(?: with datatype (?P<dt>\w+))?"
    r".{0,40}?(?P<var>NCCL_(?:ALGO|PROTO)) was set to (?P<val>[\w,;:^-]+)",
    "NCCL_ALGO/NCCL_PROTO left NCCL no algorithm for a collective, and its value",
)

# -- internal errors and crashes (nccl.internal) --------------------------------------------

INTERNAL_ERROR = sign(
    "nccl.internal_error",
    r"internal error - please report this issue to the NCCL developers|ncclInternalError",
    "NCCL's own words for ncclInternalError, wherever they are quoted",
)
HEAP_CORRUPTION = sign(
    "nccl.heap_corruption",
    r"free\(\): (?:corrupted|invalid)|double free or corruption|"
    r"malloc\(\): (?:corrupted|memory corruption|unaligned|invalid)|"
    r"corrupted size vs\.? prev_size|munmap_chunk\(\): invalid pointer|malloc_consolidate\(\)",
    "glibc aborted the process on heap corruption",
)
SEGFAULT = sign(
    "nccl.segfault",
    r"Segmentation fault|SIGSEGV|Signal: Segmentation|signal 11\b"
    # the kernel's own line for it (catalogue row kernel.segfault): "python[8621]: segfault at
    # 18 ip 00007f8a4e2d1d3a sp ... error 4 in libnccl.so.2[...]"
    r"|\]: segfault at [0-9a-f]{1,16} ip\b",
    "a process died of a segmentation fault",
)
NCCL_PROCESS = sign(
    "nccl.nccl_process",
    # (not NCCL's search for its plugins, "Could not find: libnccl-net.so": other libraries)
    r"libnccl(?!-(?:net|env|tuner|profiler)\b)[\w.-]{0,200}\.so|nccl-tests"
    r"|\b(?:all_reduce|all_gather|alltoall|broadcast|"
    r"reduce_scatter|sendrecv|reduce|gather|scatter|hypercube)_perf\b",
    "the process runs NCCL code: libnccl named, or an nccl-tests binary",
)
NCCL_LIBRARY = sign(
    "nccl.nccl_library",
    # (or gdb's frame in one of NCCL's own functions: "#0 0x... in ncclTopoSearchRecGpu (")
    r"libnccl(?!-(?:net|env|tuner|profiler)\b)[\w.-]{0,200}\.so|\bin nccl[A-Z]\w{2,60} \(",
    "libnccl named (a backtrace frame, a loaded library), or a frame in an NCCL function",
)
NCCL_TESTS = sign(
    "nccl.nccl_tests",
    r"nccl-tests|(?<!\w)\w+_perf\b",
    "nccl-tests or one of its *_perf binaries is named",
)
#: The GPU generations that need a minimum NCCL release, one sign each: a line naming
#: both ``B200`` and ``GB200`` shows each.
NEW_GPUS = {
    gpu: sign(
        f"nccl.gpu_{gpu.lower().replace(' ', '_')}",
        rf"\b{gpu.replace(' ', '[ -]?')}\b",
        f"the evidence names a {gpu} GPU",
    )
    for gpu in MIN_NCCL_FOR_GPU
}
VERSION_SAID = sign(
    "nccl.version_said",
    # (or in brackets after it: "the NCCL it ships (2.19.3)")
    r"\bnccl(?:[ -]?(?:version )?v?|\b[^.;\n()]{0,30}?\()(?P<version>2\.\d{1,2}\.\d{1,2})\b",
    "an NCCL release named in words or a package name (nccl 2.18.1, NCCL-v2.21.5, the NCCL "
    "it ships (2.19.3))",
)
#: The operations a known bug of some releases bites in (``KnownIssue.operation``), as the
#: evidence names them: nccl-tests' binary, torch's call, the all-to-all of MoE layers.
OPERATIONS = {
    "alltoall": sign(
        "nccl.op_alltoall",
        r"\balltoall(?:v|_perf)?\b|\ball_to_all(?:_single)?\b|\ball-to-all\b|\bA2A\b",
        "an all-to-all named (alltoall_perf, all_to_all_single, an MoE dispatch)",
    ),
}
#: NAME=value for each setting that turns a known bug's path off (``KnownIssue.off_with``),
#: in any line (read with the environment facts by ``facts.settings.env_values``).
OFF_SETTINGS = {
    name: setting("nccl", name)
    for name in sorted({i.off_with[0] for i in KNOWN_ISSUES if i.off_with is not None})
}
TIMED_OUT = sign(
    "nccl.timed_out",
    r"Watchdog caught|timed out",
    "the job's watchdog or a wait timed out",
)

# -- versions and builds (nccl.version_mismatch) --------------------------------------------

UNHANDLED_CUDA = sign(
    "nccl.unhandled_cuda",
    r"unhandled cuda error|ncclSuccess \(1 vs\.? 0\)|ncclUnhandledCudaError",
    "NCCL failed a CUDA call (ncclUnhandledCudaError)",
)
CUDA_FAILURE_DETAIL = sign(
    "nccl.cuda_failure_detail",
    r"Cuda failure|CUDA error \d+|cudaError\w+",
    "a CUDA error with its number or name: the detail behind an unhandled cuda error",
)
CUDA_RUNTIME_VERSION = sign(
    "nccl.cuda_runtime_version",
    r"\bCUDA (?:runtime )?version:?\s*(?P<code>\d{4,5})\b",
    "the CUDA runtime an application prints it uses, as CUDA's number (12020 is 12.2)",
)
CUDA_DRIVER_VERSION = sign(
    "nccl.cuda_driver_version",
    r"\bCUDA driver version:?\s*(?P<code>\d{4,5})\b",
    "the CUDA version the driver supports, as CUDA's number (12020 is 12.2)",
)
SECOND_BINDING = sign(
    "nccl.second_binding",
    r"pynccl|cupy[./]cuda[./]nccl|vLLM is using nccl",
    "NCCL called through a second binding (vLLM's pynccl, CuPy) with its own libnccl",
)
VLLM_NCCL = sign(
    "nccl.vllm_nccl",
    r"VLLM_NCCL_SO_PATH|vLLM is using nccl(?:==(?P<v>\d{1,3}\.\d{1,3}(?:\.\d{1,4})?)\b)?",
    "vLLM says which libnccl it loads (or is told to); its pynccl binding logs the release it "
    "loaded (v: vllm/distributed/device_communicators/pynccl.py logs ncclGetVersion)",
)
PRIVATE_NCCL = sign(
    "nccl.private_copy",
    r"(?:Loading|Found) nccl from (?:library |environment variable VLLM_NCCL_SO_PATH=)"
    r"(?P<path>[~/][^\s,]{0,300})",
    "vLLM's binding names the libnccl file it opens by its path: a copy of its own (0.4.x "
    "downloaded one to ~/.config/vllm/nccl; VLLM_NCCL_SO_PATH names another), where the "
    "loader's default is the bare libnccl.so.2 (vllm/utils find_nccl_library, pynccl.py)",
    case=True,
)
TORCH_NCCL = sign(
    "nccl.torch_nccl",
    r"(?:nccl\.version\(\)|NCCL version).{0,80}?\((?P<major>2), ?(?P<minor>\d{1,2}), "
    r"?(?P<patch>\d{1,2})\)",
    "the NCCL torch runs, as torch.cuda.nccl.version() prints it: (2, 10, 3)",
    case=True,
)
ENV_ECHO_RETOLD = sign(
    "nccl.env_echo_retold",
    # (NCCL's own echo of a variable it read: "NCCL_P2P_DISABLE set by environment to 1.", or
    # as a person retells it: "it prints that NCCL_IB_DISABLE was set by environment to 1")
    rf"{NAME_START}(?P<name>NCCL_[A-Z0-9_]{{2,40}}) (?:(?:was|is|got|gets|being) )?set by (?:the )?"
    # (the value ends at a word character: a sentence's comma or stop after it is not its own)
    r"environment to (?P<value>[A-Za-z0-9_.,:^+-]{0,59}?[A-Za-z0-9_^+-])[.,;:]?"
    r"(?=[\s\"'`)]|$)",
    "NCCL's echo of a variable it took from the environment, retold in a sentence",
    case=True,
)
SETTINGS_STANDING = sign(
    "nccl.settings_standing",
    # where a setting stays for every run ("put a few NCCL variables into /etc/environment so
    # every job gets them: NCCL_P2P_DISABLE=1, ..."), then the settings in that sentence
    r"(?:/etc/environment|/etc/profile(?:\.d)?\b|\.bashrc|\.bash_profile|\.profile"
    r"|/etc/nccl\.conf|\.nccl\.conf|\bbase image"
    r"|\bDockerfile|\b(?:launch|job|sbatch|slurm|start-?up|training) script"
    r"|\b(?:docker[- ])?compose(?: file|\.ya?ml)|\benvironment section|\bpod spec|\bmanifest"
    r"|\bevery (?:job|run|user|container)|\bglobal(?:ly)? (?:environment|env)\b)"
    rf"[^.\n]{{0,160}}?{NAME_START}(?P<name>NCCL_[A-Z0-9_]{{2,40}}) ?= ?"
    r"(?P<value>[A-Za-z0-9_.,:^+-]{1,40})",
    "NCCL settings a sentence says stay in place for every run of the job (in /etc/environment, "
    "a .bashrc, the image or the launch script): the job's own, not a try",
    case=True,
)
BANNER_QUOTED = sign(
    "nccl.banner_quoted",
    # (init.cc prints "NCCL version %s%s" with "+cuda%d.%d": the suffix is the banner's own)
    # (or the words between: 'a different "NCCL version" line: node B says 2.27.5+cuda12.9')
    r"\bNCCL version(?: |[\"'\u201d][^.;\n]{0,60}?)(?P<v>2\.\d{1,2}\.\d{1,2})\+cuda\d{2}\.\d",
    "NCCL's start-up banner (NCCL version 2.20.3+cuda12.4) quoted in a sentence: what a "
    "running process printed, retold",
    case=True,
)
INSTALLED_NCCL = sign(
    "nccl.installed_nccl",
    r"\b(?:libnccl2?|libnccl-dev|nvidia-nccl(?:-cu\d+)?|nccl)[ -]+(?:==\s*)?v?"
    r"(?P<version>2\.\d{1,2}\.\d{1,2})",
    "a system or pip NCCL package and its version (libnccl2 2.15.5-1, nvidia-nccl-cu12 2.18.1)",
)
NCCL_FILE = sign(
    "nccl.nccl_file",
    r"(?<!\S)(?P<path>\S*libnccl(?:\.so\.|2?[-_](?:devel[-_]|dev[-_]|static[-_])?)"
    r"(?P<v>2\.\d{1,2}\.\d{1,2})(?:-\d+\+cuda(?P<cuda>\d+(?:\.\d+)*))?\S*)",
    "an NCCL library or package file on disk, its version and the CUDA it was built for",
    case=True,
)
