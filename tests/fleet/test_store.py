"""The store's API on both engines: record, get, runs and its filters, last_good."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from nccl_doctor.fleet import FleetError, Store
from tests.fleet._support import ECC_DMESG, EXAMPLE, HEALTHY, replay_bundle, report_of, uuid_of

T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)


def test_record_keeps_the_report_and_who_each_finding_blames(store: Store) -> None:
    report = report_of([EXAMPLE])
    run_id = store.record("diagnose", report, job="train-7", when=T0, node="node05")
    run = store.get(run_id)
    assert (run.kind, run.job, run.when, run.verdict, run.good) == (
        "diagnose",
        "train-7",
        T0,
        "failed",
        False,
    )
    assert run.report == report
    assert run.nodes == ("node05",)
    assert [g.key for g in run.gpus] == [f"node05:{i}" for i in range(8)]
    assert {g.name for g in run.gpus} == {"NVIDIA H200"}
    assert run.versions == {"driver": "570.172.08", "nccl": "2.26.2"}  # (PyTorch says which)
    blamed = {f.id: (f.severity, f.nodes, f.gpus) for f in run.findings}
    assert blamed["gpu.contention"] == (
        "critical",
        ("node05",),
        ("node05:0", "node05:2", "node05:3"),
    )
    assert blamed["cuda.unknown_error"] == ("critical", ("node05",), ("node05:2",))
    assert blamed["net.ib_link"] == ("info", ("node05",), ())


def test_a_capture_names_its_host_gpu_uuid_and_versions(store: Store, tmp_path: Path) -> None:
    folder = replay_bundle(HEALTHY, tmp_path, "node03")
    run = store.get(store.record("check", report_of([folder]), when=T0))
    assert run.nodes == ("node03",)
    ((gpu),) = run.gpus
    assert (gpu.key, gpu.node, gpu.bus_id, gpu.name) == (
        uuid_of("node03"),
        "node03",
        "00000000:00:06.0",
        "NVIDIA H200",
    )
    assert run.versions == {
        "driver": "580.159.04",
        "cuda": "13.0",
        "torch": "2.11.0",
        "nccl": "2.28.9",
    }
    assert (run.verdict, run.good, run.findings) == ("healthy", True, ())


def test_runs_filters_by_node_gpu_finding_job_kind_since(store: Store, tmp_path: Path) -> None:
    a = store.record("diagnose", report_of([EXAMPLE]), job="j1", when=T0, node="node05")
    b = store.record(
        "check",
        report_of([replay_bundle(HEALTHY, tmp_path / "b", "node01")]),
        when=T0 + timedelta(hours=1),
    )
    c = store.record(
        "diagnose", report_of([ECC_DMESG]), job="j2", when=T0 + timedelta(hours=2), node="node07"
    )

    def ids(**filters: object) -> list[int]:
        return [r.id for r in store.runs(**filters)]  # type: ignore[arg-type]

    assert ids() == [c, b, a]
    assert ids(node="node05") == [a]
    assert ids(node="nodeXX") == []
    assert ids(gpu=uuid_of("node01")) == [b]
    assert ids(gpu="00000000:00:06.0") == [b]
    assert ids(gpu="0000:00:06.0") == [b]  # any spelling of the bus id
    assert ids(gpu="node05:2") == [a]
    assert ids(gpu="1652923018111") == [c]
    assert ids(finding="gpu.contention") == [a]
    assert ids(finding="gpu.") == [c, a]
    assert ids(job="j2") == [c]
    assert ids(kind="check") == [b]
    assert ids(since=T0 + timedelta(minutes=30)) == [c, b]
    assert ids(limit=1) == [c]
    assert ids(node="node07", finding="gpu.ecc", job="j2", kind="diagnose") == [c]
    assert [r.report for r in store.runs(limit=1, reports=False)] == [{}]


def test_last_good_prefers_the_job_then_the_nodes(store: Store, tmp_path: Path) -> None:
    healthy = report_of([replay_bundle(HEALTHY, tmp_path / "h", "node01")])
    failed = report_of([EXAMPLE])
    t = iter(T0 + timedelta(hours=n) for n in range(10))
    good_job = store.record("diagnose", healthy, job="train", when=next(t))
    store.record("diagnose", failed, job="train", when=next(t), node="node01")
    good_other = store.record("check", healthy, job="other", when=next(t))
    store.record("diagnose", failed, job="third", when=next(t), node="node09")
    assert store.last_good(job="train").id == good_job  # type: ignore[union-attr]
    # no good run of the job: the latest good run that shares a node
    assert store.last_good(job="third", nodes=["node01"]).id == good_other  # type: ignore[union-attr]
    assert store.last_good(job="third", nodes=["node09"]) is None
    assert store.last_good(job=None, nodes=()) is None
    assert store.last_good(job=None, nodes=["node01"], before=good_other).id == good_job  # type: ignore[union-attr]


def test_a_table_without_uuids_is_linked_to_the_board_that_slot_had(
    store: Store, tmp_path: Path
) -> None:
    """nvidia-smi's table names no UUID; the node's earlier capture does, for the same bus id."""
    store.record("check", report_of([replay_bundle(HEALTHY, tmp_path, "node04")]), when=T0)
    table = report_of([Path("tests/fixtures/captured/h200-580/nvidia-smi.txt").resolve()])
    assert [g["uuid"] for g in table["inventory"]["gpus"]] == [None]
    run = store.get(store.record("diagnose", table, when=T0 + timedelta(hours=1), node="node04"))
    ((gpu),) = run.gpus
    assert (gpu.key, gpu.uuid, gpu.bus_id, gpu.index) == (
        uuid_of("node04"),
        uuid_of("node04"),
        "00000000:00:06.0",
        0,
    )
    assert [r.id for r in store.runs(gpu=uuid_of("node04"))] == [run.id, run.id - 1]


def test_unknown_kind_and_run_are_one_line_errors(store: Store) -> None:
    with pytest.raises(FleetError, match="unknown run kind 'deploy'"):
        store.record("deploy", {})
    with pytest.raises(FleetError, match="no run 999") as caught:
        store.get(999)
    assert "nccl-doctor history" in caught.value.hint


def test_a_report_from_before_the_inventory_still_records(store: Store) -> None:
    """Reports saved by earlier versions have no inventory: the run keeps its findings."""
    old = {k: v for k, v in report_of([EXAMPLE]).items() if k != "inventory"}
    run = store.get(store.record("diagnose", old, when=T0, node="node02"))
    assert run.nodes == ("node02",)
    assert [f.id for f in run.findings] == ["gpu.contention", "cuda.unknown_error", "net.ib_link"]
    # GPUs the findings name by index become that node's GPUs
    assert {g.key for g in run.gpus} == {"node02:0", "node02:2", "node02:3"}


def test_writers_at_once_on_a_new_database_all_land(db_url: str, tmp_path: Path) -> None:
    """Six processes open a history nobody made yet and record at once: one migration, six runs."""
    import json as json_
    import os
    import subprocess
    import sys

    from nccl_doctor.fleet import open_store
    from tests.fleet._support import ROOT

    report = tmp_path / "report.json"
    report.write_text(json_.dumps(report_of([EXAMPLE])))
    code = (
        "import json, sys; from nccl_doctor.fleet import open_store\n"
        "with open_store(sys.argv[1]) as s:\n"
        "    print(s.record('run', json.load(open(sys.argv[2])), job=sys.argv[3], node='node01'))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, db_url, str(report), f"job{n}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for n in range(6)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, [err for _, err in outs]
    assert sorted(int(out) for out, _ in outs) == [1, 2, 3, 4, 5, 6]
    with open_store(db_url) as store:
        assert sorted(r.job or "" for r in store.runs()) == [f"job{n}" for n in range(6)]
        assert store.conn.rows("SELECT COUNT(*) FROM nccl_doctor_schema") == [(3,)]
