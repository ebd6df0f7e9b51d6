"""The pre-mortem's parts alone: the stack hook, the stall watcher, the verdict with a dump."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from nccl_doctor.run import watch
from nccl_doctor.run.stacks import StackHook
from nccl_doctor.run.watch import Result, Watcher, _diagnose

if TYPE_CHECKING:
    from collections.abc import Callable

    import pytest

ROOT = Path(__file__).resolve().parents[1]
WATCHDOG = ROOT / "fixtures" / "captured" / "watchdog-h200" / "under_run" / "fr_rank0"
SLEEPER = "import time\nprint('ready', flush=True)\ndef hold():\n    time.sleep(120)\nhold()\n"


def _start(hook: StackHook, *flags: str, rank: str = "3") -> subprocess.Popen[str]:
    env = {"PATH": "/usr/bin:/bin", "RANK": rank, "WORLD_SIZE": "4", **hook.env({})}
    proc = subprocess.Popen(
        [sys.executable, *flags, "-c", SLEEPER], env=env, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ready\n"  # past site: the hook ran (or not)
    return proc


def test_hook_dumps_a_registered_process_and_never_signals_one_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the signal path itself: py-spy, where installed, would take the dump first
    monkeypatch.setenv(
        "PATH",
        ":".join(
            p for p in os.environ["PATH"].split(":") if p and not (Path(p) / "py-spy").exists()
        ),
    )
    hook = StackHook()
    hooked = _start(hook)
    isolated = _start(hook, "-I")  # ignores PYTHONPATH: no hook, must not get the signal
    try:
        dumped = hook.dump(tmp_path / "hang-1", 1, 9.0)
        assert [(d.proc.pid, d.state, d.tool) for d in dumped] == [
            (hooked.pid, "dumped", "faulthandler")
        ]
        text = dumped[0].file.read_text()
        assert dumped[0].file.name.startswith("stacks.rank3.")
        assert text.startswith("# nccl-doctor stacks: capture=1 state=dumped tool=faulthandler")
        assert "line 4 in hold" in text
        assert hooked.poll() is None  # a dump does not stop the process
        assert isolated.poll() is None
        hooked.kill()
        hooked.wait(timeout=30)
        (gone,) = hook.dump(tmp_path / "hang-2", 2, 9.0)
        assert gone.state == "gone"
    finally:
        for proc in (hooked, isolated):
            proc.kill()
            proc.wait(timeout=30)
        hook.close()
    assert not hook.dir.exists()


def test_hook_keeps_the_users_sitecustomize(tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text("import os\nos.environ['USER_SITE_RAN'] = '1'\n")
    hook = StackHook()
    try:
        env = {"PATH": "/usr/bin:/bin", **hook.env({"PYTHONPATH": str(tmp_path)})}
        code = (
            "import os, sys, sitecustomize as s; print(os.environ.get('USER_SITE_RAN'), s.__file__)"
        )
        out = subprocess.run(
            [sys.executable, "-c", code],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout.split()
        assert out == ["1", str(tmp_path / "sitecustomize.py")]
        assert len(list(hook.dir.glob("*.stacks"))) == 1  # and it registered first
    finally:
        hook.close()


def _until(
    watcher: Watcher, got: list[Result], count: int, end: float, printed: Callable[[], float]
) -> None:
    """Tick until ``count`` captures were recorded (or ``end``), the job's last output at
    ``printed()`` on each tick."""
    while len(got) < count and time.monotonic() < end:
        watcher.tick(printed())
        time.sleep(0.05)


def test_watcher_captures_once_per_stall(tmp_path: Path) -> None:
    hook = StackHook()
    got: list[Result] = []
    err = io.StringIO()
    watcher = Watcher(tmp_path, 0.3, hook, {}, kill=False, err=err, record=got.append)
    began = time.monotonic()
    try:
        end = began + 60
        while not got and time.monotonic() < end:
            assert watcher.tick(began) is False
            time.sleep(0.05)
        assert [r.folder.name for r in got] == ["hang-1"]
        for _ in range(20):  # still silent: no second capture for the same stall
            watcher.tick(began)
            time.sleep(0.05)
        assert len(got) == 1
        while time.monotonic() <= watcher.echo_until:  # past the capture's own echo
            time.sleep(0.05)
        again = time.monotonic()  # output again, then a new stall
        while len(got) < 2 and time.monotonic() < end:
            watcher.tick(again)
            time.sleep(0.05)
        assert [r.folder.name for r in got] == ["hang-1", "hang-2"]
    finally:
        watcher.join(30)
        hook.close()
    assert "capturing stacks into" in err.getvalue()
    assert "stacks: 0 dumped, 0 gone, 0 silent of 0 registered" in got[0].notes[0]
    assert not got[0].hung


def test_what_the_capture_makes_the_job_print_is_not_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the H200 a flight-recorder dump made the job log, and each log re-armed the watch:
    five captures of one stall (tests/fixtures/captured/premortem-ras-h200). Output while a
    capture runs, or just after it, is its echo; output after the grace is progress."""
    monkeypatch.setattr(watch, "FR_WAIT_S", 0.5)  # the dump asked for never comes
    hook = StackHook()
    # a rank's dump pipe with its reader (torch's, in the job): the capture asks it for a dump
    pipe = hook.dir / f"{watch.PIPE_STEM}0.pipe"
    os.mkfifo(pipe)
    reader = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
    got: list[Result] = []
    watcher = Watcher(tmp_path, 0.3, hook, {}, kill=False, err=io.StringIO(), record=got.append)
    began = time.monotonic()
    try:
        end = began + 60
        # the job "prints" while the capture runs (the echo of the dump request)
        _until(watcher, got, 1, end, lambda: time.monotonic() if watcher.thread else began)
        assert [r.folder.name for r in got] == ["hang-1"]
        echo = time.monotonic()  # printed right after the capture: still its echo
        for _ in range(20):
            watcher.tick(echo)
            time.sleep(0.05)
        assert len(got) == 1
        while time.monotonic() <= watcher.echo_until:
            time.sleep(0.05)
        again = time.monotonic()  # the job's own output, after the grace: a new stall counts
        _until(watcher, got, 2, end, lambda: again)
        assert [r.folder.name for r in got] == ["hang-1", "hang-2"]
        assert got[0].asked_job
    finally:
        watcher.join(30)
        os.close(reader)
        hook.close()


