"""The history store: record a report, read runs back, find the last good run.

``open_store()`` opens (and creates, and migrates) the database that
:mod:`nccl_doctor.fleet.db` resolves; :class:`Store` is the one API the
commands use: :meth:`Store.record`, :meth:`Store.get`, :meth:`Store.runs`,
:meth:`Store.last_good`, and the per-node and per-GPU summaries of
:mod:`nccl_doctor.fleet.summary`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from types import TracebackType
from typing import TYPE_CHECKING, Any

from nccl_doctor.fleet import schema
from nccl_doctor.fleet.db import Connection, FleetError, Target, connect, resolve
from nccl_doctor.fleet.extract import Extracted, extract, gpu_key
from nccl_doctor.fleet.names import KINDS

if TYPE_CHECKING:
    from nccl_doctor.fleet.read import StoredRun
    from nccl_doctor.fleet.summary import Summary

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
    # -- reading (nccl_doctor.fleet.read) ------------------------------------
    def get(self, run_id: int) -> StoredRun:
        """The run ``run_id``; a :class:`FleetError` when there is none."""
        from nccl_doctor.fleet import read  # noqa: PLC0415 -- recording does not need it

        return read.get(self.conn, run_id)

    def runs(self, **filters: Any) -> list[StoredRun]:
        """Recorded runs, newest first, that match every filter given (:func:`read.runs`).

        Filters: ``node``, ``gpu``, ``finding``, ``job``, ``kind``, ``since``,
        ``limit`` (50), ``run_id``, ``reports`` (``False``: no report JSON).
        """
        from nccl_doctor.fleet import read  # noqa: PLC0415 -- recording does not need it

        return read.runs(self.conn, **filters)

    def last_good(
        self, *, job: str | None = None, nodes: Sequence[str] = (), before: int | None = None
    ) -> StoredRun | None:
        """The latest good run (no critical finding) of ``job``, else sharing one of ``nodes``.

        ``before`` leaves out that run id and later ones (the run being compared).
        """
        from nccl_doctor.fleet import read  # noqa: PLC0415 -- recording does not need it

        return read.last_good(self.conn, job=job, nodes=nodes, before=before)

    def node_summaries(self, *, window: int = 50) -> list[Summary]:
        """Per node: runs, failures, last findings, trend, drift, counters (newest ``window``)."""
        from nccl_doctor.fleet.summary import node_summaries  # noqa: PLC0415

        return node_summaries(self.conn, window=window)

    def gpu_summaries(self, *, window: int = 50) -> list[Summary]:
        """Per GPU: the same as :meth:`node_summaries`."""
        from nccl_doctor.fleet.summary import gpu_summaries  # noqa: PLC0415

        return gpu_summaries(self.conn, window=window)


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


__all__ = ["FleetError", "Store", "gpu_key", "open_store"]
