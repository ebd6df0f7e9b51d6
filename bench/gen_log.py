"""Generate a large interleaved log of a failed many-rank NCCL job, for the scale benchmarks.

The log is what a Slurm/torchrun job with ``NCCL_DEBUG=INFO`` (and
``NCCL_DEBUG_SUBSYS=INIT,COLL``) leaves behind: communicator inits of the
world and of its tensor/data-parallel groups (bootstrap, ``NET/IB : Using``,
``ncclCommInitRank ... Init START``, rings, trees and ``Channel .. via ..``
lines in bulk, ``Init COMPLETE``), per-collective ``AllReduce: opCount`` lines,
training progress and a few benign warnings, all ranks interleaved. Near the
end one rank's IB completion error (``NCCL WARN`` and its ``-> 6`` chain)
turns into a Python traceback, the other ranks' watchdogs time out and
torchrun prints its ``ChildFailedError`` summary.

Deterministic for a given seed; written in batches, never held in memory.

    python bench/gen_log.py OUT [--size-mib 512] [--ranks 512] [--gpus-per-host 8] [--seed 7]
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

NCCL_VERSION = "2.21.5"
CUDA = "12.4"
#: PCI bus ids of the eight GPUs of an HGX H100 board.
BUS_IDS = ("18000", "2a000", "3a000", "5d000", "9a000", "ab000", "ba000", "db000")
#: NCCL channels of a communicator.
CHANNELS = 16
#: The sequence number of the collective the job dies in.
FAILED_SEQ = 48213
#: Which rank's NIC fails (or the last rank of a smaller job).
FAILED_RANK = 133
PY = "/usr/local/lib/python3.10/dist-packages"
NOT_FOUND = "cannot open shared object file: No such file or directory"
LOADING = "when loading libnccl-net.so"


@dataclass(frozen=True, slots=True)
class Rank:
    """One process of the job and the strings its lines start with."""

    rank: int
    host: str
    local: int
    pid: int
    ip: str

    def nccl(self, tid_offset: int = 0) -> str:
        """NCCL's ``host:pid:tid [dev] `` prefix (main thread, or a helper thread)."""
        return f"{self.host}:{self.pid}:{self.pid + tid_offset} [{self.local}] "


def make_ranks(ranks: int, gpus_per_host: int, rng: random.Random) -> list[Rank]:
    """The job's processes, ``gpus_per_host`` to a host."""
    out: list[Rank] = []
    for r in range(ranks):
        h, local = divmod(r, gpus_per_host)
        pid = 20000 + rng.randrange(300000) if local == 0 else out[-1].pid + 1
        ip = f"10.{(h >> 8) & 255}.{h & 255}.10"  # ib0 of the host, shared by its ranks
        out.append(Rank(rank=r, host=f"node{h:03d}", local=local, pid=pid, ip=ip))
    return out


def glog(letter: str, hms: str, us: int, where: str) -> str:
    """A c10d glog prefix, torch >= 2.2 shape: ``[E1106 03:12:45.123456789 file.cpp:616] ``."""
    return f"[{letter}1106 {hms}.{us % 1_000_000:06d}{us % 1000:03d} {where}] "


