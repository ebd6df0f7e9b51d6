"""Many nodes: the probe under torchrun (c10d rendezvous) or Slurm ``srun``.

Every launched process is the *parent* of one local GPU; the parents never
touch CUDA and talk through the c10d TCP store (the elastic agent's store
under torchrun, one hosted by rank 0 under srun). Then:

1. each node probes itself: its local rank 0 runs the single-node probe
   (:class:`~nccl_doctor.probe.runner.Runner`) over the node's GPUs and puts
   its result in the store;
2. node pairs: ring neighbours (``--quick``: two rounds, even then odd pairs)
   or every pair (``--full``: round robin, ``N-1`` rounds); in each round
   every parent of a paired node launches one worker on its GPU, and the
   pair's ``2G`` workers run the collectives as one group under the same
   watchdog; a failing pair is rerun with ``NCCL_IB_DISABLE=1``;
3. rank 0 merges the per-node results and the pair records, and reports.

Rank, world and node come from torchrun (``RANK``, ``WORLD_SIZE``,
``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, ``GROUP_RANK``) or Slurm
(``SLURM_PROCID``, ``SLURM_NTASKS``, ``SLURM_LOCALID``, ``SLURM_NODEID``,
``SLURM_NNODES``); ``MASTER_ADDR`` defaults to the first host of
``SLURM_NODELIST`` and ``MASTER_PORT`` to 29500.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from nccl_doctor.probe.device import torch_module
from nccl_doctor.probe.launch import LaunchResult
from nccl_doctor.probe.result import merge_results
from nccl_doctor.probe.runner import Options, Runner


@dataclass(frozen=True, slots=True)
class World:
    """Where this process sits in a many-node probe."""

    rank: int
    world: int
    local_rank: int
    local_world: int
    node: int
    nodes: int
    master_addr: str
    master_port: int
    agent_store: bool


def first_host(nodelist: str) -> str:
    """The first host of a Slurm node list (``gpu[03-05,09],cpu1`` -> ``gpu03``)."""
    m = re.match(r"([^,\[]+)(?:\[([^\]]+)\])?", nodelist.strip())
    if not m:
        return nodelist
    prefix, ranges = m.group(1), m.group(2)
    if not ranges:
        return prefix
    return prefix + ranges.split(",")[0].split("-")[0]


def detect(env: dict[str, str] | None = None) -> World | None:
    """The many-node world from torchrun's or Slurm's variables; ``None`` when alone."""
    e = dict(os.environ) if env is None else env
    if "RANK" in e and "WORLD_SIZE" in e and "LOCAL_RANK" in e:
        world, local_world = int(e["WORLD_SIZE"]), int(e.get("LOCAL_WORLD_SIZE", "1"))
        rank = int(e["RANK"])
        return World(
            rank, world, int(e["LOCAL_RANK"]), local_world,
            int(e.get("GROUP_RANK", rank // max(local_world, 1))),
            max(1, world // max(local_world, 1)),
            e.get("MASTER_ADDR", "127.0.0.1"), int(e.get("MASTER_PORT", "29500")),
            e.get("TORCHELASTIC_USE_AGENT_STORE", "").lower() == "true",
        )  # fmt: skip
    if "SLURM_PROCID" in e and "SLURM_NTASKS" in e:
        world, nodes = int(e["SLURM_NTASKS"]), int(e.get("SLURM_NNODES", "1"))
        addr = e.get("MASTER_ADDR") or first_host(e.get("SLURM_NODELIST", "127.0.0.1"))
        return World(
            int(e["SLURM_PROCID"]), world, int(e.get("SLURM_LOCALID", "0")),
            max(1, world // max(nodes, 1)), int(e.get("SLURM_NODEID", "0")), nodes,
            addr, int(e.get("MASTER_PORT", "29500")), False,
        )  # fmt: skip
    return None


def pair_rounds(nodes: int, full: bool) -> list[list[tuple[int, int]]]:
    """Rounds of disjoint node pairs: ring neighbours, or every pair (round robin)."""
    if nodes < 2:
        return []
    if not full:
        ring = sorted({tuple(sorted((i, (i + 1) % nodes))) for i in range(nodes)})
        rounds: list[list[tuple[int, int]]] = []
        for pair in ring:
            for r in rounds:
                if not {pair[0], pair[1]} & {x for p in r for x in p}:
                    r.append(pair)  # type: ignore[arg-type]
                    break
            else:
                rounds.append([pair])  # type: ignore[list-item]
        return rounds
    slots = list(range(nodes)) + ([-1] if nodes % 2 else [])
    out = []
    for _ in range(len(slots) - 1):
        half = len(slots) // 2
        pairs = [
            (min(a, b), max(a, b)) for a, b in zip(slots[:half], slots[::-1][:half], strict=True)
        ]
        out.append([p for p in pairs if -1 not in p])
        slots = [slots[0], slots[-1], *slots[1:-1]]
    return out


class Node:
    """One parent process of a many-node probe."""

    def __init__(self, w: World, opts: Options, store_timeout_s: float = 3600.0) -> None:
        self.w, self.opts = w, opts
        dist = torch_module().distributed
        master = w.rank == 0 and not w.agent_store
        base = dist.TCPStore(
            w.master_addr, w.master_port, is_master=master,
            timeout=timedelta(seconds=store_timeout_s),
        )  # fmt: skip
        self.store = dist.PrefixStore("nccl-doctor-probe", base)

    def _put(self, key: str, value: Any) -> None:
        self.store.set(key, json.dumps(value))

    def _get(self, key: str) -> Any:
        return json.loads(self.store.get(key).decode())

    def _barrier(self, name: str) -> None:
        self.store.set(f"{name}/{self.w.rank}", "1")
        self.store.wait([f"{name}/{r}" for r in range(self.w.world)])

    def self_probe(self) -> None:
        """Local rank 0 probes this node's GPUs; the result goes to the store."""
        if self.w.local_rank == 0:
            self.opts.devices = list(range(self.w.local_world))
            self._put(f"node/{self.w.node}", Runner(self.opts).run())
        self._barrier("self")

    def _pair_launch(self, a: int, b: int, tag: str, env: dict[str, str]) -> LaunchResult:
        runner = Runner(self.opts)
        g = self.w.local_world
        rank = (0 if self.w.node == a else 1) * g + self.w.local_rank
        specs = runner.collective_specs([[self.w.local_rank]], env, self.opts.collectives)
        spec = specs[0]
        spec.update(
            rank=rank, world=2 * g, devices=[self.w.local_rank],
            store={"tcp": [self.w.master_addr, self.w.master_port],
                   "prefix": f"nccl-doctor-probe/pair/{tag}"},
        )  # fmt: skip
        return runner._go([spec], coupled=True, phase=f"node pair {a}-{b}")

    def pairs(self, full: bool) -> None:
        """Every round of node pairs; each process records its share in the store."""
        for r, pairs in enumerate(pair_rounds(self.w.nodes, full)):
            mine = next((p for p in pairs if self.w.node in p), None)
            if mine is not None:
                a, b = mine
                res = self._pair_launch(a, b, f"{r}/{a}-{b}", {})
                self._put(f"pair/{r}/{a}-{b}/{self.w.rank}", _records(res, a, b))
                self._barrier(f"pair-{r}-ran")
                leader = a * self.w.local_world
                if self.w.rank == leader:
                    ok = all(
                        all(s["ok"] for s in self._get(f"pair/{r}/{a}-{b}/{k}")["steps"])
                        for k in self._ranks(a, b)
                    )
                    self._put(f"pair/{r}/{a}-{b}/verdict", ok)
                if not self._get(f"pair/{r}/{a}-{b}/verdict"):
                    env = {"NCCL_IB_DISABLE": "1"}
                    again = self._pair_launch(a, b, f"{r}/{a}-{b}/ib", env)
                    if self.w.rank == leader:
                        self._put(f"pair/{r}/{a}-{b}/isolation", {
                            "method": "transport", "step": f"node pair {a}-{b}",
                            "conclusion": "transport" if again.ok else "none",
                            "transport": "IB" if again.ok else None,
                            "env": env if again.ok else {},
                        })  # fmt: skip
            else:
                self._barrier(f"pair-{r}-ran")
            self._barrier(f"pair-{r}")

    def _ranks(self, a: int, b: int) -> list[int]:
        g = self.w.local_world
        return [n * g + i for n in (a, b) for i in range(g)]

    def merge(self, full: bool) -> dict[str, Any]:
        """Rank 0: the per-node results and the pair records, merged."""
        nodes = [self._get(f"node/{n}") for n in range(self.w.nodes)]
        cross: dict[str, list[Any]] = {"steps": [], "bandwidth": [], "isolation": []}
        for r, pairs in enumerate(pair_rounds(self.w.nodes, full)):
            for a, b in pairs:
                steps: list[dict[str, Any]] = []
                for k in self._ranks(a, b):
                    rec = self._get(f"pair/{r}/{a}-{b}/{k}")
                    steps.extend(rec["steps"])
                    cross["bandwidth"].extend(rec["bandwidth"])
                cross["steps"].extend(merge_rank_steps(steps))
                if self.store.check([f"pair/{r}/{a}-{b}/isolation"]):
                    cross["isolation"].append(self._get(f"pair/{r}/{a}-{b}/isolation"))
        return merge_results(nodes, cross)


