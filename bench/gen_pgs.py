"""Generate issue 17's scale log: 512 ranks of NCCL INFO, many process groups, one duplicate GPU.

The shape (64 hosts x 8 GPUs by default, every rank with its own host, pid
and GPU bus id):

* every rank prints PyTorch's ``ProcessGroupNCCL initialization options``
  line once for each of ``--pgs`` process groups it belongs to (the world,
  then its host's tensor-parallel group and its GPU column's data-parallel
  group in turn), and the ``environments`` line of the world group;
* NCCL's communicator-init chatter (bootstrap, ``NET/IB``, ``Init START``,
  trees, ``Channel .. via ..`` lines, rings, ``Init COMPLETE``) of host groups
  and of the world, re-created over and over, with a training-progress line
  per rank between rounds;
* ``--pg-layout start`` puts every process-group line at the start (the
  20-group log of the issue); ``spread`` spreads the rounds evenly through
  the log (the ~800-group log: 430,000 such lines from a 4,000-rank job);
* at the end, one planted failure: two ranks of host ``node017`` are on the
  same GPU when a new group is created: NCCL's ``Duplicate GPU detected``
  WARN and its ``-> 5`` chain on both, their ``DistBackendError`` /
  ``ncclInvalidUsage`` tracebacks, half of the other ranks' watchdog
  timeouts, and torchrun's ``ChildFailedError`` summary.

``--per-rank DIR`` writes the same lines as one file per rank
(``DIR/rank{N}.log``, the ``[rankN]:``/``[defaultN]:`` prefix dropped since
the file names the rank, as torchrun's ``--log-dir`` does) and the
launcher's own lines to ``DIR/launcher.log``. Deterministic for a seed;
written in batches, never held in memory.

    python bench/gen_pgs.py OUT [--pgs 20] [--size-mib 512] [--ranks 512] [--per-rank DIR]
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_log import (
    BUS_IDS,
    NCCL_VERSION,
    PY,
    Comm,
    Rank,
    glog,
    interleave,
    make_ranks,
    python_traceback,
    torchrun_summary,
    watchdog,
)

#: The host whose two ranks end up on one GPU, and their local ranks.
DUP_HOST = 17
DUP_LOCALS = (2, 3)
#: A line and the global rank that printed it (``None``: the launcher's own line).
Tagged = tuple[int | None, str]
_PREFIX = re.compile(r"\[(?:rank|default)\d+\]:")


def _tag(rank: Rank, lines: list[str]) -> list[Tagged]:
    return [(rank.rank, line) for line in lines]


def _pg_desc(k: int) -> tuple[str, str]:
    """The kind of process group ``k``: ``world``, ``tp`` (a host's 8 GPUs), ``dp`` (a column)."""
    if k == 0:
        return "world", "default_pg"
    return ("tp", "tp") if k % 2 else ("dp", "dp")


def pg_round(k: int, ranks: list[Rank], gpus_per_host: int, rng: random.Random) -> list[Tagged]:
    """Every rank's ProcessGroupNCCL init line for process group ``k``, interleaved."""
    kind, desc = _pg_desc(k)
    per_rank: list[list[Tagged]] = []
    minute, second = divmod(k // 4, 60)
    hms = f"01:{minute % 60:02d}:{second:02d}"
    for x in ranks:
        if kind == "world":
            size, group_rank = len(ranks), x.rank
        elif kind == "tp":
            size, group_rank = gpus_per_host, x.local
        else:
            size, group_rank = len(ranks) // gpus_per_host, x.rank // gpus_per_host
        us = rng.randrange(1_000_000)
        pre = f"[rank{x.rank}]:"
        pg = f"[PG ID {k} PG GUID {k}({desc}) Rank {group_rank}]"
        lines = [
            (
                f"{pre}{glog('I', hms, us, 'ProcessGroupNCCL.cpp:905')}{pg} ProcessGroupNCCL "
                f"initialization options: size: {size}, global rank: {x.rank}, TIMEOUT(ms): "
                f"600000, USE_HIGH_PRIORITY_STREAM: 0, SPLIT_FROM: 0, SPLIT_COLOR: "
                f"{-2 if k == 0 else 1 + x.rank // size}, PG Name: {k}"
            )
        ]
        if k == 0:
            lines.append(
                f"{pre}{glog('I', hms, us + 40, 'ProcessGroupNCCL.cpp:914')}{pg} "
                f"ProcessGroupNCCL environments: NCCL version: {NCCL_VERSION}, "
                "TORCH_NCCL_ASYNC_ERROR_HANDLING: 3, TORCH_NCCL_DUMP_ON_TIMEOUT: 0, "
                "TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC: 60000, TORCH_NCCL_DESYNC_DEBUG: 0, "
                "TORCH_NCCL_ENABLE_TIMING: 0, TORCH_NCCL_BLOCKING_WAIT: 0, "
                "TORCH_DISTRIBUTED_DEBUG: OFF, TORCH_NCCL_ENABLE_MONITORING: 1, "
                "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC: 480, TORCH_NCCL_TRACE_BUFFER_SIZE: 0, "
                "TORCH_NCCL_COORD_CHECK_MILSEC: 1000, TORCH_NCCL_NAN_CHECK: 0"
            )
        per_rank.append(_tag(x, lines))
    return list(interleave(per_rank, rng))


def chatter(ranks: list[Rank], gpus_per_host: int, rng: random.Random) -> Iterator[Tagged]:
    """Endless healthy INFO chatter: communicators of host groups and the world re-created."""
    hosts = [ranks[h : h + gpus_per_host] for h in range(0, len(ranks), gpus_per_host)]
    step, loss = 0, 9.0
    versioned: set[int] = set()  # NCCL prints its version once per process
    while True:
        step += 1
        if step % 40 == 1:
            groups = [ranks]
        else:
            first = step * 8 % len(hosts)
            groups = (hosts * 2)[first : first + 8]
        per_rank: list[list[Tagged]] = [[] for _ in ranks]
        for group in groups:
            comm = Comm(group, gpus_per_host, rng)
            for i, m in enumerate(group):
                banner = m.rank not in versioned
                versioned.add(m.rank)
                per_rank[m.rank] += _tag(m, comm.init_lines(i, rng, banner))
        yield from interleave(per_rank, rng)
        loss = max(1.2, loss * 0.9995 + (rng.random() - 0.5) * 0.02)
        for x in ranks:
            if x.local == 0 or step % 8 == 0:
                yield (
                    x.rank,
                    (
                        f"[default{x.local}]:Epoch {1 + step // 2000} step {step} loss "
                        f"{loss + rng.random() * 0.05:.4f} lr 3.0e-04"
                    ),
                )


def _duplicate(x: Rank, me: int, other: int, device: int, rng: random.Random) -> list[str]:
    """NCCL's refusal on one of the two ranks placed on ``device``, and its ``-> 5`` chain."""
    tid = x.pid + 61
    p, main = f"{x.host}:{x.pid}:{tid} [{device}] ", f"{x.host}:{x.pid}:{x.pid} [{device}] "
    comm, comm_id = 0x55D000000000 + rng.getrandbits(36), rng.getrandbits(64)
    return [
        (
            f"{main}NCCL INFO ncclCommInitRank comm 0x{comm:x} rank {me} nranks 8 cudaDev "
            f"{device} nvmlDev {device} busId {BUS_IDS[device]} commId 0x{comm_id:016x} "
            "- Init START"
        ),
        (
            f"{p}init.cc:934 NCCL WARN Duplicate GPU detected : rank {me} and rank {other} both "
            f"on CUDA device {BUS_IDS[device]}"
        ),
        f"{p}NCCL INFO init.cc:1476 -> 5",
        f"{p}NCCL INFO init.cc:1829 -> 5",
        f"{p}NCCL INFO group.cc:64 -> 5 [Async thread]",
        f"{main}NCCL INFO group.cc:418 -> 5",
        f"{main}NCCL INFO init.cc:2060 -> 5",
    ]


def _invalid_usage(x: Rank, me: int, other: int, device: int) -> list[str]:
    """The rank's Python traceback: DistBackendError, ncclInvalidUsage, Last error."""
    pre = f"[rank{x.rank}]:"
    dist = f"{PY}/torch/distributed"
    frames = [
        ("/workspace/train.py", 212, "<module>", "main()"),
        ("/workspace/train.py", 176, "main", "eval_group = build_eval_group(args)"),
        ("/workspace/parallel.py", 88, "build_eval_group", "dist.barrier(group=group)"),
        (f"{dist}/c10d_logger.py", 83, "wrapper", "return func(*args, **kwargs)"),
        (f"{dist}/distributed_c10d.py", 4159, "barrier", "work = group.barrier(opts=opts)"),
    ]
    return [
        *python_traceback(pre, frames),
        (
            f"{pre}torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/"
            "c10d/NCCLUtils.hpp:317, invalid usage (run with NCCL_DEBUG=WARN for details), "
            f"NCCL version {NCCL_VERSION}"
        ),
        f"{pre}ncclInvalidUsage: This usually reflects invalid usage of NCCL library.",
        f"{pre}Last error:",
        (
            f"{pre}Duplicate GPU detected : rank {me} and rank {other} both on CUDA device "
            f"{BUS_IDS[device]}"
        ),
    ]


def failure_tail(ranks: list[Rank], gpus_per_host: int, rng: random.Random) -> list[Tagged]:
    """The planted failure: two ranks of one host on one GPU, the cascade, torchrun's summary."""
    host = min(DUP_HOST, len(ranks) // gpus_per_host - 1)
    a, b = (ranks[host * gpus_per_host + k] for k in DUP_LOCALS)
    device = a.local % len(BUS_IDS)
    nccl = [
        _tag(a, _duplicate(a, a.local, b.local, device, rng)),
        _tag(b, _duplicate(b, b.local, a.local, device, rng)),
    ]
    out = list(interleave(nccl, rng))
    out += _tag(a, _invalid_usage(a, a.local, b.local, device))
    out += _tag(b, _invalid_usage(b, b.local, a.local, device))
    others = [x for x in ranks if x.host != a.host]
    rng.shuffle(others)
    waits = [_tag(x, watchdog(x, rng)) for x in others[: max(1, len(others) // 2)]]
    out += interleave(waits, rng)
    agent = 140243
    out += [
        (
            None,
            (
                f"W1106 03:22:47.905000 {agent} torch/distributed/elastic/multiprocessing/"
                f"api.py:897] Sending process {x.pid} closing signal SIGTERM"
            ),
        )
        for x in ranks
        if x.host == a.host and x.rank not in (a.rank, b.rank)
    ]
    return out + [(None, line) for line in torchrun_summary(a, agent, exitcode=1)]


def _body(
    ranks: list[Rank], gpus_per_host: int, pgs: int, *, spread: bool, budget: int, seed: int
) -> Iterator[Tagged]:
    """The healthy part, ``budget`` bytes give or take a line: process groups and chatter."""
    rng = random.Random(seed + 1)
    talk = chatter(ranks, gpus_per_host, random.Random(seed + 2))
    written, k = 0, 0
    while True:
        while k < pgs and (not spread or written >= k * budget // pgs):
            for item in pg_round(k, ranks, gpus_per_host, rng):
                written += len(item[1]) + 1
                yield item
            k += 1
        item = next(talk)
        written += len(item[1]) + 1
        if written > budget:
            return
        yield item


class _Split:
    """Per-rank files, written in batches: ``rank{N}.log`` and ``launcher.log``."""

    def __init__(self, folder: Path, ranks: int) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        width = len(str(ranks - 1))
        self.files: dict[int | None, IO[str]] = {
            r: (folder / f"rank{r:0{width}d}.log").open("w", encoding="ascii") for r in range(ranks)
        }
        self.files[None] = (folder / "launcher.log").open("w", encoding="ascii")
        self.pending: dict[int | None, list[str]] = {r: [] for r in self.files}
        self.count = 0
        self.bytes = 0

    def add(self, rank: int | None, line: str) -> None:
        if rank is not None and (m := _PREFIX.match(line)):
            line = line[m.end() :]
        self.pending[rank].append(line)
        self.bytes += len(line) + 1
        self.count += 1
        if self.count >= 1 << 16:
            self.flush()

    def flush(self) -> None:
        for rank, lines in self.pending.items():
            if lines:
                self.files[rank].write("\n".join(lines) + "\n")
                lines.clear()
        self.count = 0

    def close(self) -> None:
        self.flush()
        for f in self.files.values():
            f.close()


def generate(args: argparse.Namespace) -> tuple[int, int]:
    """Write the log (or the per-rank files); returns (bytes written, process-group lines)."""
    rng = random.Random(args.seed)
    ranks = make_ranks(args.ranks, args.gpus_per_host, rng)
    tail = failure_tail(ranks, args.gpus_per_host, rng)
    budget = max(0, int(args.size_mib * (1 << 20)) - sum(len(t[1]) + 1 for t in tail))
    spread = args.pg_layout == "spread" or (args.pg_layout == "auto" and args.pgs > 20)
    items = _body(ranks, args.gpus_per_host, args.pgs, spread=spread, budget=budget, seed=args.seed)
    pg_lines = 0
    if args.per_rank is not None:
        split = _Split(args.per_rank, args.ranks)
        for rank, line in _chain(items, tail):
            pg_lines += "ProcessGroupNCCL init" in line
            split.add(rank, line)
        split.close()
        return split.bytes, pg_lines
    written = 0
    with args.out.open("w", encoding="ascii") as f:
        batch: list[str] = []
        for _, line in _chain(items, tail):
            pg_lines += "ProcessGroupNCCL init" in line
            batch.append(line)
            written += len(line) + 1
            if len(batch) >= 1 << 14:
                f.write("\n".join(batch) + "\n")
                batch.clear()
        if batch:
            f.write("\n".join(batch) + "\n")
    return written, pg_lines


def _chain(items: Iterator[Tagged], tail: list[Tagged]) -> Iterator[Tagged]:
    yield from items
    yield from tail


def main() -> None:
    """CLI entry; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, nargs="?", help="the one log (unless --per-rank)")
    parser.add_argument("--per-rank", type=Path, default=None, metavar="DIR")
    parser.add_argument("--pgs", type=int, default=20, help="process groups per rank")
    parser.add_argument("--pg-layout", choices=("auto", "start", "spread"), default="auto")
    parser.add_argument("--size-mib", type=float, default=512)
    parser.add_argument("--ranks", type=int, default=512)
    parser.add_argument("--gpus-per-host", type=int, default=8)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if (args.out is None) == (args.per_rank is None):
        parser.error("give OUT or --per-rank DIR")
    if args.gpus_per_host < max(DUP_LOCALS) + 1 or args.ranks < 2 * args.gpus_per_host:
        parser.error(f"need at least {max(DUP_LOCALS) + 1} GPUs per host and two hosts")
    if args.pgs < 1:
        parser.error("need at least one process group")
    written, pg_lines = generate(args)
    where = args.per_rank if args.per_rank is not None else args.out
    print(f"{where}: {written} bytes, {args.ranks} ranks, {pg_lines} ProcessGroupNCCL init lines")


if __name__ == "__main__":
    main()
