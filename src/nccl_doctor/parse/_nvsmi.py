"""Helpers shared by the three nvidia-smi parsers (table, ``-q``, XML).

Values here are text as nvidia-smi prints it (``81559 MiB``, ``35 C``,
``74.71 W``, ``Enabled``, ``16x``); every converter is total: odd input gives
``None``, never an exception. ``-q`` and XML outputs are first turned into a
:class:`Record` (path -> value and line), then :func:`gpu_from_record` maps
either onto a :class:`~nccl_doctor.facts.gpu.Gpu` with one table of paths.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.gpu import Gpu, GpuProcess, MigDevice
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._values import cite

#: Numbers longer than this are absurd in nvidia-smi output; refuse them.
_MAX_DIGITS = 18
#: The space after the number is matched once (``\s*unit*\s*`` would split a long run of
#: spaces every possible way before failing).
_NUMBER = LazyPattern(r"^\s*(-?\d+(?:\.\d+)?)\s*(?:[A-Za-z%()/]+\s*)?$")
_BUS_ID = LazyPattern(
    r"(?<![0-9A-Fa-f:])(?P<domain>[0-9A-Fa-f]{4,8}):(?P<bus>[0-9A-Fa-f]{2}):"
    r"(?P<dev>[0-9A-Fa-f]{2})\.(?P<fn>[0-7])(?![0-9A-Fa-f])"
)
_ERROR_MARKERS = ("err!", "unknown error", "gpu is lost", "requires reset", "gpu lost")
_COMPUTE_MODES = {
    "default": "Default",
    "e. process": "Exclusive_Process",
    "exclusive_process": "Exclusive_Process",
    "exclusive process": "Exclusive_Process",
    "e. thread": "Exclusive_Thread",
    "exclusive_thread": "Exclusive_Thread",
    "exclusive thread": "Exclusive_Thread",
    "prohibited": "Prohibited",
}
_TRUE = frozenset({"enabled", "on", "yes", "true", "active"})
_FALSE = frozenset({"disabled", "off", "no", "false", "not active"})


def is_error(value: str | None) -> bool:
    """Whether ``value`` is nvidia-smi's marker for a field it failed to read."""
    text = (value or "").strip().lower()
    return any(marker in text for marker in _ERROR_MARKERS)


def number(value: str | None) -> float | None:
    """The number at the start of ``value`` (``35 C``, ``74.71 W``, ``16x``), else ``None``."""
    if value is None:
        return None
    match = _NUMBER.match(value)
    if match is None or len(match[1]) > _MAX_DIGITS:
        return None
    try:
        return float(match[1])
    except ValueError:
        return None


def integer(value: str | None) -> int | None:
    """A whole number with an optional unit (``81559 MiB``, ``0 %``, ``16x``), else ``None``."""
    found = number(value)
    if found is None or not found.is_integer() or found < 0:
        return None
    return int(found)


def flag(value: str | None) -> bool | None:
    """Enabled/On/Yes/Active as ``True``, Disabled/Off/No/Not Active as ``False``."""
    text = (value or "").strip().rstrip("*").strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    return None


def text_value(value: str | None) -> str | None:
    """``value`` stripped, or ``None`` for N/A-like and error text."""
    if value is None:
        return None
    text = value.strip()
    low = text.lower()
    if (
        not text
        or low in {"n/a", "[n/a]", "not supported", "[not supported]", "unknown"}
        or low.startswith("requested functionality")
        or is_error(text)
    ):
        return None
    return text


def compute_mode(value: str | None) -> str | None:
    """The compute mode under its ``-q`` name (``E. Process`` -> ``Exclusive_Process``)."""
    text = text_value(value)
    if text is None:
        return None
    return _COMPUTE_MODES.get(text.lower(), text)


def bus_id(value: str | None) -> str | None:
    """A PCI bus id as ``00000000:3B:00.0`` (8-digit domain, upper case), else ``None``."""
    if not value:
        return None
    match = _BUS_ID.search(value)
    if match is None:
        return None
    domain = match["domain"].upper().rjust(8, "0")
    return f"{domain}:{match['bus'].upper()}:{match['dev'].upper()}.{match['fn']}"


def snake(label: str) -> str:
    """A ``-q`` label as a path part: ``FB Memory Usage`` -> ``fb_memory_usage``."""
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")


