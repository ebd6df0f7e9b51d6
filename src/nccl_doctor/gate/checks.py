"""The checks of a node verdict: which findings each owns and what it must have read.

Each check is a row: an id, a name, a category (Health Validation's
``gpu``/``nvlink``/``infiniband``/``xid``/``node`` plus ``driver``,
``network``, ``software``), the diagnosis ids it owns, and the evidence it
needs before it can say PASS. Its status comes from the diagnosis, never
from a read of its own: the worst of its findings, else PASS when what it
needs was read, else UNKNOWN with why (or INFO where the answer is "nothing
to check here", as RDMA on a node without RDMA ports).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nccl_doctor.facts.gpu import GPU_KINDS, Gpu
from nccl_doctor.facts.live import (
    FabricManagerState,
    HostLimits,
    KernelLogAccess,
    KernelModule,
    NetInterface,
    NvmlOutcome,
    ShmInfo,
)
from nccl_doctor.facts.store import Facts
from nccl_doctor.report import Report

_RDMA_KINDS = frozenset({"ibstatus", "ibstat", "ibv_devinfo"})


@dataclass(frozen=True, slots=True)
class Reading:
    """Whether a check's evidence was read: ``status`` PASS, INFO or UNKNOWN, and the words."""

    status: str
    message: str


def _unchecked(report: Report, default: str) -> str:
    """Why the GPUs were not read, as the report's coverage says it."""
    for line in report.coverage.unchecked:
        if line.startswith("GPU state"):
            return line
    return default


def _gpu_state(facts: Facts, report: Report) -> Reading:
    gpus = {g.bus_id or f"#{g.index}" for g in facts.of(Gpu)}
    if gpus or facts.kinds & GPU_KINDS:
        drivers = {o.driver_version for o in facts.of(NvmlOutcome) if o.driver_version}
        tail = f", driver {', '.join(sorted(drivers))}" if drivers else ""
        return Reading("PASS", f"GPU state read: {len(gpus)} GPU(s){tail}")
    return Reading("UNKNOWN", _unchecked(report, "no GPU state was read (nvidia-smi, NVML)"))


def _modules(facts: Facts, _: Report) -> Reading:
    loaded = [m.name for m in facts.of(KernelModule) if m.loaded]
    if facts.of(KernelModule):
        return Reading("PASS", f"kernel modules read ({', '.join(loaded) or 'no NVIDIA module'})")
    return Reading("UNKNOWN", "the kernel modules could not be read (/proc/modules)")


def _fabric(facts: Facts, _: Report) -> Reading:
    states = facts.of(FabricManagerState)
    if not states:
        return Reading("UNKNOWN", "the NVSwitch state was not read")
    if not any(s.nvswitch for s in states):
        return Reading("PASS", "no NVSwitch on this node (no fabric manager needed)")
    return Reading("PASS", "NVSwitches present and the fabric manager checked")


def _kernel_log(facts: Facts, _: Report) -> Reading:
    access = facts.of(KernelLogAccess)
    if any(a.status == "ok" for a in access) or facts.has("xid"):
        lines = sum(a.lines for a in access)
        kept = f" ({lines} NVIDIA line(s) kept)" if access else ""
        return Reading("PASS", f"kernel log read{kept}")
    if access:
        a = access[0]
        why = f"{a.status}" + (f": {a.message}" if a.message else "")
        return Reading("UNKNOWN", f"the kernel log could not be read ({a.source or 'dmesg'} {why})")
    return Reading("UNKNOWN", "no kernel log was read (dmesg / journalctl -k)")


def _rdma(facts: Facts, report: Report) -> Reading:
    if facts.kinds & _RDMA_KINDS:
        return Reading("PASS", "RDMA ports read")
    if facts.has("live-host"):
        return Reading(
            "INFO",
            "no RDMA ports under /sys/class/infiniband (nothing to check; if this node should "
            "have InfiniBand/RoCE, its driver is not loaded)",
        )
    return Reading("UNKNOWN", "no RDMA port state was read (ibstatus, /sys/class/infiniband)")


def _net(facts: Facts, _: Report) -> Reading:
    names = [i.name for i in facts.of(NetInterface)]
    if names:
        return Reading("PASS", f"{len(names)} network interface(s) read")
    return Reading("UNKNOWN", "no network interfaces were read (/sys/class/net)")


