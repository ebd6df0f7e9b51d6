"""Error counters of a run's node: read from sysfs, compared before/after, kept and shown.

The node is real files: an /sys/class/infiniband tree made in tmp_path,
the fake NVML (tests/live/fake_nvml.py) whose ECC and NVLink counters move
by FAKE_NVML_BUMP, and kernel logs with real Xid lines. Captures are taken
with the same function ``run`` uses, into a run folder's node-before/ and
node-after/, and the folder is diagnosed as ``diagnose DIR`` would.
"""

from __future__ import annotations

import socket
from datetime import datetime, timedelta, timezone
from pathlib import Path

from nccl_doctor.evidence.host_live import IB_COUNTERS
from nccl_doctor.evidence.live import ReadLog
from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.net import IbPortCounters
from nccl_doctor.fleet import Store
from nccl_doctor.live_check import capture
from tests.fleet._support import report_of
from tests.live._support import FAKE, child_env

IB = "sys/class/infiniband"
GPU0 = "GPU-00000000-1111-2222-3333-444444444444"
GPU1 = "GPU-00000001-1111-2222-3333-444444444444"
KERNEL_BEFORE = (
    "[    3.474938] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  580.159.04  Release Build\n"
    "[  812.100001] NVRM: Xid (PCI:0000:3b:00): 63, pid='<unknown>', name=<unknown>, "
    "Row Remapper: New row marked for remapping, reset gpu to activate.\n"
)
NEW_XIDS = (
    "[ 9120.512211] NVRM: Xid (PCI:0000:3b:00): 48, pid=4242, name=python3, "
    "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer.\n"
    "[ 9120.600301] NVRM: Xid (PCI:0000:3b:00): 48, pid=4242, name=python3, "
    "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer.\n"
)


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _sysfs(root: Path, counters: dict[str, int]) -> None:
    """Two HCAs as mlx5 lays them out; mlx5_1 has no counters folder (an old driver)."""
    port = f"{IB}/mlx5_0/ports/1"
    files = {
        f"{port}/state": "4: ACTIVE\n",
        f"{port}/phys_state": "5: LinkUp\n",
        f"{port}/rate": "400 Gb/sec (4X NDR)\n",
        f"{port}/link_layer": "InfiniBand\n",
        f"{port}/counters/VL15_dropped": "0\n",
        f"{port}/counters/port_xmit_wait": "N/A\n",  # not a number: left out
        f"{IB}/mlx5_1/ports/1/state": "1: DOWN\n",
        f"{IB}/mlx5_1/ports/1/link_layer": "InfiniBand\n",
    }
    for name, value in counters.items():
        folder = "counters" if name in IB_COUNTERS else "hw_counters"
        files[f"{port}/{folder}/{name}"] = f"{value}\n"
    _write(root, files)


def _capture(folder: Path, root: Path, bump: int, kernel: str) -> None:
    env = {**child_env("ok"), "FAKE_NVML_BUMP": str(bump)}
    capture(folder, timeout_s=10, nvml_module=FAKE, nvml_env=env, root=root, environ={})
    (folder / "kernel-log.txt").write_text(kernel)  # the host's kernel log, as dmesg gave it


def _run_folder(tmp: Path, before: dict[str, int], after: dict[str, int], bump: int) -> Path:
    run = tmp / "run"
    _sysfs(tmp / "root-before", before)
    _sysfs(tmp / "root-after", after)
    (run / "node-before").mkdir(parents=True)
    _capture(run / "node-before", tmp / "root-before", 0, KERNEL_BEFORE)
    _capture(run / "node-after", tmp / "root-after", bump, KERNEL_BEFORE + NEW_XIDS)
    return run


def test_the_port_counters_are_read_bounded_and_tolerant(tmp_path: Path) -> None:
    from nccl_doctor.evidence.host_live import read_host

    _sysfs(tmp_path, {"symbol_error": 7, "link_downed": 1, "local_ack_timeout_err": 12})
    (tmp_path / IB / "mlx5_0/ports/x").mkdir()  # not a port number: skipped
    host = read_host(ReadLog(), 5.0, root=tmp_path, environ={})
    assert host.data["ib_counters"] == [
        {
            "device": "mlx5_0",
            "port": 1,
            "counters": {
                "VL15_dropped": 0,
                "link_downed": 1,
                "local_ack_timeout_err": 12,
                "symbol_error": 7,
            },
        }
    ]


