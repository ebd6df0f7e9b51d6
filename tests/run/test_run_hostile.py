"""``nccl-doctor run`` against what breaks wrappers: reused folders, escaping helpers,
full disks, and the job's two output streams."""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.run._support import env, manifest, start, wrapper_argv

_PY = sys.executable


def _gone(pid: int) -> bool:
    """Whether ``pid`` no longer runs (no entry, or a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def _wait_gone(pid: int, timeout_s: float = 10) -> bool:
    end = time.monotonic() + timeout_s
    while not _gone(pid) and time.monotonic() < end:
        time.sleep(0.05)
    return _gone(pid)


def _run(run_dir: Path, cmd: list[str], *opts: str, timeout: float = 120) -> tuple[int, str, str]:
    done = subprocess.run(
        wrapper_argv(run_dir, cmd, "--no-snapshot", *opts),
        env=env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


# --- item 8: a run folder holds one run ------------------------------------------------


def test_a_reused_run_folder_is_refused_and_the_first_run_kept(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    code, _, _ = _run(run_dir, [_PY, "-c", "import sys; print('first'); sys.exit(5)"])
    assert code == 5
    before = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()}
    code, out, err = _run(run_dir, [_PY, "-c", "print('second')"])
    assert code == 2
    assert out == ""
    assert err == (
        f"error: {run_dir} already holds a run (or another run is starting there) "
        "(hint: give a new --dir, or leave --dir out to get a fresh timestamped folder)\n"
    )
    after = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()}
    assert after == before  # the second run changed nothing: no appended console.log
    assert b"second" not in before["console.log"]


def test_a_folder_with_other_files_is_refused_and_left_alone(tmp_path: Path) -> None:
    run_dir = tmp_path / "mine"
    run_dir.mkdir()
    (run_dir / "notes.txt").write_text("keep me\n")
    code, _, err = _run(run_dir, [_PY, "-c", "print('x')"])
    assert code == 2
    assert err.startswith(f"error: {run_dir} is not empty (notes.txt); a run needs a folder")
    assert sorted(p.name for p in run_dir.iterdir()) == ["notes.txt"]


def test_an_empty_existing_folder_is_used(tmp_path: Path) -> None:
    run_dir = tmp_path / "empty"
    run_dir.mkdir()
    code, out, _ = _run(run_dir, [_PY, "-c", "print('ran')"])
    assert code == 0
    assert out == "ran\n"
    assert (run_dir / "console.log").read_text() == "ran\n"


def test_two_concurrent_runs_into_one_folder_never_share_it(tmp_path: Path) -> None:
    """However they interleave, exactly one run gets the folder (O_EXCL on console.log)."""
    run_dir = tmp_path / "shared"
    jobs = [
        subprocess.Popen(
            wrapper_argv(run_dir, [_PY, "-c", f"print('job {n}')"], "--no-snapshot"),
            env=env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for n in range(4)
    ]
    codes = sorted(job.wait(timeout=120) for job in jobs)
    for job in jobs:
        assert job.stdout is not None
        assert job.stderr is not None
        job.stdout.close()
        job.stderr.close()
    assert codes == [0, 2, 2, 2]
    log = (run_dir / "console.log").read_text()
    assert len(log.splitlines()) == 1
    assert log.startswith("job ")


def test_default_folders_of_one_second_do_not_collide(tmp_path: Path) -> None:
    import os

    from nccl_doctor.run.setup import claim_run_dir

    os.chdir(tmp_path)
    folders = []
    for _ in range(3):
        folder, fd = claim_run_dir(None)
        os.close(fd)
        folders.append(folder)
    assert len(set(folders)) == 3
    assert all((f / "console.log").exists() for f in folders)


# --- item 18: what the job leaves running ------------------------------------------------

#: Double-fork daemon: the middle process exits, the grandchild is in its own session
#: and reparented away from the job (to the wrapper, its subreaper).
_DAEMON = """
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        open(sys.argv[1], "w").write(str(os.getpid()))
        time.sleep(300)
    os._exit(0)
"""


def test_escaped_and_pipe_holding_leftovers_are_ended(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    pids = tmp_path / "pids"
    pids.mkdir()
    script = (
        f"setsid sleep 300 & echo $! > {pids}/setsid; "
        f"sleep 300 & echo $! > {pids}/holder; "
        f"{_PY} -c '{_DAEMON}' {pids}/daemon; "
        "echo job done"
    )
    begin = time.monotonic()
    code, out, err = _run(run_dir, ["sh", "-c", script])
    elapsed = time.monotonic() - begin
    assert code == 0, err
    assert out == "job done\n"
    left = {name: int((pids / name).read_text()) for name in ("setsid", "holder", "daemon")}
    for name, pid in left.items():
        assert _wait_gone(pid), f"{name} leftover {pid} still runs"
    info = manifest(run_dir)
    assert set(left.values()) <= set(info["leftovers"]["terminated"])
    assert info["leftovers"]["killed"] == []
    assert "the job left " in err
    assert elapsed < 60, elapsed  # sleep 300 holds the pipe: never waited for


def test_a_leftover_that_ignores_sigterm_is_killed_after_the_grace(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    stubborn = tmp_path / "stubborn"
    script = (
        f"{_PY} -c 'import signal, time, os; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        f'open("{stubborn}", "w").write(str(os.getpid())); time.sleep(300)\' & '
        f"while [ ! -s {stubborn} ]; do sleep 0.05; done; exit 4"
    )
    code, _, err = _run(run_dir, ["sh", "-c", script], "--grace", "1")
    assert code == 4, err
    pid = int(stubborn.read_text())
    assert _wait_gone(pid)
    info = manifest(run_dir)
    assert info["leftovers"]["killed"] == [pid]
    assert "1 needed SIGKILL" in err


# --- item 20 (part): stderr stays on stderr ----------------------------------------------

_BOTH = """
import sys
for i in range(3000):
    print(f"out {i}", flush=True)
    print(f"err {i}", file=sys.stderr, flush=True)
