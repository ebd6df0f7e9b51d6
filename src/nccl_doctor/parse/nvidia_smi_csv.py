"""``nvidia-smi --query-gpu=... --format=csv``: one row per GPU under a header of query names.

The header names the fields (``index, pci.bus_id, pcie.link.width.current [...]``; a unit in
brackets after a name unless ``noheader``/``nounits`` dropped it); each row gives their values
in that order (``2, 00000000:B1:00.0, 4, 4, 8, 16, 99 %``). The fields map onto the same
paths as ``-q`` and XML, so one :class:`~nccl_doctor.facts.gpu.Gpu` comes of each row, with the
fields the query asked for and nothing else. A row must have the header's number of values;
the block ends at the first that has not. Without a header (``noheader``) the columns are
unknown and nothing is read.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.base import Fact
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._nvsmi import Record, bus_id, gpu_from_record, integer
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
    known = [n for n in names if n in _PATHS or n == "index"]
    return tuple(names) if len(known) >= _LEAST and any("." in n for n in known) else None


class NvidiaSmiCsvParser(BlockParser):
    """Parses ``nvidia-smi --query-gpu=... --format=csv`` into :class:`Gpu` facts."""

    kind = "nvidia-smi-csv"
    anchors = ("pci.bus_id", "utilization.gpu", "memory.used", "pcie.link", "temperature.gpu")
    max_lines = 1_000

    def starts(self, line: Line) -> bool:
        """A header line of query names (two known ones at least)."""
        if not any(anchor in line.raw for anchor in self.anchors):
            return False
        return _header(line.text) is not None

    def accepts(self, line: Line, block: Sequence[Line]) -> bool:
        """Rows with as many values as the header has names."""
        names = _header(block[0].text)
        return names is not None and len(line.text.split(",")) == len(names)

    def parse(self, block: Sequence[Line]) -> list[Fact]:
        """One :class:`Gpu` per row."""
        names = _header(block[0].text) if block else None
        if names is None:
            return []
        facts: list[Fact] = []
        for line in block[1:]:
            values = [v.strip() for v in line.text.split(",")]
            record = Record(line)
            index = None
            for name, value in zip(names, values, strict=True):
                if name == "index":
                    index = integer(value)
                elif name in _PATHS:
                    record.put(_PATHS[name], value, line)
            found = record.get(("pci/bus_id",))
            card = gpu_from_record(
                record, TOOL, bus_id(found[0]) if found else None, line.rank, line.host
            )
            facts.append(dataclasses.replace(card, index=index))
        return facts
