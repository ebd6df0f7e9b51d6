"""Many-error-lines benchmark: ``diagnose`` on thousands of copies of one failure line.

A large job prints the same failure once per rank, or more: every rank's
``NCCL WARN Call to ibv_reg_mr failed``, every rank's c10d watchdog timeout,
the kernel's Xid 79 once per lost GPU and retry. For each of three shapes
this writes logs of increasing line counts, times ``nccl-doctor diagnose``
on each (JSON to a drained pipe, a fresh process each run, best of
``--repeat``), and prints the wall and CPU time, the cost per line and the
slope between consecutive sizes, so linearity is visible: in linear time the
slope (extra seconds per extra line) stays flat as the input grows, while
a quadratic cost shows as a slope that doubles with the size. The figures
include the interpreter's start (about a third of a second). A benchmark,
not a test: it prints figures and asserts nothing on time.

    python bench/hostile_lines.py [--sizes 5000,10000,20000,40000]
                                  [--shapes ibv_reg_mr,watchdog,xid79] [--repeat 1]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
SRC = HERE.parent / "src"

#: GPUs per host of the imagined job (its ranks are ``host * 8 + local``).
GPUS_PER_HOST = 8
#: PCI bus ids of the eight GPUs of an HGX H100 board.
BUS_IDS = ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db")


def _who(i: int) -> tuple[int, str, int, int]:
    """Rank, host, pid and local device of the ``i``-th line's process (4,096 ranks, cycled)."""
    rank = i % 4096
    host, local = divmod(rank, GPUS_PER_HOST)
    return rank, f"gpu-node{host:04d}", 20000 + rank, local


def ibv_reg_mr(i: int) -> str:
    """NCCL's warning when a rank cannot register its buffers with the HCA."""
    _, host, pid, local = _who(i)
    return (
        f"{host}:{pid}:{pid + 7} [{local}] NCCL WARN Call to ibv_reg_mr failed with error "
        "Cannot allocate memory"
    )


def watchdog(i: int) -> str:
    """ProcessGroupNCCL's watchdog timeout, as torchrun's ``[rankN]:`` prefix carries it."""
    rank, _, _, _ = _who(i)
    us = (i * 7919) % 1_000_000
    return (
        f"[rank{rank}]:[E1106 03:22:44.{us:06d}123 ProcessGroupNCCL.cpp:616] [Rank {rank}] "
        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=48213, OpType=ALLREDUCE, "
        f"NumelIn=262144000, NumelOut=262144000, Timeout(ms)=600000) ran for {600000 + i % 97} "
        "milliseconds before timing out."
    )


def xid79(i: int) -> str:
    """The kernel's Xid 79 (GPU fallen off the bus) in a syslog-collected kernel log."""
    _, host, _, local = _who(i)
    second = i % 60
    return (
        f"Apr  9 01:21:{second:02d} {host} kernel: NVRM: Xid (PCI:0000:{BUS_IDS[local]}:00): 79, "
        "pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
    )


SHAPES: dict[str, Callable[[int], str]] = {
    "ibv_reg_mr": ibv_reg_mr,
    "watchdog": watchdog,
    "xid79": xid79,
}


def write_log(path: Path, shape: Callable[[int], str], lines: int) -> None:
    """``lines`` lines of ``shape``, written in batches."""
    with path.open("w", encoding="utf-8") as out:
        batch: list[str] = []
        for i in range(lines):
            batch.append(shape(i))
            if len(batch) == 4096:
                out.write("\n".join(batch) + "\n")
                batch.clear()
        if batch:
            out.write("\n".join(batch) + "\n")


def _diagnose(log: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one ``nccl-doctor diagnose`` of ``log``, its output drained."""
    argv = [sys.executable, "-m", "nccl_doctor", "diagnose", str(log), "--format", "json"]
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])),
    )
    start = time.perf_counter()
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=errors, env=env)
        assert proc.stdout is not None
        while proc.stdout.read(1 << 20):
            pass
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        proc.stdout.close()
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        if code not in (0, 1):  # 1: critical findings, which these logs hold
            errors.seek(0)
            sys.exit(f"diagnose {log.name} failed ({code}): {errors.read().decode()[-500:]}")
    return elapsed, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="5000,10000,20000,40000")
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    shapes = [s for s in args.shapes.split(",") if s]
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown:
        sys.exit(f"unknown shape(s) {', '.join(unknown)}; known: {', '.join(SHAPES)}")
    OUT.mkdir(parents=True, exist_ok=True)
    print(f"{'shape':<12}{'lines':>8}{'MiB':>6}{'wall s':>8}{'cpu s':>8}{'us/line':>9}{'slope':>8}")
    for name in shapes:
        previous: tuple[int, float] | None = None
        for lines in sizes:
            log = OUT / f"hostile-{name}-{lines}.log"
            write_log(log, SHAPES[name], lines)
            best, cpu = min(_diagnose(log) for _ in range(args.repeat))
            slope = ""
            if previous is not None:
                slope = f"{(best - previous[1]) / (lines - previous[0]) * 1e6:.0f}"
            mib = log.stat().st_size / (1 << 20)
            per_line = best / lines * 1e6
            print(
                f"{name:<12}{lines:>8}{mib:>6.1f}{best:>8.2f}{cpu:>8.2f}{per_line:>9.0f}{slope:>8}"
            )
            sys.stdout.flush()
            previous = (lines, best)
    print(
        "\nus/line: wall time per line; slope: extra wall microseconds per extra line between "
        "consecutive sizes, flat when linear, doubling with the size when quadratic"
    )


if __name__ == "__main__":
    main()
