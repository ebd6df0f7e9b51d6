"""The NVIDIA driver's own status codes (``NV_STATUS``) and the diagnosis each one feeds.

Inside the kernel driver (the resource manager, RM) a call returns an ``NV_STATUS``; where
a call the code expected to succeed does not, RM prints the status by name and number
(``nvAssertOkFailedNoLog: Assertion failed: Reset required [NV_ERR_RESET_REQUIRED]
(0x00000062) returned from ...``, ``src/nvidia/src/libraries/utils/nvassert.c``), and a few
messages quote the number alone (``uvm encountered global fatal error 0x60``). The name,
number and text come from ``kernel-open/common/inc/nvstatuscodes.h`` of NVIDIA's open GPU
kernel modules (read at 595.45.04; the codes kept here are the same from 515 on).

Only the statuses that say something about the GPU or its fabric are kept, each with the
catalogue id it points to. The caller errors that tools and odd configurations print on a
healthy machine (``NV_ERR_NOT_SUPPORTED``, ``NV_ERR_OBJECT_NOT_FOUND``,
``NV_ERR_INVALID_ARGUMENT``...) are left out, and so is ``NV_ERR_TIMEOUT``: a call that
timed out says which wait ran out, not why (the GSP timeouts have their own lines).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class NvStatus:
    """One ``NV_STATUS``: its name, number and driver text, and the id it points to."""

    name: str
    code: int
    text: str
    id: str


STATUSES: tuple[NvStatus, ...] = (
    # the GPU no longer answers, or RM has marked it unusable until it is reset
    NvStatus("NV_ERR_GPU_IS_LOST", 0x0F, "GPU lost from the bus", "gpu.lost"),
    NvStatus("NV_ERR_RESET_REQUIRED", 0x62, "Reset required", "gpu.lost"),
    NvStatus("NV_ERR_CARD_NOT_PRESENT", 0x05, "Card not detected", "gpu.lost"),
    NvStatus("NV_ERR_GPU_IN_FULLCHIP_RESET", 0x10, "GPU currently in full-chip reset", "gpu.lost"),
    NvStatus("NV_ERR_IRQ_NOT_FIRING", 0x45, "Requested IRQ is not firing", "gpu.lost"),
    NvStatus("NV_ERR_SECURE_BOOT_FAILED", 0x7F, "GFW secure boot failed", "gpu.lost"),
    NvStatus("NV_ERR_FATAL_ERROR", 0x71, "Fatal/unrecoverable error", "gpu.lost"),
    # the GPU's memory
    NvStatus("NV_ERR_ECC_ERROR", 0x0B, "Generic ECC error", "gpu.ecc"),
    NvStatus("NV_ERR_MEMORY_ERROR", 0x72, "Generic memory error", "gpu.ecc"),
    NvStatus("NV_ERR_BROKEN_FB", 0x01, "Frame-Buffer broken", "gpu.ecc"),
    NvStatus("NV_ERR_MEMORY_TRAINING_FAILED", 0x47, "Failed memory training sequence", "gpu.ecc"),
    NvStatus(
        "NV_ERR_RESOURCE_RETIREMENT_ERROR",
        0x86,
        "An error occurred while trying to retire a resource",
        "gpu.ecc",
    ),
    # a channel torn down by robust-channel recovery, a microcontroller halted: an Xid's cause
    NvStatus("NV_ERR_RC_ERROR", 0x60, "Generic RC error", "gpu.xid"),
    NvStatus("NV_ERR_FLCN_ERROR", 0x70, "Generic falcon assert or halt", "gpu.xid"),
    NvStatus("NV_ERR_RISCV_ERROR", 0x79, "Generic RISC-V assert or halt", "gpu.xid"),
    # the GPU's NVLinks
    NvStatus("NV_ERR_NVLINK_INIT_ERROR", 0x74, "Nvlink Init Error", "gpu.nvlink"),
    NvStatus("NV_ERR_NVLINK_MINION_ERROR", 0x75, "Nvlink Minion Error", "gpu.nvlink"),
    NvStatus("NV_ERR_NVLINK_CLOCK_ERROR", 0x76, "Nvlink Clock Error", "gpu.nvlink"),
    NvStatus("NV_ERR_NVLINK_TRAINING_ERROR", 0x77, "Nvlink Training Error", "gpu.nvlink"),
    NvStatus("NV_ERR_NVLINK_CONFIGURATION_ERROR", 0x78, "Nvlink Configuration Error", "gpu.nvlink"),
    # the NVSwitch fabric the fabric manager sets up
    NvStatus(
        "NV_ERR_FABRIC_MANAGER_NOT_PRESENT",
        0x7A,
        "Fabric Manager is not loaded",
        "gpu.fabric_manager",
    ),
    NvStatus(
        "NV_ERR_NVLINK_FABRIC_NOT_READY",
        0x81,
        "Nvlink Fabric Status or Fabric Probe is not yet complete, caller needs to retry",
        "gpu.fabric_manager",
    ),
    NvStatus(
        "NV_ERR_NVLINK_FABRIC_FAILURE", 0x82, "Nvlink Fabric Probe failed", "gpu.fabric_manager"
    ),
    NvStatus(
        "NV_ERR_FABRIC_STATE_OUT_OF_SYNC",
        0x87,
        "NVLink fabric state cached by the driver is out of sync",
        "gpu.fabric_manager",
    ),
    # NVLS: the multicast objects NCCL binds its buffers to ran out
    NvStatus(
        "NV_ERR_MC_FLA_OFFSET_TABLE_FULL",
        0x8A,
        "Multicast FLA offset table has no available slots",
        "nccl.nvls",
    ),
    NvStatus("NV_ERR_INSUFFICIENT_POWER", 0x1C, "Generic Error: Low power", "gpu.thermal_power"),
    NvStatus("NV_ERR_GPU_NOT_FULL_POWER", 0x11, "GPU not in full power", "gpu.thermal_power"),
    NvStatus(
        "NV_ERR_LIB_RM_VERSION_MISMATCH",
        0x6A,
        "Library version doesn't match driver version",
        "driver.version_mismatch",
    ),
)

_BY_NAME = {s.name: s for s in STATUSES}
_BY_CODE = {s.code: s for s in STATUSES}


def status(name: str | None = None, code: int | None = None) -> NvStatus | None:
    """The kept status of that name (``NV_ERR_GPU_IS_LOST``) or number, else ``None``."""
    if name is not None:
        return _BY_NAME.get(name)
    return _BY_CODE.get(code) if code is not None else None
