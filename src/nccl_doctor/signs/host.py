"""Signs read by the host rules (``rules/host``): limits of the machine that ran out."""

from __future__ import annotations

from nccl_doctor.facts.signs import sign

OOM_KILLER = sign(
    "host.oom_killer",
    r"Out of memory: Kill(?:ed)? process|invoked oom-killer|oom-kill:"
    r"|Memory cgroup out of memory|oom_reaper"
    # Slurm: the step's memory cgroup counted OOM kills (slurmstepd), or srun names the task
    # it ended (catalogue rows slurm.stepd.oom_kill_events*, slurm.srun.task_oom)
    r"|Detected \d{1,9} oom[-_]kill event|srun: error: \S{1,200}: tasks? \S{1,200}: Out Of Memory",
    "the kernel's OOM killer killed a process: host RAM (or the cgroup limit) ran out",
)
#: Ray's memory monitor (raylet node_manager.cc; catalogue rows ray.memory_monitor.*): it kills
#: a worker once the node's host memory passes its threshold (0.95), before the kernel would.
RAY_MEMORY_MONITOR = sign(
    "host.ray_memory_monitor",
    r"(?:Task was|worker\(s\) were) killed due to the node running low on memory"
    r"|\d{1,6} Workers \(tasks / actors\) killed due to memory pressure \(OOM\)",
    "Ray's memory monitor killed a worker: the node's host memory passed its kill threshold",
    case=True,
)
#: The DataLoader's own words for its workers' shared memory (torch's, never NCCL's).
_LOADER_SHM = (
    r"insufficient shared memory \(shm\)|Unexpected bus error encountered in worker"
    r"|unable to write to file </torch_"
)
SHM_EXHAUSTED = sign(
    "host.shm_exhausted",
    rf"unable to open shared memory object|{_LOADER_SHM}|/dev/shm\b.{{0,400}}No space left",
    "shared memory (/dev/shm) or the shared-memory file handles of DataLoader workers ran out",
)
LOADER_SHM = sign(
    "host.loader_shm",
    _LOADER_SHM,
    "the DataLoader says its workers' shared memory ran out (a line that names NCCL too, "
    "'from the DataLoader, not NCCL', is still torch's)",
)
#: Python's multiprocessing could not receive the descriptors a DataLoader worker passed
#: (multiprocessing/reduction.py recvfds: "received 0 items of ancdata"): the open-file limit,
#: whatever else the line names (a sentence that blames NCCL is still Python's message)
ANCDATA = sign(
    "host.ancdata",
    r"received 0 items of ancdata",
    "multiprocessing could not receive a worker's file descriptors (the open-file limit)",
)
FD_LIMIT = sign(
    "host.fd_limit",
    r"Too many open files|\[Errno 24\]|\bEMFILE\b|received 0 items of ancdata",
    "the open-file limit (ulimit -n) was reached",
)
#: the store server (TCPStoreLibUvBackend.cpp, LibUVStoreDaemon::onConnect) could not accept a
#: rank's connection: with EMFILE, the process hosting the store hit its open-file limit and
#: the ranks it turned away never join the rendezvous
STORE_ACCEPT_FAILED = sign(
    "host.store_accept_failed",
    r"Failed to accept client due to",
    "the c10d store's server failing to accept a rank's connection",
)
DISK_FULL = sign(
    "host.disk_full",
    r"No space left on device|\[Errno 28\]|\bENOSPC\b|Disk quota exceeded|\[Errno 122\]"
    # torch.save's zip writer got a short write (caffe2/serialize/inline_container.cc), and a
    # node health check's free-space test failed (NHC's check_fs_free)
    r"|PytorchStreamWriter failed writing file[^\n]{0,200}: file write failed"
    r"|\bcheck_fs_free:[^\n]{0,200}\bhas only \d{1,3}% free",
    "a disk (or a quota) is full: the system's error, torch.save's failed write, a health check",
)
NO_HOST_MEMORY = sign(
    "host.no_host_memory",
    r"Cannot allocate memory|\[Errno 12\]|\bENOMEM\b|DefaultCPUAllocator: (?:can't|not enough)"
    r"|std::bad_alloc|\bMemoryError\b",
    "host memory could not be allocated (ENOMEM, the CPU allocator, bad_alloc)",
)
PID_LIMIT = sign(
    "host.pid_limit",
    r"can't start new thread|pthread_create failed|fork: (?:retry: )?Resource temporarily "
    r"unavailable|BlockingIOError: \[Errno 11\]",
    "no new thread or process could be started (ulimit -u, the pids cgroup)",
)
NCCL_OWN = sign(
    "host.nccl_own",
    r"NCCL|shm/nccl-|ibv_",
    "a line of NCCL or of a verbs call: its memory errors are NCCL's or the NIC's, not host RAM",
    case=True,
)
SIGKILL = sign(
    "host.sigkill",
    r"exit ?code\s*(?:[:=]\s*)?-9\b|return code\s*=\s*-9\b|Signal 9 \(SIGKILL\)|\bSIGKILL\b",
    "a process killed with SIGKILL (-9), what the kernel's OOM killer sends",
)
MEMORY_WORDS = sign(
    "host.memory_words",
    r"\b(?:out of (?:host |system |cpu )?memory|RAM|host memory|system memory|OOM)\b|内存",
    "words of host memory running out (RAM, OOM, out of memory)",
)
CUDA_WORD = sign(
    "host.cuda_word",
    r"CUDA",
    "a line about CUDA (its memory words are about the GPU, not host RAM)",
    case=True,
)
CUDA_OOM = sign(
    "host.cuda_oom",
    r"CUDA out of memory|OutOfMemoryError",
    "PyTorch's GPU out-of-memory error (a GPU, not host RAM, ran out)",
)
CHECKPOINT_SAVE = sign(
    "host.checkpoint_save",
    r"(?:storing|saving|save|writing)\b.{0,40}checkpoint|checkpoint.{0,40}\b(?:sav|stor|writ)",
    "a job said to be saving a checkpoint (slow or full storage can stall that rank)",
)
SHM_SIZE_SHOWN = sign(
    "host.shm_size_shown",
    # df -h's row for /dev/shm ("shm  64M  0  64M  0% /dev/shm"), Ray's start-up warning
    # ("/dev/shm has only 67108864 bytes available"), docker inspect's HostConfig.ShmSize
    r"^\s*(?:shm|tmpfs|none|overlay)\s+(?P<size>\d{1,7}(?:\.\d{1,3})?)(?P<unit>[KMGT])i?B?\s+"
    r"\S{1,12}\s+\S{1,12}\s+\d{1,3}%\s+/dev/shm\s*$"
    r"|/dev/shm has only (?P<bytes>\d{1,15}) bytes available"
    r"|\"ShmSize\":\s*(?P<shm_bytes>\d{1,15})",
    "a tool printed the size of /dev/shm (df, Ray's warning, docker inspect)",
)
SHM_SIZE_SAID = sign(
    "host.shm_size_said",
    # the reporter gives the size in words ("df -h /dev/shm shows 64M", "the container's shm
    # is only 64MB", "共享内存只有64M"), in M or G: a kernel's shared memory is counted in KB
    # per block or per SM, never /dev/shm's
    r"(?:/dev/shm|\bshm\b(?![-_]size)"
    r"|\bshared[ -]memory\b(?! (?:per|of (?:the|each|a) (?:block|SM)))|共享内存)"
    # (not a size denied: "/dev/shm is not 64M, it is 32G" reads no size, the comma ending
    # the window before 32G)
    r"[^.;,\n\d]{0,30}?(?<![A-Za-z0-9_.])(?<!not )(?<!n't )(?P<size>\d{1,5}(?:\.\d{1,2})?) ?"
    r"(?P<unit>[MG])"
    r"(?:i?B|i)?(?![\w/])"
    # it was started without sizing it: Docker's default, 64 MB ("I did not pass --shm-size
    # or --ipc=host", "without --shm-size")
    r"|\b(?:without|no|not|didn'?t|forgot)\b[^.;\n]{0,30}?(?P<unsized>--shm-size|--ipc[= ]host)",
    "the reporter gives the size of /dev/shm, or says the container was started without "
    "--shm-size or --ipc=host (Docker's 64 MB)",
)
