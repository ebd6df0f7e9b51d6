"""Scale benchmark: read a large interleaved multi-rank log, against grep -E.

Generates (or reuses) a log of many ranks with bench/gen_log.py, then times
``grep -E`` scanning it for the error patterns, ``nccl-doctor parse`` reading
it end to end and ``nccl-doctor diagnose`` reading and diagnosing it (JSON to a
drained pipe), and prints the ratios and the peak RSS of each. A benchmark,
not a test: it prints figures and asserts nothing on time.

    python bench/scale.py [--size-mib 512] [--ranks 512] [--log PATH] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"

#: What a person greps a failed job's log for.
ERROR_PATTERNS = (
    r"NCCL WARN|Traceback \(most recent call last\)|Error|error:|ERROR|Watchdog caught"
    r"|timed out|Timeout|SIGTERM|SIGKILL|exitcode|NVRM: Xid|FAILED|failed|Connection (reset|closed)"
)


def _run(argv: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one child process, its output drained.

    Output goes to a pipe that is read and dropped, never to /dev/null: GNU
    grep notices /dev/null and stops at the first match.
    """
    start = time.perf_counter()
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=errors)
        assert proc.stdout is not None
        while proc.stdout.read(1 << 20):
            pass
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        # grep exits 1 on no match, diagnose exits 1 on a critical finding
        if code != 0 and not (code == 1 and (argv[0] == "grep" or "diagnose" in argv)):
            errors.seek(0)
            message = errors.read().decode(errors="replace").strip()[:500]
            sys.exit(f"{argv[0]} failed ({code}): {message}")
    proc.stdout.close()
    proc.returncode = code
    return elapsed, usage.ru_maxrss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=512)
    parser.add_argument("--ranks", type=int, default=512)
    parser.add_argument("--log", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    log = args.log or OUT / f"interleaved-{args.ranks}r-{args.size_mib}m.log"
    if not log.exists():
        log.parent.mkdir(parents=True, exist_ok=True)
        print(f"generating {log} ...", flush=True)
        subprocess.run(
            [
                sys.executable,
                str(HERE / "gen_log.py"),
                str(log),
                "--size-mib",
                str(args.size_mib),
                "--ranks",
                str(args.ranks),
            ],
            check=True,
        )
    size_mib = log.stat().st_size / (1 << 20)
    # warm the page cache so both readers see the same conditions
    _run(["cat", str(log)])

    doctor = [sys.executable, "-m", "nccl_doctor", "parse", str(log), "--format", "json"]
    diagnose = [sys.executable, "-m", "nccl_doctor", "diagnose", str(log), "--format", "json"]
    grep = ["grep", "-E", "-c", ERROR_PATTERNS, str(log)]
    rows = []
    for name, argv in (
        ("grep -E", grep),
        ("nccl-doctor parse", doctor),
        ("nccl-doctor diagnose", diagnose),
    ):
        runs = [_run(argv) for _ in range(args.repeat)]
        best = min(t for t, _ in runs)
        rss = max(r for _, r in runs)
        rows.append((name, best, rss))
    print(f"\nlog: {log.name}, {size_mib:.0f} MiB, {args.ranks} ranks; best of {args.repeat}")
    print(f"{'reader':<20}{'seconds':>10}{'MiB/s':>10}{'peak RSS MiB':>15}")
    for name, best, rss in rows:
        print(f"{name:<20}{best:>10.2f}{size_mib / best:>10.0f}{rss / 1024:>15.1f}")
    ratio = rows[1][1] / rows[0][1]
    print(f"\nratio nccl-doctor parse / grep -E: {ratio:.2f}  (target <= 2.0)")
    print(f"ratio nccl-doctor diagnose / grep -E: {rows[2][1] / rows[0][1]:.2f}")
    print(f"peak RSS of nccl-doctor: {max(r[2] for r in rows[1:]) / 1024:.0f} MiB  (target <= 256)")


if __name__ == "__main__":
    main()
