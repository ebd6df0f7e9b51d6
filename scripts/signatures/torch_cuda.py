"""PyTorch's CUDA messages (c10/cuda, aten/src/ATen/cuda): the table ``mine_torch.py`` reads.

A message that reports one CUDA runtime error names it (``cuda=``): its class and
catalogue id are that error's (:mod:`nccl_doctor.knowledge.cuda_errors`), so the
device-count check's "CUDA unknown error" is CUDA's 999 however torch words it. The
cuBLAS and cuDNN statuses say what the library could not do: a handle it could not
create or memory it could not allocate is the GPU's memory (most often taken by
another process or rank), a failed execution a kernel's fault.
"""

from __future__ import annotations

from torch_entries import Assert, Cpp

FN = "c10/cuda/CUDAFunctions.cpp"
ALLOC = "c10/cuda/CUDACachingAllocator.cpp"
BLAS = "aten/src/ATen/cuda/CUDABlas.cpp"
CUDNN = "aten/src/ATen/cudnn/Handle.cpp"
VISIBILITY = ("cuda.device_visibility",)
#: cuBLAS/cuDNN could not get memory for a handle or workspace: the GPU is full
MEMORY = ("gpu.oom", "gpu.contention")

CPP: tuple[Cpp, ...] = (
    # --- the device count: CUDA cannot start
    Cpp("torch.cuda.error", "c10/cuda/CUDAException.cpp", "CUDA error: {message}", ("CUDA error: ",),
        "cuda_error", note="the text is cudaGetErrorString's: the cuda.error.* signatures and "
        "knowledge.cuda_errors name the code", relays=True),
    Cpp("torch.cuda.async_report", "c10/cuda/CUDAException.cpp",
        "CUDA kernel errors might be asynchronously reported at some other API call, so the "
        "stacktrace below might be incorrect.", ("CUDA kernel errors might be",), "info",
        level="info"),
    # --- the caching allocator
    Cpp("torch.cuda.oom", ALLOC,
        "CUDA out of memory. Tried to allocate {size:m}. GPU {device:d} has a total capacity of "
        "{total:m} of which {free:m} is free.", ("CUDA out of memory. Tried to allocate ", " has a total capac",
                                             " is free. "), "gpu_oom", ("gpu.oom", "gpu.contention"),
        note="2.1 spells 'capacty'; the same line goes on with the processes holding memory "
        "(torch.cuda.oom_process)"),
    Cpp("torch.cuda.oom_legacy", ALLOC,
        "CUDA out of memory. Tried to allocate {size:m} (GPU {device:d}; {total:m} total capacity; "
        "{allocated:m} already allocated; {free:m} free; {reserved:m} reserved in total by PyTorch)",
        ("CUDA out of memory. Tried to allocate ", " total capacity; ", " already allocated; ",
         " reserved in total by PyTorch)"), "gpu_oom", ("gpu.oom",),
        pattern=r"Tried to allocate (?P<size>[\d.]{1,12} [KMGT]?i?B) \(GPU (?P<device>\d{1,3}); "
        r"(?P<total>[\d.]{1,12} [KMGT]?i?B) total capacity",
        fields=("size", "device", "total"),
        example="RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 7.79 GiB "
        "total capacity; 6.21 GiB already allocated; 5.44 MiB free; 6.33 GiB reserved in total by "
        "PyTorch)",
        note="the format before torch 2.1; matched from 'Tried to allocate' so a line wrapped "
        "inside 'out of memory' still reads"),
    Cpp("torch.cuda.oom_process", ALLOC,
        "Process {pid:d} has {memory:m} memory in use.", (" memory in use. ",), "gpu_oom",
        ("gpu.contention", "gpu.oom"),
        note="one per process on the GPU, inside the OOM message: a pid that is not the job's is "
        "contention"),
    Cpp("torch.cuda.oom_this_process", ALLOC,
        "Including non-PyTorch memory, this process has {memory:m} memory in use.",
        ("Including non-PyTorch memory, this process",), "gpu_oom", ("gpu.oom",),
        ),
    # --- cuBLAS and cuDNN handles and calls (TORCH_CUDABLAS_CHECK, CUDNN_CHECK)
)  # fmt: skip

ASSERTS: tuple[Assert, ...] = ()
