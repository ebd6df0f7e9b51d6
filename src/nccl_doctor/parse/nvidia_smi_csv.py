"""``nvidia-smi --query-gpu=... --format=csv`` and ``--query-compute-apps``: rows by query name.

The header names the fields (``index, pci.bus_id, pcie.link.width.current [...]``; a unit in
brackets after a name unless ``noheader``/``nounits`` dropped it); each row gives their values
in that order (``2, 00000000:B1:00.0, 4, 4, 8, 16, 99 %``). The fields map onto the same
paths as ``-q`` and XML, so one :class:`~nccl_doctor.facts.gpu.Gpu` comes of each row, with the
fields the query asked for and nothing else (a clocks event or throttle reason,
``clocks_event_reasons.hw_thermal_slowdown``, ``Active``, as the XML's). A row must have the
header's number of values; the block ends at the first that has not. Without a header
(``noheader``) the command line that asked names the columns (``nvidia-smi
--query-gpu=index,temperature.gpu --format=csv,noheader``, its rows pasted under it); without
either nothing is read.

``--query-compute-apps=pid,process_name,used_memory,gpu_bus_id`` prints one row per process
using a GPU (``3120449, python, 8742 MiB, 00000000:47:00.0``) under its own names (``pid``,
``process_name``, ``used_gpu_memory [MiB]``, ``gpu_bus_id``, ``gpu_uuid``); each row is one
:class:`~nccl_doctor.facts.gpu.GpuProcess` on the GPU its bus id or UUID names (no index: the
query has none), and the header a :class:`~nccl_doctor.facts.gpu.GpuProcessTable`.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.gpu import GpuProcess, GpuProcessTable
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._nvsmi import Record, bus_id, gpu_from_record, integer
from nccl_doctor.parse._values import cite
from nccl_doctor.parse.base import BlockParser

TOOL = "nvidia-smi-csv"

#: Query names -> the ``-q``/XML path their value fills (nvidia-smi --help-query-gpu).
_PATHS = {
    "pci.bus_id": "pci/bus_id",
    "name": "product_name",
    "uuid": "uuid",
    "serial": "serial",
    "persistence_mode": "persistence_mode",
    "fan.speed": "fan_speed",
    "pstate": "performance_state",
    "temperature.gpu": "temperature/gpu_current_temp",
    "power.draw": "power_readings/power_draw",
    "power.limit": "power_readings/power_limit",
    "memory.used": "fb_memory_usage/used",
    "memory.total": "fb_memory_usage/total",
    "utilization.gpu": "utilization/gpu",
    "utilization.memory": "utilization/memory",
    "compute_mode": "compute_mode",
    "mig.mode.current": "mig_mode/current",
    "mig.mode.pending": "mig_mode/pending",
    "ecc.mode.current": "ecc_mode/current",
    "pcie.link.gen.current": "pci/gpu_link_info/pcie_generation/current",
    "pcie.link.gen.max": "pci/gpu_link_info/pcie_generation/max",
    "pcie.link.gen.gpucurrent": "pci/gpu_link_info/pcie_generation/current",
    "pcie.link.gen.gpumax": "pci/gpu_link_info/pcie_generation/device_max",
    "pcie.link.gen.hostmax": "pci/gpu_link_info/pcie_generation/host_max",
    "pcie.link.width.current": "pci/gpu_link_info/link_width/current",
    "pcie.link.width.max": "pci/gpu_link_info/link_width/max",
}
#: ``--query-compute-apps`` names (``--help-query-compute-apps``; the header prints the first
#: spelling of each pair): a header with ``pid`` and a memory or GPU field lists processes.
_APP_FIELDS = frozenset({"used_gpu_memory", "used_memory", "gpu_bus_id", "gpu_uuid"})
#: The clocks event reasons' query names (``clocks_throttle_reasons.`` before driver 535): each
#: fills the XML's reason of the same name.
_REASONS = ("clocks_event_reasons.", "clocks_throttle_reasons.")
#: A command line that asks for the fields with no header printed: its field list.
_NOHEADER = LazyPattern(
    r"nvidia-smi\b[^|\n]{0,200}?--query-(?:gpu|compute-apps)[= ](?P<fields>[a-z0-9_.,]{3,2000})"
    r"(?=[^|\n]{0,300}?--format[= ][a-z,]{0,40}\bnoheader)"
)
#: A header field: a query name, with the unit nvidia-smi appends (``utilization.gpu [%]``).
_FIELD = LazyPattern(r"^\s*(?P<name>[a-z_][a-z0-9_.]{1,60})(?:\s\[[^\]]{1,20}\])?\s*$")
#: A header names this many known fields at least, one with a dot (not any CSV's header).
_LEAST = 2
_MAX_FIELDS = 64


@functools.lru_cache(maxsize=16)
def _header(text: str) -> tuple[str, ...] | None:
    """The query names of a header line, or ``None`` when it is no query header (remembered:
    every row of a block asks for its header's)."""
    parts = text.split(",")
    if not 2 <= len(parts) <= _MAX_FIELDS:
        return None
    names = []
    for part in parts:
        match = _FIELD.match(part)
        if match is None:
            return None
        names.append(match["name"])
    known = [n for n in names if n in _PATHS or n == "index" or n.startswith(_REASONS)]
    if len(known) >= _LEAST and any("." in n for n in known):
        return tuple(names)
    return tuple(names) if "pid" in names and _APP_FIELDS.intersection(names) else None


def _path(name: str) -> str | None:
    """The ``-q``/XML path a query name fills, if any."""
    if name.startswith(_REASONS):
        reason = name.partition(".")[2]
        return None if reason in ("active", "supported") else f"clocks_event_reasons/{reason}"
    return _PATHS.get(name)


@functools.lru_cache(maxsize=16)
def _names(text: str) -> tuple[str, ...] | None:
    """The query names of a header line or of a ``noheader`` command line (remembered, as
    :func:`_header`: every row of a block asks for them)."""
    if found := _NOHEADER.search(text):
        return _header(found["fields"].strip(","))
    return _header(text)


def _process(names: tuple[str, ...], line: Line) -> GpuProcess | None:
    """One ``--query-compute-apps`` row, or ``None`` when its pid is not a number."""
    row = dict(zip(names, (v.strip() for v in line.text.split(",")), strict=True))
    pid = integer(row.get("pid"))
    if pid is None:
        return None
    memory = row.get("used_gpu_memory", row.get("used_memory"))
    uuid = row.get("gpu_uuid", "")
    return GpuProcess(
        cite=cite(line),
        rank=line.rank,
        host=line.host,
        tool=TOOL,
        pid=pid,
        gpu_bus_id=bus_id(row.get("gpu_bus_id")),
        gpu_uuid=uuid if uuid.startswith(("GPU-", "MIG-")) else None,
        name=row.get("process_name", row.get("name")) or None,
        memory_used_mib=integer(memory),
    )


class NvidiaSmiCsvParser(BlockParser):
    """Parses ``nvidia-smi --query-gpu=... --format=csv`` into :class:`Gpu` facts."""

    kind = "nvidia-smi-csv"
    anchors = (
        "pci.bus_id",
        "utilization.gpu",
        "memory.used",
        "pcie.link",
        "temperature.gpu",
        "process_name",
        "used_gpu_memory",
        "gpu_bus_id",
        "clocks_event_reasons.",
        "clocks_throttle_reasons.",
    )
    max_lines = 1_000

    def starts(self, line: Line) -> bool:
        """A header line of query names (two known ones at least), or a command line that
        asks for them with no header."""
        if not any(anchor in line.raw for anchor in self.anchors):
            return False
        return _names(line.text) is not None

    def accepts(self, line: Line, block: Sequence[Line]) -> bool:
        """Rows with as many values as the header has names."""
        names = _names(block[0].text)
        return names is not None and len(line.text.split(",")) == len(names)

    def parse(self, block: Sequence[Line]) -> list[Fact]:
        """One :class:`Gpu` per row, or one :class:`GpuProcess` per row of a process query."""
        names = _names(block[0].text) if block else None
        if names is None:
            return []
        facts: list[Fact] = []
        if "pid" in names:
            head = block[0]
            procs = [p for line in block[1:] if (p := _process(names, line)) is not None]
            table = GpuProcessTable(
                cite=cite(head), rank=head.rank, host=head.host, tool=TOOL, rows=len(procs)
            )
            return [table, *procs]
        for line in block[1:]:
            values = [v.strip() for v in line.text.split(",")]
            record = Record(line)
            index = None
            for name, value in zip(names, values, strict=True):
                if name == "index":
                    index = integer(value)
                elif (path := _path(name)) is not None:
                    record.put(path, value, line)
            found = record.get(("pci/bus_id",))
            card = gpu_from_record(
                record, TOOL, bus_id(found[0]) if found else None, line.rank, line.host
            )
            facts.append(dataclasses.replace(card, index=index))
        return facts
