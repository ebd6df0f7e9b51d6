"""Facts of GPUs as nvidia-smi (table, ``-q``, ``-q -x``) and NVML describe them.

All nvidia-smi formats yield the same classes so that rules can join
them; ``tool`` says which one spoke (``nvidia-smi``, ``nvidia-smi-q``,
``nvidia-smi-xml``, ``nvidia-smi-csv`` for ``--query-gpu``; a live reader uses
``nvml``). GPUs are joined on ``bus_id``, normalised to the 8-hex-digit-domain form
``00000000:3B:00.0`` (upper case); ``index`` is the nvidia-smi index, known only in the
table and a query that asks for it.

Names are normalised across formats: ``compute_mode`` is ``Default``,
``Exclusive_Process``, ``Exclusive_Thread`` or ``Prohibited`` (the table's
``E. Process`` reads ``Exclusive_Process``); clock event reasons use the
XML names without their prefix (``sw_power_cap``, ``hw_slowdown``,
``hw_thermal_slowdown``, ``hw_power_brake_slowdown``, ``sw_thermal_slowdown``,
``sync_boost``, ``gpu_idle``, ``applications_clocks_setting``,
``display_clocks_setting``). A value the tool could not read (``ERR!`` in
the table, ``Unknown Error`` in ``-q``/XML) is ``None`` and its field name is
listed in ``errors``: that marker means the GPU is in trouble.
"""

from __future__ import annotations

from dataclasses import dataclass

from nccl_doctor.facts.base import Cite, Fact

#: The evidence kinds (and Gpu tools) of nvidia-smi's outputs: where one was read, the GPUs'
#: state was.
GPU_KINDS = frozenset({"nvidia-smi", "nvidia-smi-q", "nvidia-smi-xml", "nvidia-smi-csv"})
#: GPU memory a process holds below which it is no other tenant: a CUDA context (a sibling
#: rank's stray one on GPU 0 is 300-600 MiB), a display server, a monitoring agent (MiB).
CONTEXT_MIB = 512.0


