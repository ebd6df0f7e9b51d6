"""Multi-rank flight-recorder dumps derived from the real H200 dump.

The flight recorder is NCCL-only, so a CPU test cannot record one. These
dumps are copies of ``tests/fixtures/captured/fr-h200/fr_dump_rank0`` read
with the parser's restricted loader, edited as plain data (sequence ids,
states, ops, sizes) and pickled again. ``write_cases`` regenerates the case
folders under tests/cases/app/ that use them.
"""

from __future__ import annotations

import copy
import pickle
from pathlib import Path
from typing import Any

from nccl_doctor.parse.flight_recorder import load_dump

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "fixtures" / "captured" / "fr-h200" / "fr_dump_rank0"


def real_dump() -> dict[str, Any]:
    """The real dump as plain data."""
    dump, why = load_dump(REAL.read_bytes())
    assert dump is not None, why
    return dump


def dump_of(
    world: int, ops: list[tuple[str, list[int], str]], completed: int, enqueued: int | None = None
) -> dict[str, Any]:
    """A dump of ``ops`` (name, size, state): collectives 1..n of a ``world``-rank group."""
    base = real_dump()
    template = base["entries"][0]
    entries = []
    for i, (op, size, state) in enumerate(ops):
        entry = copy.deepcopy(template)
        entry.update(
            collective_seq_id=i + 1,
            op_id=i + 1,
            record_id=i,
            profiling_name=f"nccl:{op}",
            input_sizes=[size],
            output_sizes=[size],
            state=state,
            time_created_ns=template["time_created_ns"] + i * 1_000_000,
        )
        entries.append(entry)
    base["entries"] = entries
    base["pg_config"]["0"]["ranks"] = str(list(range(world)))
    base["pg_status"]["0"] = {
        "last_enqueued_collective": enqueued if enqueued is not None else len(ops),
        "last_started_collective": -1,
        "last_completed_collective": completed,
    }
    return base


def write(path: Path, dump: dict[str, Any]) -> None:
    """Pickle plain data (protocol 2, as torch writes it)."""
    path.write_bytes(pickle.dumps(dump, protocol=2))


_MB = [1048576]


def write_cases(cases: Path = ROOT / "cases" / "app") -> None:
    """(Re)write the four flight-recorder case folders' dumps."""
    done = [("all_reduce", _MB, "completed")] * 4
    behind = cases / "hang" / "flight_recorder_rank2_behind"
    behind.mkdir(parents=True, exist_ok=True)
    for rank in range(4):
        ops = done if rank == 2 else [*done, ("all_reduce", _MB, "started")]
        write(behind / f"fr_dump_rank{rank}", dump_of(4, ops, completed=4))
    mismatch = cases / "collective_mismatch" / "flight_recorder_op_differs"
    mismatch.mkdir(parents=True, exist_ok=True)
    for rank in range(2):
        third = ("broadcast", [32], "started") if rank == 1 else ("all_reduce", _MB, "started")
        write(mismatch / f"fr_dump_rank{rank}", dump_of(2, [*done[:2], third], completed=2))
    agree = cases / "collective_mismatch" / "flight_recorder_ranks_agree"
    agree.mkdir(parents=True, exist_ok=True)
    for rank in range(4):
        write(agree / f"fr_dump_rank{rank}", dump_of(4, done, completed=4))
    single = cases / "hang" / "flight_recorder_real_h200_single_rank"
    single.mkdir(parents=True, exist_ok=True)
    (single / "fr_dump_rank0").write_bytes(REAL.read_bytes())


if __name__ == "__main__":
    write_cases()
