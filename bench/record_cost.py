"""What ``--record`` adds to a ``diagnose``: on SQLite, or PostgreSQL when NCCL_DOCTOR_DB names one.

Two measures, on the real reports of ``examples/h200-cuda-999`` (8 GPUs, 3
findings) and of the captured H200 probe result (figures):

* in-process, what recording itself costs: importing the fleet package (a
  fresh interpreter, ``-X importtime``), opening the history (connect, schema
  check), ``Store.record`` and closing, REPS times each, into a history that
  already holds HISTORY runs (a year of a busy node's jobs, not an empty
  file);
* end to end, ``nccl-doctor diagnose EXAMPLE --format json`` in a fresh
  process with and without ``--record``, REPS times each, interleaved, and
  the difference of the medians (noisy on a loaded machine; the in-process
  figure is the one to quote).

    PYTHONPATH=src python bench/record_cost.py [REPS] [HISTORY]
    NCCL_DOCTOR_DB=postgresql://... PYTHONPATH=src python bench/record_cost.py
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from nccl_doctor.fleet import open_store  # noqa: E402 -- after the checkout is on the path
from nccl_doctor.fleet.db import ENV, redact_url, resolve  # noqa: E402
from nccl_doctor.pipeline import diagnose_paths  # noqa: E402
from nccl_doctor.redact import scrub  # noqa: E402
from nccl_doctor.render.report_json import report_json  # noqa: E402

EXAMPLE = ROOT / "examples" / "h200-cuda-999"
PROBE = ROOT / "tests" / "fixtures" / "captured" / "probe-h200" / "probe-full.json"


def _ms(fn: Callable[[], Any], reps: int) -> tuple[float, float]:
    """Median wall and CPU milliseconds of ``fn`` (CPU: what a busy machine does not inflate)."""
    wall, cpu = [], []
    for _ in range(reps):
        start, used = time.perf_counter(), time.process_time()
        fn()
        wall.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - used) * 1000)
    return statistics.median(wall), statistics.median(cpu)


_IMPORT = """
import sys, time, nccl_doctor.cli, nccl_doctor.pipeline, nccl_doctor.render.report_json
start, used = time.perf_counter(), time.process_time()
import nccl_doctor.fleet.cli
if sys.argv[1] == "postgresql":
    import psycopg
print((time.perf_counter() - start) * 1000, (time.process_time() - used) * 1000)
"""


def _env() -> dict[str, str]:
    """A child's environment: the checkout first, bytecode written (as an installed package has)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _import_ms(reps: int, engine: str) -> tuple[float, float]:
    """Wall and CPU ms of importing what --record needs, after what diagnose imports anyway."""
    env = _env()
    argv = [sys.executable, "-c", _IMPORT, engine]
    subprocess.run(argv, capture_output=True, env=env, check=True)
    wall, cpu = [], []
    for _ in range(reps):
        done = subprocess.run(argv, capture_output=True, text=True, env=env, check=True)
        w, c = map(float, done.stdout.split())
        wall.append(w)
        cpu.append(c)
    return statistics.median(wall), statistics.median(cpu)


def _cli_ms(args: list[str], reps: int) -> list[float]:
    env = _env()
    out = []
    for _ in range(reps):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "nccl_doctor", *args], capture_output=True, env=env, check=False
        )
        out.append((time.perf_counter() - start) * 1000)
    return out


def main() -> int:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    history = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    reports = {"h200-cuda-999": report_json(diagnose_paths([str(EXAMPLE)]), scrub),
               "probe-h200": report_json(diagnose_paths([str(PROBE)]), scrub)}  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        url = os.environ.get(ENV) or str(Path(tmp) / "history.db")
        print(f"history: {redact_url(url)}; {history} runs recorded first; median of {reps}")
        with open_store(url) as store:
            for n in range(history):
                store.record(
                    "run", reports["h200-cuda-999"], job=f"fill-{n}", node=f"node{n % 64:02d}"
                )
        print("                                        wall ms   CPU ms")
        engine = resolve(url).engine
        imported = _import_ms(max(5, reps // 2), engine)
        driver = "psycopg" if engine == "postgresql" else "sqlite3"
        print(f"  import the fleet modules (+{driver}):{imported[0]:8.1f}  {imported[1]:7.1f}")
        opened = _ms(lambda: open_store(url).close(), reps)
        print(f"  open + schema check + close:          {opened[0]:7.1f}  {opened[1]:7.1f}")
        recorded = (0.0, 0.0)
        for name, report in reports.items():

            def once(report: dict[str, Any] = report) -> None:
                with open_store(url) as s:
                    s.record("diagnose", report, node="node05")

            recorded = _ms(once, reps)
            print(f"  open + record + close, {name:14} {recorded[0]:7.1f}  {recorded[1]:7.1f}")
        wall, cpu = imported[0] + recorded[0], imported[1] + recorded[1]
        print(f"recording adds {wall:.1f} ms wall ({cpu:.1f} ms CPU) to a diagnose")
        plain = ["diagnose", str(EXAMPLE), "--format", "json"]
        with_record = [*plain, "--record", "--db", url, "--node", "node05"]
        a, b = [], []
        for _ in range(max(3, reps // 4)):
            a += _cli_ms(plain, 1)
            b += _cli_ms(with_record, 1)
        print(
            f"end to end (fresh processes, {len(a)} each): diagnose {statistics.median(a):.0f} ms, "
            f"with --record {statistics.median(b):.0f} ms "
            f"(difference {statistics.median(b) - statistics.median(a):+.0f} ms, noisy)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