@dataclass(frozen=True, slots=True, kw_only=True)
class DriverInfo(Fact):
    """The driver an nvidia-smi output reports (cites the driver version line).

    ``cuda_version`` is the newest CUDA the driver supports (not the
    toolkit's); ``smi_version`` is the table header's ``NVIDIA-SMI x`` (it
    differs from the driver under WSL); ``attached_gpus`` is the count ``-q``
    and XML print, which can exceed the GPUs shown (``-i 0``, trimmed pastes).
    """

    tool: str
    driver_version: str | None
    cuda_version: str | None
    smi_version: str | None = None
    nvml_version: str | None = None
    attached_gpus: int | None = None
    timestamp: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Gpu(Fact):
    """One GPU's state (cites its first table row, or its ``-q``/XML section header).

    ``name`` is as printed; the table cuts long names (``GeForce GTX 108...``)
    and then ``name_truncated`` is set. Booleans read Enabled/On/Yes as
    ``True``. ECC counts: ``ecc_volatile_uncorrected`` is the table's
    "Volatile Uncorr. ECC" number, or the sum of the uncorrectable counters
    of ``-q``/XML (SRAM + DRAM, or the old Double Bit total). Retired pages
    and remapped rows are ``None`` where the GPU does not support them.
    ``clocks_event_reasons`` lists the reasons that are Active (``None`` when
    the output has no such section). ``field_cites`` maps a field name to the
    line that gave it, for rules that cite one field (see :meth:`cite_of`).
    """

    tool: str
    index: int | None = None
    bus_id: str | None = None
    uuid: str | None = None
    name: str | None = None
    name_truncated: bool = False
    product_brand: str | None = None
    product_architecture: str | None = None
    serial: str | None = None
    vbios_version: str | None = None
    minor_number: int | None = None
    persistence_mode: bool | None = None
    driver_model: str | None = None
    display_active: bool | None = None
    fan_pct: int | None = None
    temperature_c: int | None = None
    temperature_slowdown_c: int | None = None
    perf_state: str | None = None
    power_draw_w: float | None = None
    power_limit_w: float | None = None
    memory_used_mib: int | None = None
    memory_total_mib: int | None = None
    memory_reserved_mib: int | None = None
    utilization_gpu_pct: int | None = None
    utilization_memory_pct: int | None = None
    compute_mode: str | None = None
    mig_mode: bool | None = None
    mig_mode_pending: bool | None = None
    ecc_mode: bool | None = None
    ecc_mode_pending: bool | None = None
    ecc_volatile_corrected: int | None = None
    ecc_volatile_uncorrected: int | None = None
    ecc_aggregate_corrected: int | None = None
    ecc_aggregate_uncorrected: int | None = None
    retired_pages_single_bit: int | None = None
    retired_pages_double_bit: int | None = None
    retired_pages_pending: bool | None = None
    remapped_rows_correctable: int | None = None
    remapped_rows_uncorrectable: int | None = None
    remapped_rows_pending: bool | None = None
    remapped_rows_failure: bool | None = None
    clocks_event_reasons: tuple[str, ...] | None = None
    pcie_gen_current: int | None = None
    pcie_gen_max: int | None = None
    pcie_gen_device_max: int | None = None
    pcie_gen_host_max: int | None = None
    pcie_width_current: int | None = None
    pcie_width_max: int | None = None
    pcie_replays: int | None = None
    fabric_state: str | None = None
    fabric_status: str | None = None
    reset_required: bool | None = None
    drain_and_reset_recommended: bool | None = None
    recovery_action: str | None = None
    errors: tuple[str, ...] = ()
    field_cites: tuple[tuple[str, Cite], ...] = ()

    def cite_of(self, field: str) -> Cite:
        """The line that gave ``field``, else the GPU's own citation."""
        for name, cite in self.field_cites:
            if name == field:
                return cite
        return self.cite


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuProcess(Fact):
    """One process using a GPU (cites its table row, ``Process ID`` line or ``<pid>``).

    The table gives ``gpu_index``; ``-q``/XML give the GPU's ``gpu_bus_id``
    and ``gpu_uuid``. ``gi_id``/``ci_id`` are the MIG instance ids (``None``
    without MIG). ``type`` is as printed (``C``, ``G``, ``C+G``, ``M``...).
    ``name`` is as printed; the table cuts long paths from the left
    (``...kground_change/bin/python3.10``) and then ``name_truncated`` is set.
    ``memory_used_mib`` is ``None`` for ``N/A`` or a cut number (``13159...``).
    """

    tool: str
    pid: int
    gpu_index: int | None = None
    gpu_bus_id: str | None = None
    gpu_uuid: str | None = None
    gi_id: int | None = None
    ci_id: int | None = None
    type: str | None = None
    name: str | None = None
    name_truncated: bool = False
    memory_used_mib: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuProcessTable(Fact):
    """That a process list was printed, and what it held (cites its header).

    An explicit empty list (``No running processes found``, ``Processes :
    None``, an empty ``<processes>``) sets ``none_found``; a table with a
    header and no rows at all (a container that cannot see host PIDs) has
    ``rows == 0`` and ``none_found`` false. ``truncated`` is set when the
    table was cut (no closing border, or a row cut short);
    ``cut_row_gpu_indices`` are the GPU indices of rows cut before their PID
    (they prove a process on that GPU but yield no :class:`GpuProcess`).
    ``gpu_bus_id`` is set for the per-GPU lists of ``-q``/XML.
    """

    tool: str
    rows: int
    none_found: bool = False
    truncated: bool = False
    cut_row_gpu_indices: tuple[int, ...] = ()
    gpu_bus_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MigDevice(Fact):
    """One MIG device (cites its table row or its ``<mig_device>`` element).

    ``gpu_index`` comes from the table, ``gpu_bus_id``/``gpu_uuid`` from
    ``-q``/XML; ``mig_index`` is the table's "MIG Dev" (XML ``<index>``).
    ``ecc_volatile_uncorrected`` is the device's SRAM uncorrectable count.
    """

    tool: str
    gpu_index: int | None = None
    gpu_bus_id: str | None = None
    gpu_uuid: str | None = None
    gi_id: int | None = None
    ci_id: int | None = None
    mig_index: int | None = None
    memory_used_mib: int | None = None
    memory_total_mib: int | None = None
    bar1_used_mib: int | None = None
    bar1_total_mib: int | None = None
    sm_count: int | None = None
    ecc_volatile_uncorrected: int | None = None
    copy_engines: int | None = None
    encoders: int | None = None
    decoders: int | None = None
    ofa_count: int | None = None
    jpeg_count: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SmiError(Fact):
    """nvidia-smi (or NVML under it) could not read the GPUs (cites the message).

    ``error`` is one of ``no_driver`` (NVIDIA-SMI has failed because it
    couldn't communicate with the NVIDIA driver), ``version_mismatch``
    (Failed to initialize NVML: Driver/library version mismatch),
    ``nvml_init`` (another NVML initialisation failure), ``no_devices`` (No
    devices were found) or ``device_handle`` (Unable to determine the device
    handle for GPU ...: ``GPU is lost`` and the like); ``gpu_index`` and
    ``bus_id`` are the GPU named (newer drivers print both), ``detail`` the
    reason printed last (``Unknown Error``), ``nvml_version`` the ``NVML
    library version`` printed after a mismatch (drivers 535+).
    """

    tool: str
    error: str
    message: str
    gpu_index: int | None = None
    bus_id: str | None = None
    detail: str | None = None
    nvml_version: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DcgmReport(Fact):
    """One message of a ``dcgmi diag`` or ``dcgmi health -c`` table, its parts joined.

    ``source``: ``diag`` or ``health``; ``test``: the diagnostic's test
    (``memory``, ``PCIe``) or the health system (``Memory system``);
    ``entity``: ``GPU0`` where the table names one; ``result``: that test's or
    system's result for it (``Fail``, ``Warn``, ``Failure``, ``Warning``);
    ``kind``: ``Warning`` / ``Info`` (diag's row names) or ``health``;
    ``message``: DCGM's text (a dcgm_errors.h message and DCGM's advice after it).
    """

    source: str
    test: str | None = None
    entity: str | None = None
    result: str | None = None
    kind: str = ""
    message: str = ""
    #: the catalogue's row for the message (``driver.dcgm.pending_page_retirements``) and the
    #: ids it points at, where the catalogue knows it
    signature: str | None = None
    points_at: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        """Whether DCGM reports this as a failure (not a warning or a note)."""
        return (self.result or "").lower() in ("fail", "failure") and self.kind != "Info"
