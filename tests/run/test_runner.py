"""``nccl-doctor run`` as a real process: nothing lost, signals forwarded, statuses passed on."""

from __future__ import annotations

import argparse
import re
import signal
import sys
import time
from pathlib import Path

import pytest

from nccl_doctor.run.setup import torch_version_tuple
from tests.run._support import manifest, start

LINES = 200_000
#: Prints LINES numbered lines as fast as it can, then SIGKILLs itself.
_FLOOD_THEN_KILL = f"""
import os, signal, sys
w = sys.stdout.write
for i in range({LINES}):
    w(f"line {{i:06d}} " + "x" * 40 + "\\n")
sys.stdout.flush()
os.kill(os.getpid(), signal.SIGKILL)
"""
#: Writes its pid, then prints numbered lines forever, some without flushing whole lines.
_FLOOD_FOREVER = """
import os, sys
open(sys.argv[1], "w").write(str(os.getpid()))
out = sys.stdout.buffer
i = 0
while True:
    out.write(b"line %08d " % i + b"y" * 50 + b"\\n")
    i += 1
"""
_TRAP_TERM = """
import signal, sys, time
def term(*_):
    print("child got SIGTERM", flush=True)
    sys.exit(7)
signal.signal(signal.SIGTERM, term)
print("child ready", flush=True)
time.sleep(60)
"""
_IGNORE_TERM = """
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("child ready", flush=True)
time.sleep(60)
"""
_READY = 'import time; print("child ready", flush=True); time.sleep(60)'


def _wait_for(path: Path, text: str, timeout_s: float = 20) -> None:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if path.exists() and text in path.read_text(errors="replace"):
            return
        time.sleep(0.05)
    raise AssertionError(f"{text!r} never appeared in {path}")


