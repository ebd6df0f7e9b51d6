"""Facts of a live read of the node (``nccl-doctor check`` / ``capture``).

They come from a bundle's ``host.json`` (evidence kind ``live-host``), which
holds what no tool's text output says: whether NVML answered at all, kernel
modules and /dev nodes, the fabric manager, /dev/shm, resource limits,
container and WSL, library versions, who owns the GPU processes. GPU state
itself is in the bundle's nvidia-smi XML and yields the facts of
:mod:`nccl_doctor.facts.gpu`.
"""

from __future__ import annotations

from dataclasses import dataclass

from nccl_doctor.extras import install_hint
from nccl_doctor.facts.base import Fact

#: Why a capture has no GPU state, by NVML outcome, and what to do about it.
NVML_OUTCOMES: dict[str, tuple[str, str]] = {
    "library_not_found": (
        "no NVIDIA driver on this host (the NVML library was not found)",
        (
            "Run the check on a node with NVIDIA GPUs and their driver (in a container: "
            "start it with the GPUs, e.g. `docker run --gpus all`)"
        ),
    ),
    "not_installed": (
        f"the NVML bindings (nvidia-ml-py) are not installed ({install_hint('live')})",
        f"Install the NVML bindings ({install_hint('live')}) and run the check again",
    ),
    "driver_not_loaded": (
        "the NVIDIA driver is installed but not loaded",
        "Load the driver (`sudo modprobe nvidia`; `dmesg` says why it failed) and check again",
    ),
    "no_devices": (
        "the NVIDIA driver sees no GPU",
        (
            "Check that the GPUs are visible (`lspci | grep -i nvidia`, the container's "
            "device mounts) and check again"
        ),
    ),
    "timeout": (
        "the NVML read was abandoned",
        (
            "NVML hung: look for a stuck GPU or driver in `dmesg` (nvidia-smi may hang too), "
            "then check again with a longer --timeout"
        ),
    ),
    "crashed": (
        "the NVML reader failed",
        "Run `nvidia-smi` to see whether NVML works here, then check again",
    ),
    "version_mismatch": (
        "the NVIDIA driver's kernel module and libraries differ",
        (
            "Reboot (or reload the nvidia modules) so the kernel module matches the libraries, "
            "then check again"
        ),
    ),
    "init_failed": (
        "NVML could not start",
        "Run `nvidia-smi` to see NVML's own error, then check again",
    ),
    "no_permission": (
        "NVML refused access",
        "Run the check as a user allowed to open /dev/nvidia* (or as root)",
    ),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class NvmlOutcome(Fact):
    """How the NVML read ended (cites ``"nvml"`` in host.json).

    ``outcome``: ``ok``, ``library_not_found`` (no NVIDIA driver installed),
    ``driver_not_loaded``, ``version_mismatch`` (driver/library),
    ``no_permission``, ``init_failed``, ``no_devices``, ``not_installed``
    (the nvidia-ml-py bindings are missing), ``timeout`` (NVML did not answer
    within ``timeout_s``), ``crashed`` (the reader died), or ``gpu_lost`` for
    one GPU (``gpu_index``/``bus_id`` name it). ``message`` is NVML's text.
    """

    outcome: str
    message: str = ""
    timeout_s: float | None = None
    elapsed_s: float | None = None
    gpu_count: int | None = None
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    gpu_index: int | None = None
    bus_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CaptureHost(Fact):
    """The host a capture was read on (``"hostname"`` of host.json).

    The other files of the same capture (its nvidia-smi XML, kernel log,
    NVLink counters) describe this host. ``host`` of the fact itself stays
    the line's attribution, so rules that count hosts are not changed by it.
    """

    hostname: str


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelModule(Fact):
    """Whether a kernel module of the NVIDIA stack is loaded (``/proc/modules``)."""

    name: str
    loaded: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceNode(Fact):
    """Whether a /dev node of the driver exists (``/dev/nvidiactl``, ``/dev/nvidia-uvm``...).

    ``listed`` marks a node found by listing ``/dev/nvidia*`` rather than
    checked by name.
    """

    path: str
    present: bool
    listed: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class FabricManagerState(Fact):
    """The NVSwitch fabric manager: ``nvswitch`` when the host has NVSwitches.

    ``systemd_state`` is ``systemctl is-active nvidia-fabricmanager`` as
    printed (``active``, ``inactive``, ``failed``; ``None`` without
    systemctl), ``process_running`` whether an ``nv-fabricmanager`` runs.
    """

    nvswitch: bool
    systemd_state: str | None = None
    process_running: bool | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelLogAccess(Fact):
    """Whether the kernel log could be read: ``status`` ``ok``/``denied``/``missing``/``timeout``.

    ``lines`` is how many NVIDIA driver lines were kept (they are in the
    bundle's ``kernel-log.txt``, read as ``xid`` evidence).
    """

    status: str
    source: str | None = None
    message: str = ""
    lines: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class NetInterface(Fact):
    """A Linux network device: ``operstate`` (``up``, ``down``...) and ``mtu`` from sysfs."""

    name: str
    operstate: str | None = None
    mtu: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ShmInfo(Fact):
    """``/dev/shm``: size, used and free space in MiB (``statvfs``)."""

    path: str
    size_mib: int | None = None
    used_mib: int | None = None
    free_mib: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class HostLimits(Fact):
    """Resource limits of the checking process: locked memory in bytes, open files.

    ``None`` with the matching ``*_unlimited`` flag set means unlimited.
    """

    memlock_soft_bytes: int | None = None
    memlock_hard_bytes: int | None = None
    memlock_unlimited: bool = False
    nofile_soft: int | None = None
    nofile_hard: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class HostRuntime(Fact):
    """Where the check ran: in a container (``container_kind`` docker, kubernetes...), WSL."""

    container: bool
    container_kind: str | None = None
    wsl: bool | None = None
    kernel: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class LibraryVersions(Fact):
    """Versions found without importing torch.

    ``torch_version`` from the package metadata, ``nccl_version`` from the
    ``libnccl`` file next to torch (``nccl_library``) or the nvidia-nccl
    wheel, ``kernel_module_version`` from ``/proc/driver/nvidia/version``,
    ``driver_version``/``cuda_driver_version`` from NVML (user space).
    """

    torch_version: str | None = None
    nccl_version: str | None = None
    nccl_library: str | None = None
    python_version: str | None = None
    kernel_module_version: str | None = None
    driver_version: str | None = None
    cuda_driver_version: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuProcessOwner(Fact):
    """Who runs a GPU process: ``comm``, command line (redacted) and uid from /proc."""

    pid: int
    gpu_index: int | None = None
    gpu_bus_id: str | None = None
    comm: str | None = None
    cmdline: str | None = None
    uid: int | None = None
