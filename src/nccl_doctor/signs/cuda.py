"""Signs read by the CUDA rules (``rules/cuda``)."""

from __future__ import annotations

import re

from nccl_doctor.facts.signs import sign
from nccl_doctor.knowledge import cuda_errors

# -- kernel faults ----------------------------------------------------------------

DEVICE_ASSERT = sign(
    "cuda.device_assert",
    r"device-side assert(?:ion)? triggered|cudaErrorAssert\b|CUDA_ERROR_ASSERT\b",
    "a kernel's device-side assertion failed (CUDA error 710, by message or name)",
)
KERNEL_LINE = sign(
    "cuda.kernel_line",
    r"\.cuh?:(?P<line>\d+)",
    "the line of the CUDA source file (``Loss.cu:92``) an assertion line names",
    case=True,
)

_ILLEGAL = tuple(e for e in cuda_errors.ERRORS if e.diagnosis_id == "cuda.illegal_access")
ILLEGAL_ACCESS = sign(
    "cuda.illegal_access",
    "|".join(
        [
            *(
                re.escape(e.message)
                for e in _ILLEGAL
                if e.message and e.message != "misaligned address"
            ),
            r"\bmisaligned address\b",
            *(rf"\b{re.escape(n)}\b" for e in _ILLEGAL for n in (e.name, e.driver_name) if n),
        ]
    ),
    "a kernel fault that leaves the context unusable (illegal address or instruction, "
    "misaligned address...), by the message or name the CUDA error catalogue gives",
)
WATCHDOG = sign(
    "cuda.watchdog",
    r"watchdog",
    "the line came from ProcessGroupNCCL's watchdog (it reports an earlier kernel's fault)",
)

# -- which GPU a rank sees ----------------------------------------------------------

INVALID_ORDINAL = sign(
    "cuda.invalid_ordinal",
    r"invalid device ordinal|CUDA_ERROR_INVALID_DEVICE\b|cudaErrorInvalidDevice\b"
    r"|on CUDA device \d+ but torch\.cuda\.device_count\(\) is \d+",
    "a rank asked for a GPU index beyond those it can see (CUDA error 101)",
)
NO_GPU = sign(
    "cuda.no_gpu",
    r"no CUDA GPUs are available|no CUDA-capable device is detected|CUDA_ERROR_NO_DEVICE\b"
    r"|cudaErrorNoDevice\b|ProcessGroupNCCL is only supported with GPUs",
    "a process sees no GPU at all (CUDA error 100, or ProcessGroupNCCL found none)",
)
GPU_PER_TASK = sign(
    "cuda.gpu_per_task",
    r"--gpus-per-task|--gpu-bind|--gres-flags=enforce-binding",
    "Slurm binds one GPU to each task (every task then sees its GPU as cuda:0)",
)
VISIBLE_DEVICES = sign(
    "cuda.visible_devices",
    r"CUDA_VISIBLE_DEVICES\s*[=:]\s*['\"]?(?P<devices>[\w,-]*)",
    "the CUDA_VISIBLE_DEVICES value a line prints (empty when set to nothing)",
)

# -- error 999 ----------------------------------------------------------------------

UNKNOWN_ERROR = sign(
    "cuda.unknown_error",
    r"(?:Cuda failure|CUDA error|cudaError\w{0,60})\W+(?:999\W+)?'?unknown error|cudaErrorUnknown"
    r"|CUDA_ERROR_UNKNOWN|Cuda failure 999",
    "CUDA error 999 (cudaErrorUnknown) as NCCL, torch or the CUDA names print it",
)
UVM_NAMED = sign(
    "cuda.uvm_named",
    r"nvidia[-_]uvm",
    "the evidence names the unified-memory module or its device (nvidia_uvm, /dev/nvidia-uvm)",
)


# -- torch's symmetric memory ----------------------------------------------------------

SYMMETRIC_MEMORY = sign(
    "cuda.symmetric_memory",
    r"distributed/_symmetric_memory/__init__\.py|\b_SymmetricMemory\.rendezvous\b",
    "torch's symmetric memory at work (its Python module's frame, or its rendezvous named):"
    " it maps the peers' buffers through the driver's virtual-memory handles and, where the"
    " GPUs allow, an NVSwitch multicast object",
    case=True,
)

#: A CUDA error by its number in a person's sentence ("every CUDA call returns error 803",
#: "NCCL init fails with cuda error 999", "所有 CUDA 程序都报 802"): the number is one row of
#: CUDA's enum (knowledge.cuda_errors), which names its class and its likely cause.
CUDA_NUMBER_SAID = sign(
    "cuda.number_said",
    r"\bcuda\b[^.;\n]{0,40}?\b(?:errors?|codes?|returns?|returned|reports?|(?:fails?|failed|dies)"
    r" with|gives?|gave)\b\s{0,2}(?:(?:error|code)\s{0,2})?[:=#]?\s{0,2}(?P<code>\d{1,3})\b"
    r"(?!\.?\d|\s?(?:GB|MB|GiB|MiB|%|ms|s\b|sec|min|GPUs?|nodes?|ranks?))"
    r"|cuda[^\u3002\uff1b\n]{0,20}\u62a5\s{0,2}(?P<code2>\d{3})\b",
    "a CUDA error named by its number in a sentence: the row of CUDA's enum it is",
)