def test_fast_output_then_sigkill_keeps_every_line(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    proc, out, err = start(run_dir, [sys.executable, "-c", _FLOOD_THEN_KILL], tmp_path)
    assert proc.wait(timeout=60) == 128 + signal.SIGKILL
    data = (run_dir / "console.log").read_bytes()
    lines = data.split(b"\n")
    assert lines[-1] == b""  # no partial line: everything printed was whole
    numbers = [int(line.split()[1]) for line in lines[:-1]]
    assert numbers == list(range(LINES))
    assert out.read_bytes() == data  # the terminal got the same bytes, in order
    info = manifest(run_dir)
    assert info["exit_code"] == 137
    assert info["signal"] == "SIGKILL"
    assert info["console_lines"] == LINES
    assert info["console_bytes"] == len(data)
    assert "the job exited with status 137" in err.read_text()


def test_sigkill_from_outside_mid_output_loses_nothing_read(tmp_path: Path) -> None:
    run_dir, pid_file = tmp_path / "run", tmp_path / "child.pid"
    proc, out, _ = start(
        run_dir, [sys.executable, "-c", _FLOOD_FOREVER, str(pid_file)], tmp_path, "--no-snapshot"
    )
    log = run_dir / "console.log"
    end = time.monotonic() + 20
    while time.monotonic() < end and not (log.exists() and log.stat().st_size > 5_000_000):
        time.sleep(0.02)
    child = int(pid_file.read_text())
    import os

    os.kill(child, signal.SIGKILL)
    assert proc.wait(timeout=30) == 137
    data = log.read_bytes()
    whole, _, partial = data.rpartition(b"\n")
    numbers = [int(line.split()[1]) for line in whole.split(b"\n")]
    assert len(numbers) > 50_000
    assert numbers == list(range(len(numbers)))  # no gap, no duplicate
    assert len(partial) < 64  # at most the line the child was writing when it died
    assert out.read_bytes() == data  # every byte the wrapper read reached the file
    info = manifest(run_dir)
    assert info["console_lines"] == len(numbers)
    assert info["console_bytes"] == len(data)


def test_sigterm_is_forwarded_and_the_childs_status_returned(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    proc, _, _ = start(run_dir, [sys.executable, "-c", _TRAP_TERM], tmp_path, "--no-snapshot")
    _wait_for(run_dir / "console.log", "child ready")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 7
    assert "child got SIGTERM" in (run_dir / "console.log").read_text()
    info = manifest(run_dir)
    assert info["signals_forwarded"] == ["SIGTERM"]
    assert info["exit_code"] == 7
    assert not info["sigkilled_after_grace"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_death_is_128_plus_n(tmp_path: Path, sig: signal.Signals) -> None:
    run_dir = tmp_path / "run"
    proc, _, _ = start(run_dir, [sys.executable, "-c", _READY], tmp_path, "--no-snapshot")
    _wait_for(run_dir / "console.log", "child ready")
    proc.send_signal(sig)
    code = proc.wait(timeout=30)
    # python dies of an uncaught KeyboardInterrupt by re-raising SIGINT: 130 too
    assert code == 128 + sig
    assert manifest(run_dir)["signals_forwarded"] == [sig.name]


def test_a_child_ignoring_sigterm_is_killed_after_the_grace(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    proc, _, _ = start(
        run_dir, [sys.executable, "-c", _IGNORE_TERM], tmp_path, "--no-snapshot", "--grace", "1"
    )
    _wait_for(run_dir / "console.log", "child ready")
    began = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 137
    assert 0.9 <= time.monotonic() - began < 15
    assert manifest(run_dir)["sigkilled_after_grace"] is True


def test_environment_is_set_unless_the_user_set_it(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    show = (
        "import os; [print(k, os.environ.get(k)) for k in ('NCCL_DEBUG', 'NCCL_DEBUG_FILE', "
        "'TORCH_FR_BUFFER_SIZE', 'TORCH_NCCL_TRACE_BUFFER_SIZE', 'TORCH_NCCL_DUMP_ON_TIMEOUT', "
        "'TORCH_NCCL_DEBUG_INFO_TEMP_FILE', 'TORCHELASTIC_ERROR_FILE')]"
    )
    proc, _, err = start(
        run_dir,
        [sys.executable, "-c", show],
        tmp_path,
        NCCL_DEBUG="INFO",
        HF_TOKEN="hf_abcdefghijklmnopqrstuvwxyz0123456789",  # noqa: S106 -- a fake, to redact
    )
    assert proc.wait(timeout=60) == 0
    got = dict(line.split(" ", 1) for line in (run_dir / "console.log").read_text().splitlines())
    folder = str(run_dir.resolve())
    info = manifest(run_dir)
    # the deprecated spellings only for a torch that needs them (none here: unknown gets both)
    version = torch_version_tuple(info["torch"]["version"])
    new_torch = version is not None and version >= (2, 11)
    assert got == {
        "NCCL_DEBUG": "INFO",
        "NCCL_DEBUG_FILE": f"{folder}/nccl.%h.%p.log",
        "TORCH_FR_BUFFER_SIZE": "2000",
        "TORCH_NCCL_TRACE_BUFFER_SIZE": "None" if new_torch else "2000",
        "TORCH_NCCL_DUMP_ON_TIMEOUT": "1",
        "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": "None" if new_torch else f"{folder}/fr_rank",
        "TORCHELASTIC_ERROR_FILE": f"{folder}/error.json",
    }
    assert "NCCL_DEBUG" not in info["env_added"]
    assert info["launcher"] == "python"
    assert info["node_before"]["ok"] is True
    # success: no diagnosis printed; recorded in the history (the default), with the
    # after-snapshot its counter deltas need
    assert info["node_after"]["ok"] is True
    run_id = info["history"]["run_id"]  # the session's history (tests/conftest.py)
    assert "diagnosis" not in err.read_text()
    assert f"nccl-doctor run: recorded as run {run_id} (job run) in " in err.read_text()
    recorded = (run_dir / "environment.txt").read_text()
    assert "NCCL_DEBUG=INFO" in recorded
    assert "hf_abcdefghijklmnopqrstuvwxyz" not in recorded
    assert "HF_TOKEN=[REDACTED]" in recorded
    assert re.search(r"-c .*NCCL_DEBUG", (run_dir / "command.txt").read_text())


def test_a_missing_command_exits_127(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    proc, _, err = start(run_dir, ["no-such-command-nccl-doctor"], tmp_path, "--no-snapshot")
    assert proc.wait(timeout=30) == 127
    assert "cannot start no-such-command-nccl-doctor" in err.read_text()


def test_cli_wiring_runs_the_job(tmp_path: Path, capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    from nccl_doctor.run.cli import add_parser, cmd

    root = argparse.ArgumentParser(prog="nccl-doctor")
    add_parser(root.add_subparsers(dest="command"))
    run_dir = tmp_path / "run"
    args = root.parse_args(
        ["run", "--dir", str(run_dir), "--no-snapshot", "--", sys.executable, "-c", "exit(3)"]
    )
    assert args.command == "run"
    assert cmd(args) == 3
    assert manifest(run_dir)["exit_code"] == 3
    assert "the job exited with status 3" in capfdbinary.readouterr().err.decode()


def test_default_run_dir_is_timestamped_with_the_pid() -> None:
    import os

    from nccl_doctor.run.setup import default_run_dir, launcher_of

    path = default_run_dir(0)
    assert path.parent == Path("nccl-doctor-runs")
    assert path.name.endswith(f"-{os.getpid()}")
    assert re.fullmatch(r"\d{8}-\d{6}-\d+", path.name)
    assert launcher_of(["/usr/bin/torchrun", "x.py"]) == "torchrun"
    assert launcher_of(["python3", "-m", "torch.distributed.run", "x.py"]) == "torchrun"
    assert launcher_of(["srun", "-N2", "python", "x.py"]) == "srun"
    assert launcher_of(["deepspeed", "x.py"]) == "deepspeed"
    assert launcher_of(["accelerate", "launch", "x.py"]) == "accelerate"
    assert launcher_of(["bash", "x.sh"]) is None
