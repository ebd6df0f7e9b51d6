"""Schema migrations on both engines: a new database, an old one upgraded, a newer one refused."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from nccl_doctor.fleet import FleetError, open_store
from nccl_doctor.fleet.db import connect, resolve
from nccl_doctor.fleet.schema import LATEST, MIGRATIONS, TABLE, migrate, version
from tests.fleet._support import PROBE, report_of


def _applied(db_url: str) -> list[tuple[int, str]]:
    conn = connect(resolve(db_url))
    try:
        query = f"SELECT version, name FROM {TABLE} ORDER BY version"  # noqa: S608 -- a constant
        return [(int(v), n) for v, n in conn.rows(query)]
    finally:
        conn.close()


def test_a_new_database_gets_every_migration_once(db_url: str) -> None:
    open_store(db_url).close()
    open_store(db_url).close()  # the second open finds nothing to do
    assert _applied(db_url) == [(m.version, m.name) for m in MIGRATIONS]
    assert LATEST == 3


def test_a_version_1_database_is_upgraded_and_keeps_its_runs(db_url: str) -> None:
    """A history written by the first schema: runs, nodes, GPUs, findings; no figures yet."""
    conn = connect(resolve(db_url))
    assert migrate(conn, target=1) == 1
    with conn.transaction():
        run_id = conn.insert(
            "INSERT INTO runs (kind, job, recorded_at, verdict, good, critical, warnings, "
            "tool_version, report) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                "check",
                "old-job",
                "2026-10-01T00:00:00.000000Z",
                "healthy",
                1,
                0,
                0,
                "0.1.0",
                json.dumps({"verdict": "healthy", "findings": []}),
            ),
        )
        conn.execute("INSERT INTO run_nodes (run_id, node) VALUES (?, ?)", (run_id, "node01"))
    with pytest.raises(FleetError):  # the table of migration 2 is not there yet
        conn.rows("SELECT COUNT(*) FROM run_figures")
    conn.close()

    with open_store(db_url) as store:
        assert version(store.conn) == LATEST
        old = store.get(run_id)
        assert (old.kind, old.job, old.nodes, old.good) == ("check", "old-job", ("node01",), True)
        assert old.when == datetime(2026, 10, 1, tzinfo=timezone.utc)
        # the column migration 2 added has its default on the old row
        assert store.conn.rows("SELECT compared FROM run_nodes WHERE run_id = ?", (run_id,)) == [
            (0,)
        ]
        # and what migration 2 added works: a probe's figures are kept
        new = store.record("probe", report_of([PROBE]))
        kinds = store.conn.rows(
            "SELECT kind FROM run_figures WHERE run_id = ? ORDER BY kind", (new,)
        )
        assert [k for (k,) in kinds] == ["d2d", "d2h", "h2d"]
        assert store.last_good(job="old-job").id == run_id  # type: ignore[union-attr]
    assert [v for v, _ in _applied(db_url)] == [1, 2, 3]


def test_a_database_newer_than_this_version_is_refused(db_url: str) -> None:
    open_store(db_url).close()
    conn = connect(resolve(db_url))
    conn.execute(
        f"INSERT INTO {TABLE} (version, name, applied_at) VALUES (?, ?, ?)",  # noqa: S608
        (LATEST + 1, "from the future", "2030-01-01T00:00:00Z"),
    )
    conn.close()
    with pytest.raises(FleetError, match=f"schema version {LATEST + 1}, newer than") as caught:
        open_store(db_url)
    assert "upgrade nccl-doctor" in caught.value.hint