def reason_name(key: str) -> str:
    """A clocks event/throttle reason under its XML name (``Idle`` -> ``gpu_idle``)."""
    name = snake(key)
    for prefix in ("clocks_event_reason_", "clocks_throttle_reason_"):
        name = name.removeprefix(prefix)
    return {"idle": "gpu_idle", "display_clock_setting": "display_clocks_setting"}.get(name, name)


@dataclass
class Record:
    """The values of one ``-q`` section or XML element: path -> (value, line).

    Paths are ``/``-joined snake-case labels or tags relative to the GPU
    (``fb_memory_usage/used``); the first value of a path wins.
    """

    line: Line
    values: dict[str, tuple[str, Line]] = field(default_factory=dict)

    def put(self, path: str, value: str, line: Line) -> None:
        """Record ``value`` at ``path`` unless the path already has one."""
        self.values.setdefault(path, (value, line))

    def get(self, paths: Iterable[str]) -> tuple[str, Line] | None:
        """The value and line of the first of ``paths`` present."""
        for path in paths:
            if path in self.values:
                return self.values[path]
        return None

    def under(self, prefixes: Iterable[str]) -> list[tuple[str, str, Line]]:
        """(rest of path, value, line) of every path under one of ``prefixes``."""
        heads = tuple(p.rstrip("/") + "/" for p in prefixes)
        out: list[tuple[str, str, Line]] = []
        for path, (value, line) in self.values.items():
            for head in heads:
                if path.startswith(head):
                    out.append((path[len(head) :], value, line))
                    break
        return out


# field -> (paths in -q and XML, converter); first present path wins.
_Conv = Callable[[str | None], object]
_GPU_FIELDS: tuple[tuple[str, tuple[str, ...], _Conv], ...] = (
    ("bus_id", ("pci/bus_id", "pci/pci_bus_id"), bus_id),
    ("uuid", ("gpu_uuid", "uuid"), text_value),
    ("name", ("product_name",), text_value),
    ("product_brand", ("product_brand",), text_value),
    ("product_architecture", ("product_architecture",), text_value),
    ("serial", ("serial_number", "serial"), text_value),
    ("vbios_version", ("vbios_version",), text_value),
    ("minor_number", ("minor_number",), integer),
    ("persistence_mode", ("persistence_mode",), flag),
    ("driver_model", ("driver_model/current", "driver_model/current_dm"), text_value),
    ("display_active", ("display_active",), flag),
    ("fan_pct", ("fan_speed",), integer),
    (
        "temperature_c",
        ("temperature/gpu_current_temp", "temperature/gpu_temp"),
        integer,
    ),
    (
        "temperature_slowdown_c",
        ("temperature/gpu_slowdown_temp", "temperature/gpu_temp_slow_threshold"),
        integer,
    ),
    ("perf_state", ("performance_state",), text_value),
    (
        "power_draw_w",
        tuple(
            f"{section}/{key}"
            for section in ("power_readings", "gpu_power_readings")
            for key in ("power_draw", "average_power_draw", "instant_power_draw")
        ),
        number,
    ),
    (
        "power_limit_w",
        tuple(
            f"{section}/{key}"
            for section in ("power_readings", "gpu_power_readings")
            for key in ("enforced_power_limit", "current_power_limit", "power_limit")
        ),
        number,
    ),
    ("memory_used_mib", ("fb_memory_usage/used",), integer),
    ("memory_total_mib", ("fb_memory_usage/total",), integer),
    ("memory_reserved_mib", ("fb_memory_usage/reserved",), integer),
    ("utilization_gpu_pct", ("utilization/gpu", "utilization/gpu_util"), integer),
    ("utilization_memory_pct", ("utilization/memory", "utilization/memory_util"), integer),
    ("compute_mode", ("compute_mode",), compute_mode),
    ("mig_mode", ("mig_mode/current", "mig_mode/current_mig"), flag),
    ("mig_mode_pending", ("mig_mode/pending", "mig_mode/pending_mig"), flag),
    ("ecc_mode", ("ecc_mode/current", "ecc_mode/current_ecc"), flag),
    ("ecc_mode_pending", ("ecc_mode/pending", "ecc_mode/pending_ecc"), flag),
    (
        "retired_pages_single_bit",
        (
            "retired_pages/single_bit_ecc",
            "retired_pages/multiple_single_bit_retirement/retired_count",
        ),
        integer,
    ),
    (
        "retired_pages_double_bit",
        ("retired_pages/double_bit_ecc", "retired_pages/double_bit_retirement/retired_count"),
        integer,
    ),
    (
        "remapped_rows_correctable",
        ("remapped_rows/correctable_error", "remapped_rows/remapped_row_corr"),
        integer,
    ),
    (
        "remapped_rows_uncorrectable",
        ("remapped_rows/uncorrectable_error", "remapped_rows/remapped_row_unc"),
        integer,
    ),
    (
        "remapped_rows_pending",
        ("remapped_rows/pending", "remapped_rows/remapped_row_pending"),
        flag,
    ),
    (
        "remapped_rows_failure",
        ("remapped_rows/remapping_failure_occurred", "remapped_rows/remapped_row_failure"),
        flag,
    ),
    (
        "pcie_gen_current",
        (
            "pci/gpu_link_info/pcie_generation/current",
            "pci/pci_gpu_link_info/pcie_gen/current_link_gen",
        ),
        integer,
    ),
    (
        "pcie_gen_max",
        ("pci/gpu_link_info/pcie_generation/max", "pci/pci_gpu_link_info/pcie_gen/max_link_gen"),
        integer,
    ),
    (
        "pcie_gen_device_max",
        (
            "pci/gpu_link_info/pcie_generation/device_max",
            "pci/pci_gpu_link_info/pcie_gen/max_device_link_gen",
        ),
        integer,
    ),
    (
        "pcie_gen_host_max",
        (
            "pci/gpu_link_info/pcie_generation/host_max",
            "pci/pci_gpu_link_info/pcie_gen/max_host_link_gen",
        ),
        integer,
    ),
    (
        "pcie_width_current",
        (
            "pci/gpu_link_info/link_width/current",
            "pci/pci_gpu_link_info/link_widths/current_link_width",
        ),
        integer,
    ),
    (
        "pcie_width_max",
        ("pci/gpu_link_info/link_width/max", "pci/pci_gpu_link_info/link_widths/max_link_width"),
        integer,
    ),
    ("pcie_replays", ("pci/replays_since_reset", "pci/replay_counter"), integer),
    ("fabric_state", ("fabric/state",), text_value),
    ("fabric_status", ("fabric/status",), text_value),
    ("reset_required", ("gpu_reset_status/reset_required",), flag),
    (
        "drain_and_reset_recommended",
        ("gpu_reset_status/drain_and_reset_recommended",),
        flag,
    ),
    ("recovery_action", ("gpu_recovery_action",), text_value),
)
_PENDING_RETIREMENT = (
    "retired_pages/pending_page_blacklist",
    "retired_pages/pending",
    "retired_pages/pending_page_retirement",
    "retired_pages/pending_blacklist",
    "retired_pages/pending_retirement",
)
_REASON_SECTIONS = ("clocks_event_reasons", "clocks_throttle_reasons")


