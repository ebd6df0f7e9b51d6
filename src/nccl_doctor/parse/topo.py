"""``nvidia-smi topo -m``: the GPU/NIC connection matrix, its affinities and legends.

A block starts at the command line (``$ nvidia-smi topo -m``, a fan-out
wrapper's ``2025/05/21 09:40:05 s114 nvidia-smi topo -m``), at the header row
(``GPU0 GPU1 ... CPU Affinity``) or, for a paste that lost the matrix, at a
legend line. Cells are split on whitespace, which works for raw TABs, tab
stops expanded to spaces, and collapsed columns alike; ANSI underline codes
are dropped. A ``host:`` prefix on every line (pdsh) is peeled off and names
the host, as does the wrapper header or a ``user@host`` prompt.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.topology import TopoGpu, TopoLink, TopoMatrix, TopoNic
from nccl_doctor.parse._blocktext import (
    HOST_PREFIX,
    StatefulBlockParser,
    na,
    strip_ansi,
    to_int,
    trailing_blanks,
)
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._values import cite

#: The command as the last thing on its line (a prompt, ``sudo`` or a wrapper may come first),
#: so prose that only mentions it starts nothing.
_COMMAND = LazyPattern(r"nvidia-smi\s+topo\s+(?:-m|-mp|--matrix|--matrix_pci)[\"'`]?\s*$")
_WRAPPER = LazyPattern(
    r"^\s*\d{4}[/-]\d\d[/-]\d\d[ T]\d\d:\d\d:\d\d\S*\s+(?P<host>[\w.-]+)\s.*nvidia-smi"
)
_PROMPT = LazyPattern(
    r"^\s*[\w.-]+@(?P<host>[\w.-]+)[:\s][^#$]*[#$]\s*(?:sudo\s+)?nvidia-smi\s+topo"
)
_DEVICE = LazyPattern(r"^(?:GPU\d+|NIC\d+|mlx\d+_\w+|[a-z][\w.-]*\d)$")
_GPU = LazyPattern(r"^GPU(\d+)$")
_CELL = LazyPattern(r"^(?:X|[A-Z][A-Z0-9]{1,7})$")
_KNOWN_LINKS = ("SYS", "NODE", "PHB", "PXB", "PIX", "SOC", "PSB")
_NV = LazyPattern(r"^NV(\d+)$")
_LEGEND_ENTRY = LazyPattern(r"^\s*\S{1,8}\s*=\s+\S")
_NIC_ENTRY = LazyPattern(r"^\s*(?P<nic>NIC\d+)\s*:\s*(?P<name>\S+)\s*$")
_AFFINITY_COLUMNS = LazyPattern(r"CPU Affinity|NUMA Affinity|GPU NUMA ID|\S+(?: \S+)*")
_CPU_LIST = LazyPattern(r"^\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*$")
_MAX_BLANKS = 3


def _clean(line: Line, prefix: str | None = None) -> str:
    """The text of ``line`` without ANSI codes and without a pdsh ``host:`` prefix."""
    text = strip_ansi(line.text)
    if prefix is not None:
        stripped = text.lstrip()
        if stripped.startswith(prefix + ":"):
            text = stripped[len(prefix) + 1 :]
    return text


def _header(text: str) -> tuple[str | None, tuple[str, ...], tuple[str, ...]] | None:
    """(pdsh host, devices, affinity columns) of a header row, else ``None``."""
    at = text.find("CPU Affinity")
    if at < 0:
        return None
    host = None
    left = text[:at]
    if (m := HOST_PREFIX.match(left)) and not re.match(r"^(?:GPU|NIC)\d+$", m["host"]):
        host, left = m["host"], left[m.end() :]
    devices = tuple(left.split())
    if not devices or not any(_GPU.match(d) for d in devices):
        return None
    if not all(_DEVICE.match(d) for d in devices) or len(set(devices)) != len(devices):
        return None
    columns = tuple(c.strip() for c in _AFFINITY_COLUMNS.findall(text[at:]))
    return host, devices, columns


def _is_link(cell: str) -> bool:
    """Whether ``cell`` is a whole link cell (not a cut ``NV`` or ``SY``)."""
    if not _CELL.match(cell) or cell == "NV":
        return False
    return cell in _KNOWN_LINKS or not any(k.startswith(cell) for k in _KNOWN_LINKS)


def _is_header(text: str) -> bool:
    """Whether ``text`` looks like any matrix header (this tool's or ``topo -p2p``'s)."""
    tokens = text.split()
    return (
        bool(tokens)
        and all(_DEVICE.match(t) for t in tokens[:2])
        and _GPU.match(tokens[0]) is not None
    )


@dataclass(frozen=True, slots=True)
class _State:
    """Where a topo block is: before the header, in the matrix, or in a legend."""

    phase: str
    devices: frozenset[str] = frozenset()
    prefix: str | None = None


class TopoParser(StatefulBlockParser[_State]):
    """Parses ``nvidia-smi topo -m`` (and legend-only fragments) into topology facts."""

    kind = "topo"
    anchors = ("nvidia-smi topo", "CPU Affinity", "= Connection traversing", "NIC Legend")

    def starts(self, line: Line) -> bool:
        """A command line, a header row, or a legend line."""
        text = strip_ansi(line.text)
        if _COMMAND.search(text) or _header(text) is not None:
            return True
        return "= Connection traversing" in text or text.strip() == "NIC Legend:"

    def _initial(self, first: Line) -> _State:
        text = strip_ansi(first.text)
        if (head := _header(text)) is not None:
            return _State("matrix", frozenset(head[1]), head[0])
        if _COMMAND.search(text):
            return _State("pre")
        if text.strip() == "NIC Legend:":
            return _State("nic")
        return _State("legend")

    def _step(self, state: _State, line: Line) -> _State | None:
        text = _clean(line, state.prefix)
        stripped = text.strip()
        if not stripped:
            return state
        if state.phase == "pre":
            if _WRAPPER.match(text):
                return state
            if (head := _header(text)) is not None:
                return _State("matrix", frozenset(head[1]), head[0])
            return None
        if _WRAPPER.match(text) or _COMMAND.search(text) or _is_header(text):
            return None
        if state.phase == "matrix" and stripped.split()[0] in state.devices:
            return state
        if stripped == "Legend:":
            return dataclasses.replace(state, phase="legend")
        if stripped == "NIC Legend:":
            return dataclasses.replace(state, phase="nic")
        if state.phase in ("matrix", "legend") and _LEGEND_ENTRY.match(text):
            return dataclasses.replace(state, phase="legend")
        if state.phase == "legend" and text[:1].isspace() and "=" not in stripped:
            return state  # a legend entry wrapped by the terminal
        if state.phase == "nic" and _NIC_ENTRY.match(text):
            return state
        return None

    def accepts(self, line: Line, block: Sequence[Line]) -> bool:
        """Whether ``line`` continues the block (at most three blank lines in a row)."""
        if not line.text.strip() and trailing_blanks(block) >= _MAX_BLANKS:
            return False
        return super().accepts(line, block)

    def parse(self, block: Sequence[Line]) -> list[Fact]:
        """The topology facts of one block."""
        return parse_topo_lines(block)


def _cpu_count(affinity: str | None) -> int | None:
    if affinity is None or not _CPU_LIST.match(affinity):
        return None
    total = 0
    for part in affinity.split(","):
        low, _, high = part.partition("-")
        a, b = to_int(low), to_int(high) if high else to_int(low)
        if a is None or b is None or b < a:
            return None
        total += b - a + 1
    return total


def _nic(line: Line, nic: str, name: str, host: str | None) -> TopoNic:
    return TopoNic(nic=nic, name=name, cite=cite(line), rank=line.rank, host=line.host or host)


def _block_host(lines: Sequence[Line]) -> str | None:
    """The host a wrapper header or prompt names before the matrix header."""
    host = None
    for line in lines:
        text = strip_ansi(line.text)
        if _header(text) is not None:
            break
        if m := (_WRAPPER.match(text) or _PROMPT.match(text)):
            host = m["host"]
    return host


def parse_topo_lines(lines: Sequence[Line]) -> list[Fact]:
    """Topology facts of the lines of one ``topo -m`` output (also used by collect_env)."""
    facts: list[Fact] = []
    host = _block_host(lines)
    devices: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()
    prefix: str | None = None
    header_line: Line | None = None
    rows: list[tuple[Line, str, list[str], dict[str, str | None]]] = []
    legend: list[tuple[Line, str, str]] = []
    for line in lines:
        text = _clean(line, prefix)
        if header_line is None and (head := _header(text)) is not None:
            prefix, devices, columns = head
            host = prefix or host
            header_line = line
            continue
        if m := _NIC_ENTRY.match(text):
            legend.append((line, m["nic"], m["name"]))
            continue
        tokens = text.split()
        if header_line is None or not tokens or tokens[0] not in devices:
            continue
        cells: list[str] = []
        for token in tokens[1 : 1 + len(devices)]:
            if not _is_link(token):
                break
            cells.append(token)
        values: dict[str, str | None] = {}
        if len(cells) == len(devices):
            values = dict(zip(columns, (na(v) for v in tokens[1 + len(devices) :]), strict=False))
        rows.append((line, tokens[0], cells, values))

    names = {nic: name for _, nic, name in legend}
    nic_of = {d: names.get(d) if d.startswith("NIC") else d for d in devices if not _GPU.match(d)}
    if header_line is not None:
        links = tuple(
            (row, devices[i], cell)
            for _, row, cells, _ in rows
            for i, cell in enumerate(cells)
            if cell != "X"
        )
        gpus = sum(1 for d in devices if _GPU.match(d))
        facts.append(
            TopoMatrix(
                devices=devices,
                gpu_count=gpus,
                nic_count=len(devices) - gpus,
                links=links,
                nic_names=tuple((nic, name) for _, nic, name in legend),
                cite=cite(header_line),
                rank=header_line.rank,
                host=header_line.host or host,
            )
        )
        facts.extend(
            _nic(header_line, device, device, host)
            for device in devices
            if not _GPU.match(device) and not device.startswith("NIC")
        )
    seen: set[frozenset[str]] = set()
    for line, row, cells, values in rows:
        for i, cell in enumerate(cells):
            col = devices[i]
            pair = frozenset((row, col))
            if cell == "X" or col == row or pair in seen:
                continue
            seen.add(pair)
            nv = _NV.match(cell)
            facts.append(
                TopoLink(
                    a=row,
                    b=col,
                    link=cell,
                    nvlinks=int(nv[1]) if nv else None,
                    a_nic=nic_of.get(row),
                    b_nic=nic_of.get(col),
                    cite=cite(line),
                    rank=line.rank,
                    host=line.host or host,
                )
            )
        if gpu := _GPU.match(row):
            cpu = values.get("CPU Affinity")
            numa = values.get("NUMA Affinity")
            facts.append(
                TopoGpu(
                    gpu=row,
                    index=to_int(gpu[1]),
                    cpu_affinity=cpu,
                    cpu_count=_cpu_count(cpu),
                    numa_affinity=numa,
                    numa_node=to_int(numa),
                    gpu_numa_id=to_int(values.get("GPU NUMA ID")),
                    cite=cite(line),
                    rank=line.rank,
                    host=line.host or host,
                )
            )
    facts.extend(_nic(line, nic, name, host) for line, nic, name in legend)
    return facts