def test_a_capture_keeps_them_as_facts(tmp_path: Path) -> None:
    _sysfs(tmp_path / "root", {"symbol_error": 7, "port_rcv_errors": 2})
    _capture(tmp_path / "b", tmp_path / "root", 0, KERNEL_BEFORE)
    (fact,) = [f for f in read_paths([str(tmp_path / "b")]).facts if isinstance(f, IbPortCounters)]
    assert (fact.device, fact.port) == ("mlx5_0", 1)
    assert fact.counters == (("VL15_dropped", 0), ("port_rcv_errors", 2), ("symbol_error", 7))


def test_a_runs_snapshots_give_what_moved_during_the_job(tmp_path: Path) -> None:
    run = _run_folder(
        tmp_path,
        {
            "symbol_error": 10,
            "link_downed": 1,
            "port_rcv_errors": 0,
            "port_xmit_discards": 100,
            "local_ack_timeout_err": 3,
        },
        {
            "symbol_error": 52,
            "link_downed": 2,
            "port_rcv_errors": 7,
            "port_xmit_discards": 5,
            "local_ack_timeout_err": 3,
        },
        bump=4,
    )
    inventory = report_of([run])["inventory"]
    host = socket.gethostname()
    assert inventory["counters_compared"] == [host]
    moved = {
        (c["device"], c["counter"]): (c["before"], c["after"], c["delta"], c["gpu"])
        for c in inventory["counters"]
    }
    assert {c["host"] for c in inventory["counters"]} == {host}
    assert moved == {
        ("mlx5_0/1", "symbol_error"): (10, 52, 42, None),
        ("mlx5_0/1", "link_downed"): (1, 2, 1, None),
        ("mlx5_0/1", "port_rcv_errors"): (0, 7, 7, None),
        ("mlx5_0/1", "port_xmit_discards"): (100, 5, 5, None),  # reset in between
        (GPU0, "ecc_volatile_corrected"): (12, 16, 4, GPU0),
        (GPU0, "ecc_volatile_uncorrected"): (3, 7, 4, GPU0),
        (GPU0, "ecc_aggregate_corrected"): (120, 124, 4, GPU0),
        (GPU0, "ecc_aggregate_uncorrected"): (7, 11, 4, GPU0),
        (f"{GPU1} link 1", "nvlink_replay_errors"): (148, 152, 4, GPU1),
        (GPU0, "xid_48"): (0, 2, 2, GPU0),  # the Xid 63 was there before: not new
    }


def test_nothing_moved_is_said_too(tmp_path: Path) -> None:
    same = {"symbol_error": 10, "link_downed": 1}
    run = _run_folder(tmp_path, same, same, bump=0)
    (run / "node-after" / "kernel-log.txt").write_text(KERNEL_BEFORE)
    inventory = report_of([run])["inventory"]
    assert (inventory["counters"], inventory["counters_compared"]) == ([], [socket.gethostname()])


def test_nodes_shows_a_link_getting_worse_across_runs(store: Store, tmp_path: Path) -> None:
    """Four runs on one node: symbol errors +0, +3, +40, +310; the last run's Xid too."""
    host = socket.gethostname()
    t0 = datetime(2026, 11, 1, tzinfo=timezone.utc)
    errors = [10, 10, 13, 53, 363]
    for n in range(4):
        run = _run_folder(
            tmp_path / f"r{n}",
            {"symbol_error": errors[n], "link_downed": 0},
            {"symbol_error": errors[n + 1], "link_downed": 0},
            bump=0,
        )
        if n < 3:
            (run / "node-after" / "kernel-log.txt").write_text(KERNEL_BEFORE)
        store.record("run", report_of([run]), job=f"job{n}", when=t0 + timedelta(hours=n))
    (node,) = [s for s in store.node_summaries() if s.node == host]
    (link,) = [c for c in node.counters if c.counter == "symbol_error"]
    assert (link.device, link.deltas, link.total, link.rising) == (
        "mlx5_0/1",
        (0, 3, 40, 310),
        353,
        True,
    )
    assert "mlx5_0/1 symbol_error rising (+0, +3, +40, +310)" in node.reasons
    assert node.suspect
    (gpu,) = [s for s in store.gpu_summaries() if s.gpu == GPU0]
    (xid,) = [c for c in gpu.counters if c.counter == "xid_48"]
    assert xid.deltas == (0, 0, 0, 2)
    from tests.fleet._support import cli

    shown = cli("nodes", "--db", store.target.location, "--node", host).stdout
    assert "mlx5_0/1 symbol_error: +0 +3 +40 +310 (total 353, rising)" in shown