def _ecc_sum(
    record: Record, scope: str, uncorrectable: bool
) -> tuple[int | None, Line | None, bool]:
    """Sum of the (un)correctable counters under ``ecc_errors/<scope>``.

    Returns the sum (``None`` when no counter is a number), the line of the
    first counter read, and whether a counter read as an error marker.
    """
    total: int | None = None
    first: Line | None = None
    failed = False
    old = "double_bit/total" if uncorrectable else "single_bit/total"
    items = record.under([f"ecc_errors/{scope}"])
    olds = [item for item in items if item[0] == old]
    picked = olds or [
        item
        for item in items
        if "/" not in item[0]
        and ("uncorrectable" in item[0]) == uncorrectable
        and "correctable" in item[0]
    ]
    for _, value, line in picked:
        if is_error(value):
            failed = True
        count = integer(value)
        if count is None:
            continue
        total = count if total is None else total + count
        first = first or line
    return total, first, failed


def gpu_from_record(
    record: Record, tool: str, header_bus_id: str | None, rank: int | None, host: str | None
) -> Gpu:
    """A :class:`Gpu` from the values of one ``-q`` GPU section or XML ``<gpu>``."""
    values: dict[str, object] = {}
    cites: list[tuple[str, Cite]] = []
    errors: list[str] = []
    for name, paths, conv in _GPU_FIELDS:
        found = record.get(paths)
        if found is None:
            continue
        raw, line = found
        if is_error(raw):
            errors.append(name)
            cites.append((name, cite(line)))
            continue
        value = conv(raw)
        if value is not None:
            values[name] = value
            cites.append((name, cite(line)))
    for scope in ("volatile", "aggregate"):
        for uncorrectable, suffix in ((True, "uncorrected"), (False, "corrected")):
            name = f"ecc_{scope}_{suffix}"
            total, where, failed = _ecc_sum(record, scope, uncorrectable)
            if failed:
                errors.append(name)
            if total is not None and where is not None:
                values[name] = total
                cites.append((name, cite(where)))
    pending = [record.values[p] for p in _PENDING_RETIREMENT if p in record.values]
    flags = [(flag(value), line) for value, line in pending]
    known = [(f, line) for f, line in flags if f is not None]
    if known:
        hit = next(((f, line) for f, line in known if f), known[0])
        values["retired_pages_pending"] = hit[0]
        cites.append(("retired_pages_pending", cite(hit[1])))
    reasons = record.under(_REASON_SECTIONS)
    if reasons:
        active = tuple(
            dict.fromkeys(
                reason_name(key) for key, value, _ in reasons if "/" not in key and flag(value)
            )
        )
        values["clocks_event_reasons"] = active
        for key, value, line in reasons:
            if flag(value):
                cites.append((f"clocks_event_reasons.{reason_name(key)}", cite(line)))
                break
    if "bus_id" not in values and header_bus_id is not None:
        values["bus_id"] = header_bus_id
    return Gpu(
        cite=cite(record.line),
        rank=rank,
        host=host,
        tool=tool,
        errors=tuple(dict.fromkeys(errors)),
        field_cites=tuple(cites),
        **values,  # type: ignore[arg-type]
    )