def merge_rank_steps(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per-rank records of one group's steps -> one record per step (ranks joined)."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for s in steps:
        key = (s["step"], json.dumps(s.get("transport_env") or {}, sort_keys=True))
        if key not in out:
            out[key] = {**s, "ranks": list(s.get("ranks", [])), "gpus": list(s.get("gpus", []))}
            continue
        m = out[key]
        m["ranks"] = sorted({*m["ranks"], *s.get("ranks", [])})
        m["gpus"] = sorted({*m["gpus"], *s.get("gpus", [])})
        m["bad_ranks"] = sorted({*m.get("bad_ranks", []), *s.get("bad_ranks", [])})
        m["seconds"] = max(m.get("seconds") or 0, s.get("seconds") or 0)
        if not s["ok"]:
            if m["ok"]:
                m["error"] = s.get("error")
            m["ok"] = False
            m["status"] = "hung" if "hung" in (m["status"], s["status"]) else "failed"
    return list(out.values())


def _records(res: LaunchResult, a: int, b: int) -> dict[str, Any]:
    tag = {"phase": "node_pair", "host": f"node{a}+node{b}"}
    return {
        "steps": [{**tag, **s} for s in res.steps],
        "bandwidth": [{**tag, **x} for x in res.bandwidth],
    }


def run_distributed(w: World, opts: Options, finish: Callable[[dict[str, Any]], int]) -> int:
    """The many-node probe: rank 0 merges and calls ``finish``; every rank returns its code.

    Every rank exits with rank 0's code, so that the launcher sees one outcome
    (torchrun agents whose workers succeeded would otherwise wait at their
    exit barrier for an agent whose workers failed).
    """
    node = Node(w, opts)
    node.self_probe()
    node.pairs(opts.mode == "full")
    if w.rank == 0:
        node._put("exit", finish(node.merge(opts.mode == "full")))
    code = int(node._get("exit"))
    node._barrier("merged")
    return code
