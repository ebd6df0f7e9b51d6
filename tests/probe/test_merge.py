"""Many nodes: environment detection, pair schedules, and the merge of per-node results."""

from __future__ import annotations

import itertools
from pathlib import Path

from nccl_doctor.probe.distributed import detect, first_host, pair_rounds
from nccl_doctor.probe.result import load_result, merge_results, new_result, summarise


def _node(host: str, ok: bool) -> dict:
    r = new_result("quick", "cuda", [0, 1], host)
    r["steps"].append({"step": "kernel", "host": host, "ok": True, "status": "ok", "gpus": [0]})
    r["steps"].append(
        {
            "step": "all_reduce",
            "host": host,
            "ok": ok,
            "status": "ok" if ok else "failed",
            "gpus": [0, 1],
        }
    )
    r["bandwidth"].append(
        {
            "kind": "all_reduce",
            "host": host,
            "size_bytes": 1 << 28,
            "busbw_GBps": 300.0,
            "expected_GBps": 360.0,
            "short": False,
        }
    )
    r["p2p_matrix"] = {"0->1": True}
    r["meta"]["seconds"] = 10.0 if ok else 20.0
    return summarise(r)


def test_merge_keeps_every_node_and_the_cross_node_records() -> None:
    cross = {
        "steps": [
            {
                "step": "all_reduce",
                "phase": "node_pair",
                "host": "node0+node1",
                "ok": False,
                "status": "hung",
            }
        ],
        "bandwidth": [],
        "isolation": [
            {
                "method": "transport",
                "step": "node pair 0-1",
                "conclusion": "transport",
                "transport": "IB",
                "env": {"NCCL_IB_DISABLE": "1"},
            }
        ],
    }
    merged = merge_results([_node("a", True), _node("b", False)], cross)
    assert merged["meta"]["nodes"] == 2
    assert merged["meta"]["hosts"] == ["a", "b"]
    assert merged["meta"]["seconds"] == 20.0
    assert len(merged["steps"]) == 5
    assert [s["host"] for s in merged["steps"]] == ["a", "a", "b", "b", "node0+node1"]
    assert merged["p2p_matrix"] == {"a:0->1": True, "b:0->1": True}
    assert merged["summary"]["ok"] is False
    assert merged["summary"]["failed"] == 2
    assert merged["summary"]["hung"] == 1
    assert "transport IB" in merged["summary"]["isolation"][0]


def test_pair_rounds() -> None:
    assert pair_rounds(1, False) == []
    assert pair_rounds(2, False) == [[(0, 1)]]
    ring = pair_rounds(4, False)
    assert len(ring) == 2
    assert sorted(p for r in ring for p in r) == [(0, 1), (0, 3), (1, 2), (2, 3)]
    for n in (4, 5, 8):
        rounds = pair_rounds(n, True)
        pairs = [p for r in rounds for p in r]
        assert sorted(pairs) == list(itertools.combinations(range(n), 2))
        assert len(rounds) == (n - 1 if n % 2 == 0 else n)
        for r in rounds:
            nodes = [x for p in r for x in p]
            assert len(nodes) == len(set(nodes))  # disjoint within a round


def test_detect_torchrun_and_slurm() -> None:
    assert detect({}) is None
    tr = detect(
        {
            "RANK": "9",
            "WORLD_SIZE": "16",
            "LOCAL_RANK": "1",
            "LOCAL_WORLD_SIZE": "8",
            "GROUP_RANK": "1",
            "MASTER_ADDR": "n0",
            "MASTER_PORT": "1234",
            "TORCHELASTIC_USE_AGENT_STORE": "True",
        }
    )
    assert tr is not None
    assert (tr.rank, tr.node, tr.nodes, tr.local_rank, tr.agent_store) == (
        9,
        1,
        2,
        1,
        True,
    )
    sl = detect(
        {
            "SLURM_PROCID": "5",
            "SLURM_NTASKS": "8",
            "SLURM_LOCALID": "1",
            "SLURM_NODEID": "1",
            "SLURM_NNODES": "2",
            "SLURM_NODELIST": "gpu[07-08]",
        }
    )
    assert sl is not None
    assert (sl.rank, sl.world, sl.local_world, sl.node, sl.master_addr) == (
        5,
        8,
        4,
        1,
        "gpu07",
    )
    assert sl.master_port == 29500
    assert not sl.agent_store
    assert first_host("gpu[03-05,09],cpu1") == "gpu03"
    assert first_host("nodeA,nodeB") == "nodeA"


def test_simulated_two_node_slurm_run(tmp_path: Path) -> None:
    """Four srun tasks on two "nodes" (gloo on the CPU): self-probes, the node pair, the merge."""
    import socket
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "merged.json"
    base = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(Path(__file__).parents[2] / "src"),
        "PYTHONWARNINGS": "ignore",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
        "SLURM_NTASKS": "4",
        "SLURM_NNODES": "2",
        "SLURM_NODELIST": "vm[1-2]",
    }
    argv = [sys.executable, "-m", "nccl_doctor.probe", "--device", "cpu", "--gpus", "0,1"]
    procs = [
        subprocess.Popen(
            [*argv, "--out", str(out)] if r == 0 else argv,
            env={
                **base,
                "SLURM_PROCID": str(r),
                "SLURM_NODEID": str(r // 2),
                "SLURM_LOCALID": str(r % 2),
            },
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for r in range(4)
    ]
    codes = [p.wait(timeout=120) for p in procs]
    assert codes == [0, 0, 0, 0], [p.stderr.read()[-800:] for p in procs if p.stderr]
    merged = load_result(out)
    assert merged["meta"]["nodes"] == 2
    pair = [s for s in merged["steps"] if s.get("phase") == "node_pair"]
    assert {s["step"] for s in pair} >= {"init", "all_reduce", "broadcast"}
    assert all(s["ok"] for s in pair)
    world = {b["world"] for b in merged["bandwidth"] if b.get("phase") == "node_pair"}
    assert world == {4}


def test_rank_records_of_a_pair_join() -> None:
    from nccl_doctor.probe.distributed import merge_rank_steps

    steps = [
        {"step": "init", "ranks": [0], "gpus": [0], "ok": True, "status": "ok", "seconds": 1.0},
        {"step": "init", "ranks": [2], "gpus": [0], "ok": True, "status": "ok", "seconds": 2.0},
        {"step": "all_reduce", "ranks": [0], "gpus": [0], "ok": True, "status": "ok"},
        {
            "step": "all_reduce",
            "ranks": [2],
            "gpus": [1],
            "ok": False,
            "status": "hung",
            "error": "rank 0: no progress",
            "bad_ranks": [2],
        },
    ]
    init, ar = merge_rank_steps(steps)
    assert init["ranks"] == [0, 2]
    assert init["seconds"] == 2.0
    assert init["ok"]
    assert ar["ranks"] == [0, 2]
    assert ar["gpus"] == [0, 1]
    assert not ar["ok"]
    assert ar["status"] == "hung"
    assert ar["bad_ranks"] == [2]
