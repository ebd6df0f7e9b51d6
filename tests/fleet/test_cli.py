"""The commands as a user runs them: --record, history, nodes, and run's default recording."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from nccl_doctor.fleet import open_store
from tests.fleet._support import ECC_DMESG, EXAMPLE, cli

JOB = [sys.executable, "-c", "print('step 1 loss 2.5')"]


def test_diagnose_record_keeps_the_report_it_printed(db_url: str) -> None:
    done = cli(
        "diagnose",
        str(EXAMPLE),
        "--format",
        "json",
        "--record",
        "--db",
        db_url,
        "--node",
        "node05",
        "--job",
        "812345",
    )
    assert done.returncode == 1  # the report's own exit code: a critical finding
    printed = json.loads(done.stdout)
    assert done.stderr.startswith("recorded as run 1 in ")
    with open_store(db_url) as store:
        (run,) = store.runs()
    assert (run.id, run.kind, run.job, run.nodes) == (1, "diagnose", "812345", ("node05",))
    assert run.report == printed


def test_history_lists_filters_and_shows_one_run(db_url: str) -> None:
    cli("diagnose", str(EXAMPLE), "--record", "--db", db_url, "--node", "node05", "-q")
    cli("diagnose", str(ECC_DMESG), "--record", "--db", db_url, "--node", "node07", "-q")
    listed = cli("history", "--db", db_url, env={"COLUMNS": "160"})
    assert listed.returncode == 0
    lines = listed.stdout.splitlines()
    assert lines[0].split() == [
        "ID",
        "WHEN",
        "(UTC)",
        "KIND",
        "JOB",
        "VERDICT",
        "NODES",
        "FINDINGS",
    ]
    assert lines[1].split()[0] == "2"
    assert lines[1].split()[-1] == "gpu.ecc"
    assert lines[2].split()[-2:] == ["gpu.contention,", "cuda.unknown_error"]
    assert lines[3].startswith("2 run(s), newest first (history: ")
    only = json.loads(cli("history", "--db", db_url, "--node", "node07", "--format", "json").stdout)
    assert [(r["id"], r["nodes"], r["verdict"]) for r in only["runs"]] == [
        (2, ["node07"], "degraded")
    ]
    assert "report" not in only["runs"][0]
    one = cli("history", "--db", db_url, "--id", "1")
    assert one.stdout.splitlines()[0].startswith("run 1: diagnose, failed (not good), recorded ")
    assert (
        "  critical gpu.contention (medium, root cause) -> node05:0, node05:2, node05:3"
        in one.stdout
    )
    full = json.loads(cli("history", "--db", db_url, "--id", "1", "--format", "json").stdout)
    assert full["runs"][0]["report"]["findings"][0]["id"] == "gpu.contention"
    missing = cli("history", "--db", db_url, "--id", "9")
    assert missing.returncode == 2
    assert missing.stderr.startswith("error: no run 9 matches in the history")
    nothing = cli("history", "--db", db_url, "--node", "nodeXX")
    assert (nothing.returncode, nothing.stdout.split(" (history")[0]) == (
        0,
        "no recorded run matches",
    )


def test_bad_filters_are_usage_errors(tmp_path: Path) -> None:
    for args, words in (
        (["--since", "yesterday"], "is not a duration or a date"),
        (["--limit", "0"], "is not a whole number from 1 to 10000"),
        (["--kind", "deploy"], "invalid choice"),
    ):
        done = cli("history", "--db", str(tmp_path / "h.db"), *args)
        assert done.returncode == 2
        assert words in done.stderr
        assert done.stderr.startswith("error: ")


def test_run_records_every_run_by_default_with_the_schedulers_job(
    db_url: str, tmp_path: Path
) -> None:
    done = cli(
        "run",
        "--dir",
        str(tmp_path / "run"),
        "--db",
        db_url,
        "--",
        *JOB,
        env={"SLURM_JOB_ID": "4242", "SLURM_ARRAY_TASK_ID": "3"},
    )
    assert done.returncode == 0, done.stderr
    assert "nccl-doctor run: recorded as run 1 (job 4242_3) in " in done.stderr
    manifest = json.loads((tmp_path / "run" / "MANIFEST.json").read_text())
    assert manifest["history"]["run_id"] == 1
    assert manifest["node_after"]["ok"] is True  # the counters' "after", taken on success too
    with open_store(db_url) as store:
        (run,) = store.runs()
    assert (run.kind, run.job) == ("run", "4242_3")
    assert run.report["inventory"]["counters_compared"] == list(run.nodes)


def test_run_without_a_scheduler_records_the_run_folders_name(db_url: str, tmp_path: Path) -> None:
    env = {"SLURM_JOB_ID": "", "PBS_JOBID": "", "LSB_JOBID": "", "FLUX_JOB_ID": "", "JOB_ID": ""}
    done = cli("run", "--dir", str(tmp_path / "try-7"), "--db", db_url, "--", *JOB, env=env)
    assert done.returncode == 0
    with open_store(db_url) as store:
        assert [r.job for r in store.runs()] == ["try-7"]


def test_run_no_record_and_a_broken_history_never_change_the_job(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    off = cli("run", "--dir", str(tmp_path / "a"), "--no-record", "--db", str(db), "--", *JOB)
    assert off.returncode == 0
    assert not db.exists()
    assert "recorded" not in off.stderr
    bad = "postgresql://u:hunter2@127.0.0.1:9/x?connect_timeout=3"
    failing = [sys.executable, "-c", "import sys; print('boom'); sys.exit(7)"]
    done = cli("run", "--dir", str(tmp_path / "b"), "--db", bad, "--", *failing)
    assert done.returncode == 7  # the job's status, whatever the history did
    assert "boom" in done.stdout
    warning = [line for line in done.stderr.splitlines() if "warning" in line]
    assert warning == [
        "nccl-doctor run: warning: this run will not be recorded: cannot connect to the history "
        "database postgresql://u:***@127.0.0.1:9/x?connect_timeout=3: connection failed: "
        + warning[0].split("connection failed: ", 1)[1]
    ]
    assert "hunter2" not in done.stderr
    assert "diagnosis of" in done.stderr  # the failure is still diagnosed


def test_help_has_examples() -> None:
    for command, example in (
        ("history", "nccl-doctor history --node node05 --since 7d"),
        ("nodes", "nccl-doctor nodes --suspects"),
        ("diagnose", "--record --node node17"),
        ("run", "--db postgresql://doctor@db/fleet"),
    ):
        done = cli(command, "--help")
        assert done.returncode == 0
        assert example in done.stdout, command


def test_check_record_names_this_host(db_url: str) -> None:
    import socket

    done = cli(
        "check",
        "--record",
        "--db",
        db_url,
        "--format",
        "json",
        "--timeout",
        "5",
        env={"SLURM_JOB_ID": "99"},
    )
    assert done.returncode in (0, 1, 3), done.stderr
    assert "recorded as run 1 in " in done.stderr
    with open_store(db_url) as store:
        (run,) = store.runs()
    assert (run.kind, run.job, run.nodes) == ("check", "99", (socket.gethostname(),))
    assert run.report == json.loads(done.stdout)


def test_probe_record_keeps_its_bandwidth_figures(db_url: str) -> None:
    """The gloo self-test (two virtual CPU devices): a real probe, recorded with its figures."""
    import pytest

    pytest.importorskip("torch")
    done = cli("probe", "--device", "cpu", "--record", "--db", db_url, "--format", "json")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "recorded as run 1 in " in done.stderr
    with open_store(db_url) as store:
        (run,) = store.runs()
        rows = store.conn.rows("SELECT kind, world FROM run_figures WHERE run_id = ?", (run.id,))
        (node,) = store.node_summaries()
    assert run.kind == "probe"
    kinds = {(kind, world) for kind, world in rows}
    assert ("all_reduce", 2) in kinds
    assert ("h2d", None) in kinds
    assert "all_reduce (2 GPUs)" in {d.metric for d in node.drift}
