"""Where the history lives and how to talk to it: SQLite by default, PostgreSQL by URL.

The database is named by ``--db``, else ``NCCL_DOCTOR_DB``, else the
SQLite file ``$XDG_DATA_HOME/nccl-doctor/history.db`` (``~/.local/share/...``
without ``XDG_DATA_HOME``), created on first use. A value is a
``postgresql://`` (or ``postgres://``) URL, a ``sqlite:///path`` URL, or a
plain path to a SQLite file.

SQLite runs in WAL mode with a busy timeout, so concurrent ``nccl-doctor``
processes on one machine wait for each other instead of failing; a fleet
that records from many machines shares a PostgreSQL server (SQLite on a
network file system is not safe for many writers). PostgreSQL is reached
through psycopg 3, imported only when a PostgreSQL URL is used.

Statements are written once, with ``?`` placeholders; :class:`Connection`
adapts them to the engine. Every failure is a :class:`FleetError` with a
hint, and no message carries the URL's password.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nccl_doctor.errors import DoctorError
from nccl_doctor.extras import install_hint
from nccl_doctor.fleet.names import ENV

#: How long a writer waits for another (SQLite's busy timeout), in seconds.
BUSY_TIMEOUT_S = 10.0
#: How long connecting to a PostgreSQL server may take before it is given up, in seconds.
CONNECT_TIMEOUT_S = 5
_SECRET_NETLOC = re.compile(r"(?P<head>://[^/?#@:]*:)(?P<secret>[^/?#@]*)(?P<at>@)")
_SECRET_QUERY = re.compile(r"(?P<head>[?&]password=)(?P<secret>[^&#]*)", re.IGNORECASE)

Params = Sequence[object]


class FleetError(DoctorError):
    """The history database cannot be opened, read or written."""


def redact_url(url: str) -> str:
    """``url`` with its password (in the user part or a ``password=`` parameter) as ``***``."""
    url = _SECRET_NETLOC.sub(r"\g<head>***\g<at>", url)
    return _SECRET_QUERY.sub(r"\g<head>***", url)


def default_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_DATA_HOME/nccl-doctor/history.db``, else ``~/.local/share/nccl-doctor/history.db``."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_DATA_HOME") or ""
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".local" / "share"
    return root / "nccl-doctor" / "history.db"


@dataclass(frozen=True, slots=True)
class Target:
    """A database to open: ``engine`` (``sqlite`` or ``postgresql``) and where it is."""

    engine: str
    location: str

    @property
    def shown(self) -> str:
        """The location as messages print it: never the password."""
        return redact_url(self.location)


def resolve(url: str | None = None, environ: Mapping[str, str] | None = None) -> Target:
    """The database ``url`` names, else ``NCCL_DOCTOR_DB``'s, else the default SQLite file."""
    env = os.environ if environ is None else environ
    text = (url if url is not None else env.get(ENV, "")).strip()
    if not text:
        return Target("sqlite", str(default_path(env)))
    scheme, sep, rest = text.partition("://")
    scheme = scheme.lower()
    if sep and scheme in ("postgresql", "postgres"):
        return Target("postgresql", text)
    if sep and scheme == "sqlite":
        if not rest.startswith("/") or rest == "/":
            raise FleetError(
                f"{redact_url(text)} does not name a SQLite file",
                "write sqlite:////absolute/path/history.db or a plain path",
            )
        return Target("sqlite", rest[1:] if rest.startswith("//") else rest)
    if sep:
        raise FleetError(
            f"unsupported database URL {redact_url(text)}",
            "use postgresql://user@host/db, sqlite:////path/history.db or a file path",
        )
    return Target("sqlite", str(Path(text).expanduser()))


def _first_line(exc: BaseException, secret: str | None) -> str:
    text = redact_url((str(exc).strip().splitlines() or [type(exc).__name__])[0])
    if secret:
        text = text.replace(secret, "***")
    return text[:300]


