"""What the pre-mortem costs a job that does not hang: wall time and CPU, with and without it.

Runs the healthy gloo job of ``tests/run/hang_job.py`` (2 ranks under torchrun,
``HANG_SECONDS`` of all_reduces, a line every second) three ways, REPS times
each, interleaved:

* ``bare``: torchrun alone;
* ``run --stall 0``: the wrapper without the pre-mortem;
* ``run --stall 120``: the wrapper with it (the default).

Per run: wall seconds, CPU seconds of everything (wrapper + torchrun + ranks,
from ``wait4``), and the wrapper's own CPU seconds (its /proc stat, sampled
every 0.5 s until it exits). Prints one line per run and the medians.

    PYTHONPATH=src python bench/premortem_cost.py [HANG_SECONDS] [REPS]
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JOB = ROOT / "tests" / "run" / "hang_job.py"
TICK = os.sysconf("SC_CLK_TCK")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _own_cpu(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICK


def _once(mode: str, seconds: str, work: Path) -> tuple[float, float, float | None]:
    torchrun = str(Path(sys.executable).with_name("torchrun"))
    job = [torchrun, "--nproc-per-node", "2", "--master-port", str(_port()), str(JOB)]
    if mode == "bare":
        argv = job
    else:
        stall = mode.rsplit(maxsplit=1)[-1]
        folder = tempfile.mkdtemp(dir=work)
        wrap = [sys.executable, "-m", "nccl_doctor", "run", "--no-snapshot", "--dir", folder]
        argv = [*wrap, "--stall", stall, "--", *job]
    env = {**os.environ, "HANG_SCENARIO": "healthy", "HANG_SECONDS": seconds}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    begin = time.monotonic()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    own = None
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if mode != "bare":
            own = _own_cpu(proc.pid) or own
        time.sleep(0.5)
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0, f"{mode}: exit {proc.returncode}"
    return time.monotonic() - begin, usage.ru_utime + usage.ru_stime, own


def main() -> None:
    seconds = sys.argv[1] if len(sys.argv) > 1 else "60"
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    modes = ("bare", "run --stall 0", "run --stall 120")
    results: dict[str, list[tuple[float, float, float | None]]] = {m: [] for m in modes}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(reps):
            for mode in modes:
                got = _once(mode, seconds, Path(tmp))
                results[mode].append(got)
                own = f"{got[2]:.2f}" if got[2] is not None else "-"
                print(
                    f"rep {rep} {mode:16} wall {got[0]:6.2f} s  cpu {got[1]:6.2f} s  "
                    f"wrapper cpu {own} s",
                    flush=True,
                )
    print(f"\nmedians over {reps} runs of a {seconds} s healthy 2-rank gloo job:")
    for mode in modes:
        rows = results[mode]
        own = [r[2] for r in rows if r[2] is not None]
        print(
            f"  {mode:16} wall {statistics.median(r[0] for r in rows):6.2f} s  "
            f"cpu {statistics.median(r[1] for r in rows):6.2f} s  "
            f"wrapper cpu {statistics.median(own) if own else float('nan'):.2f} s"
        )


if __name__ == "__main__":
    main()
