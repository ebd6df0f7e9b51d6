"""Scale benchmark: ``diagnose`` on a large many-rank log against ``grep -E`` over the same bytes.

Two log shapes:

* default: bench/gen_log.py's interleaved log of a job that dies of an IB
  completion error (few lines become facts);
* ``--pgs N``: issue 17's log from bench/gen_pgs.py (every rank prints a
  ProcessGroupNCCL init line for N process groups, communicator-init chatter,
  one planted duplicate GPU), as one file or, with ``--per-rank``, as the
  same lines in 512 per-rank files.

For each size it times ``grep -E`` counting the error words a person greps a
failed job's log for (over the file, or ``-r`` over the folder), then
``nccl-doctor diagnose --format json`` (a fresh process, output drained), and
prints wall and CPU seconds, the ratio to grep, the peak RSS of the child
(``getrusage`` through ``wait4``), the first finding, and the load average
around the runs, since on a shared machine the wall time says as much about
the neighbours as about the code. Best of ``--repeat`` runs. Several sizes
(``--size-mib 128,256,512``) show whether the time grows with the log alone.
A benchmark, not a test: it prints figures and asserts nothing on time.

    python bench/scale.py [--size-mib 512] [--ranks 512] [--pgs N [--per-rank]]
                          [--work DIR] [--log PATH] [--repeat 3] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"

#: What a person greps a failed job's log for.
ERROR_PATTERNS = (
    r"NCCL WARN|Traceback \(most recent call last\)|Error|error:|ERROR|Watchdog caught"
    r"|timed out|Timeout|SIGTERM|SIGKILL|exitcode|NVRM: Xid|FAILED|failed|Connection (reset|closed)"
    r"|Duplicate GPU|Last error"
)


@dataclass(frozen=True, slots=True)
class Run:
    """One child process: wall and CPU seconds, peak RSS, and what it printed."""

    wall_s: float
    cpu_s: float
    rss_kib: int
    out: bytes


def _run(argv: list[str]) -> Run:
    """Run ``argv`` with its output read into memory (never to /dev/null: GNU grep
    notices /dev/null and stops at the first match)."""
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])),
    )
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package runs from bytecode
    start = time.perf_counter()
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=errors, env=env)
        assert proc.stdout is not None
        chunks = []
        while chunk := proc.stdout.read(1 << 20):
            chunks.append(chunk)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        proc.stdout.close()
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        # grep exits 1 on no match, diagnose exits 1 on a critical finding
        if code not in (0, 1):
            errors.seek(0)
            message = errors.read().decode(errors="replace").strip()[-500:]
            sys.exit(f"{argv[0]} failed ({code}): {message}")
    return Run(elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, b"".join(chunks))


def _best(argv: list[str], repeat: int) -> Run:
    runs = [_run(argv) for _ in range(repeat)]
    best = min(runs, key=lambda r: r.wall_s)
    return Run(best.wall_s, min(r.cpu_s for r in runs), max(r.rss_kib for r in runs), best.out)


def _generate(target: Path, args: argparse.Namespace, size_mib: int) -> None:
    sizes = ["--size-mib", str(size_mib), "--ranks", str(args.ranks)]
    if args.pgs is None:
        argv = [sys.executable, str(HERE / "gen_log.py"), str(target), *sizes]
    else:
        where = ["--per-rank", str(target)] if args.per_rank else [str(target)]
        argv = [sys.executable, str(HERE / "gen_pgs.py"), *where, *sizes, "--pgs", str(args.pgs)]
    print(f"generating {target} ...", flush=True)
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)


def _bytes_of(target: Path) -> int:
    if target.is_dir():
        return sum(p.stat().st_size for p in target.iterdir() if p.is_file())
    return target.stat().st_size


def _warm(target: Path) -> None:
    """Read every byte once, so grep and diagnose both find them in the page cache."""
    for path in sorted(target.iterdir()) if target.is_dir() else [target]:
        with path.open("rb") as f:
            while f.read(1 << 24):
                pass


def _first_finding(out: bytes) -> str:
    try:
        findings = json.loads(out)["findings"]
    except (ValueError, KeyError, TypeError):
        return "(no JSON report)"
    return findings[0]["id"] if findings else "(none)"


def _measure(target: Path, args: argparse.Namespace) -> None:
    _warm(target)
    with tempfile.NamedTemporaryFile(suffix=".log") as tiny:
        # compiles the bytecode and the prefilter's cache, as any earlier run would have
        tiny.write(b"NCCL WARN warm-up\n")
        tiny.flush()
        _run([sys.executable, "-m", "nccl_doctor", "diagnose", tiny.name, "--format", "json"])
    load = os.getloadavg()[0]
    grep_argv = ["grep", "-E", "-c", ERROR_PATTERNS]
    grep_argv += ["-r", str(target)] if target.is_dir() else [str(target)]
    diagnose = [sys.executable, "-m", "nccl_doctor", "diagnose", str(target), "--format", "json"]
    grep = _best(grep_argv, args.repeat)
    doctor = _best(diagnose, args.repeat)
    size = _bytes_of(target) / (1 << 20)
    files = len(list(target.iterdir())) if target.is_dir() else 1
    print(
        f"{target.name:<28}{size:>6.0f}{files:>6}{grep.wall_s:>8.2f}{doctor.wall_s:>9.2f}"
        f"{doctor.cpu_s:>8.2f}{doctor.wall_s / grep.wall_s:>7.1f}{doctor.cpu_s / grep.cpu_s:>8.1f}"
        f"{doctor.rss_kib / 1024:>8.0f}{load:>6.1f}/{os.getloadavg()[0]:<5.1f} "
        f"{_first_finding(doctor.out)}",
        flush=True,
    )


def main() -> None:
    """CLI entry; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", default="512", help="one size or several: 128,256,512")
    parser.add_argument("--ranks", type=int, default=512)
    parser.add_argument("--pgs", type=int, default=None, help="issue 17's shape, N groups a rank")
    parser.add_argument("--per-rank", action="store_true", help="one file per rank (with --pgs)")
    parser.add_argument("--work", type=Path, default=HERE / "out", help="where logs are written")
    parser.add_argument("--log", type=Path, default=None, help="an existing log (or folder)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the generated logs")
    args = parser.parse_args()
    if args.per_rank and args.pgs is None:
        parser.error("--per-rank needs --pgs")
    if args.log is not None and not args.log.exists():
        parser.error(f"--log {args.log}: no such file or folder")
    print(
        f"{'log':<28}{'MiB':>6}{'files':>6}{'grep s':>8}{'diag s':>9}{'cpu s':>8}{'wall x':>7}"
        f"{'cpu x':>8}{'RSS MiB':>8}{'load':>12} first finding"
    )
    if args.log is not None:
        _measure(args.log, args)
        return
    for size_mib in (int(s) for s in args.size_mib.split(",")):
        shape = "ib" if args.pgs is None else f"{args.pgs}pgs"
        name = f"{shape}-{args.ranks}r-{size_mib}m" + ("-per-rank" if args.per_rank else ".log")
        target = args.work / name
        if not target.exists():
            args.work.mkdir(parents=True, exist_ok=True)
            _generate(target, args, size_mib)
        try:
            _measure(target, args)
        finally:
            if not args.keep:
                shutil.rmtree(target) if target.is_dir() else target.unlink()
    print(
        "\nwall x / cpu x: diagnose over grep -E; target wall x <= 2 and RSS <= 256 MiB. "
        "load: 1-minute load average before/after the runs."
    )


if __name__ == "__main__":
    main()
