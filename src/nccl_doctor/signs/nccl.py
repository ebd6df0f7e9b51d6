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
