"""A scripted fleet: eight nodes, real captures replayed under their names, one bad GPU.

Three rounds of ``check`` on node01..node08 replay the H200 bundle captured
on the project's machine (tests/fixtures/captured/check-h200) with each
node's hostname and GPU UUID. node05's GPU is the bad one: round 1 is the
bundle captured while another process held the GPU (gpu.contention),
round 2 adds real Xid 31/13/32 kernel lines (tests/fixtures/formats/xid)
moved onto node05's GPU (gpu.xid), round 3 real Xid 94 lines (gpu.ecc).
Then a probe on every node (the captured H200 probe; node07's host/device
copies at 60 %, a sagging PCIe link), and the job train-42: its first
attempt is the H200 "CUDA error 999" example on node05, its retry a clean
node01. Every record goes through ``diagnose``'s pipeline and the JSON
report, then :meth:`Store.record`, on both engines.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from nccl_doctor.fleet import Store
from tests.fleet._support import (
    ECC_DMESG,
    EXAMPLE,
    FOREIGN,
    HEALTHY,
    PROBE,
    XID_DMESG,
    cli,
    replay_bundle,
    report_of,
    uuid_of,
)

NODES = [f"node{n:02d}" for n in range(1, 9)]
BAD, SLOW = "node05", "node07"
T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)


def _kernel_lines(source: Path, bus: str, uuid: str, node: str) -> str:
    """Real kernel lines of one GPU of ``source``, moved onto ``node``'s GPU (bus 00:06)."""
    text = source.read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if f"PCI:{bus}" in line or "Serial" in line]
    moved = "\n".join(lines).replace(f"PCI:{bus}", "PCI:0000:00:06")
    return re.sub(uuid, uuid_of(node), moved) + "\n"


def _bad_bundle(round_: int, into: Path) -> Path:
    if round_ == 0:
        return replay_bundle(FOREIGN, into, BAD)
    folder = replay_bundle(HEALTHY, into, BAD)
    if round_ == 1:
        extra = _kernel_lines(
            XID_DMESG, "0000:01:00", "GPU-8a47641b-dff6-f09f-618c-c3eb58fb430d", BAD
        )
    else:
        extra = _kernel_lines(
            ECC_DMESG, "0000:00:08", "GPU-c24840ec-8de1-83d5-b126-08000173ae32", BAD
        )
    with (folder / "kernel-log.txt").open("a", encoding="utf-8") as log:
        log.write(extra)
    return folder


def _probe(node: str, into: Path, scale: float) -> Path:
    """The captured probe result as if run on ``node``; device copies scaled by ``scale``."""
    lines = []
    for raw in PROBE.read_text(encoding="utf-8").splitlines():
        line = raw.replace('"host": "vm"', f'"host": "{node}"')
        line = line.replace('"hosts": ["vm"]', f'"hosts": ["{node}"]')
        if scale != 1.0 and ('"kind": "h2d"' in line or '"kind": "d2h"' in line):
            record = json.loads(line.rstrip(","))
            for key in ("algbw_GBps", "busbw_GBps"):
                record[key] *= scale
            comma = "," if line.rstrip().endswith(",") else ""
            line = json.dumps(record, sort_keys=True) + comma
        lines.append(line)
    path = into / f"probe-{node}.json"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def fleet(store: Store, tmp_path: Path) -> dict[str, int]:
    """Record the fleet's history; the ids of the runs the assertions name."""
    clock = (T0 + timedelta(minutes=10 * n) for n in range(1000))
    ids: dict[str, int] = {}
    for round_ in range(3):
        for node in NODES:
            into = tmp_path / f"r{round_}-{node}"
            folder = (
                _bad_bundle(round_, into) if node == BAD else replay_bundle(HEALTHY, into, node)
            )
            ids[f"check{round_}-{node}"] = store.record(
                "check", report_of([folder]), when=next(clock)
            )
    for node in NODES:
        scale = 0.6 if node == SLOW else 1.0
        path = _probe(node, tmp_path, scale)
        ids[f"probe-{node}"] = store.record("probe", report_of([path]), when=next(clock))
    ids["attempt1"] = store.record(
        "diagnose", report_of([EXAMPLE]), job="train-42", when=next(clock), node=BAD
    )
    healthy = report_of([replay_bundle(HEALTHY, tmp_path / "retry", "node01")])
    ids["attempt2"] = store.record("diagnose", healthy, job="train-42", when=next(clock))
    return ids


