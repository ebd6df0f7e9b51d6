"""NVIDIA Xid codes: what each means, how bad it is, what to do, and which diagnosis it feeds.

Sources, read on 2026-12-02:

- NVIDIA, "Analyzing Xid Errors with the Xid Catalog"
  (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html) and its
  spreadsheet Xid-Catalog.xlsx (sheet "Catalog": code, mnemonic, description,
  resolution buckets for Ampere and newer GPUs, codes 1-172), as mirrored in
  leptonai/gpud ``components/accelerator/nvidia/xid/catalog_generated.go``
  (generated 2025-10-29 from that page);
- NVIDIA, "Xid Errors" for Volta and older GPUs (the earlier catalog at
  https://docs.nvidia.com/deploy/xid-errors/), for codes the new catalog marks
  unused on current GPUs (56-59, 61, display and video engine codes, 173);
- NVIDIA, "Dynamic Page Retirement" (Xid 48/63/64) and the row-remapping notes.

``name`` is NVIDIA's short description (shortened for 171/172) and
``mnemonic`` the driver's name;
``nvidia_action``/``nvidia_investigation`` are the catalog's resolution buckets
(RESTART_APP, RESET_GPU, RESTART_BM, WORKFLOW_XID_48, ...), ``None`` for codes
only the older catalog lists. ``meaning`` and ``action`` are our own words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["critical", "warning", "info"]
Cause = Literal[
    "hardware", "driver", "application", "nvlink", "memory", "thermal", "power", "gsp",
    "firmware", "pcie", "virtualization", "security", "informational",
]  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class XidInfo:
    """One Xid: NVIDIA's name and buckets plus our reading of it.

    ``severity`` is for a training job: ``critical`` means the GPU (or node)
    must be reset, rebooted or repaired before it is trusted again; ``warning``
    that the job that hit it died or may have, the GPU itself usually fine;
    ``info`` that nothing needs doing by itself. ``diagnosis_id`` is the
    catalogue id a rule reports for it.
    """

    code: int
    name: str
    mnemonic: str | None
    meaning: str
    severity: Severity
    likely_cause: Cause
    action: str
    diagnosis_id: str
    nvidia_action: str | None = None
    nvidia_investigation: str | None = None


_RESTART = "restart the job; if it recurs on the same GPU, run diagnostics (dcgmi diag)"
_APP = "check the application (CUDA_LAUNCH_BLOCKING=1, compute-sanitizer); restart the job"
_RESET = "drain the node, reset the GPU (nvidia-smi -r) or reboot, then run dcgmi diag"
_REBOOT = "drain the node and reboot it; if the GPU does not come back, RMA it"
_RMA = "drain the node, reset the GPU; if it repeats, RMA the GPU"
_DRIVER = "update the driver/firmware; report to NVIDIA if it persists"
_NVLINK = "drain the node, reset the GPUs and NVSwitches (or reboot); check the NVLink counters"
_NONE = "nothing by itself; read the Xid it accompanies"


def _x(  # noqa: PLR0917 -- one positional table row, in column order
    code: int,
    mnemonic: str | None,
    name: str,
    severity: Severity,
    cause: Cause,
    diagnosis: str,
    action: str,
    meaning: str,
    nvidia: tuple[str | None, str | None] = (None, None),
) -> XidInfo:
    """One row."""
    return XidInfo(
        code=code,
        name=name,
        mnemonic=mnemonic,
        meaning=meaning,
        severity=severity,
        likely_cause=cause,
        action=action,
        diagnosis_id=diagnosis,
        nvidia_action=nvidia[0],
        nvidia_investigation=nvidia[1],
    )


_X = "gpu.xid"
_ECC = "gpu.ecc"
_NVL = "gpu.nvlink"
_PWR = "gpu.thermal_power"
_APP_CUDA = ("RESTART_APP", "CHECK_APP/CUDA")
_APP_SUPPORT = ("RESTART_APP", "CONTACT_SUPPORT")
_NVL5 = ("WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR")

_PUSH = "a channel's command stream was invalid; usually the application or driver, rarely the GPU"

# fmt: off
_ROWS: list[XidInfo] = [
    _x(1, "ROBUST_CHANNEL_FIFO_ERROR_FIFO_METHOD", "Invalid or corrupted push buffer stream",
       "warning", "driver", _X, _RESTART, _PUSH),
    _x(2, "ROBUST_CHANNEL_FIFO_ERROR_SW_METHOD", "Invalid or corrupted push buffer stream",
       "warning", "driver", _X, _RESTART, _PUSH),
    _x(3, "ROBUST_CHANNEL_FIFO_ERROR_UNK_METHOD", "Invalid or corrupted push buffer stream",
       "warning", "driver", _X, _RESTART, _PUSH),
    _x(4, "ROBUST_CHANNEL_FIFO_ERROR_CHANNEL_BUSY", "Invalid or corrupted push buffer stream",
       "warning", "driver", _X, _RESTART, _PUSH),
    _x(6, "ROBUST_CHANNEL_FIFO_ERROR_PARSE_ERR", "Invalid or corrupted push buffer stream",
       "warning", "driver", _X, _RESTART, _PUSH),
    _x(7, "ROBUST_CHANNEL_FIFO_ERROR_PTE_ERR", "Invalid or corrupted push buffer address",
       "warning", "driver", _X, _RESTART, _PUSH),
    _x(8, "ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT", "GPU stopped processing", "warning", "driver",
       _X, _RESTART, "a channel made no progress and was reset; the process using it dies",
       ("RESTART_APP", "CONTACT_SUPPORT")),
    _x(9, "ROBUST_CHANNEL_GR_ERROR_INSTANCE", "Driver error programming GPU", "critical", "driver",
       _X, _REBOOT, "the driver failed to program the GPU (older GPUs)"),
    _x(11, "ROBUST_CHANNEL_GR_ERROR_MISSING_HW", "Invalid or corrupted push buffer stream",
       "warning", "application", _X, _APP, _PUSH, _APP_CUDA),
    _x(12, "ROBUST_CHANNEL_GR_ERROR_SW_METHOD", "Driver error handling GPU exception", "critical",
       "driver", _X, _REBOOT, "the driver failed handling a GPU exception"),
    _x(13, "ROBUST_CHANNEL_GR_EXCEPTION", "Graphics Engine Exception", "warning", "application", _X,
       _APP,
       "a kernel faulted on the compute engine (out-of-range access, illegal instruction, "
       "assert); almost always the application, the GPU is fine",
       ("RESTART_APP", "WORKFLOW_XID_13")),
    _x(16, "ROBUST_CHANNEL_VBLANK_CALLBACK_TIMEOUT", "Display engine hung", "critical", "driver",
       _X, _REBOOT, "the display engine hung (older GPUs)"),
    _x(18, "ROBUST_CHANNEL_BUS_MASTER_TIMEOUT_ERROR", "Bus mastering disabled in PCI Config Space",
       "critical", "pcie", _X, _REBOOT,
       "the GPU lost PCIe bus mastering; a platform or PCIe problem (older GPUs)"),
    _x(19, "ROBUST_CHANNEL_DISP_MISSED_NOTIFIER", "Display Engine error", "critical", "driver", _X,
       _REBOOT, "display engine error (older GPUs)"),
    _x(20, "ROBUST_CHANNEL_MPEG_ERROR_SW_METHOD", "Invalid or corrupted Mpeg push buffer",
       "warning", "application", _X, _RESTART, "invalid MPEG engine command stream"),
    _x(21, "ROBUST_CHANNEL_ME_ERROR_SW_METHOD",
       "Invalid or corrupted Motion Estimation push buffer", "warning", "application", _X, _RESTART,
       "invalid motion-estimation commands"),
    _x(22, "ROBUST_CHANNEL_VP_ERROR_SW_METHOD", "Invalid or corrupted Video Processor push buffer",
       "warning", "application", _X, _RESTART, "invalid video-processor commands"),
    _x(24, "ROBUST_CHANNEL_GR_SEMAPHORE_TIMEOUT", "GPU semaphore timeout", "warning", "application",
       _X, _RESTART, "a GPU semaphore wait timed out"),
    _x(25, "ROBUST_CHANNEL_GR_ILLEGAL_NOTIFY", "Invalid or illegal push buffer stream", "warning",
       "application", _X, _APP, _PUSH, _APP_CUDA),
    _x(26, "ROBUST_CHANNEL_FIFO_ERROR_FBISTATE_TIMEOUT", "Framebuffer timeout", "critical",
       "hardware", _X, _REBOOT, "GPU memory interface timed out (older GPUs)"),
    _x(30, "ROBUST_CHANNEL_BAD_ADDR_ACCESS", "GPU semaphore access error", "warning", "application",
       _X, _RESTART, "bad semaphore address (older GPUs)"),
    _x(31, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", "GPU memory page fault", "warning",
       "application", _X, _APP,
       "a kernel touched an unmapped or protected GPU address (illegal memory access); usually "
       "the application or a library, rarely a driver bug", ("RESTART_APP", "WORKFLOW_XID_31")),
    _x(32, "ROBUST_CHANNEL_PBDMA_ERROR", "Invalid or corrupted push buffer stream", "warning",
       "driver", _X, _RESTART,
       "the DMA engine read a bad command stream; can also follow PCIe errors", _APP_CUDA),
    _x(33, "ROBUST_CHANNEL_SEC_ERROR", "Internal micro-controller error", "warning", "firmware", _X,
       _RESTART, "a GPU micro-controller faulted (older GPUs)"),
    _x(37, "ROBUST_CHANNEL_FECS_ERR_UNIMP_FIRMWARE_METHOD", "Driver firmware error", "warning",
       "driver", _X, _DRIVER, "GPU firmware got a method it does not implement",
       ("IGNORE", "CHECK_APP/CUDA")),
    _x(38, "ROBUST_CHANNEL_FECS_ERR_WATCHDOG_TIMEOUT", "Driver firmware error", "warning", "driver",
       _X, _DRIVER, "a GPU firmware watchdog expired", ("IGNORE", "CONTACT_SUPPORT")),
    _x(43, "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", "GPU stopped processing", "warning",
       "application", _X, _APP,
       "the driver reset a channel after a fault in it (often after Xid 13/31); the "
       "application's context is gone, the GPU is usually fine", ("IGNORE", "CONTACT_SUPPORT")),
    _x(44, "ROBUST_CHANNEL_GR_FAULT_DURING_CTXSW", "Graphics Engine fault during context switch",
       "warning", "driver", _X, _RESTART, "a fault while switching GPU contexts",
       ("IGNORE", "CONTACT_SUPPORT")),
    _x(45, "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL", "Preemptive cleanup, due to previous errors",
       "warning", "application", _X, "read the Xid that came before it; restart the job",
       "the driver tore down a context after an earlier error or because the process was killed; "
       "on its own it is the trace of an ended process",
       ("WORKFLOW_XID_45", "IGNORE (follow other Xid)")),
    _x(46, "ROBUST_CHANNEL_GPU_TIMEOUT_ERROR", "GPU stopped processing", "critical", "hardware", _X,
       _RESET, "the GPU stopped responding to work and must be reset",
       ("RESET_GPU", "CONTACT_SUPPORT")),
    _x(48, "ROBUST_CHANNEL_GPU_ECC_DBE", "Double Bit ECC Error", "critical", "memory", _ECC,
       "drain the node, reset the GPU to retire/remap the page; RMA if it repeats",
       "an uncorrectable (double-bit) ECC error in GPU memory; the process using it is killed "
       "and the page is retired or the row remapped at the next reset",
       ("WORKFLOW_XID_48", "WORKFLOW_XID_48")),
    _x(54, "SILENT_RUNNING_PWR_REDUCED_CLOCKING",
       "Auxiliary power is not connected to the GPU board", "critical", "power", _PWR,
       "reseat the GPU's auxiliary power cables",
       "the board runs without auxiliary power, at reduced clocks",
       ("CHECK_MECHANICALS", "CONTACT_SUPPORT")),
    _x(56, "DISPLAY_CHANNEL_EXCEPTION", "Display Engine error", "warning", "driver", _X, _RESTART,
       "display engine exception (older GPUs)"),
    _x(57, "FB_LINK_TRAINING_FAILURE_ERROR", "Error programming video memory interface", "critical",
       "hardware", _X, _RMA,
       "the GPU could not train its memory interface (older GPUs): a hardware fault"),
    _x(58, "FB_MEMORY_ERROR", "Unstable video memory interface detected", "critical", "hardware",
       _X, _RMA, "the memory interface is unstable (older GPUs): hardware"),
    _x(59, "PMU_ERROR", "Internal micro-controller error (older drivers)", "warning", "firmware",
       _X, _DRIVER, "the power-management micro-controller reported an error"),
    _x(60, "ROBUST_CHANNEL_SEC2_ERROR", "Video processor exception", "warning", "driver", _X,
       _RESTART, "the security/video micro-controller faulted", ("RESTART_APP", "INVESTIGATE_SW")),
    _x(61, "PMU_BREAKPOINT", "Internal micro-controller breakpoint/warning (newer drivers)",
       "warning", "firmware", _X, _DRIVER,
       "the power-management micro-controller hit a breakpoint; often followed by Xid 62"),
    _x(62, "PMU_HALT_ERROR", "Internal micro-controller halt", "critical", "firmware", _X, _RESET,
       "a GPU micro-controller halted; the GPU needs a reset", ("RESET_GPU", "CONTACT_SUPPORT")),
    _x(63, "INFOROM_DRAM_RETIREMENT_EVENT", "GPU memory remapping event", "warning", "memory", _ECC,
       "reset the GPU (or reboot) when convenient so the remap takes effect",
       "a page retirement or row remap was recorded after memory errors; it applies at the next "
       "GPU reset", ("IGNORE", "IGNORE")),
    _x(64, "INFOROM_DRAM_RETIREMENT_FAILURE", "GPU memory remapping failure", "critical", "memory",
       _ECC, _RMA, "recording a page retirement or row remap failed; the bad memory stays in use",
       ("RESET_GPU", "CONTACT_SUPPORT")),
    _x(66, "ROBUST_CHANNEL_FECS_ERR_REG_ACCESS_VIOLATION", "Illegal access by driver", "warning",
       "driver", _X, _DRIVER, "the driver touched a register it may not",
       ("IGNORE", "INVESTIGATE_SW")),
    _x(67, "ROBUST_CHANNEL_FECS_ERR_VERIF_VIOLATION", "Illegal access by driver", "warning",
       "driver", _X, _DRIVER, "the driver failed a verification check",
       ("IGNORE", "CONTACT_SUPPORT")),
    _x(69, "ROBUST_CHANNEL_GR_CLASS_ERROR", "Graphics Engine class error", "warning", "application",
       _X, _APP, "a bad method reached the compute engine", _APP_CUDA),
    _x(74, "NVLINK_ERROR", "NVLINK Error", "critical", "nvlink", _NVL, _NVLINK,
       "an NVLink error (link down, replay or CRC storm); collectives over it fail or hang",
       ("WORKFLOW_NVLINK_ERR", "CONTACT_SUPPORT")),
    _x(78, "VGPU_START_ERROR", "vGPU Start Error", "critical", "virtualization", _X,
       "check the vGPU manager and guest driver versions", "a vGPU failed to start",
       ("UPDATE_SWFW", "UPDATE_SWFW")),
    _x(79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "GPU has fallen off the bus", "critical",
       "hardware", "gpu.lost", _REBOOT,
       "the GPU stopped answering on PCIe: power, thermal, PCIe/riser or board failure; every "
       "process on it fails and only a reboot brings it back", ("RESTART_BM", "CONTACT_SUPPORT")),
    _x(80, "PBDMA_PUSHBUFFER_CRC_MISMATCH", "Corrupted data sent to GPU", "warning", "pcie", _X,
       _RESTART, "data reached the GPU corrupted; check PCIe if it repeats", _APP_CUDA),
    _x(81, "ROBUST_CHANNEL_VGA_SUBSYSTEM_ERROR", "VGA Subsystem Error", "warning", "hardware", _X,
       _RESTART, "VGA subsystem error (older GPUs)"),
    _x(92, "EXCESSIVE_SBE_INTERRUPTS", "High single-bit ECC error rate", "warning", "memory", _ECC,
       "watch the ECC counters; plan a reset and diagnostics",
       "many corrected (single-bit) ECC errors: memory is degrading",
       ("IGNORE", "CONTACT_SUPPORT")),
    _x(93, "INFOROM_ERASE_LIMIT_EXCEEDED", "Non-fatal violation of provisioned InfoROM wear limit",
       "info", "firmware", _X, "report to the vendor at the next maintenance",
       "the InfoROM passed its provisioned write limit", ("IGNORE", "CONTACT_SUPPORT")),
    _x(94, "ROBUST_CHANNEL_CONTAINED_ERROR", "Contained memory error", "warning", "memory", _ECC,
       "restart the job; reset the GPU at the next chance to apply the remap",
       "an uncorrectable memory error was contained to the process that used the memory; other "
       "processes keep running", ("RESTART_APP", "IGNORE (sympathetic)")),
    _x(95, "ROBUST_CHANNEL_UNCONTAINED_ERROR", "Uncontained memory error", "critical", "memory",
       _ECC, _RESET,
       "an uncorrectable memory error could not be contained: every process on the GPU is "
       "affected and the GPU must be reset", ("RESET_GPU", "IGNORE (sympathetic)")),
    _x(106, "SMBPBI_TEST_MESSAGE", "SMBPBI Test Message", "info", "informational", _X, _NONE,
       "a test event sent through the out-of-band interface", ("IGNORE", "IGNORE")),
    _x(107, "SMBPBI_TEST_MESSAGE_SILENT", "SMBPBI Test Message Silent", "info", "informational", _X,
       _NONE, "a silent out-of-band test event", ("IGNORE", "IGNORE")),
    _x(109, "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", "Context Switch Timeout Error", "critical",
       "driver", _X, _RESET, "a context switch did not finish; the GPU needs a reset",
       ("RESET_GPU", "CONTACT_SUPPORT")),
    _x(110, "SEC_FAULT_ERROR", "Security Fault Error", "critical", "security", _X, _RESET,
       "a security fault in the GPU; reset it", ("RESET_GPU", "INVESTIGATE_SW")),
    _x(119, "GSP_RPC_TIMEOUT", "GSP RPC Timeout", "critical", "gsp", _X,
       "drain the node and reset the GPU or reboot; update the driver, or load the driver with "
       "GSP firmware disabled (NVreg_EnableGpuFirmware=0) where supported",
       "the GPU System Processor firmware did not answer the driver in time",
       ("RESET_GPU", "INVESTIGATE_SW")),
    _x(120, "GSP_ERROR", "GSP Error", "critical", "gsp", _X,
       "drain the node and reset the GPU or reboot; update the driver",
       "the GPU System Processor firmware reported an error", ("RESET_GPU", "INVESTIGATE_SW")),
    _x(121, "C2C_ERROR", "C2C Error", "warning", "hardware", _X,
       "watch for repeats; contact support if it recurs",
       "an error on the chip-to-chip (Grace-Hopper/Blackwell) link", ("IGNORE", "CONTACT_SUPPORT")),
    _x(122, "SPI_PMU_RPC_READ_FAIL", "SPI PMU RPC Read Failure", "warning", "firmware", _X, _DRIVER,
       "reading the GPU's SPI flash through the PMU failed"),
    _x(123, "SPI_PMU_RPC_WRITE_FAIL", "SPI PMU RPC Write Failure", "warning", "firmware", _X,
       _DRIVER, "writing the GPU's SPI flash through the PMU failed"),
    _x(124, "SPI_PMU_RPC_ERASE_FAIL", "SPI PMU RPC Erase Failure", "warning", "firmware", _X,
       _DRIVER, "erasing the GPU's SPI flash through the PMU failed"),
    _x(125, "INFOROM_FS_ERROR", "Inforom FS Failure", "warning", "firmware", _X, _DRIVER,
       "the InfoROM file system reported a failure"),
    _x(136, "ALI_TRAINING_FAIL", "Link Training Failed", "critical", "nvlink", _NVL, _NVLINK,
       "an NVLink failed to train; the GPU runs with fewer links or none",
       ("RESET_GPU", "INVESTIGATE_LINK_SI")),
    _x(137, "NVLINK_PRIV_ERR", "NVLink Privilege Error", "warning", "nvlink", _NVL,
       "check the application's NVLink (FLA) mappings; restart the job",
       "an NVLink access violated fabric address privileges", ("IGNORE", "XID_137_FLOW")),
    _x(140, "UNRECOVERABLE_ECC_ERROR_ESCAPE", "ECC Unrecovered Error", "critical", "memory", _ECC,
       _RMA, "an uncorrectable ECC error escaped containment", ("RESET_GPU", "CONTACT_SUPPORT")),
    _x(141, "ROBUST_CHANNEL_FAST_PATH_ERROR", "CUDA Fast Path Error", "info", "driver", _X, _NONE,
       "an error on the CUDA fast submission path", ("IGNORE", "CONTACT_SUPPORT")),
    _x(143, "GPU_INIT_ERROR", "GPU Initialization Error", "critical", "hardware", _X, _RESET,
       "the GPU failed to initialise", ("RESET_GPU", "CONTACT_SUPPORT")),
    _x(144, "NVLINK_SAW_ERROR", "NVLINK: SAW Error", "critical", "nvlink", _NVL, _NVLINK,
       "an NVLink5 error in the SAW unit; fatal sub-codes need a GPU reset", _NVL5),
    _x(145, "NVLINK_RLW_ERROR", "NVLINK: RLW Error", "critical", "nvlink", _NVL, _NVLINK,
       "an NVLink5 error in the RLW unit; fatal sub-codes need a GPU reset", _NVL5),
    _x(146, "NVLINK_TLW_ERROR", "NVLINK: TLW Error", "critical", "nvlink", _NVL, _NVLINK,
       "an NVLink5 error in the TLW unit; fatal sub-codes need a GPU reset", _NVL5),
    _x(147, "NVLINK_TREX_ERROR", "NVLINK: TREX Error", "warning", "nvlink", _NVL, _NVLINK,
       "an NVLink5 error in the TREX unit", _NVL5),
    _x(148, "NVLINK_NVLPW_CTRL_ERROR", "NVLINK: NVLPW_CTRL Error", "warning", "nvlink", _NVL,
       _NVLINK, "an NVLink5 error in the NVLPW control unit", _NVL5),
    _x(149, "NVLINK_NETIR_ERROR", "NVLINK: NETIR Error", "critical", "nvlink", _NVL, _NVLINK,
       "an NVLink5 link event (link down, bit-error-rate event); check cables and the peer", _NVL5),
    _x(150, "NVLINK_MSE_ERROR", "NVLINK: MSE Error", "critical", "nvlink", _NVL, _NVLINK,
       "the NVLink5 management engine watchdog fired", _NVL5),
    _x(151, "ROBUST_CHANNEL_KEY_ROTATION_ERROR", "Key rotation Error", "critical", "security", _X,
       "restart the VM (confidential computing)", "confidential-computing key rotation failed",
       ("RESTART_VM", "CONTACT_SUPPORT")),
    _x(152, "ROBUST_CHANNEL_DLA_SMMU_ERROR", "DLA SMMU Error", "info", "hardware", _X, _NONE,
       "a deep-learning accelerator (Jetson DLA) memory-unit error", ("IGNORE", "CONTACT_SUPPORT")),
    _x(153, "ROBUST_CHANNEL_DLA_TIMEOUT", "DLA timeout Error", "info", "hardware", _X, _NONE,
       "a deep-learning accelerator (Jetson DLA) timed out", ("IGNORE", "CONTACT_SUPPORT")),
    _x(154, "GPU_RECOVERY_ACTION_CHANGED", "GPU Recovery Action Changed", "info", "informational",
       _X, "do the recovery action it names (none, reset, reboot, drain)",
       "the driver's recommended recovery action for the GPU changed, after another Xid",
       ("XID_154", "N/A Informational only regarding another Xid")),
    _x(155, "NVLINK_SW_DEFINED_ERROR", "NVLINK: SW Defined Error", "critical", "nvlink", _NVL,
       _NVLINK, "software detected an NVLink failure", ("RESET_GPU", "INVESTIGATE_SW_USER")),
    _x(156, "RESOURCE_RETIREMENT_EVENT", "Resource Retirement Event", "warning", "memory", _ECC,
       "reset the GPU so the retirement takes effect",
       "a faulty resource was marked for retirement", ("RESET_GPU", "IGNORE")),
    _x(157, "RESOURCE_RETIREMENT_FAILURE", "Resource Retirement Failure", "warning", "memory", _ECC,
       _RMA, "retiring a faulty resource failed", ("IGNORE", "CONTACT_SUPPORT")),
    _x(158, "GPU_FATAL_TIMEOUT", "GPU Fatal Timeout", "critical", "hardware", _X, _RESET,
       "a fatal timeout inside the GPU", ("RESET_GPU", "CONTACT_SUPPORT")),
    _x(159, "ROBUST_CHANNEL_CHI_NON_DATA_ERROR", "CHI Non-Data Error", "warning", "hardware", _X,
       "check the UVM module and the application's managed memory; restart the job",
       "a coherent-interconnect (CHI) error on a non-data request",
       ("CHECK_UVM", "SYMPATHETIC_REPORT_SOLO")),
    _x(160, "CHANNEL_RETIREMENT_EVENT", "Channel Retirement Event", "info", "driver", _X, _NONE,
       "a channel was retired after errors", ("IGNORE", "INVESTIGATE_SW")),
    _x(161, "CHANNEL_RETIREMENT_FAILURE", "Channel Retirement Failure", "warning", "driver", _X,
       _DRIVER, "retiring a channel failed", ("IGNORE", "INVESTIGATE_SW")),
    _x(162, "PSHC_REENGAGED", "Power Smoothing HW Circuitry capability reengaged", "info", "power",
       _PWR, _NONE, "power smoothing works again"),
    _x(163, "PSHC_DISENGAGED", "Power Smoothing HW Circuitry capability disengaged", "warning",
       "power", _PWR, "expect power-driven clock changes; check the power smoothing setup",
       "power smoothing was turned off"),
    _x(164, "PSHC_LOW_LIFETIME", "Power Smoothing HW Circuitry low lifetime reached", "warning",
       "power", _PWR, "plan a replacement with the vendor",
       "the power smoothing circuitry is near its end of life"),
    _x(165, "PSHC_ZERO_LIFETIME", "Power Smoothing HW Circuitry lifetime exhausted", "warning",
       "power", _PWR, "replace with the vendor",
       "the power smoothing circuitry is worn out and disabled"),
    _x(166, "NVLINK_SECURE_CRYPTO_ERR",
       "CC traffic seen prior to link properly being configured for encrypted traffic", "warning",
       "security", _NVL, _NVLINK,
       "confidential-computing NVLink traffic arrived before encryption was set up"),
    _x(167, "PCIE_FATAL_TIMEOUT", "PCIE_FATAL_TIMEOUT", "critical", "pcie", _X, _REBOOT,
       "a fatal PCIe timeout between the host and the GPU"),
    _x(168, "REDUCED_GPU_MEMORY_CAPACITY", "Errors found in WPR (write protected region)",
       "warning", "memory", _ECC, "schedule diagnostics; RMA if capacity keeps dropping",
       "memory errors in the write-protected region reduced usable GPU memory"),
    _x(169, "SEC2_HALT_ERROR", "Internal micro-controller halt", "critical", "firmware", _X, _RESET,
       "the SEC2 micro-controller halted; reset the GPU"),
    _x(170, "NVLINK_SECURE_OTHER", "Interrupt seen in CC mode", "warning", "security", _NVL,
       _NVLINK, "an NVLink interrupt in confidential-computing mode"),
    _x(171, "UNCORRECTABLE_DRAM_ERROR", "Uncorrectable DRAM error (details to Xid 48)", "critical",
       "memory", _ECC, _RMA, "the uncorrectable error of a Xid 48 was in DRAM"),
    _x(172, "UNCORRECTABLE_SRAM_ERROR", "Uncorrectable SRAM error (details to Xid 48)", "critical",
       "memory", _ECC, _RMA, "the uncorrectable error of a Xid 48 was in on-chip SRAM"),
    _x(173, None, "C2C Fatal Link Failure", "critical", "hardware", _X, _REBOOT,
       "the chip-to-chip link failed fatally"),
]
# fmt: on

# Engine exceptions (copy engines, video decoders/encoders, JPEG, optical flow): one family.
# fmt: off
_ENGINES: tuple[tuple[int, str, str], ...] = (
    (27, "ROBUST_CHANNEL_VP_ERROR", "Video processor exception"),
    (28, "ROBUST_CHANNEL_VP2_ERROR", "Video processor exception"),
    (29, "ROBUST_CHANNEL_BSP_ERROR", "Video processor exception"),
    (34, "ROBUST_CHANNEL_MSVLD_ERROR", "Video processor exception"),
    (35, "ROBUST_CHANNEL_MSPDEC_ERROR", "Video processor exception"),
    (36, "ROBUST_CHANNEL_MSPPP_ERROR", "Video processor exception"),
    (39, "ROBUST_CHANNEL_CE0_ERROR", "Copy Engine Exception"),
    (40, "ROBUST_CHANNEL_CE1_ERROR", "Copy Engine Exception"),
    (41, "ROBUST_CHANNEL_CE2_ERROR", "Copy Engine Exception"),
    (42, "ROBUST_CHANNEL_VIC_ERROR", "Video processor exception"),
    (47, "ROBUST_CHANNEL_NVENC0_ERROR", "Video processor exception"),
    (65, "ROBUST_CHANNEL_NVENC1_ERROR", "Video processor exception"),
    (68, "ROBUST_CHANNEL_NVDEC0_ERROR", "NVDEC0 Exception"),
    (70, "ROBUST_CHANNEL_CE3_ERROR", "CE3: Unknown Error"),
    (71, "ROBUST_CHANNEL_CE4_ERROR", "CE4: Unknown Error"),
    (72, "ROBUST_CHANNEL_CE5_ERROR", "CE5: Unknown Error"),
    (73, "ROBUST_CHANNEL_NVENC2_ERROR", "NVENC2 Error"),
    (75, "ROBUST_CHANNEL_CE6_ERROR", "CE6: Unknown Error"),
    (76, "ROBUST_CHANNEL_CE7_ERROR", "CE7: Unknown Error"),
    (77, "ROBUST_CHANNEL_CE8_ERROR", "CE8: Unknown Error"),
    (82, "ROBUST_CHANNEL_NVJPG0_ERROR", "NVJPG0 Error"),
    (83, "ROBUST_CHANNEL_NVDEC1_ERROR", "NVDEC1 Error"),
    (84, "ROBUST_CHANNEL_NVDEC2_ERROR", "NVDEC2 Error"),
    (85, "ROBUST_CHANNEL_CE9_ERROR", "CE9: Unknown Error"),
    (86, "ROBUST_CHANNEL_OFA0_ERROR", "OFA Exception"),
    (88, "ROBUST_CHANNEL_NVDEC3_ERROR", "NVDEC3 Error"),
    (89, "ROBUST_CHANNEL_NVDEC4_ERROR", "NVDEC4 Error"),
    (96, "ROBUST_CHANNEL_NVDEC5_ERROR", "NVDEC5 Error"),
    (97, "ROBUST_CHANNEL_NVDEC6_ERROR", "NVDEC6 Error"),
    (98, "ROBUST_CHANNEL_NVDEC7_ERROR", "NVDEC7 Error"),
    (99, "ROBUST_CHANNEL_NVJPG1_ERROR", "NVJPG1 Error"),
    (100, "ROBUST_CHANNEL_NVJPG2_ERROR", "NVJPG2 Error"),
    (101, "ROBUST_CHANNEL_NVJPG3_ERROR", "NVJPG3 Error"),
    (102, "ROBUST_CHANNEL_NVJPG4_ERROR", "NVJPG4 Error"),
    (103, "ROBUST_CHANNEL_NVJPG5_ERROR", "NVJPG5 Error"),
    (104, "ROBUST_CHANNEL_NVJPG6_ERROR", "NVJPG6 Error"),
    (105, "ROBUST_CHANNEL_NVJPG7_ERROR", "NVJPG7 Error"),
    (126, "ROBUST_CHANNEL_CE10_ERROR", "CE10: Unknown Error"),
    (127, "ROBUST_CHANNEL_CE11_ERROR", "CE11: Unknown Error"),
    (128, "ROBUST_CHANNEL_CE12_ERROR", "CE12: Unknown Error"),
    (129, "ROBUST_CHANNEL_CE13_ERROR", "CE13: Unknown Error"),
    (130, "ROBUST_CHANNEL_CE14_ERROR", "CE14: Unknown Error"),
    (131, "ROBUST_CHANNEL_CE15_ERROR", "CE15: Unknown Error"),
    (132, "ROBUST_CHANNEL_CE16_ERROR", "CE16: Unknown Error"),
    (133, "ROBUST_CHANNEL_CE17_ERROR", "CE17: Unknown Error"),
    (134, "ROBUST_CHANNEL_CE18_ERROR", "CE18: Unknown Error"),
    (135, "ROBUST_CHANNEL_CE19_ERROR", "CE19: Unknown Error"),
    (139, "ROBUST_CHANNEL_OFA1_ERROR", "OFA1 Error"),
    (142, "ROBUST_CHANNEL_NVENC3_ERROR", "NVENC3 Error"),
)
# fmt: on
_ROWS += [
    _x(
        code,
        mnemonic,
        name,
        "warning",
        "application",
        _X,
        _RESTART,
        "an exception on a copy, video or JPEG engine; the process that used it fails",
        ("RESTART_APP", "CONTACT_SUPPORT") if code >= 39 else (None, None),
    )
    for code, mnemonic, name in _ENGINES
]

# Display-pipeline errors (older catalog): irrelevant to compute, listed so they are recognised.
# fmt: off
_DISPLAY: tuple[tuple[int, str, str], ...] = (
    (111, "BUNDLE_ERROR_EVENT", "Display Bundle Error Event"),
    (112, "DISP_SUPERVISOR_ERROR", "Display Supervisor Error"),
    (113, "DP_LT_FAILURE", "DP Link Training Error"),
    (114, "HEAD_RG_UNDERFLOW", "Display Pipeline Underflow Error"),
    (115, "CORE_CHANNEL_REGS", "Display Core Channel Error"),
    (116, "WINDOW_CHANNEL_REGS", "Display Window Channel Error"),
    (117, "CURSOR_CHANNEL_REGS", "Display Cursor Channel Error"),
    (118, "HEAD_REGS", "Display Pixel Pipeline Error"),
)
# fmt: on
_ROWS += [
    _x(
        code,
        mnemonic,
        name,
        "info",
        "driver",
        _X,
        "nothing for compute jobs",
        "a display pipeline error; it does not affect CUDA work",
    )
    for code, mnemonic, name in _DISPLAY
]

XIDS: dict[int, XidInfo] = {row.code: row for row in sorted(_ROWS, key=lambda r: r.code)}
"""Every documented Xid by code."""


def xid_info(code: int | str) -> XidInfo | None:
    """The table row of Xid ``code`` (an int or its decimal text), else ``None``."""
    if isinstance(code, bool):
        return None
    if isinstance(code, str):
        text = code.strip()
        if not (text.isascii() and text.isdigit()) or len(text) > 6:
            return None
        code = int(text)
    return XIDS.get(code) if isinstance(code, int) else None
