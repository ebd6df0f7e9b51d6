"""CUDA error codes: runtime ``cudaError_t`` and driver ``CUresult`` numbers, names, messages.

Sources, read on 2026-12-02: NVIDIA CUDA toolkit header ``driver_types.h``
(enum ``cudaError``, CUDA 12.x/13.x, with its notes on which errors leave the
process unusable), ``cuda.h`` (``CUresult`` names) and the strings of
``cudaGetErrorString``/``cuGetErrorString`` as CUDA prints them (taken from
re-implementations that copy them verbatim, e.g. the wasm32 driver stub
``cuda_driver_stub.c``). The runtime and driver share numbers for the codes
listed together. ``sticky`` marks errors after which every later CUDA call of
the process fails the same way (the process must be restarted). ``hint`` and
the catalogue ``diagnosis_id`` are our own.

Before CUDA 10.1 the runtime numbered ``cudaError_t`` on its own (0-79 and
127: ``cudaErrorUnknown`` was 30, ``cudaErrorLaunchFailure`` 4,
``cudaErrorNoDevice`` 38); CUDA 10.1 renumbered it to share the driver's
numbers. :data:`LEGACY_NAMES` keeps that older enum (from the
``driver_types.h`` of CUDA 7.5-10.0, as third-party bindings mirror it), so
an old log's ``error 30`` can be read: :func:`legacy_by_code`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class CudaError:
    """One CUDA error number.

    ``name`` is the runtime name (``cudaErrorIllegalAddress``) and
    ``driver_name`` the driver's (``CUDA_ERROR_ILLEGAL_ADDRESS``); either is
    ``None`` where that API has no such code. ``message`` is the text CUDA
    prints (``None`` where we could not verify it) and ``aliases`` other
    wordings seen in older releases.
    """

    code: int
    name: str | None
    driver_name: str | None
    message: str | None
    sticky: bool = False
    diagnosis_id: str | None = None
    hint: str = ""
    aliases: tuple[str, ...] = ()


def _driver_name(short: str | None) -> str | None:
    """``CUDA_ERROR_<short>`` (``CUDA_SUCCESS`` for ``SUCCESS``)."""
    if short is None:
        return None
    return "CUDA_SUCCESS" if short == "SUCCESS" else "CUDA_ERROR_" + short


def _c(
    code: int,
    name: str | None,
    driver: str | None,
    message: str | None,
    *,
    sticky: bool = False,
    diagnosis: str | None = None,
    hint: str = "",
    aliases: tuple[str, ...] = (),
) -> CudaError:
    """One row; ``driver`` is given without its ``CUDA_ERROR_`` prefix."""
    return CudaError(
        code=code,
        name=name,
        driver_name=_driver_name(driver),
        message=message,
        sticky=sticky,
        diagnosis_id=diagnosis,
        hint=hint,
        aliases=aliases,
    )


_ILL = "cuda.illegal_access"
_STICKY_HINT = "a kernel fault; rerun with CUDA_LAUNCH_BLOCKING=1 or compute-sanitizer to find it"

# fmt: off
ERRORS: tuple[CudaError, ...] = (
    _c(0, "cudaSuccess", "SUCCESS", "no error"),
    _c(1, "cudaErrorInvalidValue", "INVALID_VALUE", "invalid argument",
       hint="a bad argument to a CUDA call; inside NCCL often a failed IPC/cuMem import"),
    _c(2, "cudaErrorMemoryAllocation", "OUT_OF_MEMORY", "out of memory", diagnosis="gpu.oom",
       hint="check for other processes on the GPU before blaming the job"),
    _c(3, "cudaErrorInitializationError", "NOT_INITIALIZED", "initialization error",
       hint="CUDA could not start: driver not loaded, CUDA used in a forked child, or a broken "
       "driver install"),
    _c(4, "cudaErrorCudartUnloading", "DEINITIALIZED", "driver shutting down",
       hint="a CUDA call during process exit; usually a symptom of an earlier failure"),
    _c(5, "cudaErrorProfilerDisabled", "PROFILER_DISABLED",
       "profiler disabled while using external profiling tool"),
    _c(6, "cudaErrorProfilerNotInitialized", "PROFILER_NOT_INITIALIZED",
       "profiler not initialized: call cudaProfilerInitialize()"),
    _c(7, "cudaErrorProfilerAlreadyStarted", "PROFILER_ALREADY_STARTED",
       "profiler already started"),
    _c(8, "cudaErrorProfilerAlreadyStopped", "PROFILER_ALREADY_STOPPED",
       "profiler already stopped"),
    _c(9, "cudaErrorInvalidConfiguration", None, "invalid configuration argument",
       hint="a kernel launch asked for more threads or shared memory than the GPU has"),
    _c(12, "cudaErrorInvalidPitchValue", None, None),
    _c(13, "cudaErrorInvalidSymbol", None, "invalid device symbol"),
    _c(16, "cudaErrorInvalidHostPointer", None, None),
    _c(17, "cudaErrorInvalidDevicePointer", None, None),
    _c(18, "cudaErrorInvalidTexture", None, None),
    _c(19, "cudaErrorInvalidTextureBinding", None, None),
    _c(20, "cudaErrorInvalidChannelDescriptor", None, None),
    _c(21, "cudaErrorInvalidMemcpyDirection", None, None),
    _c(22, "cudaErrorAddressOfConstant", None, None),
    _c(23, "cudaErrorTextureFetchFailed", None, None),
    _c(24, "cudaErrorTextureNotBound", None, None),
    _c(25, "cudaErrorSynchronizationError", None, None),
    _c(26, "cudaErrorInvalidFilterSetting", None, None),
    _c(27, "cudaErrorInvalidNormSetting", None, None),
    _c(28, "cudaErrorMixedDeviceExecution", None, None),
    _c(31, "cudaErrorNotYetImplemented", None, None),
    _c(32, "cudaErrorMemoryValueTooLarge", None, None),
    _c(34, "cudaErrorStubLibrary", "STUB_LIBRARY", "CUDA driver is a stub library",
       diagnosis="driver.container",
       hint="the libcuda found is the toolkit's link stub: the real driver library is not on the "
       "library path (container without the driver injected)"),
    _c(35, "cudaErrorInsufficientDriver", None,
       "CUDA driver version is insufficient for CUDA runtime version",
       diagnosis="driver.cuda_mismatch",
       hint="the CUDA runtime (torch wheel, toolkit) needs a newer driver than installed"),
    _c(36, "cudaErrorCallRequiresNewerDriver", None,
       "API call is not supported in the installed CUDA driver", diagnosis="driver.cuda_mismatch",
       hint="an API newer than the driver was called (minor-version compatibility)"),
    _c(37, "cudaErrorInvalidSurface", None, None),
    _c(43, "cudaErrorDuplicateVariableName", None, None),
    _c(44, "cudaErrorDuplicateTextureName", None, None),
    _c(45, "cudaErrorDuplicateSurfaceName", None, None),
    _c(46, "cudaErrorDevicesUnavailable", "DEVICE_UNAVAILABLE",
       "CUDA-capable device(s) is/are busy or unavailable", diagnosis="gpu.compute_mode",
       hint="the GPU is in Exclusive Process/Prohibited compute mode and taken, or full",
       aliases=("all CUDA-capable devices are busy or unavailable",)),
    _c(49, "cudaErrorIncompatibleDriverContext", None, None),
    _c(52, "cudaErrorMissingConfiguration", None, None),
    _c(53, "cudaErrorPriorLaunchFailure", None, None),
    _c(65, "cudaErrorLaunchMaxDepthExceeded", None, None),
    _c(66, "cudaErrorLaunchFileScopedTex", None, None),
    _c(67, "cudaErrorLaunchFileScopedSurf", None, None),
    _c(68, "cudaErrorSyncDepthExceeded", None, None),
    _c(69, "cudaErrorLaunchPendingCountExceeded", None, None),
    _c(98, "cudaErrorInvalidDeviceFunction", None, "invalid device function",
       hint="the binary has no code for this GPU architecture"),
    _c(100, "cudaErrorNoDevice", "NO_DEVICE", "no CUDA-capable device is detected",
       diagnosis="cuda.device_visibility",
       hint="no GPU visible: CUDA_VISIBLE_DEVICES empty or wrong, GPU not passed to the "
       "container, or the driver does not see it"),
    _c(101, "cudaErrorInvalidDevice", "INVALID_DEVICE", "invalid device ordinal",
       diagnosis="cuda.device_visibility",
       hint="a rank asked for a GPU index beyond those visible (LOCAL_RANK vs "
       "CUDA_VISIBLE_DEVICES, too many processes per node)"),
    _c(102, "cudaErrorDeviceNotLicensed", "DEVICE_NOT_LICENSED",
       "device doesn't have valid Grid license"),
    _c(103, "cudaErrorSoftwareValidityNotEstablished", None, None),
    _c(127, "cudaErrorStartupFailure", None, None,
       hint="an internal startup failure of the CUDA runtime"),
    _c(200, "cudaErrorInvalidKernelImage", "INVALID_IMAGE", "device kernel image is invalid"),
    _c(201, "cudaErrorDeviceUninitialized", "INVALID_CONTEXT", "invalid device context"),
    _c(202, None, "CONTEXT_ALREADY_CURRENT", "context already current"),
    _c(205, "cudaErrorMapBufferObjectFailed", "MAP_FAILED", "mapping of buffer object failed"),
    _c(206, "cudaErrorUnmapBufferObjectFailed", "UNMAP_FAILED",
       "unmapping of buffer object failed"),
    _c(207, "cudaErrorArrayIsMapped", "ARRAY_IS_MAPPED", "array is mapped"),
    _c(208, "cudaErrorAlreadyMapped", "ALREADY_MAPPED", "resource already mapped"),
    _c(209, "cudaErrorNoKernelImageForDevice", "NO_BINARY_FOR_GPU",
       "no kernel image is available for execution on the device",
       hint="the build has no SASS/PTX for this GPU's compute capability"),
    _c(210, "cudaErrorAlreadyAcquired", "ALREADY_ACQUIRED", "resource already acquired"),
    _c(211, "cudaErrorNotMapped", "NOT_MAPPED", "resource not mapped"),
    _c(212, "cudaErrorNotMappedAsArray", "NOT_MAPPED_AS_ARRAY", "resource not mapped as array"),
    _c(213, "cudaErrorNotMappedAsPointer", "NOT_MAPPED_AS_POINTER",
       "resource not mapped as pointer"),
    _c(214, "cudaErrorECCUncorrectable", "ECC_UNCORRECTABLE", "uncorrectable ECC error encountered",
       diagnosis="gpu.ecc", hint="an uncorrectable memory error (Xid 48/94/95 in the kernel log)"),
    _c(215, "cudaErrorUnsupportedLimit", "UNSUPPORTED_LIMIT",
       "limit is not supported on this architecture"),
    _c(216, "cudaErrorDeviceAlreadyInUse", "CONTEXT_ALREADY_IN_USE",
       "exclusive-thread device already in use by a different thread",
       diagnosis="gpu.compute_mode"),
    _c(217, "cudaErrorPeerAccessUnsupported", "PEER_ACCESS_UNSUPPORTED",
       "peer access is not supported between these two devices", diagnosis="nccl.p2p",
       hint="GPU peer-to-peer is not possible on this path (PCIe ACS/IOMMU, VM)"),
    _c(218, "cudaErrorInvalidPtx", "INVALID_PTX", "a PTX JIT compilation failed"),
    _c(219, "cudaErrorInvalidGraphicsContext", "INVALID_GRAPHICS_CONTEXT",
       "invalid OpenGL or DirectX context"),
    _c(220, "cudaErrorNvlinkUncorrectable", "NVLINK_UNCORRECTABLE",
       "uncorrectable NVLink error detected during the execution", diagnosis="gpu.nvlink"),
    _c(221, "cudaErrorJitCompilerNotFound", "JIT_COMPILER_NOT_FOUND",
       "PTX JIT compiler library not found"),
    _c(222, "cudaErrorUnsupportedPtxVersion", "UNSUPPORTED_PTX_VERSION",
       "the provided PTX was compiled with an unsupported toolchain.",
       diagnosis="driver.cuda_mismatch", hint="PTX from a newer toolkit than the driver supports"),
    _c(223, "cudaErrorJitCompilationDisabled", "JIT_COMPILATION_DISABLED",
       "PTX JIT compilation was disabled"),
    _c(224, "cudaErrorUnsupportedExecAffinity", "UNSUPPORTED_EXEC_AFFINITY",
       "the provided execution affinity is not supported"),
    _c(225, "cudaErrorUnsupportedDevSideSync", None, None),
    _c(226, "cudaErrorContained", None, None, sticky=True, diagnosis="gpu.ecc",
       hint="a device error contained by the GPU (peer NVLink access or a hardware error, see "
       "Xid 94); the process must restart"),
    _c(300, "cudaErrorInvalidSource", "INVALID_SOURCE", "device kernel image is invalid"),
    _c(301, "cudaErrorFileNotFound", "FILE_NOT_FOUND", "file not found"),
    _c(302, "cudaErrorSharedObjectSymbolNotFound", "SHARED_OBJECT_SYMBOL_NOT_FOUND",
       "shared object symbol not found"),
    _c(303, "cudaErrorSharedObjectInitFailed", "SHARED_OBJECT_INIT_FAILED",
       "shared object initialization failed"),
    _c(304, "cudaErrorOperatingSystem", "OPERATING_SYSTEM",
       "OS call failed or operation not supported on this OS",
       hint="an OS call under CUDA failed (IPC, memlock, /dev/shm, file descriptors)"),
    _c(400, "cudaErrorInvalidResourceHandle", "INVALID_HANDLE", "invalid resource handle"),
    _c(401, "cudaErrorIllegalState", "ILLEGAL_STATE",
       "the operation cannot be performed in the present state",
       hint="in NCCL's transport/nvls.cc this is an NVLink SHARP setup failure"),
    _c(402, "cudaErrorLossyQuery", None, None),
    _c(500, "cudaErrorSymbolNotFound", "NOT_FOUND", "named symbol not found"),
    _c(600, "cudaErrorNotReady", "NOT_READY", "device not ready"),
    _c(700, "cudaErrorIllegalAddress", "ILLEGAL_ADDRESS",
       "an illegal memory access was encountered", sticky=True, diagnosis=_ILL, hint=_STICKY_HINT),
    _c(701, "cudaErrorLaunchOutOfResources", "LAUNCH_OUT_OF_RESOURCES",
       "too many resources requested for launch"),
    _c(702, "cudaErrorLaunchTimeout", "LAUNCH_TIMEOUT", "the launch timed out and was terminated",
       sticky=True, diagnosis=_ILL,
       hint="a kernel ran past the watchdog (display GPU) and was killed"),
    _c(703, "cudaErrorLaunchIncompatibleTexturing", "LAUNCH_INCOMPATIBLE_TEXTURING",
       "launch uses incompatible texturing mode"),
    _c(704, "cudaErrorPeerAccessAlreadyEnabled", "PEER_ACCESS_ALREADY_ENABLED",
       "peer access is already enabled"),
    _c(705, "cudaErrorPeerAccessNotEnabled", "PEER_ACCESS_NOT_ENABLED",
       "peer access has not been enabled"),
    _c(708, "cudaErrorSetOnActiveProcess", "PRIMARY_CONTEXT_ACTIVE",
       "cannot set while device is active in this process"),
    _c(709, "cudaErrorContextIsDestroyed", "CONTEXT_IS_DESTROYED", "context is destroyed"),
    _c(710, "cudaErrorAssert", "ASSERT", "device-side assert triggered", sticky=True,
       diagnosis="cuda.device_assert",
       hint="a kernel assertion failed (often an index out of range, e.g. labels >= classes)"),
    _c(711, "cudaErrorTooManyPeers", "TOO_MANY_PEERS", "peer mapping resources exhausted"),
    _c(712, "cudaErrorHostMemoryAlreadyRegistered", "HOST_MEMORY_ALREADY_REGISTERED",
       "part or all of the requested memory range is already mapped"),
    _c(713, "cudaErrorHostMemoryNotRegistered", "HOST_MEMORY_NOT_REGISTERED",
       "pointer does not correspond to a registered memory region"),
    _c(714, "cudaErrorHardwareStackError", "HARDWARE_STACK_ERROR", "hardware stack error",
       sticky=True, diagnosis=_ILL, hint=_STICKY_HINT),
    _c(715, "cudaErrorIllegalInstruction", "ILLEGAL_INSTRUCTION",
       "an illegal instruction was encountered", sticky=True, diagnosis=_ILL, hint=_STICKY_HINT),
    _c(716, "cudaErrorMisalignedAddress", "MISALIGNED_ADDRESS", "misaligned address", sticky=True,
       diagnosis=_ILL, hint=_STICKY_HINT),
    _c(717, "cudaErrorInvalidAddressSpace", "INVALID_ADDRESS_SPACE",
       "operation not supported on global/shared address space", sticky=True, diagnosis=_ILL,
       hint=_STICKY_HINT),
    _c(718, "cudaErrorInvalidPc", "INVALID_PC", "invalid program counter", sticky=True,
       diagnosis=_ILL, hint=_STICKY_HINT),
    _c(719, "cudaErrorLaunchFailure", "LAUNCH_FAILED", "unspecified launch failure", sticky=True,
       diagnosis=_ILL,
       hint="a kernel faulted; with Xid 13/31/43 in the kernel log it is the application, with "
       "Xid 48/79/95 the GPU"),
    _c(720, "cudaErrorCooperativeLaunchTooLarge", "COOPERATIVE_LAUNCH_TOO_LARGE",
       "too many blocks in cooperative launch"),
    _c(721, "cudaErrorTensorMemoryLeak", "TENSOR_MEMORY_LEAK", "tensor memory not completely freed",
       sticky=True, diagnosis=_ILL),
    _c(800, "cudaErrorNotPermitted", "NOT_PERMITTED", "operation not permitted"),
    _c(801, "cudaErrorNotSupported", "NOT_SUPPORTED", "operation not supported",
       hint="the feature is missing on this GPU/driver/platform (e.g. multicast without fabric "
       "manager, IPC in some VMs)"),
    _c(802, "cudaErrorSystemNotReady", "SYSTEM_NOT_READY", "system not yet initialized",
       diagnosis="gpu.fabric_manager",
       hint="on NVSwitch systems (HGX/DGX): nvidia-fabricmanager is not running or does not "
       "match the driver"),
    _c(803, "cudaErrorSystemDriverMismatch", "SYSTEM_DRIVER_MISMATCH",
       "system has unsupported display driver / cuda driver combination",
       diagnosis="driver.version_mismatch",
       hint="the user-mode libcuda does not match the kernel module (a libcuda baked into the "
       "image, or a driver upgrade without reboot)"),
    _c(804, "cudaErrorCompatNotSupportedOnDevice", "COMPAT_NOT_SUPPORTED_ON_DEVICE",
       "forward compatibility was attempted on non supported HW", diagnosis="driver.cuda_mismatch",
       hint="a cuda-compat (forward compatibility) libcuda on a GPU that does not support it; "
       "common in containers: upgrade the host driver instead"),
    _c(805, "cudaErrorMpsConnectionFailed", "MPS_CONNECTION_FAILED",
       "MPS client failed to connect to the MPS control daemon or the MPS server",
       hint="CUDA_MPS_PIPE_DIRECTORY points at a dead or missing MPS daemon"),
    _c(806, "cudaErrorMpsRpcFailure", "MPS_RPC_FAILURE",
       "the remote procedural call between the MPS server and the MPS client failed"),
    _c(807, "cudaErrorMpsServerNotReady", "MPS_SERVER_NOT_READY",
       "MPS server is not ready to accept new MPS client requests"),
    _c(808, "cudaErrorMpsMaxClientsReached", "MPS_MAX_CLIENTS_REACHED",
       "the hardware resources required to create MPS client have been exhausted"),
    _c(809, "cudaErrorMpsMaxConnectionsReached", "MPS_MAX_CONNECTIONS_REACHED",
       "the hardware resources required to support device connections have been exhausted"),
    _c(810, "cudaErrorMpsClientTerminated", "MPS_CLIENT_TERMINATED",
       "the MPS client has been terminated by the server", sticky=True),
    _c(811, "cudaErrorCdpNotSupported", None, None),
    _c(812, "cudaErrorCdpVersionMismatch", None, None),
    _c(900, "cudaErrorStreamCaptureUnsupported", "STREAM_CAPTURE_UNSUPPORTED",
       "operation not permitted when stream is capturing"),
    _c(901, "cudaErrorStreamCaptureInvalidated", "STREAM_CAPTURE_INVALIDATED",
       "operation failed due to a previous error during capture"),
    _c(902, "cudaErrorStreamCaptureMerge", "STREAM_CAPTURE_MERGE",
       "operation would result in a merge of separate capture sequences"),
    _c(903, "cudaErrorStreamCaptureUnmatched", "STREAM_CAPTURE_UNMATCHED",
       "capture was not ended in the same stream as it began"),
    _c(904, "cudaErrorStreamCaptureUnjoined", "STREAM_CAPTURE_UNJOINED",
       "capturing stream has unjoined work"),
    _c(905, "cudaErrorStreamCaptureIsolation", "STREAM_CAPTURE_ISOLATION",
       "dependency created on uncaptured work in another stream"),
    _c(906, "cudaErrorStreamCaptureImplicit", "STREAM_CAPTURE_IMPLICIT",
       "operation would make the legacy stream depend on a capturing blocking stream"),
    _c(907, "cudaErrorCapturedEvent", "CAPTURED_EVENT",
       "operation not permitted on an event last recorded in a capturing stream"),
    _c(908, "cudaErrorStreamCaptureWrongThread", "STREAM_CAPTURE_WRONG_THREAD",
       "attempt to terminate a thread-local capture sequence from another thread"),
    _c(909, "cudaErrorTimeout", "TIMEOUT", "wait operation timed out"),
    _c(910, "cudaErrorGraphExecUpdateFailure", "GRAPH_EXEC_UPDATE_FAILURE",
       "the graph update was not performed because it included changes which violated "
       "constraints specific to instantiated graph update"),
    _c(911, "cudaErrorExternalDevice", "EXTERNAL_DEVICE",
       "an async error has occured in external entity outside of CUDA", sticky=True),
    _c(912, "cudaErrorInvalidClusterSize", "INVALID_CLUSTER_SIZE",
       "a kernel launch error has occurred due to cluster misconfiguration"),
    _c(913, "cudaErrorFunctionNotLoaded", None, None),
    _c(914, "cudaErrorInvalidResourceType", None, None),
    _c(915, "cudaErrorInvalidResourceConfiguration", None, None),
    _c(917, "cudaErrorStreamDetached", None, None),
    _c(999, "cudaErrorUnknown", "UNKNOWN", "unknown error", diagnosis="cuda.unknown_error",
       hint="check in order: nvidia_uvm loaded and /dev/nvidia-uvm present, the kernel log for "
       "Xids, fabric manager on NVSwitch systems, driver/library versions"),
)
# fmt: on

_BY_CODE = {e.code: e for e in ERRORS}
_BY_NAME: dict[str, CudaError] = {}
for _e in ERRORS:
    for _name in (_e.name, _e.driver_name):
        if _name:
            _BY_NAME[_name.lower()] = _e


#: Statuses CUDA returns that are no failure: not ready yet, already enabled or registered,
#: the runtime unloading at exit (after the job's own end or an earlier error).
NOT_FAILURES = frozenset({0, 4, 600, 704, 712})
#: Words a GPU runtime's message holds and a common phrase does not ("invalid device
#: ordinal", "peer access is not supported between these two devices").
_GPU_WORDS = re.compile(
    r"device|CUDA|kernel|PTX|ECC|NVLink|MPS|peer|launch|captur|graph|stream|driver|Grid"
    r"|memory|illegal|texturing|cooperative|cluster"
)
#: CUDA's own texts that hold no such word and are no common phrase all the same
#: (cudaErrorSystemNotReady: the fabric is not up; cudaErrorCompatNotSupportedOnDevice).
_OWN_TEXTS = frozenset(
    {"system not yet initialized", "forward compatibility was attempted on non supported HW"}
)
#: Shorter texts are common phrases ("out of memory", "invalid argument", "unknown error").
_SELF_EVIDENT_CHARS = 22


def self_evident(err: CudaError) -> bool:
    """Whether this error's text names it wherever it is printed, whatever wraps it.

    CUDA's texts come out behind many prefixes (``CUDART error:``, ``CUDA runtime error in
    f:``, ``failed to initialize CUDA:``, a reporter's sentence). A text long enough and
    holding a GPU word (``peer access is not supported between these two devices``) is
    CUDA's own; a short or common one (``invalid argument``) needs a CUDA prefix beside it.
    A status that is no failure never counts.
    """
    text = err.message or ""
    if err.code in NOT_FAILURES or len(text) < _SELF_EVIDENT_CHARS:
        return False
    return text in _OWN_TEXTS or bool(_GPU_WORDS.search(text))


#: Ids of a kernel's or the GPU's fault: the context is lost (sticky errors are of this kind).
_FAULT_IDS = frozenset({"cuda.illegal_access", "cuda.device_assert", "gpu.ecc", "gpu.nvlink"})
#: Ids of a process that cannot have the GPU it asked for.
_DEVICE_IDS = frozenset({"cuda.device_visibility", "gpu.compute_mode"})


def catalogue_id(err: CudaError) -> str | None:
    """The signature catalogue's id of this error's message (``cuda.error.illegal_address``).

    ``None`` for an error the catalogue holds no message of (no runtime name or
    no verified message).
    """
    if not err.message or not err.name or err.code == 0:
        return None
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", err.name.removeprefix("cudaError"))
    return "cuda.error." + words.lower()


#: The symptom classes :func:`symptom_class` answers with, besides ``gpu_oom``.
CUDA_CLASSES = frozenset(
    {"cuda_unknown", "cuda_error", "cuda_fault", "cuda_assert", "cuda_device", "cuda_driver"}
)


def symptom_class(err: CudaError) -> str:
    """The differential's symptom class of a CUDA error (nccl_doctor.differential.priors).

    ``gpu_oom`` and ``cuda_unknown`` for 2 and 999; ``cuda_assert`` for a
    kernel's device-side assertion (710); ``cuda_fault`` for a
    kernel's or the GPU's fault (sticky errors, ECC, NVLink); ``cuda_device``
    for a GPU the process cannot have (no device, bad ordinal, exclusive mode);
    ``cuda_driver`` for a driver or runtime that cannot start (initialisation,
    stub library, version mismatches, the fabric not ready); else ``cuda_error``.
    """
    diagnosis = err.diagnosis_id or ""
    if err.code == 2:
        return "gpu_oom"
    if err.code == 999:
        return "cuda_unknown"
    if err.code == 710:  # cudaErrorAssert: the kernel's own assertion, not the GPU's fault
        return "cuda_assert"
    if err.sticky or diagnosis in _FAULT_IDS:
        return "cuda_fault"
    if diagnosis in _DEVICE_IDS:
        return "cuda_device"
    if err.code == 3 or diagnosis.startswith("driver.") or diagnosis == "gpu.fabric_manager":
        return "cuda_driver"
    return "cuda_error"


def by_code(code: int | str) -> CudaError | None:
    """The error with this number (int or decimal text), else ``None``."""
    if isinstance(code, bool):
        return None
    if isinstance(code, str):
        text = code.strip()
        if not (text.isascii() and text.isdigit()) or len(text) > 6:
            return None
        code = int(text)
    return _BY_CODE.get(code) if isinstance(code, int) else None


def by_name(name: str) -> CudaError | None:
    """The error with this runtime or driver name (any case), else ``None``."""
    return _BY_NAME.get(name.strip().lower()) if isinstance(name, str) else None


def by_message(text: str) -> CudaError | None:
    """The error whose message (or an older wording) is, or appears in, ``text``.

    An exact match (ignoring case and surrounding quotes/space) wins; otherwise
    the longest message contained in ``text``, so a whole log line such as
    ``Cuda failure 'out of memory'`` works. Messages shorter than 12 characters
    (``no error``, ``file not found``...) only match exactly.
    """
    if not isinstance(text, str):
        return None
    low = text.strip().strip("'\"").strip().lower()
    if not low:
        return None
    best: tuple[int, CudaError] | None = None
    for err in ERRORS:
        for phrase in (err.message, *err.aliases):
            if not phrase:
                continue
            p = phrase.lower()
            if p == low and err.code != 0:
                return err
            if len(p) >= 12 and err.code != 0 and p in low and (best is None or len(p) > best[0]):
                best = (len(p), err)
    return best[1] if best else None


# fmt: off
#: The runtime's numbering before CUDA 10.1: number -> the name it had then.
LEGACY_NAMES: dict[int, str] = dict(enumerate((
    "cudaSuccess", "cudaErrorMissingConfiguration", "cudaErrorMemoryAllocation",
    "cudaErrorInitializationError", "cudaErrorLaunchFailure", "cudaErrorPriorLaunchFailure",
    "cudaErrorLaunchTimeout", "cudaErrorLaunchOutOfResources", "cudaErrorInvalidDeviceFunction",
    "cudaErrorInvalidConfiguration", "cudaErrorInvalidDevice", "cudaErrorInvalidValue",
    "cudaErrorInvalidPitchValue", "cudaErrorInvalidSymbol", "cudaErrorMapBufferObjectFailed",
    "cudaErrorUnmapBufferObjectFailed", "cudaErrorInvalidHostPointer",
    "cudaErrorInvalidDevicePointer", "cudaErrorInvalidTexture", "cudaErrorInvalidTextureBinding",
    "cudaErrorInvalidChannelDescriptor", "cudaErrorInvalidMemcpyDirection",
    "cudaErrorAddressOfConstant", "cudaErrorTextureFetchFailed", "cudaErrorTextureNotBound",
    "cudaErrorSynchronizationError", "cudaErrorInvalidFilterSetting",
    "cudaErrorInvalidNormSetting", "cudaErrorMixedDeviceExecution", "cudaErrorCudartUnloading",
    "cudaErrorUnknown", "cudaErrorNotYetImplemented", "cudaErrorMemoryValueTooLarge",
    "cudaErrorInvalidResourceHandle", "cudaErrorNotReady", "cudaErrorInsufficientDriver",
    "cudaErrorSetOnActiveProcess", "cudaErrorInvalidSurface", "cudaErrorNoDevice",
    "cudaErrorECCUncorrectable", "cudaErrorSharedObjectSymbolNotFound",
    "cudaErrorSharedObjectInitFailed", "cudaErrorUnsupportedLimit",
    "cudaErrorDuplicateVariableName", "cudaErrorDuplicateTextureName",
    "cudaErrorDuplicateSurfaceName", "cudaErrorDevicesUnavailable", "cudaErrorInvalidKernelImage",
    "cudaErrorNoKernelImageForDevice", "cudaErrorIncompatibleDriverContext",
    "cudaErrorPeerAccessAlreadyEnabled", "cudaErrorPeerAccessNotEnabled",
))) | {
    54: "cudaErrorDeviceAlreadyInUse", 55: "cudaErrorProfilerDisabled",
    56: "cudaErrorProfilerNotInitialized", 57: "cudaErrorProfilerAlreadyStarted",
    58: "cudaErrorProfilerAlreadyStopped", 59: "cudaErrorAssert", 60: "cudaErrorTooManyPeers",
    61: "cudaErrorHostMemoryAlreadyRegistered", 62: "cudaErrorHostMemoryNotRegistered",
    63: "cudaErrorOperatingSystem", 64: "cudaErrorPeerAccessUnsupported",
    65: "cudaErrorLaunchMaxDepthExceeded", 66: "cudaErrorLaunchFileScopedTex",
    67: "cudaErrorLaunchFileScopedSurf", 68: "cudaErrorSyncDepthExceeded",
    69: "cudaErrorLaunchPendingCountExceeded", 70: "cudaErrorNotPermitted",
    71: "cudaErrorNotSupported", 72: "cudaErrorHardwareStackError",
    73: "cudaErrorIllegalInstruction", 74: "cudaErrorMisalignedAddress",
    75: "cudaErrorInvalidAddressSpace", 76: "cudaErrorInvalidPc", 77: "cudaErrorIllegalAddress",
    78: "cudaErrorInvalidPtx", 79: "cudaErrorInvalidGraphicsContext",
    127: "cudaErrorStartupFailure",
}
# fmt: on


def legacy_by_code(code: int) -> tuple[str, CudaError | None] | None:
    """What runtime error ``code`` was before CUDA 10.1, where that differs from today.

    The old name, and today's row of that name (its number and message now),
    ``None`` for a row the renumbering dropped; ``None`` when ``code`` meant
    the same then as now, or nothing.
    """
    name = LEGACY_NAMES.get(code)
    if name is None:
        return None
    now = _BY_CODE.get(code)
    if now is not None and now.name == name:
        return None
    return name, by_name(name)