def process_from_record(
    record: Record, tool: str, gpu: Gpu | None, rank: int | None, host: str | None
) -> GpuProcess | None:
    """A :class:`GpuProcess` from one ``-q`` process entry or XML ``<process_info>``."""
    found = record.get(("process_id", "pid"))
    pid = integer(found[0]) if found else None
    if pid is None:
        return None
    kind = record.get(("type",))
    name = record.get(("name", "process_name"))
    memory = record.get(("used_gpu_memory", "used_memory"))
    gi = record.get(("gpu_instance_id",))
    ci = record.get(("compute_instance_id",))
    name_text = name[0].strip() if name and name[0].strip() else None
    return GpuProcess(
        cite=cite(record.line),
        rank=rank,
        host=host,
        tool=tool,
        pid=pid,
        gpu_bus_id=gpu.bus_id if gpu else None,
        gpu_uuid=gpu.uuid if gpu else None,
        gi_id=integer(gi[0]) if gi else None,
        ci_id=integer(ci[0]) if ci else None,
        type=text_value(kind[0]) if kind else None,
        name=name_text,
        name_truncated=bool(
            name_text and (name_text.startswith("...") or name_text.endswith("..."))
        ),
        memory_used_mib=integer(memory[0]) if memory else None,
    )


def mig_from_record(
    record: Record, tool: str, gpu: Gpu | None, rank: int | None, host: str | None
) -> MigDevice | None:
    """A :class:`MigDevice` from one ``-q`` MIG device entry or XML ``<mig_device>``."""

    def num(*paths: str) -> int | None:
        found = record.get(paths)
        return integer(found[0]) if found else None

    shared = ("device_attributes/shared/",)
    device = MigDevice(
        cite=cite(record.line),
        rank=rank,
        host=host,
        tool=tool,
        gpu_bus_id=gpu.bus_id if gpu else None,
        gpu_uuid=gpu.uuid if gpu else None,
        gi_id=num("gpu_instance_id"),
        ci_id=num("compute_instance_id"),
        mig_index=num("index", "device"),
        memory_used_mib=num("fb_memory_usage/used"),
        memory_total_mib=num("fb_memory_usage/total"),
        bar1_used_mib=num("bar1_memory_usage/used"),
        bar1_total_mib=num("bar1_memory_usage/total"),
        sm_count=num(*(s + "multiprocessor_count" for s in shared)),
        ecc_volatile_uncorrected=num(
            "ecc_error_count/volatile_count/sram_uncorrectable",
            "ecc_errors/volatile/sram_uncorrectable",
        ),
        copy_engines=num(*(s + "copy_engine_count" for s in shared)),
        encoders=num(*(s + "encoder_count" for s in shared)),
        decoders=num(*(s + "decoder_count" for s in shared)),
        ofa_count=num(*(s + "ofa_count" for s in shared)),
        jpeg_count=num(*(s + "jpg_count" for s in shared)),
    )
    if device.gi_id is None and device.mig_index is None and device.memory_total_mib is None:
        return None
    return device
