"""The history store: record a report, read runs back, find the last good run.

``open_store()`` opens (and creates, and migrates) the database that
:mod:`nccl_doctor.fleet.db` resolves; :class:`Store` is the one API the
commands use: :meth:`Store.record`, :meth:`Store.get`, :meth:`Store.runs`,
:meth:`Store.last_good`, and the per-node and per-GPU summaries of
:mod:`nccl_doctor.fleet.summary`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from types import TracebackType
from typing import Any

from nccl_doctor.fleet import schema
from nccl_doctor.fleet.db import Connection, FleetError, Target, connect, resolve
from nccl_doctor.fleet.extract import Extracted, extract, gpu_key, norm_bus

KINDS = ("diagnose", "check", "probe", "run")
#: The most runs one query returns.
MAX_LIMIT = 10_000
_STAMP = "%Y-%m-%dT%H:%M:%S.%fZ"


def stamp(when: datetime) -> str:
    """A time as the store keeps it: UTC, ISO-8601, microseconds, ``Z``."""
    if when.tzinfo is None:
        when = when.astimezone()  # a naive time is the machine's local time
    return when.astimezone(timezone.utc).strftime(_STAMP)


def parse_stamp(text: str) -> datetime:
    """The time a stored stamp names (aware, UTC)."""
    return datetime.strptime(text, _STAMP).replace(tzinfo=timezone.utc)


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
_RUN_COLUMNS = "r.id, r.kind, r.job, r.recorded_at, r.verdict, r.good, r.report"


class Store:
    """A history database, open and at the latest schema."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    @property
    def target(self) -> Target:
        """Which database this is."""
        return self.conn.target

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- writing --------------------------------------------------------------
    def _link_gpus(self, rows: Extracted) -> None:
        """Give a GPU known only by node and bus id (or index) the UUID that slot last had.

        An nvidia-smi table names no UUID; the same node's earlier captures
        do. The board last seen in that slot is taken to be this one.
        """
        local = [g for g in rows.gpus if not g.uuid and not g.serial and g.node]
        if not local:
            return
        nodes = sorted({str(g.node) for g in local})
        marks = ",".join("?" * len(nodes))
        known = self.conn.rows(
            f"SELECT node, bus_id, idx, uuid FROM run_gpus WHERE uuid IS NOT NULL "
            f"AND node IN ({marks}) ORDER BY run_id DESC LIMIT {MAX_LIMIT}",
            nodes,
        )
        by_bus: dict[tuple[str, str], str] = {}
        by_index: dict[tuple[str, int], str] = {}
        for node, bus, index, uuid in known:
            if bus:
                by_bus.setdefault((node, bus), uuid)
            if index is not None:
                by_index.setdefault((node, index), uuid)
        renamed: dict[str, str] = {}
        taken = {g.key for g in rows.gpus}
        for g in local:
            node = str(g.node)
            uuid = by_bus.get((node, g.bus_id)) if g.bus_id else None
            if uuid is None and not g.bus_id and g.index is not None:
                uuid = by_index.get((node, g.index))
            if uuid and uuid not in taken:
                renamed[g.key] = uuid
                taken.add(uuid)
                g.key, g.uuid = uuid, uuid
        for f in rows.findings:
            f.targets = [(n, renamed.get(k, k) if k else k) for n, k in f.targets]
        rows.figures = [(*r[:1], renamed.get(r[1], r[1]), *r[2:]) for r in rows.figures]
        rows.counters = [(*r[:3], renamed.get(r[3], r[3]), *r[4:]) for r in rows.counters]

    def record(
        self,
        kind: str,
        report: Mapping[str, Any],
        *,
        job: str | None = None,
        when: datetime | None = None,
        node: str | None = None,
    ) -> int:
        """Keep ``report`` (a JSON report dict) as a ``kind`` run; its id.

        ``node`` is the host of what the report does not attribute (logs
        copied from a node whose lines name no host).
        """
        if kind not in KINDS:
            raise FleetError(f"unknown run kind {kind!r}", f"one of {', '.join(KINDS)}")
        rows = extract(report, node)
        text = json.dumps(report, ensure_ascii=False, sort_keys=True)
        moment = stamp(when or datetime.now(timezone.utc))
        with self.conn.transaction():
            self._link_gpus(rows)
            run_id = self.conn.insert(
                "INSERT INTO runs (kind, job, recorded_at, verdict, good, critical, warnings, "
                "tool_version, report) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    kind,
                    job,
                    moment,
                    rows.verdict,
                    int(rows.good),
                    rows.critical,
                    rows.warnings,
                    rows.tool_version,
                    text,
                ),
            )
            self._rows(run_id, rows)
        return run_id

    def _rows(self, run_id: int, rows: Extracted) -> None:
        c = self.conn
        c.many(
            "INSERT INTO run_nodes (run_id, node, compared) VALUES (?, ?, ?)",
            [(run_id, n, int(n in rows.compared)) for n in rows.nodes],
        )
        c.many(
            "INSERT INTO run_gpus (run_id, gpu, node, idx, bus_id, uuid, serial, name) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (run_id, g.key, g.node, g.index, g.bus_id, g.uuid, g.serial, g.name)
                for g in rows.gpus
            ],
        )
        c.many(
            "INSERT INTO run_versions (run_id, name, value) VALUES (?, ?, ?)",
            [(run_id, k, v) for k, v in rows.versions],
        )
        c.many(
            "INSERT INTO run_findings (run_id, seq, finding, severity, confidence, root_cause, "
            "title, ranks) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    run_id,
                    f.seq,
                    f.id,
                    f.severity,
                    f.confidence,
                    int(f.root_cause),
                    f.title,
                    json.dumps(f.ranks),
                )
                for f in rows.findings
            ],
        )
        c.many(
            "INSERT INTO finding_targets (run_id, seq, node, gpu) VALUES (?, ?, ?, ?)",
            [(run_id, f.seq, n, g) for f in rows.findings for n, g in f.targets],
        )
        c.many(
            "INSERT INTO run_figures (run_id, node, gpu, kind, gpus, world, size_bytes, busbw, "
            "expected, sku) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(run_id, *r) for r in rows.figures],
        )
        c.many(
            "INSERT INTO run_counters (run_id, node, device, counter, gpu, before_value, "
            "after_value, delta) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(run_id, *r) for r in rows.counters],
        )

    # -- reading --------------------------------------------------------------
    def get(self, run_id: int) -> StoredRun:
        """The run ``run_id``; a :class:`FleetError` when there is none."""
        found = self._load(f"SELECT {_RUN_COLUMNS} FROM runs r WHERE r.id = ?", (run_id,))
        if not found:
            raise FleetError(
                f"no run {run_id} in the history database {self.target.shown}",
                "`nccl-doctor history` lists the recorded runs and their ids",
            )
        return found[0]

    def runs(
        self,
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
        where, params = self._filters(
            node=node, gpu=gpu, finding=finding, job=job, kind=kind, since=since, run_id=run_id
        )
        limit = max(1, min(int(limit), MAX_LIMIT))
        columns = _RUN_COLUMNS if reports else _RUN_COLUMNS.replace("r.report", "''")
        sql = (
            f"SELECT {columns} FROM runs r"
            + (" WHERE " + " AND ".join(where) if where else "")
            + f" ORDER BY r.recorded_at DESC, r.id DESC LIMIT {limit}"
        )
        return self._load(sql, params)

    @staticmethod
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

    def _load(self, sql: str, params: Sequence[object]) -> list[StoredRun]:
        rows = self.conn.rows(sql, params)
        if not rows:
            return []
        ids = [int(r[0]) for r in rows]
        marks = ",".join("?" * len(ids))
        nodes: dict[int, list[str]] = {}
        for rid, node in self.conn.rows(
            f"SELECT run_id, node FROM run_nodes WHERE run_id IN ({marks}) ORDER BY run_id, node",
            ids,
        ):
            nodes.setdefault(int(rid), []).append(node)
        gpus: dict[int, list[StoredGpu]] = {}
        for rid, *g in self.conn.rows(
            "SELECT run_id, gpu, node, idx, bus_id, uuid, serial, name FROM run_gpus "
            f"WHERE run_id IN ({marks}) ORDER BY run_id, node, idx, gpu",
            ids,
        ):
            gpus.setdefault(int(rid), []).append(StoredGpu(*g))
        versions: dict[int, dict[str, str]] = {}
        for rid, name, value in self.conn.rows(
            f"SELECT run_id, name, value FROM run_versions WHERE run_id IN ({marks})", ids
        ):
            versions.setdefault(int(rid), {})[name] = value
        findings = self._findings(ids, marks)
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

    def _findings(self, ids: list[int], marks: str) -> dict[int, list[StoredFinding]]:
        targets: dict[tuple[int, int], list[tuple[str | None, str | None]]] = {}
        for rid, seq, node, gpu in self.conn.rows(
            f"SELECT run_id, seq, node, gpu FROM finding_targets WHERE run_id IN ({marks})", ids
        ):
            targets.setdefault((int(rid), int(seq)), []).append((node, gpu))
        out: dict[int, list[StoredFinding]] = {}
        for rid, seq, ident, severity, confidence, root in self.conn.rows(
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
        self, *, job: str | None = None, nodes: Sequence[str] = (), before: int | None = None
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
            found = self._load(
                base.format(cols=_RUN_COLUMNS) + " AND r.job = ?" + order, [*extra, job]
            )
            if found:
                return found[0]
        wanted = sorted(set(nodes))
        if not wanted:
            return None
        marks = ",".join("?" * len(wanted))
        found = self._load(
            base.format(cols=_RUN_COLUMNS)
            + " AND EXISTS (SELECT 1 FROM run_nodes n WHERE n.run_id = r.id"
            + f" AND n.node IN ({marks}))"
            + order,
            [*extra, *wanted],
        )
        return found[0] if found else None

    def node_summaries(self, *, window: int = 50) -> list[Any]:
        """Per node: runs, failures, last findings, trend, drift, counters (newest ``window``)."""
        from nccl_doctor.fleet.summary import node_summaries  # noqa: PLC0415

        return node_summaries(self.conn, window=window)

    def gpu_summaries(self, *, window: int = 50) -> list[Any]:
        """Per GPU: the same as :meth:`node_summaries`."""
        from nccl_doctor.fleet.summary import gpu_summaries  # noqa: PLC0415

        return gpu_summaries(self.conn, window=window)


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


def open_store(url: str | None = None, *, create: bool = True) -> Store:
    """The history database ``url`` names (else ``NCCL_DOCTOR_DB``, else the default file).

    It is created and migrated to the latest schema as needed;
    ``create=False`` opens only a SQLite file that exists (for readers that
    must not leave one behind). Raises :class:`FleetError` (one line, with
    a hint, never the password) when it cannot.
    """
    target = resolve(url)
    conn = connect(target, create=create)
    try:
        schema.migrate(conn)
    except BaseException:
        conn.close()
        raise
    return Store(conn)


__all__ = [
    "FleetError",
    "Store",
    "StoredFinding",
    "StoredGpu",
    "StoredRun",
    "gpu_key",
    "open_store",
]
