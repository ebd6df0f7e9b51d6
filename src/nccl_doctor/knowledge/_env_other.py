"""Table of the PyTorch, launcher, Gloo and CUDA variables that matter to distributed jobs.

Sources, read on 2026-12-02: PyTorch ``torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp``
and ``ProcessGroupNCCL.cpp`` (``getCvarInt``/``getCvarBool`` calls and their
defaults, the ``TORCH_NCCL_*`` lists whose second entry is the deprecated
``NCCL_*`` alias), the flight-recorder ``DebugInfoWriter`` (``TORCH_FR_*``),
``torch/distributed/rendezvous.py`` (``USE_LIBUV``), the PyTorch docs pages
"PYTORCH ProcessGroupNCCL Environment Variables", "CUDA Environment Variables"
and "Debugging Environment Variables", and NVIDIA's "CUDA C++ Programming
Guide", section "CUDA Environment Variables". Defaults moved between PyTorch
releases; where they did, ``default`` is ``None`` and the note says so. The
notes are our own summaries.
"""

from __future__ import annotations

from nccl_doctor.knowledge._env_types import Kind, NcclVar, Origin, Syntax


def _t(
    name: str,
    kind: Kind,
    default: str | None = None,
    note: str = "",
    *,
    values: tuple[str, ...] = (),
    syntax: Syntax = "plain",
    case_sensitive: bool = False,
    since: str | None = None,
    replacement: str | None = None,
    harmful: tuple[str, ...] = (),
    harmful_when: str | None = None,
    debug: bool = False,
    origin: Origin = "torch",
) -> NcclVar:
    """One row; a variable with a replacement is a deprecated alias."""
    return NcclVar(
        name=name,
        kind=kind,
        default=default,
        values=values,
        syntax=syntax,
        case_sensitive=case_sensitive,
        since_version=since,
        deprecated=replacement is not None,
        replacement=replacement,
        harmful_values=harmful,
        harmful_when=harmful_when,
        debug_only=debug,
        origin=origin,
        note=note,
    )


_AEH = ("0", "1", "2", "3")
_AEH_NOTE = "watchdog on NCCL errors: 0 off, 1 abort+exit, 2 abort only, 3 exit without abort"

