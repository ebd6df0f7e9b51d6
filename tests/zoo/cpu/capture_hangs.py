"""Capture real gloo hangs under ``nccl-doctor run`` (tests/fixtures/captured/gloo-hangs-cpu).

``python -m tests.zoo.cpu.capture_hangs OUT [NAME ...]`` runs each case of
:data:`CASES` (``tests/run/hang_job.py``, one way of hanging each) under the
wrapper with a minimal environment (nothing of this machine's but PATH and
HOME), and keeps the run folder as ``OUT/<name>/`` with the wrapper's own
stderr beside it (``OUT/<name>.stderr.txt``):

* ``premortem-*``: a 10-minute group timeout and ``--stall 8``; once a
  capture names a hang (MANIFEST.json ``hangs``) the wrapper is sent SIGTERM,
  as a user who read the diagnosis would;
* ``timeout-*``, ``crash``: a short group timeout (HANG_TIMEOUT_S), no
  pre-mortem: the job fails on its own and the folder holds the post-mortem.

``shell`` cases start the ranks from a plain ``bash`` loop (``&`` and
``wait``: a launcher that watches nobody), each rank's output labelled
``<rank>: `` as ``srun --label`` does.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.zoo.cpu.scenarios import free_port, torchrun

ROOT = Path(__file__).resolve().parents[3]
JOB = ROOT / "tests" / "run" / "hang_job.py"


@dataclass(frozen=True)
class Case:
    """One capture: how the ranks start, how they hang, and whether the job times out itself."""

    name: str
    scenario: str
    launcher: str  # "torchrun" or "shell"
    nproc: int
    timeout_s: int | None = None  # None: 10-minute timeout, caught by the pre-mortem


CASES = (
    Case("premortem-sleep", "sleep", "torchrun", 4),
    Case("premortem-other", "other", "torchrun", 3),
    Case("premortem-dead", "dead", "shell", 3),
    Case("timeout-sleep", "sleep", "torchrun", 4, timeout_s=10),
    Case("timeout-dead", "dead", "shell", 3, timeout_s=10),
    Case("crash", "crash", "shell", 3, timeout_s=30),
)


def _command(case: Case) -> list[str]:
    python = shlex.quote(sys.executable)
    if case.launcher == "torchrun":
        port = str(free_port())
        return [torchrun(), "--nproc-per-node", str(case.nproc), "--master-port", port, str(JOB)]
    loop = (
        f"for r in {' '.join(map(str, range(case.nproc)))}; do "
        f'(RANK=$r LOCAL_RANK=$r {python} -u {shlex.quote(str(JOB))} 2>&1 | sed -u "s/^/$r: /") & '
        "done; wait"
    )
    return ["bash", "-c", loop]


def _env(case: Case) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/root"),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(ROOT / "src"),
        "HANG_SCENARIO": case.scenario,
    }
    if case.timeout_s is not None:
        env["HANG_TIMEOUT_S"] = str(case.timeout_s)
    if case.launcher == "shell":
        env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
        env["WORLD_SIZE"] = str(case.nproc)
    return env


def _hung(run_dir: Path) -> bool:
    try:
        hangs = json.loads((run_dir / "MANIFEST.json").read_text()).get("hangs", [])
    except (OSError, ValueError):
        return False
    return any(h.get("hung") for h in hangs)


def capture(case: Case, out: Path, limit_s: float = 300.0) -> int:
    """Run one case into ``out/<name>``; the wrapper's exit status."""
    run_dir = out / case.name
    shutil.rmtree(run_dir, ignore_errors=True)
    opts = ["--no-snapshot", "--stall", "8" if case.timeout_s is None else "0"]
    argv = [sys.executable, "-m", "nccl_doctor.run", "--dir", str(run_dir), *opts, "--"]
    err = out / f"{case.name}.stderr.txt"
    with err.open("wb") as sink:
        proc = subprocess.Popen(
            [*argv, *_command(case)], stdout=subprocess.DEVNULL, stderr=sink, env=_env(case)
        )
        end = time.monotonic() + limit_s
        while proc.poll() is None and time.monotonic() < end:
            if case.timeout_s is None and _hung(run_dir):
                proc.send_signal(signal.SIGTERM)
                break
            time.sleep(0.5)
        try:
            return proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait()


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    names = set(argv[1:])
    for case in CASES:
        if names and case.name not in names:
            continue
        began = time.monotonic()
        code = capture(case, out)
        print(
            f"{case.name}: wrapper exit {code} after {time.monotonic() - began:.0f} s", flush=True
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