def test_the_jobs_line_after_a_capture_that_asked_it_nothing_is_progress(
    tmp_path: Path,
) -> None:
    """On the H200 a capture taken during a slow start-up (no dump pipe yet, no RAS) was
    followed by the job's own line within the echo grace; that line did not re-arm the watch,
    and the real stall after it went uncaptured until the watchdog spoke a minute later
    (tests/zoo/gpu/premortem.sh on 2026-12-05). A capture that asked nothing has no echo:
    the next line is the job's progress."""
    hook = StackHook()
    got: list[Result] = []
    watcher = Watcher(tmp_path, 0.3, hook, {}, kill=False, err=io.StringIO(), record=got.append)
    began = time.monotonic()
    try:
        end = began + 60
        _until(watcher, got, 1, end, lambda: began)
        assert [r.folder.name for r in got] == ["hang-1"]
        assert not got[0].asked_job
        printed = time.monotonic()  # the job's own line, right after the capture
        _until(watcher, got, 2, end, lambda: printed)  # then silence: a new stall
        assert [r.folder.name for r in got] == ["hang-1", "hang-2"]
    finally:
        watcher.join(30)
        hook.close()


def test_pending_collective_in_a_real_dump_is_a_hang_below_python(tmp_path: Path) -> None:
    folder = tmp_path / "run" / "hang-1"
    folder.mkdir(parents=True)
    shutil.copy(WATCHDOG, folder / "fr_rank0")
    (folder / "stacks.rank0.h.7.txt").write_text(
        "# nccl-doctor stacks: capture=1 state=dumped tool=faulthandler pid=7 rank=0 "
        "world_size=1 host=h stalled_s=5\n"
        "Current thread 0x00007f00000000bb (most recent call first):\n"
        '  File "/venv/lib/python3.12/site-packages/torch/cuda/__init__.py", line 1040 in '
        "synchronize\n"
        '  File "/work/watchdog.py", line 33 in <module>\n'
    )
    result = Result(1, folder, 5.0)
    _diagnose(tmp_path / "run", result)
    assert result.hung
    assert result.summary.startswith(
        "the flight recorder of rank(s) 0 has 1 collective(s) issued and not completed, "
        "first all_reduce seq 2"
    )
    assert (
        "rank 0: not in any collective, at cuda/__init__.py:1040 in synchronize "
        "(from work/watchdog.py:33 in <module>)"
    ) in result.text
    assert "looks busy" not in result.text