# fmt: off
TORCH_VARS: tuple[NcclVar, ...] = (
    # --- ProcessGroupNCCL -----------------------------------------------------------------
    _t("TORCH_NCCL_ASYNC_ERROR_HANDLING", "enum", "3", _AEH_NOTE + " (3 in recent releases)",
       values=_AEH, harmful=("0",),
       harmful_when="0 leaves failed or timed-out collectives hanging instead of exiting"),
    _t("NCCL_ASYNC_ERROR_HANDLING", "enum", None, "old name of TORCH_NCCL_ASYNC_ERROR_HANDLING",
       values=_AEH, replacement="TORCH_NCCL_ASYNC_ERROR_HANDLING", harmful=("0",),
       harmful_when="0 leaves failed or timed-out collectives hanging instead of exiting"),
    _t("TORCH_NCCL_BLOCKING_WAIT", "bool", "0", "wait() blocks and raises on timeout"),
    _t("NCCL_BLOCKING_WAIT", "bool", None, "old name of TORCH_NCCL_BLOCKING_WAIT",
       replacement="TORCH_NCCL_BLOCKING_WAIT"),
    _t("TORCH_NCCL_DESYNC_DEBUG", "bool", "0", "report which rank is behind on a timeout",
       debug=True),
    _t("NCCL_DESYNC_DEBUG", "bool", None, "old name of TORCH_NCCL_DESYNC_DEBUG",
       replacement="TORCH_NCCL_DESYNC_DEBUG", debug=True),
    _t("TORCH_NCCL_ENABLE_TIMING", "bool", "0", "record start events and time collectives"),
    _t("NCCL_ENABLE_TIMING", "bool", None, "old name of TORCH_NCCL_ENABLE_TIMING",
       replacement="TORCH_NCCL_ENABLE_TIMING"),
    _t("TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK", "bool", "0",
       "register allocator segments with NCCL communicators"),
    _t("NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK", "bool", None,
       "old name of TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK",
       replacement="TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK"),
    _t("TORCH_NCCL_ENABLE_MONITORING", "bool", "1",
       "heartbeat monitor kills the process when the watchdog is stuck", harmful=("0",),
       harmful_when="a stuck watchdog then hangs the job instead of ending it"),
    _t("TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", "int", None,
       "watchdog heartbeat timeout (600 s, 480 s in newer releases)"),
    _t("TORCH_NCCL_DUMP_ON_TIMEOUT", "bool", None,
       "dump flight-recorder traces on timeout or error (needs a trace buffer)"),
    _t("TORCH_NCCL_TRACE_BUFFER_SIZE", "int", None, "flight-recorder entries (0 disables)",
       replacement="TORCH_FR_BUFFER_SIZE"),
    _t("TORCH_NCCL_TRACE_CPP_STACK", "bool", "0", "C++ stacks in flight-recorder entries"),
    _t("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "string", None, "flight-recorder dump path prefix",
       replacement="TORCH_FR_DUMP_TEMP_FILE"),
    _t("TORCH_NCCL_DEBUG_INFO_PIPE_FILE", "string", None,
       "named pipe prefix; a write triggers a dump", replacement="TORCH_FR_DEBUG_INFO_PIPE_FILE"),
    _t("TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC", "int", None,
       "extra wait for the dump before exiting (2 s to 60 s across releases)"),
    _t("TORCH_NCCL_COORD_CHECK_MILSEC", "int", "1000", "how often the monitor checks peers"),
    _t("TORCH_NCCL_EXTRA_DUMP_ON_EXEC", "bool", "0", "extra dump when a PG dies on an error"),
    _t("TORCH_NCCL_PROPAGATE_ERROR", "bool", "0", "tell all ranks through the store on error"),
    _t("TORCH_NCCL_RETHROW_CUDA_ERRORS", "bool", "1", "watchdog rethrows CUDA errors"),
    _t("TORCH_NCCL_LOG_CPP_STACK_ON_UNCLEAN_SHUTDOWN", "bool", "1",
       "log a C++ stack on unclean shutdown"),
    _t("TORCH_NCCL_CUDA_EVENT_CACHE", "bool", None, "reuse CUDA events in the watchdog"),
    _t("TORCH_NCCL_AVOID_RECORD_STREAMS", "bool", None, "stash tensors instead of recordStream"),
    _t("TORCH_NCCL_HIGH_PRIORITY", "bool", "0", "high-priority NCCL streams"),
    _t("TORCH_NCCL_NAN_CHECK", "bool", "0", "fail when a collective input has NaN", debug=True),
    _t("TORCH_NCCL_USE_COMM_NONBLOCKING", "bool", None,
       "non-blocking communicators (turned on with device_id before 2.7.1)",
       harmful_when="1 on torch 2.7.0 with NCCL 2.26 can hang (pytorch#153960)"),
    _t("TORCH_NCCL_NONBLOCKING_TIMEOUT", "int", "1800", "timeout of non-blocking init (s)"),
    _t("TORCH_NCCL_BCAST_UNIQUEID", "bool", None, "broadcast the NCCL unique id via store"),
    _t("TORCH_NCCL_RANKS_PER_ROOT", "int", None, "ranks per root in scalable init"),
    _t("TORCH_NCCL_SHOW_EAGER_INIT_P2P_SERIALIZATION_WARNING", "bool", "0",
       "warn when eager init serialises P2P"),
    _t("TORCH_NCCL_ABORT_IN_DESTROY_PG", "bool", "0", "abort comms in destroy_process_group"),
    _t("ENABLE_NCCL_HEALTH_CHECK", "bool", "0", "health-check communicators at init (old)"),
    # --- flight recorder ---------------------------------------------------------------------
    _t("TORCH_FR_BUFFER_SIZE", "int", None, "flight-recorder entries (0 disables)"),
    _t("TORCH_FR_DUMP_TEMP_FILE", "string", None,
       "dump path prefix (default ~/.cache/torch/comm_lib_trace_rank_)"),
    _t("TORCH_FR_DEBUG_INFO_PIPE_FILE", "string", None, "named pipe prefix for manual dumps"),
    _t("TORCH_FR_DUMP_DYNAMIC_FILE_NAME", "bool", "0", "unique dump file names"),
    _t("TORCH_INCLUDE_STACK_TRACE", "bool", None, "stack traces in flight-recorder dumps"),
    _t("TORCH_INCLUDE_ONLY_ACTIVE", "bool", None, "only active entries in dumps"),
    # --- c10d, logging, store ----------------------------------------------------------------
    _t("TORCH_DISTRIBUTED_DEBUG", "enum", "OFF", "c10d debug level; DETAIL adds checks",
       values=("OFF", "INFO", "DETAIL"), harmful=("DETAIL",),
       harmful_when="DETAIL synchronises and checks every collective: slow"),
    _t("TORCH_CPP_LOG_LEVEL", "enum", None, "c10 log level",
       values=("INFO", "WARNING", "ERROR", "FATAL", "0", "1", "2", "3")),
    _t("TORCH_SHOW_CPP_STACKTRACES", "bool", "0", "C++ stack traces on errors"),
    _t("TORCH_DIST_INIT_BARRIER", "bool", "0", "barrier at the end of init_process_group"),
    _t("USE_LIBUV", "bool", "1", "libuv TCPStore backend (default since 2.4)"),
    # --- launcher (torchrun / torchelastic set these) ----------------------------------------
    _t("MASTER_ADDR", "string", None, "rendezvous/store host for env://", origin="launcher",
       harmful_when="localhost/127.0.0.1 on a multi-node job: other nodes cannot connect"),
    _t("MASTER_PORT", "int", None, "rendezvous/store port for env://", origin="launcher"),
    _t("WORLD_SIZE", "int", None, "number of ranks", origin="launcher"),
    _t("RANK", "int", None, "global rank", origin="launcher"),
    _t("LOCAL_RANK", "int", None, "rank within the node", origin="launcher"),
    _t("LOCAL_WORLD_SIZE", "int", None, "ranks on this node", origin="launcher"),
    _t("GROUP_RANK", "int", None, "node (agent) rank", origin="launcher"),
    _t("ROLE_RANK", "int", None, "rank within the role", origin="launcher"),
    _t("ROLE_WORLD_SIZE", "int", None, "ranks in the role", origin="launcher"),
    _t("TORCHELASTIC_RUN_ID", "string", None, "rendezvous run id", origin="launcher"),
    _t("TORCHELASTIC_RESTART_COUNT", "int", None, "restarts so far", origin="launcher"),
    _t("TORCHELASTIC_MAX_RESTARTS", "int", None, "restarts allowed", origin="launcher"),
    _t("TORCHELASTIC_ERROR_FILE", "string", None, "where @record writes a rank's error",
       origin="launcher"),
    # --- Gloo ----------------------------------------------------------------------------------
    _t("GLOO_SOCKET_IFNAME", "list", None, "interfaces for Gloo (comma list, no ^/=)",
       origin="gloo", harmful=("lo",),
       harmful_when="loopback only works on one host: multi-node Gloo fails"),
    _t("GLOO_SOCKET_FAMILY", "enum", None, "address family for Gloo",
       values=("AF_INET", "AF_INET6"), case_sensitive=True, origin="gloo"),
    # --- PyTorch CUDA -----------------------------------------------------------------------
    _t("PYTORCH_CUDA_ALLOC_CONF", "string", None,
       "caching allocator options (expandable_segments:True, max_split_size_mb:N)"),
    _t("PYTORCH_ALLOC_CONF", "string", None, "allocator options (newer name)"),
    _t("PYTORCH_NO_CUDA_MEMORY_CACHING", "bool", "0", "no allocator caching (slow)", debug=True,
       harmful=("1",), harmful_when="every allocation goes to cudaMalloc: slow"),
    _t("PYTORCH_NVML_BASED_CUDA_CHECK", "bool", "0", "is_available() via NVML, fork-safe"),
    # --- CUDA driver/runtime ------------------------------------------------------------------
    _t("CUDA_VISIBLE_DEVICES", "list", None, "GPUs (indices, GPU-/MIG- UUIDs) the process sees",
       origin="cuda", harmful=("", "-1", "NoDevFiles", "none", "void"),
       harmful_when="no GPU visible: torch reports no CUDA GPUs"),
    _t("CUDA_DEVICE_ORDER", "enum", "FASTEST_FIRST", "device numbering",
       values=("FASTEST_FIRST", "PCI_BUS_ID"), case_sensitive=True, origin="cuda"),
    _t("CUDA_LAUNCH_BLOCKING", "bool", "0", "synchronous kernel launches", origin="cuda",
       debug=True, harmful=("1",),
       harmful_when="slows everything; NCCL before 2.17 could hang with it"),
    _t("CUDA_MODULE_LOADING", "enum", None, "lazy or eager module loading (LAZY since 12.2)",
       values=("LAZY", "EAGER"), case_sensitive=True, origin="cuda"),
    _t("CUDA_DEVICE_MAX_CONNECTIONS", "int", "8", "hardware work queues per device (1-32)",
       origin="cuda"),
    _t("CUDA_DEVICE_MAX_COPY_CONNECTIONS", "int", None, "copy-engine queues", origin="cuda"),
    _t("CUDA_CACHE_DISABLE", "bool", "0", "no JIT cache", origin="cuda"),
    _t("CUDA_CACHE_PATH", "string", None, "JIT cache folder", origin="cuda"),
    _t("CUDA_CACHE_MAXSIZE", "size", None, "JIT cache size", origin="cuda"),
    _t("CUDA_FORCE_PTX_JIT", "bool", "0", "ignore SASS, JIT-compile PTX", origin="cuda",
       debug=True),
    _t("CUDA_DISABLE_PTX_JIT", "bool", "0", "never JIT-compile PTX", origin="cuda"),
    _t("CUDA_AUTO_BOOST", "bool", None, "GPU boost clocks (deprecated)", origin="cuda"),
    _t("CUDA_ENABLE_COREDUMP_ON_EXCEPTION", "bool", "0", "GPU core dump on an exception",
       origin="cuda"),
    _t("CUDA_COREDUMP_FILE", "string", None, "GPU core dump path", origin="cuda"),
    _t("CUDA_MPS_PIPE_DIRECTORY", "string", None, "MPS control pipe folder", origin="cuda"),
    _t("CUDA_MPS_LOG_DIRECTORY", "string", None, "MPS log folder", origin="cuda"),
    _t("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "int", None, "share of SMs for an MPS client",
       origin="cuda"),
)
# fmt: on

NOT_READ: dict[str, str] = {
    "NCCL_TIMEOUT": "read by neither NCCL nor PyTorch: set the collective timeout with "
    "init_process_group(timeout=...)",
    "NCCL_ABORT_ON_ERROR": "read by neither NCCL nor PyTorch: error handling is "
    "TORCH_NCCL_ASYNC_ERROR_HANDLING",
}
"""Names people often set that nothing in the stack reads, and what to use instead."""