class Comm:
    """A communicator over some ranks, as NCCL's init lines describe it."""

    def __init__(self, members: list[Rank], gpus_per_host: int, rng: random.Random) -> None:
        self.members = members
        self.n = len(members)
        self.gpus = gpus_per_host
        self.comm_id = rng.getrandbits(64)
        self.handles = [0x55D000000000 + rng.getrandbits(36) for _ in members]
        self.nodes = len({m.host for m in members})

    def _init_rank(self, i: int) -> str:
        me = self.members[i]
        return (
            f"{me.nccl()}NCCL INFO ncclCommInitRank comm 0x{self.handles[i]:x} rank {i} "
            f"nranks {self.n} cudaDev {me.local} nvmlDev {me.local} busId {BUS_IDS[me.local % 8]} "
            f"commId 0x{self.comm_id:016x}"
        )

    def init_lines(self, i: int, rng: random.Random, banner: bool | None = None) -> list[str]:
        """The lines member ``i`` prints while this communicator is created.

        ``banner``: whether the ``NCCL version`` line comes first (NCCL prints
        it once per process; by default here, on the communicator's rank 0).
        """
        me = self.members[i]
        p = f"{me.nccl()}NCCL INFO "
        n, local, handle = self.n, me.local, self.handles[i]
        nics = " ".join(f"[{k}]mlx5_{k}:1/IB" for k in range(8))
        mask = "ffffffff,00000000,ffffffff" + (",00000000" if local >= 4 else "")
        first = i == 0 if banner is None else banner
        out = [f"{p}NCCL version {NCCL_VERSION}+cuda{CUDA}"] if first else []
        out += [
            f"{p}cudaDriverVersion 12040",
            f"{p}Bootstrap : Using ib0:{me.ip}<0>",
            f"{p}NET/Plugin: No plugin found (libnccl-net.so)",
            f"{p}NET/Plugin: Plugin load returned 2 : libnccl-net.so: {NOT_FOUND} : {LOADING}",
            f"{p}NET/Plugin: Using internal network plugin.",
            f"{p}NCCL_SOCKET_IFNAME set by environment to ib0",
            f"{p}NCCL_IB_HCA set by environment to mlx5",
            f"{p}NET/IB : Using {nics} [RO]; OOB ib0:{me.ip}<0>",
            f"{p}Using non-device net plugin version 0",
            f"{p}Using network IB",
            f"{self._init_rank(i)} - Init START",
            f"{p}Setting affinity for GPU {local} to {mask}",
            f"{p}NVLS multicast support is available on dev {local}",
            (
                f"{p}comm 0x{handle:x} rank {i} nRanks {n} nNodes {self.nodes} "
                f"localRanks {min(n, self.gpus)} localRank {local} MNNVL 0"
            ),
        ]
        up, down = (i - 1) % n, (i + 1) % n
        trees = " ".join(f"[{c}] {down}/-1/-1->{i}->{up}" for c in range(CHANNELS))
        out.append(f"{p}Trees {trees}")
        out.append(f"{p}P2P Chunksize set to 131072")
        if i == 0:
            ring = "".join(f"{k:>4}" for k in range(n))
            out += [f"{p}Channel {c:02d}/{CHANNELS:02d} : {ring}" for c in range(CHANNELS)]
        nxt, prv = self.members[down], self.members[up]
        send = f"{i}[{local}] -> {down}[{nxt.local}]"
        recv = f"{up}[{prv.local}] -> {i}[{local}]"
        for c in range(CHANNELS):
            if nxt.host == me.host:
                out.append(f"{p}Channel {c:02d}/0 : {send} via P2P/CUMEM/read")
            else:
                out.append(f"{p}Channel {c:02d}/0 : {send} [send] via NET/IB/{c % 8}/GDRDMA")
            if prv.host != me.host:
                out.append(f"{p}Channel {c:02d}/0 : {recv} [receive] via NET/IB/{c % 8}/GDRDMA")
        out.append(f"{p}Connected all rings")
        back = f"{i}[{local}] -> {up}[{prv.local}]"
        for c in range(0, CHANNELS, 2):
            if prv.host == me.host:
                out.append(f"{p}Channel {c:02d}/0 : {back} via P2P/CUMEM/read")
            else:  # a peer on another machine is reached through the network, never P2P
                out.append(f"{p}Channel {c:02d}/0 : {back} [send] via NET/IB/{c % 8}/GDRDMA")
        out += [
            f"{p}Connected all trees",
            (
                f"{p}NVLS comm 0x{handle:x} headRank {local} nHeads 8 buffSize 1048576 "
                "memSize 2097152 nvlsPerRankSize 100663296 nvlsTotalSize 805306368"
            ),
            f"{p}Connected NVLS",
            f"{p}threadThresholds 8/8/64 | {8 * n}/8/64 | 512 | 512",
            (
                f"{p}{CHANNELS} coll channels, {CHANNELS} collnet channels, 16 nvls channels, "
                f"{2 * CHANNELS} p2p channels, 2 p2p channels per peer"
            ),
            f"{p}TUNER/Plugin: Plugin load returned 2 : libnccl-tuner.so: {NOT_FOUND}",
            f"{p}TUNER/Plugin: Using internal tuner plugin.",
            (
                f"{self._init_rank(i)} localSize 296 used 1074200576 bytes on core "
                f"{rng.randrange(96)} - Init COMPLETE"
            ),
            (
                f"{p}Init timings: rank {i} nranks {n} total {1 + rng.random():.2f} (kernels 0.21, "
                f"alloc 0.{rng.randrange(10, 99)}, bootstrap 0.83, allgathers 0.04, topo 0.12, "
                "graphs 0.01, connections 0.28, rest 0.03)"
            ),
        ]
        return out

    def coll_line(self, i: int, op_count: int, count: int, stream: int) -> str:
        """The ``NCCL_DEBUG_SUBSYS=COLL`` line of one collective on member ``i``."""
        buf = f"0x7f{stream:08x}00"
        return (
            f"{self.members[i].nccl()}NCCL INFO AllReduce: opCount {op_count:x} sendbuff {buf} "
            f"recvbuff {buf} count {count} datatype 7 op 0 root 0 comm 0x{self.handles[i]:x} "
            f"[nranks={self.n}] stream 0x{stream:x}"
        )