def test_the_reports_blame_what_the_script_broke(store: Store, fleet: dict[str, int]) -> None:
    findings = {k: [(f.id, f.gpus) for f in store.get(fleet[k]).findings] for k in fleet}
    gpu = uuid_of(BAD)
    assert findings["check0-node05"] == [("gpu.contention", (gpu,))]
    assert findings["check1-node05"] == [("gpu.xid", (gpu,))]
    assert findings["check2-node05"] == [("gpu.ecc", (gpu,))]
    assert all(not findings[f"check{r}-{n}"] for r in range(3) for n in NODES if n != BAD)


def test_nodes_names_the_bad_node_and_gpu_first(store: Store, fleet: dict[str, int]) -> None:
    nodes = store.node_summaries()
    assert nodes[0].node == BAD
    assert (nodes[0].runs, nodes[0].failures, nodes[0].flagged) == (5, 1, 4)
    assert nodes[0].reasons[0] == "findings in 4 of 5 runs"
    assert [n.node for n in nodes if n.suspect] == [BAD, SLOW]
    gpus = store.gpu_summaries()
    top = gpus[0]
    assert (top.gpu, top.node, top.identity["bus_id"]) == (uuid_of(BAD), BAD, "00000000:00:06.0")
    # its 3 checks, the probe of its GPU 0 and train-42's first attempt, whose nvidia-smi
    # table names no UUID: GPU 0 of node05 is the board that slot had (see test_store)
    assert (top.runs, top.failures, top.flagged) == (5, 1, 4)
    assert top.last_findings == ("gpu.contention",)
    assert top.reasons == ("findings in 4 of 5 runs",)
    slow = next(g for g in gpus if g.gpu == uuid_of(SLOW))  # its probe linked to its board
    h2d = next(d for d in slow.drift if d.metric == "h2d")
    assert (h2d.sku, h2d.sku_peers, h2d.vs_sku_pct) == ("NVIDIA H200", 7, -40.0)
    assert "h2d 40% below the NVIDIA H200 median" in slow.reasons


def test_the_commands_show_it(store: Store, fleet: dict[str, int]) -> None:
    db = store.target.location
    text = cli("nodes", "--db", db, env={"COLUMNS": "200"})
    assert text.returncode == 0, text.stderr
    node_rows = [line.split()[0] for line in text.stdout.splitlines() if line.startswith("node")]
    assert node_rows[0] == BAD
    assert "  ! findings in 4 of 5 runs" in text.stdout
    data = json.loads(cli("nodes", "--db", db, "--suspects", "--format", "json").stdout)
    assert [n["node"] for n in data["nodes"]] == [BAD, SLOW]
    assert data["gpus"][0]["gpu"] == uuid_of(BAD)
    assert data["gpus"][0]["last_findings"] == ["gpu.contention"]
    history = json.loads(cli("history", "--db", db, "--node", BAD, "--format", "json").stdout)
    expected = [
        fleet["attempt1"],
        fleet[f"probe-{BAD}"],
        *(fleet[f"check{r}-{BAD}"] for r in (2, 1, 0)),
    ]
    assert [r["id"] for r in history["runs"]] == expected
    assert all(BAD in r["nodes"] for r in history["runs"])
    by_gpu = json.loads(
        cli("history", "--db", db, "--gpu", uuid_of(BAD), "--format", "json").stdout
    )
    assert [r["id"] for r in by_gpu["runs"]] == expected
    xid = cli("history", "--db", db, "--finding", "gpu.xid")
    assert xid.stdout.splitlines()[1].split()[0] == str(fleet[f"check1-{BAD}"])


def test_last_good_picks_the_retry_or_the_nodes_last_clean_run(
    store: Store, fleet: dict[str, int]
) -> None:
    assert store.last_good(job="train-42").id == fleet["attempt2"]  # type: ignore[union-attr]
    # a job never recorded: the latest good run on its nodes (the probe, after the checks)
    assert store.last_good(job="train-43", nodes=[BAD]).id == fleet[f"probe-{BAD}"]  # type: ignore[union-attr]
    before = fleet[f"probe-{BAD}"]
    # warnings only are still good (degraded): round 3's check
    assert store.last_good(job=None, nodes=[BAD], before=before).id == fleet[f"check2-{BAD}"]  # type: ignore[union-attr]
