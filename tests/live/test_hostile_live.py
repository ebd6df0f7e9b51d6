"""``check``/``capture`` against hostile hosts: floods, stray helpers, forged names, full disks.

Each test runs real processes. Where the old behaviour was a hang or a
memory blow-up, the work runs in a child process under a generous timeout,
so a regression fails the test instead of hanging the suite.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from nccl_doctor.cli import main
from nccl_doctor.evidence.envfile import env_file, escape_value
from nccl_doctor.evidence.host_live import env_dump, read_host
from nccl_doctor.evidence.live import MAX_BYTES, Kept, ReadLog, matching_lines, run_command
from nccl_doctor.pipeline import diagnose_paths
from tests.live._support import REPO

_PY = sys.executable


def _env(**extra: str) -> dict[str, str]:
    path = os.environ.get("PYTHONPATH", "")
    src = str(REPO / "src")
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (src, str(REPO), path) if p),
        "NCCL_DOCTOR_NVML_MODULE": "no_such_nvml_module",
        **extra,
    }


def _gone(pid: int) -> bool:
    """Whether ``pid`` no longer runs (no entry, or a zombie nobody reaped yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-1", "601", "1e400", "soon"])
def test_timeout_must_be_finite_positive_and_sane(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in (["check"], ["capture", "-o", "/nonexistent/b.tgz"]):
        with pytest.raises(SystemExit) as exited:
            main([*command, "--timeout", value])
        assert exited.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith("error: argument --timeout: "), err
        assert "internal error" not in err
        assert err.count("\n") == 1


def test_a_grandchild_holding_the_pipe_is_stopped_not_waited_for() -> None:
    """``sh`` exits at once; the ``sleep`` it left holds stdout open for 300 s."""
    begin = time.monotonic()
    done = run_command(["sh", "-c", "sleep 300 & echo $!"], 30.0)
    elapsed = time.monotonic() - begin
    assert done.status == "ok", done
    assert done.returncode == 0
    assert "held its output open" in done.message
    pid = int(done.text.split()[0])
    deadline = time.monotonic() + 10
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(pid), f"the grandchild {pid} still runs"
    assert elapsed < 20, elapsed  # the old runner waited for EOF until the 30 s deadline


def test_the_deadline_kills_the_whole_group(tmp_path: Path) -> None:
    """A command that does not answer is stopped with everything it started."""
    pid_file = tmp_path / "pid"
    done = run_command(["sh", "-c", f"sleep 300 & echo $! > {pid_file}; sleep 300"], 1.0)
    assert done.status == "timeout"
    assert done.message == "did not answer within 1 s"
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(pid), f"the helper's child {pid} still runs"


_FLOOD = """
import json, os, resource, sys
from pathlib import Path
from nccl_doctor.evidence.host_live import read_host
from nccl_doctor.evidence.live import ReadLog
log = ReadLog()
host = read_host(log, 60.0, root=Path(sys.argv[1]), environ={})
dmesg = [e for e in log.entries if e.what == "dmesg"][0]
print(json.dumps({
    "status": dmesg.status,
    "message": dmesg.message,
    "kernel_log": host.files.get("kernel-log.txt", ""),
    "maxrss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
}))
"""


def test_a_flooding_dmesg_costs_bounded_memory_and_keeps_the_driver_lines(
    tmp_path: Path,
) -> None:
    """1 GiB of kernel log (the old runner held all of it, twice, before cutting)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "dmesg"
    fake.write_text(
        "#!/bin/sh\n"
        "echo '[  1.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.'\n"
        "yes '[  2.0] usb 1-1: flooding the kernel log with a line nobody needs' "
        "| head -c 1073741824\n"
        "echo '[  3.0] NVRM: Xid (PCI:0000:3b:00): 48, pid=1, DBE'\n"
    )
    fake.chmod(0o755)
    env = _env(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.run(
        [_PY, "-c", _FLOOD, str(tmp_path / "root")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["status"] == "ok"
    assert got["message"].startswith("output cut after 64 MiB"), got["message"]
    assert "79, pid=1, GPU has fallen off the bus" in got["kernel_log"]
    assert "usb 1-1" not in got["kernel_log"]
    # the old runner held the whole 1 GiB flood (twice); 1 GiB leaves room for a loaded machine
    assert got["maxrss_mib"] < 1024, got["maxrss_mib"]


def test_kept_output_is_bounded_and_line_filtered() -> None:
    keep = re.compile(rb"Xid")
    kept = Kept(100, keep)
    for i in range(1000):
        kept.add(b"noise " * 5 + b"\n" + (f"Xid {i}\n".encode() if i % 10 == 0 else b""))
    kept.add(b"Xid unfinished")
    value = kept.value()
    assert len(value) <= 100
    assert value.endswith(b"Xid 990\nXid unfinished")
    assert b"noise" not in value
    assert matching_lines(b"a Xid b Xid\nno\nXid\n", keep) == b"a Xid b Xid\nXid\n"
    tail = Kept(MAX_BYTES)
    tail.add(b"x" * (MAX_BYTES + 10) + b"\nlast\n")
    assert tail.value() == b"last\n"


def test_a_newline_in_a_name_or_value_cannot_forge_a_setting(tmp_path: Path) -> None:
    environ = {
        "NCCL_X\nNCCL_P2P_DISABLE": "1",
        "NCCL_DEBUG": "WARN\nNCCL_IB_DISABLE=1",
        "NCCL_ALGO": "Ring\u2028NCCL_SHM_DISABLE=1",
        "NCCL_SOCKET_IFNAME": "eth\x1b]0;title\x07",
    }
    text = env_dump(environ)
    assert text is not None
    lines = text.splitlines()
    assert lines == [
        "NCCL_ALGO=Ring\\u2028NCCL_SHM_DISABLE=1",
        "NCCL_DEBUG=WARN\\nNCCL_IB_DISABLE=1",
        "NCCL_SOCKET_IFNAME=eth\\x1b]0;title\\x07",
        "# nccl-doctor: 1 variable(s) left out, their names are not shell identifiers",
    ]
    assert escape_value("plain value") == "plain value"
    assert env_file({"A": "1", "1BAD": "x", "B-C": "y"}) == (
        "A=1\n# nccl-doctor: 2 variable(s) left out, their names are not shell identifiers\n"
    )


def test_a_forged_name_in_the_real_environment_does_not_reach_the_diagnosis(
    tmp_path: Path,
) -> None:
    """The whole path: a process environment with the forged name, ``check -o``, replay."""
    bundle = tmp_path / "bundle"
    env = _env(**{"NCCL_X\nNCCL_P2P_DISABLE": "1"})
    env.pop("NCCL_P2P_DISABLE", None)
    proc = subprocess.run(
        [_PY, "-m", "nccl_doctor", "check", "--format", "json", "-o", str(bundle)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode in (0, 1, 3), proc.stderr
    assert "NCCL_P2P_DISABLE" not in proc.stdout
    env_txt = (bundle / "env.txt").read_text()
    assert "\nNCCL_P2P_DISABLE=1" not in "\n" + env_txt
    assert "1 variable(s) left out" in env_txt
    report = diagnose_paths([str(bundle)])
    assert not [f for f in report.findings if "NCCL_P2P_DISABLE" in f.summary]


def test_a_120_kb_dotted_ifname_does_not_hang_check(tmp_path: Path) -> None:
    """The secret-name pattern rescanned every dotted word: minutes; now linear."""
    value = ".".join(["a1"] * 40_000)
    proc = subprocess.run(
        [_PY, "-m", "nccl_doctor", "check", "--format", "json"],
        env=_env(NCCL_SOCKET_IFNAME=value),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode in (0, 1, 3), proc.stderr
    report = json.loads(proc.stdout)
    assert "net.socket_interface" in {f["id"] for f in report["findings"]}


def _limit_file_size(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def test_capture_that_cannot_write_says_so_and_leaves_nothing(tmp_path: Path) -> None:
    """A real write failure (EFBIG past RLIMIT_FSIZE, as ENOSPC would): exit 2, one line."""
    out = tmp_path / "b.tgz"
    proc = subprocess.run(
        [_PY, "-m", "nccl_doctor", "capture", "-o", str(out)],
        env=_env(TMPDIR=str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=lambda: _limit_file_size(256),
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: cannot write the capture to "), proc.stderr
    assert "internal error" not in proc.stderr
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def _tiny_tmpfs(where: Path) -> bool:
    where.mkdir()
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(where)],
            capture_output=True,
            timeout=30,
            check=False,
        )
    except OSError:
        return False
    return done.returncode == 0


def test_capture_onto_a_full_disk_exits_2_and_leaves_no_partial_bundle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ENOSPC itself, on a 16 KiB tmpfs filled up (needs mount rights: root in CI)."""
    disk = tmp_path / "disk"
    if not _tiny_tmpfs(disk):
        pytest.skip("cannot mount a tmpfs here")
    try:
        (disk / "fill").write_bytes(b"\0" * 16384)
        for out in (disk / "b.tgz", disk / "folder"):
            assert main(["capture", "-o", str(out)]) == 2
            err = capsys.readouterr().err
            assert err.startswith(f"error: cannot write {out}: No space left on device"), err
            assert "nothing was saved" in err
            assert sorted(p.name for p in disk.iterdir()) == ["fill"]
        (disk / "fill").unlink()
        assert main(["capture", "-o", str(disk / "b.tgz")]) == 0
        with tarfile.open(disk / "b.tgz") as archive:
            assert "nccl-doctor-bundle/host.json" in archive.getnames()
    finally:
        subprocess.run(["umount", str(disk)], check=False, timeout=30)


def test_reads_that_each_hang_are_bounded_by_the_capture_budget(tmp_path: Path) -> None:
    """70 sysfs files that never answer (FIFOs with no writer): 6 deadlines, not 70."""
    root = tmp_path / "root"
    fifos = []
    for device in range(10):
        port = root / f"sys/class/infiniband/mlx5_{device}/ports/1"
        (port / "gids").mkdir(parents=True)
        for name in ("gids/0", "lid", "sm_lid", "state", "phys_state", "rate", "link_layer"):
            os.mkfifo(port / name)
            fifos.append(port / name)
    (root / "dev/shm").mkdir(parents=True)
    log = ReadLog()
    begin = time.monotonic()
    try:
        read_host(log, 0.5, root=root, environ={})
        elapsed = time.monotonic() - begin
    finally:
        for fifo in fifos:  # let the abandoned reader threads finish
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    waited = [e for e in log.entries if e.message == "did not answer within 0.5 s"]
    skipped = [e for e in log.entries if e.message.startswith("not read: the capture's time")]
    assert 1 <= len(waited) <= 7
    assert len(waited) + len(skipped) >= 70
    assert skipped[0].message == "not read: the capture's time budget (3 s) was spent"
    assert elapsed < 20, elapsed  # each read waiting its 0.5 s: 35 s
