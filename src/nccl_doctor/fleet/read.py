"""Reading the history back: runs by id or by filters, and the last good run.

:class:`StoredRun` (with its :class:`StoredGpu` and :class:`StoredFinding`)
is what :meth:`nccl_doctor.fleet.store.Store.get`, ``runs`` and
``last_good`` return. Kept apart from recording, which ``diagnose --record``
imports on its way: this module loads only when something is read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from nccl_doctor.fleet.db import Connection, FleetError
from nccl_doctor.fleet.extract import norm_bus
from nccl_doctor.fleet.store import MAX_LIMIT, parse_stamp, stamp


@dataclass(frozen=True, slots=True)
class StoredGpu:
    """A GPU of a stored run."""

    key: str
    node: str | None
    index: int | None
    bus_id: str | None
    uuid: str | None
    serial: str | None
    name: str | None


@dataclass(frozen=True, slots=True)
class StoredFinding:
    """A finding of a stored run, with the nodes and GPU keys it blames."""

    id: str
    severity: str
    confidence: str | None
    root_cause: bool
    nodes: tuple[str, ...]
    gpus: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class StoredRun:
    """One recorded result; ``report`` is the whole JSON report as recorded."""

    id: int
    kind: str
    job: str | None
    when: datetime
    verdict: str
    good: bool
    nodes: tuple[str, ...]
    gpus: tuple[StoredGpu, ...]
    findings: tuple[StoredFinding, ...]
    versions: Mapping[str, str] = field(default_factory=dict)
    report: dict[str, Any] = field(default_factory=dict)

    @property
    def critical(self) -> tuple[StoredFinding, ...]:
        """Its critical findings."""
        return tuple(f for f in self.findings if f.severity == "critical")


#: ``node05:00000000:3B:00.0``: a GPU known by its node and bus id.
_NODE_BUS = re.compile(
    r"^(?P<node>[^:]+):(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.\d)?)$"
)
RUN_COLUMNS = "r.id, r.kind, r.job, r.recorded_at, r.verdict, r.good, r.report"


def get(conn: Connection, run_id: int) -> StoredRun:
    """The run ``run_id``; a :class:`FleetError` when there is none."""
    found = load(conn, f"SELECT {RUN_COLUMNS} FROM runs r WHERE r.id = ?", (run_id,))
    if not found:
        raise FleetError(
            f"no run {run_id} in the history database {conn.target.shown}",
            "`nccl-doctor history` lists the recorded runs and their ids",
        )
    return found[0]


def runs(
    conn: Connection,
    *,
    node: str | None = None,
    gpu: str | None = None,
    finding: str | None = None,
    job: str | None = None,
    kind: str | None = None,
    since: datetime | None = None,
    limit: int = 50,
    run_id: int | None = None,
    reports: bool = True,
) -> list[StoredRun]:
    """Recorded runs, newest first, that match every filter given.

    ``gpu`` matches a GPU's key, UUID, serial, bus id (any spelling),
    ``node:index`` or ``node:bus id``; ``finding`` a finding id, or an id
    prefix ending in ``.`` (``gpu.``). ``reports=False`` leaves each
    run's ``report`` empty (cheaper when only the rows are needed).
    """
    where, params = _filters(
        node=node, gpu=gpu, finding=finding, job=job, kind=kind, since=since, run_id=run_id
    )
    limit = max(1, min(int(limit), MAX_LIMIT))
    columns = RUN_COLUMNS if reports else RUN_COLUMNS.replace("r.report", "''")
    sql = (
        f"SELECT {columns} FROM runs r"
        + (" WHERE " + " AND ".join(where) if where else "")
        + f" ORDER BY r.recorded_at DESC, r.id DESC LIMIT {limit}"
    )
    return load(conn, sql, params)


def _filters(
    *,
    node: str | None,
    gpu: str | None,
    finding: str | None,
    job: str | None,
    kind: str | None,
    since: datetime | None,
    run_id: int | None,
) -> tuple[list[str], list[object]]:
    where: list[str] = []
    params: list[object] = []
    if run_id is not None:
        where.append("r.id = ?")
        params.append(run_id)
    if node:
        where.append("EXISTS (SELECT 1 FROM run_nodes n WHERE n.run_id = r.id AND n.node = ?)")
        params.append(node)
    if gpu:
        names, values = gpu_names(gpu)
        where.append(f"EXISTS (SELECT 1 FROM run_gpus g WHERE g.run_id = r.id AND ({names}))")
        params.extend(values)
    if finding:
        if finding.endswith("."):
            test, value = "substr(f.finding, 1, ?) = ?", [len(finding), finding]
        else:
            test, value = "f.finding = ?", [finding]
        where.append(f"EXISTS (SELECT 1 FROM run_findings f WHERE f.run_id = r.id AND {test})")
        params.extend(value)
    if job:
        where.append("r.job = ?")
        params.append(job)
    if kind:
        where.append("r.kind = ?")
        params.append(kind)
    if since is not None:
        where.append("r.recorded_at >= ?")
        params.append(stamp(since))
    return where, params


def load(conn: Connection, sql: str, params: Sequence[object]) -> list[StoredRun]:
    rows = conn.rows(sql, params)
    if not rows:
        return []
    ids = [int(r[0]) for r in rows]
    marks = ",".join("?" * len(ids))
    nodes: dict[int, list[str]] = {}
    for rid, node in conn.rows(
        f"SELECT run_id, node FROM run_nodes WHERE run_id IN ({marks}) ORDER BY run_id, node",
        ids,
    ):
        nodes.setdefault(int(rid), []).append(node)
    gpus: dict[int, list[StoredGpu]] = {}
    for rid, *g in conn.rows(
        "SELECT run_id, gpu, node, idx, bus_id, uuid, serial, name FROM run_gpus "
        f"WHERE run_id IN ({marks}) ORDER BY run_id, node, idx, gpu",
        ids,
    ):
        gpus.setdefault(int(rid), []).append(StoredGpu(*g))
    versions: dict[int, dict[str, str]] = {}
    for rid, name, value in conn.rows(
        f"SELECT run_id, name, value FROM run_versions WHERE run_id IN ({marks})", ids
    ):
        versions.setdefault(int(rid), {})[name] = value
    findings = _findings(conn, ids, marks)
    return [
        StoredRun(
            id=int(rid),
            kind=kind,
            job=job,
            when=parse_stamp(at),
            verdict=verdict,
            good=bool(good),
            nodes=tuple(nodes.get(int(rid), ())),
            gpus=tuple(gpus.get(int(rid), ())),
            findings=tuple(findings.get(int(rid), ())),
            versions=versions.get(int(rid), {}),
            report=_report(text),
        )
        for rid, kind, job, at, verdict, good, text in rows
    ]


def _findings(conn: Connection, ids: list[int], marks: str) -> dict[int, list[StoredFinding]]:
    targets: dict[tuple[int, int], list[tuple[str | None, str | None]]] = {}
    for rid, seq, node, gpu in conn.rows(
        f"SELECT run_id, seq, node, gpu FROM finding_targets WHERE run_id IN ({marks})", ids
    ):
        targets.setdefault((int(rid), int(seq)), []).append((node, gpu))
    out: dict[int, list[StoredFinding]] = {}
    for rid, seq, ident, severity, confidence, root in conn.rows(
        "SELECT run_id, seq, finding, severity, confidence, root_cause FROM run_findings "
        f"WHERE run_id IN ({marks}) ORDER BY run_id, seq",
        ids,
    ):
        named = targets.get((int(rid), int(seq)), [])
        out.setdefault(int(rid), []).append(
            StoredFinding(
                id=ident,
                severity=severity,
                confidence=confidence,
                root_cause=bool(root),
                nodes=tuple(dict.fromkeys(n for n, _ in named if n)),
                gpus=tuple(dict.fromkeys(g for _, g in named if g)),
            )
        )
    return out


def last_good(
    conn: Connection,
    *,
    job: str | None = None,
    nodes: Sequence[str] = (),
    before: int | None = None,
) -> StoredRun | None:
    """The latest good run (no critical finding) of ``job``, else sharing one of ``nodes``.

    ``before`` leaves out that run id and later ones (the run being compared).
    """
    base = "SELECT {cols} FROM runs r WHERE r.good = 1"
    extra: list[object] = []
    if before is not None:
        base += " AND r.id < ?"
        extra.append(before)
    order = " ORDER BY r.recorded_at DESC, r.id DESC LIMIT 1"
    if job:
        found = load(conn, base.format(cols=RUN_COLUMNS) + " AND r.job = ?" + order, [*extra, job])
        if found:
            return found[0]
    wanted = sorted(set(nodes))
    if not wanted:
        return None
    marks = ",".join("?" * len(wanted))
    found = load(
        conn,
        base.format(cols=RUN_COLUMNS)
        + " AND EXISTS (SELECT 1 FROM run_nodes n WHERE n.run_id = r.id"
        + f" AND n.node IN ({marks}))"
        + order,
        [*extra, *wanted],
    )
    return found[0] if found else None


def gpu_names(text: str) -> tuple[str, list[object]]:
    """The SQL test (on ``g``, a run_gpus row) and values for a ``--gpu`` filter."""
    text = text.strip()
    tests = ["g.gpu = ?", "g.uuid = ?", "g.serial = ?"]
    values: list[object] = [text, text, text]
    node, sep, index = text.rpartition(":")
    if sep and index.isdigit() and node:
        tests.append("(g.node = ? AND g.idx = ?)")
        values.extend([node, int(index)])
    if m := _NODE_BUS.match(text):
        tests.append("(g.node = ? AND g.bus_id = ?)")
        values.extend([m["node"], norm_bus(m["bus"])])
    elif ":" in text:
        tests.append("g.bus_id = ?")
        values.append(norm_bus(text))
    return " OR ".join(tests), values


def _report(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}