def _shm(facts: Facts, _: Report) -> Reading:
    sizes = [s for s in facts.of(ShmInfo) if s.size_mib is not None]
    if sizes:
        return Reading("PASS", f"{sizes[0].path}: {sizes[0].size_mib} MiB")
    return Reading("UNKNOWN", "the shared-memory file system was not read")


def _limits(facts: Facts, _: Report) -> Reading:
    if facts.of(HostLimits):
        return Reading("PASS", "memlock and open-file limits read")
    return Reading("UNKNOWN", "the resource limits were not read")


def _env(facts: Facts, _: Report) -> Reading:
    if facts.has("env"):
        return Reading("PASS", "NCCL_*, TORCH_NCCL_* and CUDA_* variables read")
    if facts.has("live-host"):  # a capture writes env.txt only when one is set
        return Reading("PASS", "no NCCL_*, TORCH_NCCL_* or CUDA_* variable is set")
    return Reading("UNKNOWN", "no environment was read")


Needs = Callable[[Facts, Report], Reading]


@dataclass(frozen=True, slots=True)
class CheckSpec:
    """One check of the verdict."""

    id: str
    name: str
    category: str
    owns: tuple[str, ...]
    needs: Needs


CHECKS: tuple[CheckSpec, ...] = (
    CheckSpec("gpu.visible", "GPUs visible (NVML)", "gpu", ("gpu.lost",), _gpu_state),
    CheckSpec(
        "driver.stack",
        "Driver, kernel modules and device nodes",
        "driver",
        (
            "driver.version_mismatch",
            "driver.uvm",
            "driver.container",
            "driver.cuda_mismatch",
            "driver.wsl",
        ),
        _modules,
    ),
    CheckSpec("gpu.xid", "Xid/SXid in the kernel log", "xid", ("gpu.xid",), _kernel_log),
    CheckSpec(
        "gpu.memory", "ECC, retired pages and remapped rows", "gpu", ("gpu.ecc",), _gpu_state
    ),
    CheckSpec("gpu.nvlink", "NVLink", "nvlink", ("gpu.nvlink",), _gpu_state),
    CheckSpec(
        "gpu.fabric_manager",
        "NVSwitch fabric manager",
        "nvlink",
        ("gpu.fabric_manager",),
        _fabric,
    ),
    CheckSpec("gpu.pcie", "PCIe link", "gpu", ("gpu.pcie_degraded",), _gpu_state),
    CheckSpec(
        "gpu.thermal_power", "Temperature and power", "gpu", ("gpu.thermal_power",), _gpu_state
    ),
    CheckSpec(
        "gpu.mode", "MIG and compute mode", "gpu", ("gpu.mig", "gpu.compute_mode"), _gpu_state
    ),
    CheckSpec(
        "gpu.processes", "GPU processes (contention)", "gpu", ("gpu.contention",), _gpu_state
    ),
    CheckSpec(
        "net.rdma",
        "InfiniBand/RoCE ports",
        "infiniband",
        ("net.ib_link", "net.ib_config", "net.ib_transport", "net.gdr"),
        _rdma,
    ),
    CheckSpec(
        "net.socket",
        "Network interface for NCCL's bootstrap (NCCL_SOCKET_IFNAME)",
        "network",
        ("net.socket_interface",),
        _net,
    ),
    CheckSpec("host.shm", "Shared memory (/dev/shm)", "node", ("nccl.shm",), _shm),
    CheckSpec(
        "host.limits", "Resource limits (memlock, open files)", "node", ("host.resources",), _limits
    ),
    CheckSpec(
        "nccl.env",
        "NCCL/CUDA environment variables",
        "software",
        ("nccl.env", "nccl.version_mismatch"),
        _env,
    ),
)

#: The check of findings no row owns: about the job (from logs in the evidence), not the node.
JOB_CHECK = CheckSpec(
    "job.findings",
    "Findings about a job in the evidence",
    "job",
    (),
    lambda _facts, _report: Reading("PASS", ""),
)

OWNER: dict[str, str] = {rid: spec.id for spec in CHECKS for rid in spec.owns}