def interleave(per_rank: list[list[str]], rng: random.Random) -> Iterator[str]:
    """Merge each rank's lines into one stream: each rank's order kept, bursts of 1-4 lines."""
    queues = [q for q in per_rank if q]
    pos = [0] * len(queues)
    live = list(range(len(queues)))
    while live:
        k = rng.randrange(len(live))
        q = live[k]
        lines, start = queues[q], pos[q]
        end = min(start + 1 + rng.getrandbits(2), len(lines))
        yield from lines[start:end]
        pos[q] = end
        if end == len(lines):
            live[k] = live[-1]
            live.pop()


def watchdog(x: Rank, rng: random.Random) -> list[str]:
    """What one healthy rank's c10d watchdog prints when the stuck collective times out."""
    us = rng.randrange(1_000_000)
    pre = f"[rank{x.rank}]:"
    numel = 262144000
    pg = f"[PG ID 0 PG GUID 0(default_pg) Rank {x.rank}]"
    return [
        (
            f"{pre}{glog('E', '03:22:44', us, 'ProcessGroupNCCL.cpp:616')}[Rank {x.rank}] "
            f"Watchdog caught collective operation timeout: WorkNCCL(SeqNum={FAILED_SEQ}, "
            f"OpType=ALLREDUCE, NumelIn={numel}, NumelOut={numel}, Timeout(ms)=600000) ran for "
            f"{600000 + rng.randrange(100)} milliseconds before timing out."
        ),
        (
            f"{pre}{glog('E', '03:22:44', us + 300, 'ProcessGroupNCCL.cpp:1785')}{pg} Exception "
            f"(either an error or timeout) detected by watchdog at work: {FAILED_SEQ}, last "
            f"enqueued NCCL work: {FAILED_SEQ}, last completed NCCL work: {FAILED_SEQ - 1}."
        ),
        (
            f"{pre}{glog('E', '03:22:44', us + 500, 'ProcessGroupNCCL.cpp:630')}[Rank {x.rank}] "
            "Some NCCL operations have failed or timed out. Due to the asynchronous nature of "
            "CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data."
        ),
        (
            f"{pre}{glog('E', '03:22:44', us + 700, 'ProcessGroupNCCL.cpp:636')}[Rank {x.rank}] "
            "To avoid data inconsistency, we are taking the entire process down."
        ),
    ]


def python_traceback(prefix: str, frames: list[tuple[str, int, str, str]]) -> list[str]:
    """A Python traceback's header and frames (file, line, function, code), each line prefixed."""
    out = [f"{prefix}Traceback (most recent call last):"]
    for file, line, func, code in frames:
        out += [f'{prefix}  File "{file}", line {line}, in {func}', f"{prefix}    {code}"]
    return out


def torchrun_summary(bad: Rank, agent: int, exitcode: int = -6) -> list[str]:
    """torchrun's own failure: its traceback and the ChildFailedError table."""
    elastic = f"{PY}/torch/distributed"
    if exitcode == -6:
        how = f"Signal 6 (SIGABRT) received by PID {bad.pid}"
    else:
        how = "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"
    return [
        (
            f"E1106 03:22:48.390000 {agent} torch/distributed/elastic/multiprocessing/api.py:869] "
            f"failed (exitcode: {exitcode}) local_rank: {bad.local} (pid: {bad.pid}) of binary: "
            "/usr/bin/python3"
        ),
        "Traceback (most recent call last):",
        '  File "/usr/local/bin/torchrun", line 8, in <module>',
        "    sys.exit(main())",
        f'  File "{elastic}/elastic/multiprocessing/errors/__init__.py", line 355, in wrapper',
        "    return f(*args, **kwargs)",
        f'  File "{elastic}/run.py", line 919, in main',
        "    run(args)",
        f'  File "{elastic}/run.py", line 910, in run',
        "    elastic_launch(",
        f'  File "{elastic}/launcher/api.py", line 138, in __call__',
        "    return launch_agent(self._config, self._entrypoint, list(args))",
        f'  File "{elastic}/launcher/api.py", line 269, in launch_agent',
        "    raise ChildFailedError(",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "train.py FAILED",
        "------------------------------------------------------------",
        "Failures:",
        "  <NO_OTHER_FAILURES>",
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2024-11-06_03:22:47",
        f"  host      : {bad.host}",
        f"  rank      : {bad.rank} (local_rank: {bad.local})",
        f"  exitcode  : {exitcode} (pid: {bad.pid})",
        "  error_file: <N/A>",
        f"  traceback : {how}",
        "============================================================",
    ]


