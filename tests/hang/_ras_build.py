"""Multi-rank NCCL RAS reports, built as NCCL's own client code prints them.

The only real RAS reports this project holds are of a one-rank job
(tests/fixtures/captured/ras-h200). A hang needs several ranks, and a RAS
report of several ranks needs several GPUs, so these are built: the text and
the JSON formats are ported line by line from ``rasClientRunComms``,
``rasClientBreakDownErrors``, ``rasCountIsOutlier`` and the ``json*``
writers of src/ras/client_support.cc (NVIDIA/nccl master, 2026-12), for one
communicator, and checked against the real one-rank capture (the builder
reproduces ``ras-text.txt`` and ``ras-json.txt`` of that job byte for byte,
tests/hang/test_origin_ras.py). ``python -m tests.hang._ras_build`` rewrites
tests/fixtures/constructed/ncclras/.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from nccl_doctor.parse.ncclras import ERRORS, OPS

OUT = Path(__file__).resolve().parents[1] / "fixtures" / "constructed" / "ncclras"
STATUS = ("NOCOMM", "INIT", "RUNNING", "FINALIZE", "ABORT")


@dataclass
class Rank:
    """One rank of the communicator, as RAS collects it (``rasCollComms::comm::rank``)."""

    rank: int
    pid: int
    gpu: int
    counts: dict[str, int] = field(default_factory=dict)
    init_state: int = 0
    async_error: int = 0
    abort: bool = False
    finalize: bool = False
    destroy: bool = False

    def status(self) -> int:
        """The index in STATUS, as rasClientRunComms derives it."""
        if self.abort:
            return 4
        if self.finalize or self.destroy:
            return 3
        return 2 if self.init_state == 0 else 1


@dataclass
class Missing:
    """A rank RAS has no data about (``rasCollCommsMissingRank``)."""

    rank: int
    pid: int
    gpu: int
    dead: bool = True  # its process is in rasDeadPeers (and so unresponsive)


@dataclass
class Job:
    """One node, one communicator over every rank."""

    ranks: list[Rank]
    missing: list[Missing] = field(default_factory=list)
    host: str = "192.0.2.2"
    comm_hash: int = 0x92D80BB37439EA4
    host_hash: int = 0x68E8B00653B7A22B
    pid_hash: int = 0x61DF476DFC59108D
    version: str = "2.28.9"
    cuda: str = "13.0"
    cuda_runtime: int = 13000
    timestamp: str = "2026-12-03 14:28:02"
    seconds: float = 0.004

    @property
    def size(self) -> int:
        return len(self.ranks) + len(self.missing)


def outlier(count: int, total: int = -1, verbose: bool = False) -> bool:
    """``rasCountIsOutlier``: RAS_CLIENT_DETAIL_THRESHOLD 10, fractions 0.25 / 0.5."""
    if count == 1:
        return True
    if verbose:
        return count < total * 0.5 if total != -1 else True
    return count <= 10 and (total == -1 or count <= total * 0.25)


def text(job: Job, verbose: bool = False) -> str:
    """The text ``ncclras`` prints (``rasClientRunInit`` + ``rasClientRunComms``)."""
    out = [f"NCCL version {job.version} compiled with CUDA {job.cuda}\n"]
    out.append(f"CUDA runtime version {job.cuda_runtime}, driver version {job.cuda_runtime}\n\n")
    procs = job.size  # one process per GPU, all on one node, every process known to RAS
    out.append("Job summary\n===========\n\n")
    out.append(
        "  Nodes  Processes         GPUs  Processes     GPUs\n"
        "(total)   per node  per process    (total)  (total)\n"
        f"{1:7d}  {procs:9d}  {1:11d}  {procs:9d}  {procs:7d}\n"
    )
    out.append(f"\nCommunicators... ({job.seconds:.3f}s)\n=============\n\n")
    dead = [m for m in job.missing if m.dead]
    statuses = {r.status() for r in job.ranks}
    first = job.ranks[0].counts
    mismatch = len(statuses) > 1 or any(r.counts != first for r in job.ranks)
    error = any(r.init_state not in (0, 7) or r.async_error not in (0, 7) for r in job.ranks)
    flags = (4 if job.missing else 0) | (2 if error else 0) | (1 if mismatch else 0)
    words = ["OK", "MISMATCH", "ERROR", "ERROR,MISMATCH", "INCOMPLETE", "INCOMPLETE,MISMATCH",
             "INCOMPLETE,ERROR", "INCOMPLETE,ERROR,MISMATCH"]  # fmt: skip
    top = max(statuses)
    reported = len(job.ranks)
    out.append(
        "Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors\n"
        "    #  in group  per comm  per node  per comm  in group\n"
        f"{0:5d}  {1:8d}  {1:8d}  {reported!s:>8}  {job.size:8d}  {reported:8d}  "
        f"{STATUS[top]:>8}  {words[flags]:>6}\n"
    )
    hash16 = f"{job.comm_hash:016x}"
    out.append("\nErrors\n======\n\n")
    if dead:
        n = len(dead)
        out.append(
            "DEAD\n"
            f"  {n} job process{'es are' if n > 1 else ' is'} considered dead "
            "(unreachable via the RAS network)\n"
        )
        if outlier(n, verbose=verbose):
            out += [
                f"  Process {m.pid} on node {job.host} managing GPU {m.gpu}\n"
                for m in sorted(dead, key=lambda m: m.pid)
            ]
        out.append("\n")
    if job.missing:
        n = len(job.missing)
        out.append(
            f"#0-0 ({hash16}) INCOMPLETE\n"
            f"  Missing communicator data from {n} rank{'s' if n > 1 else ''}\n"
        )
        if outlier(n, verbose=verbose):
            for m in job.missing:
                gpu = f"{m.gpu}"
                out.append(f"  Rank {m.rank} -- GPU {gpu} managed by process {m.pid} on node "
                           f"{job.host}\n")  # fmt: skip
        out.append("\n")
    if error:
        out.append(f"#0-0 ({hash16}) ERROR\n")
        for kind, attr in (("Initialization", "init_state"), ("Asynchronous", "async_error")):
            codes = [getattr(r, attr) for r in job.ranks]
            n = sum(1 for c in codes if c not in (0, 7))
            if n:
                out.append(
                    f"  {kind} error{'s' if n > 1 else ''} on {n} rank{'s' if n > 1 else ''}\n"
                )
                out += _break_down(job, attr, verbose)
        out.append("\n")
    out.append("Warnings\n========\n\n")
    if mismatch:
        out.append(f"#0-0 ({hash16}) MISMATCH\n")
        if len(statuses) > 1:
            out.append("  Communicator ranks have different status\n")
            out += _groups(job, [(r, r.status()) for r in job.ranks], verbose, "status")
        for op in OPS:
            if any(r.counts.get(op, 0) != first.get(op, 0) for r in job.ranks):
                out.append(f"  Communicator ranks have different {op} operation counts\n")
                pairs = [(r, r.counts.get(op, 0)) for r in job.ranks]
                out += _groups(job, pairs, verbose, "count")
                out.append("\n")
    return "".join(out)


def _who(job: Job, r: Rank) -> str:
    return f"GPU {r.gpu} managed by process {r.pid} on node {job.host}"


def _groups(job: Job, pairs: list[tuple[Rank, int]], verbose: bool, what: str) -> list[str]:
    """Ranks grouped by a value, most frequent first (``rasValCountsCompareRev``)."""
    by: dict[int, list[Rank]] = {}
    for r, v in sorted(pairs, key=lambda p: (p[1], p[0].rank)):
        by.setdefault(v, []).append(r)
    out: list[str] = []
    for value, ranks in sorted(by.items(), key=lambda kv: (-len(kv[1]), -kv[0])):
        n = len(ranks)
        if what == "status":
            head, one = f"have status {STATUS[value]}", f"has status {STATUS[value]}"
        elif value > 0:
            head = f"have launched up to operation {value}"
            one = f"has launched up to operation {value}"
        else:
            head, one = "have not launched any operations", "has not launched any operations"
        if n > 1:
            out.append(f"  {n} ranks {head}\n")
        if outlier(n, job.size, verbose):
            for r in ranks:
                if n > 1:
                    out.append(f"  Rank {r.rank} -- {_who(job, r)}\n")
                else:
                    out.append(f"  Rank {r.rank} {one} -- {_who(job, r)}\n")
    return out


def _break_down(job: Job, attr: str, verbose: bool) -> list[str]:
    """``rasClientBreakDownErrors``: the most frequent error first."""
    counts: dict[int, int] = {}
    for r in job.ranks:
        code = getattr(r, attr)
        if code in ERRORS:
            counts[code] = counts.get(code, 0) + 1
    out: list[str] = []
    for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        if n > 1:
            out.append(f"  {n} ranks reported {ERRORS[code]}\n")
        if outlier(n, verbose=verbose):
            for r in job.ranks:
                if getattr(r, attr) == code:
                    if n > 1:
                        out.append(f"  Rank {r.rank} -- {_who(job, r)}\n")
                    else:
                        out.append(f"  Rank {r.rank} reported {ERRORS[code]} -- {_who(job, r)}\n")
    return out


def as_json(job: Job) -> str:
    """The JSON the RAS socket answers after ``SET FORMAT json`` (``rasDumpCommsToJSON``)."""
    out = [
        "{\n",
        f'  "nccl_version": "{job.version}",\n',
        f'  "cuda_runtime_version": {job.cuda_runtime},\n',
        f'  "cuda_driver_version": {job.cuda_runtime},\n',
        f'  "timestamp": "{job.timestamp}",\n',
        '  "communicators_count": 1,\n',
        '  "communicators": [\n',
        "    {\n",
        f'      "hash": "0x{job.comm_hash:x}",\n',
        f'      "secondary_hash": "0x{job.host_hash:x}:0x{job.pid_hash:x}",\n',
        f'      "size": {job.size},\n',
        f'      "ranks_count": {len(job.ranks)},\n',
        f'      "missing_ranks_count": {len(job.missing)},\n',
        '      "ranks": [\n',
    ]
    for i, r in enumerate(job.ranks):
        if i:
            out.append(",\n")
        out += [
            "        {\n",
            f'          "rank": {r.rank},\n',
            f'          "host": "{job.host}",\n',
            f'          "pid": {r.pid},\n',
            f'          "cuda_dev": {r.gpu},\n',
            f'          "nvml_dev": {r.gpu},\n',
            '          "status": {\n',
            f'            "init_state": {r.init_state},\n',
            f'            "async_error": {r.async_error},\n',
            f'            "finalize_called": {_b(r.finalize)},\n',
            f'            "destroy_flag": {_b(r.destroy)},\n',
            f'            "abort_flag": {_b(r.abort)}\n',
            "          },\n",
            '          "collective_counts": {\n',
        ]
        for k, op in enumerate(OPS):
            out.append(f'            "{op}": {r.counts.get(op, 0)}')
            out.append(",\n" if k < len(OPS) - 1 else "\n")
        out += ["          }\n", "        }"]
    out += ["\n      ],\n", '      "missing_ranks": [\n']
    for i, m in enumerate(job.missing):
        if i:
            out.append(",\n")
        out += [
            "        {\n",
            f'          "rank": {m.rank},\n',
            f'          "host": "{job.host}",\n',
            f'          "pid": {m.pid},\n',
            f'          "cuda_dev": {m.gpu},\n',
            f'          "nvml_dev": {m.gpu},\n',
            '          "status": {\n',
            '            "unresponsive": true,\n',
            f'            "considered_dead": {_b(m.dead)}\n',
            "          }\n",
            "        }",
        ]
    out += ["\n      ]\n", "    }", "\n  ],\n", '  "ras": {\n']
    out += [f'    "collection_time_sec": {job.seconds:.3f},\n', '    "timeouts_count": 0\n']
    out += ["  }\n", "}\n"]
    return "".join(out)


def _b(value: bool) -> str:
    return "true" if value else "false"


def _ranks(n: int, all_reduce: int) -> list[Rank]:
    """``n`` ranks, one per GPU and process, each having launched ``all_reduce`` all_reduces."""
    return [Rank(i, 1200 + i, i, {"Broadcast": 1, "AllReduce": all_reduce}) for i in range(n)]


def one_rank() -> Job:
    """The real capture's job (ras-h200): one rank, nothing launched, RUNNING."""
    return Job([Rank(0, 489, 0, {})], seconds=0.0)


def jobs() -> dict[str, Job]:
    """The constructed reports, by file stem."""
    dead = _ranks(8, 12)
    dead_rank = dead.pop(5)
    behind = _ranks(8, 12)
    behind[3].counts["AllReduce"] = 11
    majority = _ranks(8, 12)
    for r in majority[2:]:
        r.counts["AllReduce"] = 11
    error = _ranks(8, 12)
    for r in error:
        r.async_error = 6  # ncclRemoteError
        r.abort = True
    error[6].async_error = 1  # ncclUnhandledCudaError: its own
    healthy = _ranks(8, 40)
    return {
        "dead-rank5": Job(dead, [Missing(5, dead_rank.pid, dead_rank.gpu)]),
        "behind-rank3": Job(behind),
        "behind-majority": Job(majority),
        "error-rank6": Job(error),
        "healthy": Job(healthy),
    }


def write(out: Path = OUT) -> list[Path]:
    """Write every report in both formats; the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for stem, job in jobs().items():
        for suffix, body in (("txt", text(job)), ("json", as_json(job))):
            path = out / f"{stem}.{suffix}"
            path.write_text(body)
            written.append(path)
    return written


if __name__ == "__main__":
    for p in write(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT):
        print(p)
