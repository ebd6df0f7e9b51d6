"""Which database, and every way of failing to reach it: one line, exit 2, no password."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest

from nccl_doctor.fleet import FleetError, open_store
from nccl_doctor.fleet.db import connect, default_path, redact_url, resolve
from tests.fleet._support import EXAMPLE, cli

SECRET = "s3cr3t-Pa55"  # noqa: S105 -- a fake password, to prove it never prints


def test_the_default_is_sqlite_in_the_users_data_folder(tmp_path: Path) -> None:
    env = {"XDG_DATA_HOME": str(tmp_path), "HOME": "/home/u"}
    assert default_path(env) == tmp_path / "nccl-doctor" / "history.db"
    assert default_path({"HOME": "/home/u", "XDG_DATA_HOME": "relative"}).parts[-3:] == (
        "share",
        "nccl-doctor",
        "history.db",
    )
    assert resolve(None, env).location == str(tmp_path / "nccl-doctor" / "history.db")
    assert resolve(None, {**env, "NCCL_DOCTOR_DB": "postgresql://db/x"}).engine == "postgresql"
    assert resolve("postgres://db/x", env).engine == "postgresql"
    assert resolve("sqlite:////var/h.db", env).location == "/var/h.db"
    assert resolve("sqlite:///var/h.db", env).location == "/var/h.db"
    assert resolve("h.db", env).location == "h.db"


def test_first_use_creates_the_file_privately_in_wal_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    monkeypatch.delenv("NCCL_DOCTOR_DB", raising=False)
    with open_store() as store:
        path = tmp_path / "nccl-doctor" / "history.db"
        assert store.target.location == str(path)
    assert path.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "nccl-doctor").stat().st_mode & 0o777 == 0o700
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone() == ("wal",)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"postgresql://doctor:{SECRET}@db:5432/fleet", "postgresql://doctor:***@db:5432/fleet"),
        (
            f"postgresql://db/fleet?password={SECRET}&sslmode=require",
            "postgresql://db/fleet?password=***&sslmode=require",
        ),
        ("postgresql://doctor@db/fleet", "postgresql://doctor@db/fleet"),
    ],
)
def test_the_password_is_never_shown(url: str, shown: str) -> None:
    assert redact_url(url) == shown
    assert resolve(url).shown == shown


def test_an_unknown_scheme_or_empty_sqlite_url_is_a_usage_error() -> None:
    with pytest.raises(FleetError, match=r"unsupported database URL mysql://u:\*\*\*@h/x"):
        resolve(f"mysql://u:{SECRET}@h/x")
    with pytest.raises(FleetError, match="does not name a SQLite file"):
        resolve("sqlite://")


def test_without_psycopg_the_hint_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg raises ImportError
    with pytest.raises(FleetError, match=r"psycopg 3\) is not installed") as caught:
        connect(resolve("postgresql://db/fleet"))
    assert "psycopg[binary]" in caught.value.hint
    assert ".[fleet]" in caught.value.hint


def test_a_file_that_is_not_a_database_is_one_line(tmp_path: Path) -> None:
    bogus = tmp_path / "not.db"
    bogus.write_text("this is not sqlite\n" * 100)
    with pytest.raises(FleetError, match=r"cannot .*history database"):
        open_store(str(bogus))


def test_reading_commands_do_not_create_a_history(tmp_path: Path) -> None:
    done = cli("history", env={"XDG_DATA_HOME": str(tmp_path)})
    assert done.returncode == 2
    assert done.stderr.startswith(
        f"error: no history database at {tmp_path}/nccl-doctor/history.db"
    )
    assert "(hint: record results first" in done.stderr
    assert not (tmp_path / "nccl-doctor").exists()


@pytest.mark.parametrize(
    "command",
    [
        ["diagnose", str(EXAMPLE), "--record"],
        ["history"],
        ["nodes"],
    ],
)
def test_an_unreachable_server_is_one_line_without_the_password(command: list[str]) -> None:
    url = f"postgresql://doctor:{SECRET}@127.0.0.1:9/fleet?connect_timeout=3"
    done = cli(*command, "--db", url)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(
        "error: cannot connect to the history database postgresql://doctor:***@"
    )
    assert "(hint: " in lines[0]
    assert SECRET not in done.stderr + done.stdout
    assert "Traceback" not in done.stderr
    assert done.stdout == ""  # --record checks the database before the work


def test_a_bad_url_in_the_environment_is_one_line(tmp_path: Path) -> None:
    done = cli("nodes", env={"NCCL_DOCTOR_DB": f"postgresql://u:{SECRET}@[::1/x"})
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("error: ")
    assert SECRET not in done.stderr
