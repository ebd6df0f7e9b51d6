"""``nvidia-smi -q`` (alias ``-a``; also ``-q -i N`` and ``-q -d SECTION``), drivers 375 to 590.

The output is indented ``Key : value`` lines under section headers. Labels
become snake-case path parts by indentation (``FB Memory Usage`` / ``Used``
-> ``fb_memory_usage/used``), whatever the key column's width (36 in 375,
42 from 450, wider in 590's fabric health). A GPU section opens at its
``GPU 00000000:18:00.0`` header (4-digit domains of old drivers are
normalised); the top lines give :class:`DriverInfo`. Processes come in both
layouts (``Type``/``Name`` indented under ``Process ID`` or level with it,
with ``GPU instance ID`` first from 450). The author's ``[...]`` elisions are
skipped. A block starts at the ``NVSMI LOG`` banner, a top-level
``Timestamp``/``Driver Version``/``Attached GPUs`` line, a GPU header or one GPU's
section pasted alone (``-q -i N -d PCIE``, ``ROW_REMAPPER``, ``PAGE_RETIREMENT`` or ``ECC``
trimmed to it: the PCIe link, remapped rows, retired pages, ECC counts; the clock event
reasons alone are gpu.thermal_power's to read), and runs over ``Key : value`` lines,
headers, elisions and a few blank lines.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.gpu import DriverInfo, Gpu, GpuProcessTable
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._nvsmi import (
    Record,
    bus_id,
    gpu_from_record,
    integer,
    mig_from_record,
    process_from_record,
    snake,
    text_value,
)
from nccl_doctor.parse._values import cite
from nccl_doctor.parse.base import BlockParser

TOOL = "nvidia-smi-q"
_BANNER = LazyPattern(r"^=+\s*NVSMI LOG\s*=+$")
_GPU = LazyPattern(r"^GPU\s+(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])$")
#: Key and value end in a non-space (a lazy ``.*?`` before ``\s*`` would retry every split
#: of a long run of spaces).
_KV = LazyPattern(r"^(?P<key>[^:\s](?:[^:]*[^:\s])?)\s*:(?:\s+(?P<value>\S(?:.*\S)?))?\s*$")
_KV_STRICT = LazyPattern(r"^[^:\s][^:]*?\s:(?:\s|$)")
_HEADER = LazyPattern(r"^[A-Za-z0-9][A-Za-z0-9 ./()_+&-]{0,60}$")
_ELISION = LazyPattern(r"^(?:\[\s*(?:\.{2,}|…)\s*\]|\.{3,}|…)$")
#: One GPU's sections a paste may hold alone (``-q -i N -d SECTION`` trimmed to it, the GPU's
#: header cut off), and the sections above each: a second one is the next GPU's.
_ALONE: dict[str, tuple[str, ...]] = {
    "GPU Link Info": ("pci",),
    # (grep -A4 -E "PCIe Generation|Link Width" over -d PCIE)
    "PCIe Generation": ("pci", "gpu_link_info"),
    "Link Width": ("pci", "gpu_link_info"),
    "Remapped Rows": (),
    "Retired Pages": (),
    "ECC Errors": (),
}
_TOP_START = LazyPattern(r"^(?:Timestamp|Driver Version|Attached GPUs|CUDA Version)\s+:")
_MAX_BLANKS = 2
_TAB = 4


def _indent(text: str) -> int:
    width = 0
    for char in text:
        if char == " ":
            width += 1
        elif char == "\t":
            width += _TAB
        else:
            break
    return width


class _Gpu:
    """The GPU section being read: its record, processes and MIG devices."""

    def __init__(self, line: Line, bus: str | None, indent: int) -> None:
        self.record = Record(line)
        self.bus = bus
        self.indent = indent
        self.stack: list[tuple[int, str]] = []
        self.processes: list[Record] = []
        self.process_line: Line | None = None
        self.processes_none: Line | None = None
        self.migs: list[Record] = []
        self.mig_depth: int | None = None
        #: opened by one of its sections pasted without its header: those sections met
        self.alone: set[str] = set()


class NvidiaSmiQParser(BlockParser):
    """Parses ``nvidia-smi -q`` / ``-a`` into driver, GPU, process and MIG facts."""

    kind = "nvidia-smi-q"
    anchors = (
        "NVSMI LOG",
        "Attached GPUs",
        "Driver Version  ",
        "CUDA Version  ",
        "Timestamp  ",
        "GPU 0000",
        *_ALONE,
    )

    def starts(self, line: Line) -> bool:
        """The banner, a top-level header line, or a ``GPU <bus id>`` section header."""
        if not any(anchor in line.raw for anchor in self.anchors):
            return False  # the reader would never offer it: keep tests and reads alike
        text = line.text.strip()
        return bool(
            _BANNER.match(text) or _TOP_START.match(text) or _GPU.match(text) or text in _ALONE
        )

    def accepts(self, line: Line, block: Sequence[Line]) -> bool:
        """``Key : value`` lines, section headers, elisions and a few blank lines."""
        raw = line.text.rstrip()
        text = raw.strip()
        if not text:
            blanks = 0
            for earlier in reversed(block):
                if earlier.text.strip():
                    break
                blanks += 1
            return blanks < _MAX_BLANKS
        if _BANNER.match(text) or _GPU.match(text) or _ELISION.match(text):
            return True
        if _KV_STRICT.match(text):
            return True
        return _indent(raw) > 0 and bool(_HEADER.match(text))

    def parse(self, block: Sequence[Line]) -> list[Fact]:
        """Per output a :class:`DriverInfo`; per GPU a :class:`Gpu`, its processes and MIGs."""
        facts: list[Fact] = []
        run: list[Fact] = []
        top: Record | None = None
        gpu: _Gpu | None = None
        for line in block:
            raw = line.text.rstrip()
            text = raw.strip()
            if not text or _BANNER.match(text) or _ELISION.match(text):
                continue
            indent = _indent(raw)
            if header := _GPU.match(text):
                if gpu is not None:
                    run.extend(self._finish(gpu))
                gpu = _Gpu(line, bus_id(header["bus"]), indent)
                continue
            if text in _ALONE and (gpu is None or gpu.alone):
                # a section pasted alone (nvidia-smi -q -i 5 -d ROW_REMAPPER, trimmed to it):
                # one GPU's, its header and the sections above it cut off; the same section
                # again is the next GPU's
                above = _ALONE[text]
                if gpu is not None and text in gpu.alone:
                    run.extend(self._finish(gpu))
                    gpu = None
                if gpu is None:
                    gpu = _Gpu(line, None, indent - 1 - len(above))
                gpu.alone.add(text)
                gpu.stack = [(indent - len(above) + i, name) for i, name in enumerate(above)]
            kv = _KV.match(text)
            if gpu is None or indent <= gpu.indent:
                if kv is None:
                    continue
                key = snake(kv["key"])
                if top is None or key in top.values:
                    # a second output in the same block (another host, a loop)
                    if gpu is not None:
                        run.extend(self._finish(gpu))
                    facts.extend(self._close(top, run))
                    top, gpu, run = Record(line), None, []
                top.put(key, kv["value"] or "", line)
                continue
            self._gpu_line(gpu, line, indent, kv, text)
        if gpu is not None:
            run.extend(self._finish(gpu))
        facts.extend(self._close(top, run))
        return facts

    def _close(self, top: Record | None, run: list[Fact]) -> list[Fact]:
        driver = self._driver(top)
        return ([driver] if driver else []) + run

    @staticmethod
    def _driver(top: Record | None) -> DriverInfo | None:
        if top is None or not top.values:
            return None
        found = top.get(("driver_version", "attached_gpus", "cuda_version"))
        if found is None:
            return None
        line = found[1]

        def value(key: str) -> str | None:
            item = top.get((key,))
            return text_value(item[0]) if item else None

        return DriverInfo(
            cite=cite(line),
            rank=line.rank,
            host=line.host,
            tool=TOOL,
            driver_version=value("driver_version"),
            cuda_version=value("cuda_version"),
            attached_gpus=integer(value("attached_gpus")),
            timestamp=value("timestamp"),
            nvml_version=value("nvml_version"),
        )

    def _gpu_line(
        self,
        gpu: _Gpu,
        line: Line,
        indent: int,
        kv: re.Match[str] | None,
        text: str,
    ) -> None:
        while gpu.stack and gpu.stack[-1][0] >= indent:
            gpu.stack.pop()
        parents = [name for _, name in gpu.stack]
        if kv is None:
            if not _HEADER.match(text):
                return
            name = snake(text)
            if not parents and name == "processes":
                gpu.process_line = line
            if parents == ["mig_devices"]:
                gpu.migs.append(Record(line))
                gpu.mig_depth = len(parents) + 1
            gpu.stack.append((indent, name))
            return
        name = snake(kv["key"])
        value = kv["value"] or ""
        path = [*parents, name]
        if path[0] == "processes":
            self._process_value(gpu, line, name, value, len(path))
        elif path[0] == "mig_devices" and len(path) > 1:
            self._mig_value(gpu, line, path, value)
        else:
            gpu.record.put("/".join(path), value, line)

    @staticmethod
    def _process_value(gpu: _Gpu, line: Line, name: str, value: str, depth: int) -> None:
        if depth == 1:
            if value.strip().lower() == "none":
                gpu.processes_none = line
            return
        if gpu.process_line is None:
            gpu.process_line = line
        current = gpu.processes[-1] if gpu.processes else None
        if (
            current is None
            or (name == "gpu_instance_id" and bool(current.values))
            or (name == "process_id" and "process_id" in current.values)
        ):
            current = Record(line)
            gpu.processes.append(current)
        if name == "process_id":
            current.line = line
        current.put(name, value, line)

    @staticmethod
    def _mig_value(gpu: _Gpu, line: Line, path: list[str], value: str) -> None:
        depth = gpu.mig_depth or 1
        rest = "/".join(path[depth:]) if len(path) > depth else path[-1]
        current = gpu.migs[-1] if gpu.migs else None
        if current is None or (
            gpu.mig_depth is None
            and rest in {"index", "gpu_instance_id"}
            and rest in current.values
        ):
            current = Record(line)
            gpu.migs.append(current)
        current.put(rest, value, line)

    @staticmethod
    def _finish(gpu: _Gpu) -> list[Fact]:
        line = gpu.record.line
        card: Gpu = gpu_from_record(gpu.record, TOOL, gpu.bus, line.rank, line.host)
        facts: list[Fact] = [card]
        for record in gpu.migs:
            mig = mig_from_record(record, TOOL, card, record.line.rank, record.line.host)
            if mig is not None:
                facts.append(mig)
        processes = [
            proc
            for record in gpu.processes
            if (proc := process_from_record(record, TOOL, card, record.line.rank, record.line.host))
        ]
        table_line = gpu.processes_none or gpu.process_line
        if table_line is not None:
            facts.append(
                GpuProcessTable(
                    cite=cite(table_line),
                    rank=table_line.rank,
                    host=table_line.host,
                    tool=TOOL,
                    rows=len(processes),
                    none_found=gpu.processes_none is not None and not processes,
                    gpu_bus_id=card.bus_id,
                )
            )
        facts.extend(processes)
        return facts