"""


def test_the_jobs_stderr_stays_on_stderr_and_both_reach_the_log(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    proc, out, err = start(run_dir, [_PY, "-c", _BOTH], tmp_path, "--no-snapshot")
    assert proc.wait(timeout=120) == 0
    assert out.read_text().splitlines() == [f"out {i}" for i in range(3000)]
    err_lines = [x for x in err.read_text().splitlines() if not x.startswith("nccl-doctor run:")]
    assert err_lines == [f"err {i}" for i in range(3000)]
    log = (run_dir / "console.log").read_text().splitlines()
    assert [x for x in log if x.startswith("out ")] == [f"out {i}" for i in range(3000)]
    assert [x for x in log if x.startswith("err ")] == [f"err {i}" for i in range(3000)]
    assert manifest(run_dir)["console_lines"] == 6000


# --- item 18: a full disk under the run folder --------------------------------------------

_PRINT_AND_FAIL = """
import sys
for i in range(20000):
    print(f"line {i:05d} " + "z" * 30)
sys.exit(3)
"""


def _limit_file_size(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def test_a_log_that_cannot_be_written_keeps_the_output_flowing_and_the_status(
    tmp_path: Path,
) -> None:
    """A real write failure (EFBIG past RLIMIT_FSIZE, as ENOSPC would) mid-run."""
    run_dir = tmp_path / "run"
    done = subprocess.run(
        wrapper_argv(run_dir, [_PY, "-c", _PRINT_AND_FAIL], "--no-snapshot"),
        env=env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=lambda: _limit_file_size(65536),
    )
    assert done.returncode == 3, done.stderr
    assert done.stdout.splitlines() == [f"line {i:05d} " + "z" * 30 for i in range(20000)]
    assert f"cannot write {run_dir}/console.log (File too large)" in done.stderr
    assert "internal error" not in done.stderr
    assert "Traceback" not in done.stderr
    assert "the job exited with status 3" in done.stderr
    assert (run_dir / "console.log").stat().st_size <= 65536
    info = manifest(run_dir)
    assert info["exit_code"] == 3
    assert info["console_log_error"] == "File too large"
    assert info["console_bytes"] + info["console_unsaved_bytes"] == len(done.stdout)


def _tiny_tmpfs(where: Path, size: str) -> bool:
    where.mkdir()
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
            capture_output=True,
            timeout=30,
            check=False,
        )
    except OSError:
        return False
    return done.returncode == 0


def test_a_full_disk_under_the_run_folder_passes_the_jobs_status(tmp_path: Path) -> None:
    """ENOSPC itself on a 64 KiB tmpfs (needs mount rights: root in CI)."""
    disk = tmp_path / "disk"
    if not _tiny_tmpfs(disk, "64k"):
        pytest.skip("cannot mount a tmpfs here")
    try:
        code, out, err = _run(disk / "run", [_PY, "-c", _PRINT_AND_FAIL])
        assert code == 3, err
        assert len(out.splitlines()) == 20000
        assert "(No space left on device); the job's output still shows here" in err
        assert "internal error" not in err
    finally:
        subprocess.run(["umount", str(disk)], check=False, timeout=30)


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "1e9"])
def test_grace_must_be_finite_and_sane(tmp_path: Path, value: str) -> None:
    code, _, err = _run(tmp_path / "run", [_PY, "-c", "pass"], "--grace", value)
    assert code == 2
    assert err.startswith("error: --grace must be a number of seconds from 0 to 3600")
    assert not (tmp_path / "run").exists()


def test_a_newline_in_a_variable_name_cannot_forge_environment_txt(tmp_path: Path) -> None:
    from nccl_doctor.evidence.reader import read_paths
    from nccl_doctor.facts.host import EnvVar
    from nccl_doctor.pipeline import diagnose_paths

    run_dir = tmp_path / "run"
    done = subprocess.run(
        wrapper_argv(run_dir, [_PY, "-c", "raise SystemExit(1)"], "--no-snapshot"),
        env={**env(), "NCCL_X\nNCCL_P2P_DISABLE": "1", "NCCL_DEBUG": "WARN\nNCCL_IB_DISABLE=1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    lines = (run_dir / "environment.txt").read_text().splitlines()
    assert "NCCL_P2P_DISABLE=1" not in lines
    assert "NCCL_IB_DISABLE=1" not in lines
    assert "NCCL_DEBUG=WARN\\nNCCL_IB_DISABLE=1" in lines
    names = {f.name for f in read_paths([str(run_dir)]).facts if isinstance(f, EnvVar)}
    assert "NCCL_DEBUG" in names
    assert not names & {"NCCL_P2P_DISABLE", "NCCL_IB_DISABLE"}
    details = [d for f in diagnose_paths([str(run_dir)]).findings for d in f.detail]
    assert details == [
        (
            "NCCL_DEBUG: unknown value 'WARN\\\\nNCCL_IB_DISABLE=1'; "
            "expected VERSION, WARN, INFO, ABORT, TRACE"
        )
    ]
