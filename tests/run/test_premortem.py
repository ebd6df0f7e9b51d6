"""The pre-mortem on real gloo jobs that hang (10-minute group timeout): named while they hang.

Each job prints until its ranks reach the hang, then falls silent; the
wrapper runs with ``--stall 8``. The tests poll MANIFEST.json for the
capture (no fixed sleeps) and bound everything generously: the only timing
asserted is the issue's own (named within 60 s of the stall), which the
wrapper measures itself.
"""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.run._support import manifest, start
from tests.zoo.cpu.scenarios import free_port, torchrun

pytest.importorskip("torch.distributed")

JOB = Path(__file__).with_name("hang_job.py")
STALL = "8"
#: Start-up (torch imports on a loaded 2-core box) plus stall plus capture, generously.
WAIT_S = 240.0


def _torchrun(nproc: int) -> list[str]:
    return [torchrun(), "--nproc-per-node", str(nproc), "--master-port", str(free_port()), str(JOB)]


def _shell(world: int) -> list[str]:
    """Ranks started by a plain shell (``&`` and ``wait``): a launcher that watches nobody."""
    ranks = " ".join(map(str, range(world)))
    python = shlex.quote(sys.executable)
    loop = f"for r in {ranks}; do RANK=$r LOCAL_RANK=$r {python} {JOB} & done; wait"
    return ["bash", "-c", loop]


def _hung_capture(
    run_dir: Path, proc: subprocess.Popen[bytes], *, ends: bool = False
) -> dict[str, Any]:
    """Poll MANIFEST.json until a capture shows a hang; the wrapper must still be running.

    ``ends``: the wrapper ends the job itself once it named the hang (``--on-hang kill``),
    possibly between two polls: the capture is then read after its exit (the test checks
    ``ended_by``, which only a named hang sets).
    """
    end = time.monotonic() + WAIT_S
    while time.monotonic() < end:
        running = proc.poll() is None
        path = run_dir / "MANIFEST.json"
        try:
            hangs = json.loads(path.read_text()).get("hangs", []) if path.exists() else []
        except ValueError:
            hangs = []  # caught mid-write
        hung = [h for h in hangs if h["hung"]]
        if hung:
            assert running or ends  # named while the job still hangs
            return dict(hung[-1])
        assert running, "the wrapper ended before a capture named the hang"
        time.sleep(0.5)
    raise AssertionError(f"no capture named a hang within {WAIT_S:g} s")


def _stop(proc: subprocess.Popen[bytes]) -> int:
    proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout=120)


def _named_in_time(hang: dict[str, Any]) -> None:
    # the stall started when the job went silent; the wrapper names the rank stalled_s + elapsed_s
    # after that: well within the 60 s
    assert float(STALL) <= hang["stalled_s"] < float(STALL) + 20
    named_after = hang["stalled_s"] + hang["elapsed_s"]
    print(f"\n[premortem] {hang['summary']}: named {named_after:.1f} s after the stall began")
    assert named_after < 60


def _report_names_rank_1(stderr: str, why: str) -> None:
    """The diagnosis printed while the job hung: app.hang, rank 1 the origin, and why."""
    during = stderr[stderr.index("diagnosis of the run folder so far:") :]
    flat = " ".join(during.split())
    assert "CRITICAL app.hang (root cause, high confidence)" in flat
    assert f"rank 1 is the origin: {why}" in flat


def test_rank_stuck_in_python_before_the_collective(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    proc, _, err = start(
        run_dir, _torchrun(2), tmp_path, "--no-snapshot", "--stall", STALL, HANG_SCENARIO="sleep"
    )
    try:
        hang = _hung_capture(run_dir, proc)
        text = err.read_text(errors="replace")
    finally:
        _stop(proc)
    assert hang["named_ranks"] == [1], hang
    assert hang["summary"] == (
        "rank 1 is not in any collective while rank 0 waits in all_reduce: it is behind"
    )
    _named_in_time(hang)
    assert "rank 1: not in any collective, at run/hang_job.py:" in text
    assert "time.sleep(3600)" in text  # the line it is stuck on, printed while it hangs
    _report_names_rank_1(text, "never joined all_reduce: not in any collective, at")
    folder = run_dir / hang["folder"]
    stacks = sorted(p.name for p in folder.glob("stacks.rank*"))
    assert [s.split(".")[1] for s in stacks] == ["rank0", "rank1"]


def test_rank_in_a_different_collective_is_ended_with_on_hang_kill(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    proc, _, err = start(
        run_dir,
        _torchrun(3),
        tmp_path,
        "--no-snapshot",
        "--stall",
        STALL,
        "--on-hang",
        "kill",
        "--grace",
        "5",
        HANG_SCENARIO="other",
    )
    hang = _hung_capture(run_dir, proc, ends=True)
    code = proc.wait(timeout=120)  # --on-hang kill ends it: no signal from the test
    info = manifest(run_dir)
    assert hang["named_ranks"] == [1], hang
    assert hang["summary"] == (
        "the ranks wait in different collectives: rank 1 in broadcast; ranks 0, 2 in all_reduce"
    )
    _named_in_time(hang)
    assert info["ended_by"] == "on-hang kill"
    assert code == info["exit_code"] != 0
    assert "rank 0 done" not in (run_dir / "console.log").read_text(errors="replace")
    text = err.read_text(errors="replace")
    assert "--on-hang kill: ending the job" in text
    _report_names_rank_1(text, "stuck in a different collective: broadcast")


def test_dead_rank_while_the_others_wait(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    env = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()), "WORLD_SIZE": "2"}
    proc, _, err = start(
        run_dir, _shell(2), tmp_path, "--no-snapshot", "--stall", STALL, HANG_SCENARIO="dead", **env
    )
    try:
        hang = _hung_capture(run_dir, proc)
        text = err.read_text(errors="replace")
    finally:
        _stop(proc)
    assert hang["named_ranks"] == [1], hang
    assert hang["summary"] == "rank 1 is gone while rank 0 waits for it"
    _named_in_time(hang)
    assert "rank 0: waits in init_process_group, called at run/hang_job.py:" in text
    gone = next((run_dir / hang["folder"]).glob("stacks.rank1.*"))
    assert " state=gone " in gone.read_text()
    _report_names_rank_1(text, "dead: its process (pid")


def test_healthy_job_gets_no_capture_and_keeps_its_own_sitecustomize(tmp_path: Path) -> None:
    user = tmp_path / "user"
    user.mkdir()
    (user / "sitecustomize.py").write_text("print('user sitecustomize ran', flush=True)\n")
    run_dir = tmp_path / "run"
    proc, _, _ = start(
        run_dir,
        _torchrun(2),
        tmp_path,
        "--no-snapshot",
        "--stall",
        STALL,
        HANG_SCENARIO="healthy",
        HANG_SECONDS="12",
        PYTHONPATH=str(user),
    )
    assert proc.wait(timeout=WAIT_S) == 0
    info = manifest(run_dir)
    console = (run_dir / "console.log").read_text(errors="replace")
    assert "hangs" not in info, info.get("hangs")
    assert console.count("user sitecustomize ran") >= 3  # torchrun and both ranks
    assert "rank 1 done" in console
    assert "is deprecated" not in console  # torch 2.13: only the TORCH_FR_* names were set
    added = info["env_added"]
    assert "TORCH_NCCL_TRACE_BUFFER_SIZE" not in added
    assert "TORCH_NCCL_DEBUG_INFO_TEMP_FILE" not in added
    assert added["TORCH_FR_BUFFER_SIZE"] == "2000"
    assert info["torch"]["version"].startswith("2.")
