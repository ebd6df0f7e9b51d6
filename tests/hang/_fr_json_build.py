"""Multi-rank flight-recorder dumps in torch's JSON form, built from the real one-rank JSON.

``tests/fixtures/captured/ras-h200/fr-0.json`` is what
``torch._C._distributed_c10d._dump_nccl_trace_json()`` returned on the H200
(torch 2.11, one rank, two collectives completed, the third scheduled). A
multi-rank NCCL job needs several GPUs, so the multi-rank dumps are built:
each is that file read as JSON, its entries and process groups rewritten
(sequence ids, ops, states, group ranks) and written back the way torch
writes it (keys sorted, no spaces; the builder reproduces the real file byte
for byte). ``python -m tests.hang._fr_json_build`` rewrites
tests/fixtures/constructed/fr-json/.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1] / "fixtures"
REAL = ROOT / "captured" / "ras-h200" / "fr-0.json"
OUT = ROOT / "constructed" / "fr-json"
_MB = [1048576]


def real() -> dict[str, Any]:
    """The real dump as plain data."""
    data: dict[str, Any] = json.loads(REAL.read_text())
    return data


def dumps(dump: dict[str, Any]) -> str:
    """As torch writes it (nlohmann::json's dump(): sorted keys, no spaces)."""
    return json.dumps(dump, sort_keys=True, separators=(",", ":"))


def dump_of(
    rank: int, groups: dict[str, tuple[str, list[int]]], ops: list[tuple[str, int, str, str]]
) -> dict[str, Any]:
    """Rank ``rank``'s dump of ``ops`` (group, seq, op, state) over ``groups`` (id -> desc, ranks).

    Every rank knows every group (``new_group`` runs on all ranks); only a member has
    the group's status.
    """
    base = real()
    template = base["entries"][0]
    entries = []
    for i, (pg, seq, op, state) in enumerate(ops):
        entry = copy.deepcopy(template)
        done = state == "completed"
        entry.update(
            collective_seq_id=seq,
            op_id=i + 1,
            record_id=i,
            pg_id=int(pg),
            process_group=[pg, groups[pg][0]],
            profiling_name=f"nccl:{op}",
            input_sizes=[_MB],
            output_sizes=[_MB],
            state=state,
            retired=done,
            time_created_ns=template["time_created_ns"] + i * 1_000_000,
            time_discovered_completed_ns=template["time_discovered_completed_ns"] + i
            if done
            else 0,
        )
        entries.append(entry)
    base["entries"] = entries
    base["pg_config"] = {
        pg: {"desc": desc, "name": pg, "ranks": str(ranks)} for pg, (desc, ranks) in groups.items()
    }
    base["pg_status"] = {}
    for pg, (_, members) in groups.items():
        if rank not in members:
            continue
        mine = [(seq, state) for g, seq, _, state in ops if g == pg]
        enq = max((s for s, _ in mine), default=-1)
        done = max((s for s, st in mine if st == "completed"), default=-1)
        base["pg_status"][pg] = {
            "last_completed_collective": str(done),
            "last_enqueued_collective": str(enq),
            "last_started_collective": "-1",
        }
    return base


def _default(world: int) -> dict[str, tuple[str, list[int]]]:
    return {"0": ("default_pg", list(range(world)))}


def cases() -> dict[str, dict[int, dict[str, Any]]]:
    """Folder name -> rank -> dump."""
    done = [("0", 1, "all_reduce", "completed"), ("0", 2, "broadcast", "completed")]
    waiting = [*done, ("0", 3, "all_reduce", "scheduled")]
    behind = {r: dump_of(r, _default(4), done if r == 2 else waiting) for r in range(4)}
    # rank 3 stuck in Python: rank 2 waits for it in the tensor-parallel group (pg 1: ranks 2, 3)
    # and so never reaches the default group's all_reduce seq 3 that ranks 0 and 1 wait in
    groups = {**_default(4), "1": ("tp", [2, 3])}
    tp = [("1", 1, "all_gather", "completed"), ("1", 2, "all_gather", "completed")]
    chain = {
        0: dump_of(0, groups, waiting),
        1: dump_of(1, groups, waiting),
        2: dump_of(2, groups, [*done, *tp, ("1", 3, "all_gather", "scheduled")]),
        3: dump_of(3, groups, [*done, *tp]),
    }
    healthy = {r: dump_of(r, _default(4), [*done, ("0", 3, "all_reduce", "completed")])
               for r in range(4)}  # fmt: skip
    return {"behind-rank2": behind, "chain-rank3": chain, "healthy": healthy}


def write(out: Path = OUT) -> list[Path]:
    """Write every case as ``<case>/nccl_trace_rank_<rank>.json``."""
    written = []
    for name, ranks in cases().items():
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        for rank, dump in ranks.items():
            path = folder / f"nccl_trace_rank_{rank}.json"
            path.write_text(dumps(dump))
            written.append(path)
    return written


if __name__ == "__main__":
    for p in write(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT):
        print(p)
