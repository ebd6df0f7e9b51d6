"""Fixtures of the fleet tests: every store test runs on SQLite and on a real PostgreSQL.

PostgreSQL is the server ``scripts/with-postgres`` starts (it exports
``NCCL_DOCTOR_TEST_PG_URL``); each test gets a schema of its own on it, so
tests never see each other's rows. Without a server the PostgreSQL half
skips, with the reason; under ``CI=true`` it fails instead, so CI cannot
lose those tests silently.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from nccl_doctor.fleet import Store, open_store

ENGINES = ("sqlite", "postgresql")
PG_ENV = "NCCL_DOCTOR_TEST_PG_URL"


def _pg_base() -> str:
    base = os.environ.get(PG_ENV, "")
    if base:
        return base
    why = f"{PG_ENV} is unset: run the tests through scripts/with-postgres"
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true needs the PostgreSQL tests: {why}")
    pytest.skip(f"no PostgreSQL server ({why})")


@pytest.fixture(params=ENGINES)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty history database URL on each engine."""
    if request.param == "sqlite":
        yield str(tmp_path / "history.db")
        return
    base = _pg_base()
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    joiner = "&" if "?" in base else "?"
    try:
        yield f"{base}{joiner}options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    """The history at ``db_url``, open."""
    with open_store(db_url) as opened:
        yield opened