class Connection:
    """One connection; statements use ``?`` placeholders whatever the engine."""

    def __init__(self, raw: Any, target: Target) -> None:
        self.raw = raw
        self.target = target
        self.engine = target.engine

    def _sql(self, sql: str) -> str:
        if self.engine == "postgresql":
            return sql.replace("%", "%%").replace("?", "%s")
        return sql

    def _fail(self, exc: BaseException, doing: str) -> FleetError:
        return FleetError(
            f"cannot {doing} the history database {self.target.shown}: {_first_line(exc, None)}",
            "check the database (--db, NCCL_DOCTOR_DB); `nccl-doctor history` reads it",
        )

    def execute(self, sql: str, params: Params = ()) -> None:
        """Run one statement."""
        try:
            self.raw.execute(self._sql(sql), tuple(params))
        except Exception as exc:
            raise self._fail(exc, "write to") from exc

    def rows(self, sql: str, params: Params = ()) -> list[tuple[Any, ...]]:
        """The rows of a query."""
        try:
            return [tuple(r) for r in self.raw.execute(self._sql(sql), tuple(params)).fetchall()]
        except Exception as exc:
            raise self._fail(exc, "read") from exc

    def insert(self, sql: str, params: Params = ()) -> int:
        """Insert one row into a table with an ``id`` column; the new row's id."""
        try:
            if self.engine == "postgresql":
                found = self.raw.execute(self._sql(sql + " RETURNING id"), tuple(params))
                return int(found.fetchone()[0])
            return int(self.raw.execute(sql, tuple(params)).lastrowid)
        except Exception as exc:
            raise self._fail(exc, "write to") from exc

    def many(self, sql: str, rows: Sequence[Params]) -> None:
        """Run one statement for each row of parameters."""
        if not rows:
            return
        try:
            cursor = self.raw.cursor()
            cursor.executemany(self._sql(sql), [tuple(r) for r in rows])
        except Exception as exc:
            raise self._fail(exc, "write to") from exc

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """All or nothing; a SQLite writer takes the write lock at once (no upgrade deadlock)."""
        if self.engine == "postgresql":
            try:
                with self.raw.transaction():
                    yield
            except FleetError:
                raise
            except Exception as exc:
                raise self._fail(exc, "write to") from exc
            return
        self.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                self.raw.execute("ROLLBACK")
            raise
        self.execute("COMMIT")

    def close(self) -> None:
        """Close it; closing twice, or a connection already broken, is fine."""
        with contextlib.suppress(Exception):
            self.raw.close()


def _sqlite(target: Target, *, create: bool) -> Connection:
    path = Path(target.location)
    hint = "pick a writable file with --db PATH or NCCL_DOCTOR_DB"
    try:
        if not path.exists():
            if not create:
                raise FleetError(f"no history database at {path}", "record a run first (--record)")
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
        raw = sqlite3.connect(
            str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        raw.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        raw.execute("PRAGMA journal_mode = WAL")
        raw.execute("PRAGMA synchronous = NORMAL")
        raw.execute("PRAGMA foreign_keys = ON")
    except FleetError:
        raise
    except (OSError, sqlite3.Error) as exc:
        raise FleetError(
            f"cannot open the history database {path}: {_first_line(exc, None)}", hint
        ) from exc
    return Connection(raw, target)


def _postgresql(target: Target) -> Connection:
    try:
        import psycopg  # noqa: PLC0415 -- only for a PostgreSQL URL
        from psycopg import conninfo  # noqa: PLC0415
    except ImportError as exc:
        raise FleetError(
            "the PostgreSQL driver (psycopg 3) is not installed", install_hint("fleet")
        ) from exc
    try:
        params = conninfo.conninfo_to_dict(target.location)
    except psycopg.Error as exc:
        raise FleetError(
            f"{target.shown} is not a valid PostgreSQL URL: {_first_line(exc, None)}",
            "write postgresql://user:password@host:5432/dbname",
        ) from exc
    password = params.get("password")
    secret = str(password) if password else None
    extra: dict[str, Any] = {}
    if "connect_timeout" not in params:
        extra["connect_timeout"] = CONNECT_TIMEOUT_S
    try:
        raw = psycopg.connect(target.location, autocommit=True, **extra)
    except psycopg.Error as exc:
        raise FleetError(
            f"cannot connect to the history database {target.shown}: {_first_line(exc, secret)}",
            "check the server, the user and the database name (--db, NCCL_DOCTOR_DB)",
        ) from exc
    return Connection(raw, target)


def connect(target: Target, *, create: bool = True) -> Connection:
    """Open ``target``; ``create=False`` refuses to create a SQLite file that is not there."""
    if target.engine == "postgresql":
        return _postgresql(target)
    return _sqlite(target, create=create)
