"""From a JSON report (docs/json-report.md) to the rows the history keeps.

The report's ``inventory`` names the hosts, GPUs, versions, probe figures
and counter deltas; its findings name ranks, GPUs and hosts. Here each
finding is tied to the nodes and GPUs it blames (``finding_targets``):

- a GPU subject (an index, a bus id or a UUID) is matched against the run's
  GPUs, on the finding's hosts when it names any; a match on exactly one
  GPU blames that GPU (and its node); an index that matches none, on a run
  of one node, names a GPU of that node known by its index only;
- a finding that names hosts and no GPU blames those nodes;
- a finding that names neither blames the run's node when the run has one
  node, and nobody on a run of many (the run still counts as failed).

Reports written before the inventory existed still record: without GPUs,
versions or figures. Everything is read defensively: a report is data from
a file, not a promise.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: Verdicts of a good run (with no critical finding): not ``failed``, and not
#: ``inconclusive`` (a failure was seen that no rule explains).
GOOD_VERDICTS = frozenset({"healthy", "degraded", "incomplete"})
#: Bounds per run.
MAX_FINDINGS = 500
MAX_ROWS = 4096


@dataclass(slots=True)
class GpuRow:
    """One GPU of a run, under the key that follows it across runs."""

    key: str
    node: str | None
    index: int | None = None
    bus_id: str | None = None
    uuid: str | None = None
    serial: str | None = None
    name: str | None = None


@dataclass(slots=True)
class FindingRow:
    """One finding of a run and whom it blames: (node, GPU key) pairs."""

    seq: int
    id: str
    severity: str
    confidence: str | None
    root_cause: bool
    title: str | None
    ranks: list[int]
    targets: list[tuple[str | None, str | None]] = field(default_factory=list)


@dataclass(slots=True)
class Extracted:
    """Everything a run's rows hold, besides the report itself."""

    verdict: str
    good: bool
    critical: int
    warnings: int
    tool_version: str | None
    nodes: list[str]
    compared: set[str]
    gpus: list[GpuRow]
    versions: list[tuple[str, str]]
    findings: list[FindingRow]
    figures: list[tuple[Any, ...]]
    counters: list[tuple[Any, ...]]


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _num(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def norm_bus(text: str) -> str:
    """A PCI bus id in nvidia-smi's form (``0000:3b:00.0`` -> ``00000000:3B:00.0``)."""
    text = text.strip().upper()
    domain, sep, rest = text.partition(":")
    if sep and rest.count(":") == 1 and len(domain) <= 8:
        text = f"{domain.rjust(8, '0')}:{rest}"
    return text if "." in text else text + ".0"


def gpu_key(
    node: str | None, uuid: str | None, serial: str | None, bus: str | None, index: int | None
) -> str | None:
    """The key that follows a GPU across runs: UUID, serial, then node-local names."""
    if uuid:
        return uuid
    if serial:
        return f"serial {serial}"
    where = node or "?"
    if bus:
        return f"{where}:{bus}"
    return f"{where}:{index}" if index is not None else None


class _Gpus:
    """The run's GPUs by every name a finding may use."""

    def __init__(self, rows: list[GpuRow]) -> None:
        self.rows = rows

    def match(self, subject: str, hosts: Sequence[str]) -> list[GpuRow]:
        text = subject.strip()
        if text.upper().startswith("GPU-"):
            found = [g for g in self.rows if g.uuid == text]
        elif ":" in text:
            bus = norm_bus(text)
            found = [g for g in self.rows if g.bus_id == bus]
        elif text.isdigit():
            found = [g for g in self.rows if g.index == int(text)]
        else:
            found = []
        return [g for g in found if not hosts or g.node in hosts]

    def add(self, row: GpuRow) -> GpuRow:
        known = next((g for g in self.rows if g.key == row.key), None)
        if known is not None:
            return known
        self.rows.append(row)
        return row


def _gpu_rows(inventory: Mapping[str, Any], default: str | None) -> list[GpuRow]:
    rows: dict[str, GpuRow] = {}
    for item in _list(inventory.get("gpus"))[:MAX_ROWS]:
        g = _dict(item)
        node = _str(g.get("host")) or default
        bus = _str(g.get("bus_id"))
        row = GpuRow(
            key="",
            node=node,
            index=_int(g.get("index")),
            bus_id=norm_bus(bus) if bus else None,
            uuid=_str(g.get("uuid")),
            serial=_str(g.get("serial")),
            name=_str(g.get("name")),
        )
        key = gpu_key(node, row.uuid, row.serial, row.bus_id, row.index)
        if key is not None and key not in rows:
            row.key = key
            rows[key] = row
    return list(rows.values())


def _targets(
    finding: Mapping[str, Any], nodes: Sequence[str], gpus: _Gpus
) -> list[tuple[str | None, str | None]]:
    subjects = _dict(finding.get("subjects"))
    hosts = [h for h in map(_str, _list(subjects.get("hosts"))) if h]
    home = hosts[0] if len(hosts) == 1 else (nodes[0] if len(nodes) == 1 and not hosts else None)
    out: list[tuple[str | None, str | None]] = []
    for subject in _list(subjects.get("gpus")):
        name = _str(subject) or (str(subject) if _int(subject) is not None else None)
        if name is None:
            continue
        found = gpus.match(name, hosts)
        if len(found) == 1:
            out.append((found[0].node, found[0].key))
        elif not found and name.isdigit() and home is not None:
            row = gpus.add(GpuRow(key=f"{home}:{int(name)}", node=home, index=int(name)))
            out.append((row.node, row.key))
    if not out:
        out = [(h, None) for h in hosts] or ([(nodes[0], None)] if len(nodes) == 1 else [])
    return list(dict.fromkeys(out))


def _findings(report: Mapping[str, Any], nodes: Sequence[str], gpus: _Gpus) -> list[FindingRow]:
    out = []
    for seq, item in enumerate(_list(report.get("findings"))[:MAX_FINDINGS]):
        f = _dict(item)
        ident = _str(f.get("id"))
        if ident is None:
            continue
        ranks = [
            r for r in map(_int, _list(_dict(f.get("subjects")).get("ranks"))) if r is not None
        ]
        out.append(
            FindingRow(
                seq=seq,
                id=ident,
                severity=_str(f.get("severity")) or "info",
                confidence=_str(f.get("confidence")),
                root_cause=f.get("root_cause") is True,
                title=_str(f.get("title")),
                ranks=ranks,
                targets=_targets(f, nodes, gpus),
            )
        )
    return out


def _gpu_of(gpus: _Gpus, node: str | None, name: str | None) -> str | None:
    """The key of the run GPU ``name`` (a UUID or bus id) on ``node``."""
    if not name:
        return None
    found = gpus.match(name, [node] if node else [])
    return found[0].key if len(found) == 1 else name


def _figures(
    inventory: Mapping[str, Any], default: str | None, gpus: _Gpus
) -> list[tuple[Any, ...]]:
    out = []
    for item in _list(inventory.get("probe"))[:MAX_ROWS]:
        p = _dict(item)
        kind, busbw = _str(p.get("kind")), _num(p.get("busbw_gbytes_s"))
        if kind is None or busbw is None:
            continue
        node = _str(p.get("host")) or default
        on = [i for i in map(_int, _list(p.get("gpus"))) if i is not None]
        gpu = None
        if len(on) == 1:
            found = gpus.match(str(on[0]), [node] if node else [])
            gpu = found[0].key if len(found) == 1 else None
        out.append(
            (
                node,
                gpu,
                kind,
                json.dumps(on),
                _int(p.get("world")),
                _int(p.get("size_bytes")),
                busbw,
                _num(p.get("expected_gbytes_s")),
                _str(p.get("gpu_model")),
            )
        )
    return out


def _counters(
    inventory: Mapping[str, Any], default: str | None, gpus: _Gpus
) -> list[tuple[Any, ...]]:
    out = []
    for item in _list(inventory.get("counters"))[:MAX_ROWS]:
        c = _dict(item)
        device, counter = _str(c.get("device")), _str(c.get("counter"))
        values = [_int(c.get(k)) for k in ("before", "after", "delta")]
        if device is None or counter is None or any(v is None for v in values):
            continue
        node = _str(c.get("host")) or default
        gpu = _gpu_of(gpus, node, _str(c.get("gpu")))
        out.append((node, device, counter, gpu, *values))
    return out


def _names(values: Iterable[object]) -> list[str]:
    return list(dict.fromkeys(v for v in map(_str, values) if v))


def extract(report: Mapping[str, Any], node: str | None = None) -> Extracted:
    """The rows of ``report``; ``node`` is the host of what the report does not attribute."""
    inventory = _dict(report.get("inventory"))
    nodes = _names(_list(inventory.get("hosts"))) or ([node] if node else [])
    default = node or (nodes[0] if len(nodes) == 1 else None)
    if default and default not in nodes:
        nodes.append(default)
    gpus = _Gpus(_gpu_rows(inventory, default))
    findings = _findings(report, nodes, gpus)
    for row in gpus.rows:
        if row.node and row.node not in nodes:
            nodes.append(row.node)
    severities = [f.severity for f in findings]
    verdict = _str(report.get("verdict")) or "inconclusive"
    critical = severities.count("critical")
    versions = [
        (k, str(v)) for k, v in _dict(inventory.get("versions")).items() if _str(k) and _str(v)
    ]
    tool = _dict(report.get("tool"))
    return Extracted(
        verdict=verdict,
        good=critical == 0 and verdict in GOOD_VERDICTS,
        critical=critical,
        warnings=severities.count("warning"),
        tool_version=_str(tool.get("version")),
        nodes=nodes[:MAX_ROWS],
        compared=set(_names(_list(inventory.get("counters_compared")))),
        gpus=gpus.rows,
        versions=versions,
        findings=findings,
        figures=_figures(inventory, default, gpus),
        counters=_counters(inventory, default, gpus),
    )
