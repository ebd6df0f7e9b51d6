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
    Cpp("torch.cuda.no_driver", FN,
        "Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and "
        "installed a driver from http://www.nvidia.com/Download/index.aspx",
        ("Found no NVIDIA driver on your system",), "cuda_driver", ("driver.container",),
        cuda="cudaErrorInsufficientDriver",
        note="cudaGetDeviceCount found no driver at all (libcuda absent: no driver, or a container "
        "started without the NVIDIA runtime)"),
    Cpp("torch.cuda.driver_too_old", FN,
        "The NVIDIA driver on your system is too old (found version {version:d}).",
        ("The NVIDIA driver on your system is too old (found version ",),
        cuda="cudaErrorInsufficientDriver"),
    Cpp("torch.cuda.driver_init_failed", FN,
        "CUDA driver initialization failed, you might not have a CUDA gpu.",
        ("CUDA driver initialization failed, you might not have a CUDA gpu.",),
        hints=("driver.version_mismatch", "driver.container"), cuda="cudaErrorInitializationError",
        note="cuInit failed: the kernel module and the user-space driver differ, or the device "
        "nodes are missing"),
    Cpp("torch.cuda.unknown_error_env", FN,
        "CUDA unknown error - this may be due to an incorrectly set up environment, e.g. changing "
        "env variable CUDA_VISIBLE_DEVICES after program start. Setting the available devices to be "
        "zero.", ("CUDA unknown error - this may be due to an incorrectly set up environment",),
        cuda="cudaErrorUnknown",
        note="cudaGetDeviceCount returned 999: torch's wording of CUDA's unknown error"),
    Cpp("torch.cuda.device_count_error", FN,
        "Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling "
        "NumCudaDevices() that might have already set an error? Error {code:d}: {message}",
        (("Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before "
          "calling NumCudaDevices() that might have already set an error? Error "),), "cuda_driver",
        note="the CUDA error follows (802: the fabric manager, 803/804: driver and runtime)", relays=True),
    Cpp("torch.cuda.init_warning", FN, "CUDA initialization: {message}", ("CUDA initialization: ",),
        "cuda_init", level="warning",
        note="torch.cuda.is_available() / device_count() caught the error and counts no GPU; the "
        "catalogued message inside it says more", relays=True),
    Cpp("torch.cuda.no_gpus", FN, "No CUDA GPUs are available", ("No CUDA GPUs are available",),
        "cuda_device", ("cuda.device_visibility", "driver.container")),
    Cpp("torch.cuda.negative_device", FN, "device id must be non-negative!",
        ("device id must be non-negative!",), "cuda_device", VISIBILITY,
        note="set_device(-1): a LOCAL_RANK of -1, the script run without its launcher"),
    Cpp("torch.cuda.negative_device_legacy", FN, "device id must be positive!",
        ("device id must be positive!",), "cuda_device", VISIBILITY,
        note="2.1-2.7 wording of torch.cuda.negative_device"),
    # --- PyTorch's own CUDA error reports
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
    Cpp("torch.cublas.not_initialized", BLAS,
        "CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `{call}`",
        ("CUBLAS_STATUS_NOT_INITIALIZED", "when calling `"), "gpu_oom", MEMORY,
        note="cublasCreate could not set up its handle: most often no GPU memory left for it"),
    Cpp("torch.cublas.alloc_failed", BLAS, "CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `{call}`",
        ("CUBLAS_STATUS_ALLOC_FAILED", "when calling `"), "gpu_oom", MEMORY),
    Cpp("torch.cublas.execution_failed", BLAS,
        "CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `{call}`",
        ("CUBLAS_STATUS_EXECUTION_FAILED", "when calling `"), "cuda_fault",
        note="the GEMM kernel failed to run: an earlier sticky fault, or a kernel not built for "
        "this GPU"),
    Cpp("torch.cublas.internal_error", BLAS, "CUDA error: CUBLAS_STATUS_INTERNAL_ERROR when calling `{call}`",
        ("CUBLAS_STATUS_INTERNAL_ERROR", "when calling `"), "cuda_error", ("gpu.oom",)),
    Cpp("torch.cudnn.not_initialized", CUDNN, "cuDNN error: CUDNN_STATUS_NOT_INITIALIZED",
        ("cuDNN error: ", "CUDNN_STATUS_NOT_INITIALIZED"), "cuda_error", ("gpu.oom", "driver.cuda_mismatch"),
        note="cudnnCreate failed: no GPU memory for the handle, or a cuDNN the driver cannot run"),
    Cpp("torch.cudnn.alloc_failed", CUDNN, "cuDNN error: CUDNN_STATUS_ALLOC_FAILED",
        ("cuDNN error: ", "CUDNN_STATUS_ALLOC_FAILED"), "gpu_oom", MEMORY),
    Cpp("torch.cudnn.execution_failed", CUDNN, "cuDNN error: CUDNN_STATUS_EXECUTION_FAILED",
        ("cuDNN error: ", "CUDNN_STATUS_EXECUTION_FAILED"), "cuda_fault"),
    Cpp("torch.cudnn.internal_error", CUDNN, "cuDNN error: CUDNN_STATUS_INTERNAL_ERROR",
        ("cuDNN error: ", "CUDNN_STATUS_INTERNAL_ERROR"), "cuda_error", ("gpu.oom",)),
)  # fmt: skip

ASSERTS: tuple[Assert, ...] = (
    Assert("torch.cuda.device_index_assert", "aten/src/ATen/cuda/CUDAContext.cpp",
           "device >= 0 && device < num_gpus", "cuda_device", ("cuda.device_visibility", "gpu.mig"),
           note="a device index at or past the GPUs CUDA counts: CUDA_VISIBLE_DEVICES or MIG hides "
           "it, or CUDA failed to start and counts none (the 'CUDA initialization' warning)"),
    Assert("torch.cuda.peer_index_assert", "aten/src/ATen/cuda/CUDAContext.cpp",
           "peer_device >= 0 && peer_device < num_gpus", "cuda_device", VISIBILITY),
    Assert("torch.cuda.stream_index_assert", "c10/cuda/CUDAStream.cpp",
           "device_index >= 0 && device_index < num_gpus", "cuda_device", VISIBILITY),
    # the allocator ran out of memory and, writing the OOM message, asks NVML which processes
    # hold the GPU (reportProcessMemoryInfo): the query failing ends the run with this assertion
    # in place of the OOM message (NVML cannot list processes in many containers)
    Assert("torch.cuda.oom_nvml_processes_assert", ALLOC, "NVML_SUCCESS == r", "gpu_oom", MEMORY,
           note="2.1+: an out-of-memory whose message could not be written: "
           "nvmlDeviceGetComputeRunningProcesses failed"),
    Assert("torch.cuda.oom_nvml_init_assert", ALLOC, "NVML_SUCCESS == DriverAPI::get()->nvmlInit_v2_()",
           "gpu_oom", MEMORY,
           note="2.1+: an out-of-memory whose message could not be written: NVML did not start"),
    Assert("torch.cuda.oom_nvml_handle_assert", ALLOC,
           "NVML_SUCCESS == DriverAPI::get()->nvmlDeviceGetHandleByPciBusId_v2_( pci_id, &nvml_device)",
           "gpu_oom", MEMORY,
           note="2.1+: an out-of-memory whose message could not be written: NVML has no handle for "
           "the GPU's bus id"),
)  # fmt: skip
