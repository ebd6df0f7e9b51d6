"""The repair ladder: what to do with a node for each finding, and why.

The ladder has five rungs, each a bigger step than the last: ``none`` (the
node is fine to use; the finding is about a job, a setting, or history),
``drain`` (keep jobs off the node until someone looks), ``reset_gpu``
(``nvidia-smi -r`` on the GPU, its processes stopped), ``restart_os`` (reboot
the node) and ``service_required`` (a hardware ticket: RMA, reseat, cable).
The spellings are NVIDIA Health Validation's remediation names
(https://docs.nvidia.com/health-validation/reference/checks/overview.md:
drain -> reset_gpu -> restart_os -> service_required), so a verdict reads
alike from either tool. Every rung above ``none`` implies a drain first.

A rung is chosen by the most specific key that matches a finding:

1. a *mechanism* the finding's own evidence shows (``xid:79``,
   ``ecc:remap_failed``, ``nvml:reset``...), from :data:`MECHANISMS`;
2. for an Xid with no row there, NVIDIA's resolution bucket for it in the Xid
   catalogue (:data:`XID_BUCKETS`, from ``knowledge/xid.py``), else its likely
   cause when that is the application (:data:`XID_CAUSES`);
3. the finding's id, from :data:`BY_ID`; an id not listed is about the job,
   not the node (:data:`JOB`).

``then`` is the next rung when the first one does not clear the condition or
it comes back. ``status`` caps the gate status of a finding that is real but
not a fault of the node (another job's processes on the GPUs): the check
shows it, the scheduler does not act on it.

Sources: NVIDIA's Xid catalogue and its resolution buckets (see
``knowledge/xid.py``); NVIDIA, "A100 GPU memory error management", Error
Recovery and Response Flags
(https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/error-recovery-and-response-flags.html:
a pending row remap applies at the next GPU reset and new work may still be
launched; NVML recovery actions none/reset/reboot/drain P2P); the RMA policy
of the same guide (a remap failure is a replacement); NVIDIA Health
Validation's ladder above.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Step(enum.IntEnum):
    """A rung of the ladder; a larger value is a bigger step."""

    NONE = 0
    DRAIN = 1
    RESET_GPU = 2
    RESTART_OS = 3
    SERVICE_REQUIRED = 4

    @property
    def label(self) -> str:
        """The JSON spelling: ``none``, ``drain``, ``reset_gpu``, ``restart_os`` and so on."""
        return self.name.lower()

    @property
    def words(self) -> str:
        """The plain words of the rung, for text output."""
        return _WORDS[self]


_WORDS = {
    Step.NONE: "none",
    Step.DRAIN: "drain",
    Step.RESET_GPU: "reset GPU",
    Step.RESTART_OS: "reboot",
    Step.SERVICE_REQUIRED: "hardware ticket",
}


@dataclass(frozen=True, slots=True)
class Rung:
    """What to do for one key: the step now, the next if it recurs, and why."""

    step: Step
    reason: str
    then: Step | None = None
    #: the highest gate status a finding under this key may give (``None``: its severity's)
    status: str | None = None


_S = Step
_REPEAT_TICKET = "; a ticket if it comes back after the reset"

#: Keys from what the evidence shows, most specific first (see the module docstring).
MECHANISMS: dict[str, Rung] = {
    "xid:79": Rung(
        _S.RESTART_OS,
        "Xid 79: the GPU has fallen off the bus; a GPU reset cannot reach it, a reboot may "
        "bring it back, a GPU that falls off again needs hardware service",
        _S.SERVICE_REQUIRED,
    ),
    "kernel:fallen_off_bus": Rung(
        _S.RESTART_OS,
        "the kernel says the GPU has fallen off the bus; only a reboot can bring it back, "
        "and a repeat needs hardware service (reseat, power, RMA)",
        _S.SERVICE_REQUIRED,
    ),
    "xid:45": Rung(
        _S.NONE,
        "Xid 45: the driver cleaned up a context after another error or a kill; the Xid "
        "before it says what to do",
    ),
    "xid:154": Rung(_S.NONE, "Xid 154: names the recovery action of the Xid it accompanies"),
    "xid:48": Rung(
        _S.RESET_GPU,
        "Xid 48: a double-bit ECC error; the reset retires the page" + _REPEAT_TICKET,
        _S.SERVICE_REQUIRED,
    ),
    "xid:63": Rung(
        _S.RESET_GPU,
        "Xid 63: a row remap or page retirement was recorded and applies at the next GPU "
        "reset; new work may still run until then",
        _S.SERVICE_REQUIRED,
    ),
    "xid:64": Rung(
        _S.SERVICE_REQUIRED,
        "Xid 64: the row remap or page retirement failed: the GPU has run out of spare "
        "memory rows, which NVIDIA's RMA policy treats as a replacement",
    ),
    "xid:92": Rung(
        _S.NONE,
        "Xid 92: a high rate of corrected ECC errors; the data was corrected, so watch the "
        "counters and plan a reset",
        _S.RESET_GPU,
    ),
    "xid:94": Rung(
        _S.RESET_GPU,
        "Xid 94: a contained uncorrectable memory error killed the process that touched it; "
        "the reset remaps the row" + _REPEAT_TICKET,
        _S.SERVICE_REQUIRED,
    ),
    "xid:95": Rung(
        _S.RESET_GPU,
        "Xid 95: an uncontained uncorrectable memory error; every process on the GPU is "
        "suspect until the reset" + _REPEAT_TICKET,
        _S.SERVICE_REQUIRED,
    ),
    "xid:119": Rung(
        _S.RESET_GPU,
        "Xid 119: the GPU System Processor timed out; reset the GPU, reboot if the reset fails",
        _S.RESTART_OS,
    ),
    "xid:120": Rung(
        _S.RESET_GPU,
        "Xid 120: the GPU System Processor failed; reset the GPU, reboot if the reset fails",
        _S.RESTART_OS,
    ),
    "kernel:gsp": Rung(
        _S.RESET_GPU,
        "the driver lost contact with the GPU System Processor (the condition of Xid "
        "119/120); reset the GPU, reboot if the reset fails",
        _S.RESTART_OS,
    ),
    "ecc:remap_failed": Rung(
        _S.SERVICE_REQUIRED,
        "row remapping failed: no spare rows are left, which NVIDIA's RMA policy treats as "
        "a replacement",
    ),
    "ecc:remap_pending": Rung(
        _S.RESET_GPU,
        "a row remap is pending and applies at the next GPU reset; new work may still run "
        "until then, so reset when the GPU is idle",
        _S.SERVICE_REQUIRED,
    ),
    "ecc:retire_pending": Rung(
        _S.RESET_GPU,
        "a page retirement is pending and applies at the next GPU reset",
        _S.SERVICE_REQUIRED,
    ),
    "ecc:volatile_uncorrectable": Rung(
        _S.RESET_GPU,
        "uncorrectable ECC errors since the last reset; the reset retires or remaps the bad "
        "memory" + _REPEAT_TICKET,
        _S.SERVICE_REQUIRED,
    ),
    "nvml:none": Rung(_S.NONE, "NVML's recovery action for the GPU is none"),
    "nvml:reset": Rung(
        _S.RESET_GPU, "NVML's recovery action for the GPU is a GPU reset", _S.RESTART_OS
    ),
    "nvml:reboot": Rung(
        _S.RESTART_OS, "NVML's recovery action for the GPU is a reboot", _S.SERVICE_REQUIRED
    ),
    "nvml:drain_p2p": Rung(
        _S.DRAIN, "NVML asks to drain peer-to-peer traffic from the GPU", _S.RESET_GPU
    ),
    "nvml:drain_and_reset": Rung(
        _S.RESET_GPU, "NVML asks to drain the GPU and reset it", _S.RESTART_OS
    ),
    "gpu:reset_required": Rung(
        _S.RESET_GPU, "the driver reports that the GPU needs a reset", _S.RESTART_OS
    ),
}

#: NVIDIA's Xid resolution buckets (the Xid catalogue's "resolution" column) as rungs.
XID_BUCKETS: dict[str, Rung] = {
    "IGNORE": Rung(_S.NONE, "NVIDIA's Xid catalogue: no action for this Xid by itself"),
    "RESTART_APP": Rung(
        _S.NONE,
        "NVIDIA's Xid catalogue: restart the application; the GPU itself is fine",
        _S.RESET_GPU,
    ),
    "RESET_GPU": Rung(_S.RESET_GPU, "NVIDIA's Xid catalogue: reset the GPU", _S.SERVICE_REQUIRED),
    "RESTART_BM": Rung(
        _S.RESTART_OS, "NVIDIA's Xid catalogue: restart the node", _S.SERVICE_REQUIRED
    ),
    "RESTART_VM": Rung(
        _S.RESTART_OS, "NVIDIA's Xid catalogue: restart the VM", _S.SERVICE_REQUIRED
    ),
    "WORKFLOW_NVLINK_ERR": Rung(
        _S.RESET_GPU,
        "NVIDIA's Xid catalogue: an NVLink error workflow; reset the GPUs and NVSwitches",
        _S.SERVICE_REQUIRED,
    ),
    "WORKFLOW_NVLINK5_ERR": Rung(
        _S.RESET_GPU,
        "NVIDIA's Xid catalogue: an NVLink 5 error workflow; reset the GPUs and NVSwitches",
        _S.SERVICE_REQUIRED,
    ),
    "CHECK_MECHANICALS": Rung(
        _S.SERVICE_REQUIRED, "NVIDIA's Xid catalogue: check the mechanicals (power, seating)"
    ),
    "UPDATE_SWFW": Rung(
        _S.DRAIN, "NVIDIA's Xid catalogue: update the driver or firmware", _S.SERVICE_REQUIRED
    ),
}

#: For an Xid with no bucket (codes only the older catalogue lists), its likely cause.
XID_CAUSES: dict[str, Rung] = {
    "application": Rung(
        _S.NONE,
        "the Xid comes from the application's own kernels: debug the job, the GPU is fine",
        _S.RESET_GPU,
    ),
    "informational": Rung(_S.NONE, "an informational Xid: nothing to do by itself"),
}

_GPU_STATE = "reset the GPU (or reboot) to clear it, a ticket if it returns"

#: Rungs by finding id: what a finding of this id asks of the node by default.
BY_ID: dict[str, Rung] = {
    "gpu.lost": Rung(
        _S.RESTART_OS,
        "the GPU is lost or wedged; a reset rarely reaches a lost GPU, a reboot may",
        _S.SERVICE_REQUIRED,
    ),
    "gpu.xid": Rung(
        _S.RESET_GPU, "the driver logged a GPU fault; " + _GPU_STATE, _S.SERVICE_REQUIRED
    ),
    "gpu.ecc": Rung(
        _S.RESET_GPU,
        "uncorrectable memory errors; the reset retires or remaps the bad memory" + _REPEAT_TICKET,
        _S.SERVICE_REQUIRED,
    ),
    "gpu.nvlink": Rung(
        _S.RESET_GPU,
        "NVLink links down or erroring; reset the GPUs and NVSwitches (or reboot), a ticket "
        "for the link if it stays down",
        _S.SERVICE_REQUIRED,
    ),
    "gpu.pcie_degraded": Rung(
        _S.DRAIN,
        "the PCIe link runs below its maximum: a reseat, riser or slot problem that no "
        "software step fixes",
        _S.SERVICE_REQUIRED,
    ),
    "gpu.thermal_power": Rung(
        _S.DRAIN,
        "the GPU is throttled by temperature or power: cooling or power delivery, checked on site",
        _S.SERVICE_REQUIRED,
    ),
    "gpu.fabric_manager": Rung(
        _S.DRAIN,
        "the NVSwitch fabric manager is down or mismatched: restart it (systemctl restart "
        "nvidia-fabricmanager); reboot if the fabric does not come up",
        _S.RESTART_OS,
    ),
    "gpu.mig": Rung(
        _S.DRAIN,
        "MIG mode is on where whole GPUs are expected: an administrator's configuration, "
        "changed with nvidia-smi -mig 0 and a GPU reset",
        _S.RESET_GPU,
    ),
    "gpu.compute_mode": Rung(
        _S.DRAIN,
        "the compute mode forbids sharing the GPU: an administrator's setting (nvidia-smi -c)",
    ),
    "gpu.contention": Rung(
        _S.NONE,
        "other processes hold the GPUs: another job or a leftover of one, not a fault of the "
        "node; the scheduler's GPU isolation or the epilog's clean-up is the fix, and "
        "draining would not help",
        status="INFO",
    ),
    "driver.version_mismatch": Rung(
        _S.RESTART_OS,
        "the loaded kernel module and the driver libraries differ (an upgrade without a "
        "reboot): a reboot loads the matching module",
    ),
    "driver.uvm": Rung(
        _S.DRAIN,
        "the nvidia_uvm module is missing: load it (modprobe nvidia-uvm) or reboot",
        _S.RESTART_OS,
    ),
    "driver.container": Rung(
        _S.DRAIN, "the container's NVIDIA driver stack is incomplete: fix the node's runtime"
    ),
    "driver.cuda_mismatch": Rung(
        _S.DRAIN, "the driver is too old for the CUDA runtime: update the driver"
    ),
    "driver.wsl": Rung(_S.NONE, "Windows Subsystem for Linux: a limit of the platform"),
    "net.ib_link": Rung(
        _S.DRAIN,
        "InfiniBand/RoCE ports are down or degraded: a cable, transceiver or switch port, "
        "checked on site",
        _S.SERVICE_REQUIRED,
    ),
    "net.ib_config": Rung(_S.DRAIN, "the RDMA configuration of the node is wrong"),
    "net.ib_transport": Rung(
        _S.DRAIN, "RDMA transfers failed on the node's ports", _S.SERVICE_REQUIRED
    ),
    "net.gdr": Rung(_S.NONE, "GPUDirect RDMA is unavailable: slower, not broken"),
    "net.socket_interface": Rung(
        _S.DRAIN, "no usable network interface for NCCL's bootstrap on this node"
    ),
    "nccl.shm": Rung(
        _S.DRAIN,
        "the shared-memory file system (/dev/shm) is too small for NCCL on this node: enlarge "
        "it (a container's --shm-size, the node's tmpfs)",
    ),
    "nccl.env": Rung(
        _S.NONE,
        "NCCL variables set wrongly: a configuration to correct where they are set, not a "
        "fault of the node",
    ),
    "nccl.version_mismatch": Rung(
        _S.NONE, "mismatched NCCL builds: the software stack, not the node's hardware"
    ),
    "host.resources": Rung(
        _S.DRAIN, "a resource limit of the node (memlock, open files) is too low"
    ),
}

#: The rung of a finding no row names: about the job, not the node.
JOB = Rung(
    _S.NONE,
    "a finding about the job rather than the node (read it with `nccl-doctor diagnose`)",
    status="INFO",
)