def failure_tail(ranks: list[Rank], rng: random.Random) -> list[str]:
    """The end of the log: one rank's IB error, its traceback, the others' watchdogs, torchrun."""
    bad = ranks[min(len(ranks) - 1, FAILED_RANK)]
    peer = ranks[(bad.rank + len(ranks) // 2) % len(ranks)]
    p = bad.nccl(tid_offset=57)
    warn = (
        f"NET/IB : Got completion from peer {peer.ip}<{40000 + rng.randrange(20000)}> with "
        f"status=12 opcode=0 len=0 vendor err 129 (Send) localGid ::ffff:{bad.ip} "
        f"remoteGids::ffff:{peer.ip} hca mlx5_{bad.local}"
    )
    out = [
        f"{p}transport/net_ib.cc:1696 NCCL WARN {warn}",
        f"{p}NCCL INFO transport/net.cc:1298 -> 6",
        f"{p}NCCL INFO proxy.cc:698 -> 6",
        f"{p}NCCL INFO proxy.cc:878 -> 6 [Progress Thread]",
        (
            f"[rank{bad.rank}]:{glog('E', '03:12:46', 104233, 'ProcessGroupNCCL.cpp:1539')}"
            f"[PG ID 0 PG GUID 0(default_pg) Rank {bad.rank}] Process group watchdog thread "
            "terminated with exception: NCCL error: remote process exited or there was a network "
            f"error, NCCL version {NCCL_VERSION}"
        ),
    ]
    d = f"[default{bad.local}]:"
    frames = [
        ("/workspace/train.py", 212, "<module>", "main()"),
        ("/workspace/train.py", 187, "main", "loss = train_step(model, batch, optimizer)"),
        ("/workspace/train.py", 141, "train_step", "loss.backward()"),
        (f"{PY}/torch/_tensor.py", 581, "backward", "torch.autograd.backward("),
        (f"{PY}/torch/autograd/__init__.py", 347, "backward", "_engine_run_backward("),
        (
            f"{PY}/torch/autograd/graph.py",
            825,
            "_engine_run_backward",
            "return Variable._execution_engine.run_backward(  # Calls into the C++ engine",
        ),
    ]
    out += python_traceback(d, frames)
    out += [
        (
            f"{d}torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
            "ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error, "
            f"NCCL version {NCCL_VERSION}"
        ),
        (
            f"{d}ncclRemoteError: A call failed possibly due to a network error or a remote "
            "process exiting prematurely."
        ),
        f"{d}Last error:",
        f"{d}{warn}",
    ]
    others = [x for x in ranks if x.rank != bad.rank]
    rng.shuffle(others)
    out += interleave([watchdog(x, rng) for x in others[: max(1, len(others) // 2)]], rng)
    agent = 140243
    out += [
        (
            f"W1106 03:22:47.905000 {agent} torch/distributed/elastic/multiprocessing/api.py:897] "
            f"Sending process {x.pid} closing signal SIGTERM"
        )
        for x in ranks
        if x.host == bad.host and x.rank != bad.rank
    ]
    return out + torchrun_summary(bad, agent)


def _start(ranks: list[Rank], world: Comm, gpus_per_host: int, rng: random.Random) -> Iterator[str]:
    """The job's start: rendezvous retries, the world and its groups created, a warning."""
    for x in ranks[: min(len(ranks), 4)]:
        yield (
            f"[rank{x.rank}]:{glog('W', '01:00:03', 122000 + x.rank, 'socket.cpp:697')}[c10d] "
            f"The client socket has failed to connect to [{ranks[0].host}]:29500 (errno: 111 - "
            "Connection refused)."
        )
    yield from interleave([world.init_lines(i, rng) for i in range(world.n)], rng)
    per_rank: list[list[str]] = [[] for _ in ranks]
    hosts = [ranks[h : h + gpus_per_host] for h in range(0, len(ranks), gpus_per_host)]
    columns = [ranks[k::gpus_per_host] for k in range(min(gpus_per_host, len(ranks)))]
    for group in hosts + columns:
        comm = Comm(group, gpus_per_host, rng)
        for i, m in enumerate(group):
            per_rank[m.rank] += comm.init_lines(i, rng)
    yield from interleave(per_rank, rng)
    for x in ranks:
        if x.local == 0:
            yield (
                f"[default0]:{PY}/torch/autograd/graph.py:825: UserWarning: c10d::allreduce_: an "
                "autograd kernel was not registered to the Autograd key(s) but we are trying to "
                "backprop through it."
            )


def body(ranks: list[Rank], gpus_per_host: int, rng: random.Random) -> Iterator[str]:
    """Endless healthy-job lines: inits of the world and its groups, then training steps."""
    world = Comm(ranks, gpus_per_host, rng)
    yield from _start(ranks, world, gpus_per_host, rng)
    hosts = [ranks[h : h + gpus_per_host] for h in range(0, len(ranks), gpus_per_host)]
    streams = [0x55D0C7F3E010 + 0x1000 * x.rank for x in ranks]
    step, op, loss = 0, 0, 9.0
    while True:
        step += 1
        loss = max(1.2, loss * 0.9995 + (rng.random() - 0.5) * 0.02)
        per_step: list[list[str]] = [[] for _ in ranks]
        for _bucket in range(2):
            op += 1
            count = 25165824 + 1048576 * (op % 7)
            for i, m in enumerate(world.members):
                per_step[m.rank].append(world.coll_line(i, op, count, streams[m.rank]))
        if step % 5 == 0:
            for x in ranks:
                per_step[x.rank].append(
                    f"[default{x.local}]:Epoch {1 + step // 2000} step {step} loss "
                    f"{loss + rng.random() * 0.05:.4f} lr 3.0e-04 "
                    f"grad_norm {0.5 + rng.random():.3f}"
                )
        yield from interleave(per_step, rng)
        if step % 10 == 0:
            # groups re-created (checkpoint, eval, a new pipeline schedule): init lines in bulk
            if step % 50 == 0:
                fresh = [Comm(ranks, gpus_per_host, rng)]
            else:
                first = step // 10 * 8 % len(hosts)
                fresh = [Comm(g, gpus_per_host, rng) for g in (hosts * 2)[first : first + 8]]
            batch = [comm.init_lines(i, rng) for comm in fresh for i in range(comm.n)]
            yield from interleave(batch, rng)
        if step % 500 == 0:
            yield (
                f"[rank0]:{glog('W', '02:10:00', step, 'ProcessGroupNCCL.cpp:4115')}[PG ID 0 "
                "PG GUID 0(default_pg) Rank 0]  using GPU 0 to perform barrier as devices used by "
                "this process are currently unknown. This can potentially cause a hang if this "
                "rank to GPU mapping is incorrect."
            )


def generate(out: Path, size_bytes: int, ranks: int, gpus_per_host: int, seed: int) -> int:
    """Write the log to ``out``, ``size_bytes`` give or take a line; returns the bytes written."""
    rng = random.Random(seed)
    procs = make_ranks(ranks, gpus_per_host, rng)
    tail = "".join(line + "\n" for line in failure_tail(procs, rng)).encode()
    budget = max(0, size_bytes - len(tail))
    written = 0
    batch: list[str] = []
    batch_bytes = 0
    with out.open("wb") as f:
        for line in body(procs, gpus_per_host, rng):
            n = len(line) + 1  # the generated lines are ASCII
            if written + batch_bytes + n > budget:
                break
            batch.append(line)
            batch_bytes += n
            if batch_bytes >= 1 << 20:
                f.write(("\n".join(batch) + "\n").encode())
                written += batch_bytes
                batch, batch_bytes = [], 0
        if batch:
            f.write(("\n".join(batch) + "\n").encode())
            written += batch_bytes
        f.write(tail)
    return written + len(tail)


def main() -> None:
    """CLI entry: ``python bench/gen_log.py OUT [--size-mib N] [--ranks N]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--size-mib", type=float, default=512)
    parser.add_argument("--ranks", type=int, default=512)
    parser.add_argument("--gpus-per-host", type=int, default=8)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if args.ranks < 2 or args.gpus_per_host < 1:
        parser.error("need at least 2 ranks and 1 GPU per host")
    written = generate(
        args.out, int(args.size_mib * (1 << 20)), args.ranks, args.gpus_per_host, args.seed
    )
    print(f"{args.out}: {written} bytes, {args.ranks} ranks")


if __name__ == "__main__":
    main()
