"""The ``py-stacks`` parser (faulthandler and py-spy dumps) and the rank verdict over it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.stacks import StackCapture, ThreadStack, positions, verdict
from nccl_doctor.pipeline import facts_of

SITE = "/venv/lib/python3.11/site-packages/torch/distributed"


def _facts(tmp_path: Path, name: str, text: str) -> tuple[list[StackCapture], list[ThreadStack]]:
    path = tmp_path / name
    path.write_text(text)
    facts = facts_of(read_paths([str(path)]))
    return facts.of(StackCapture), facts.of(ThreadStack)


def _dump(rank: int, *, capture: int = 1, state: str = "dumped", frames: str = "") -> str:
    head = (
        f"# nccl-doctor stacks: capture={capture} state={state} tool=faulthandler pid={100 + rank} "
        f"rank={rank} local_rank={rank} world_size=3 host=node1 stalled_s=9\n"
    )
    return head + frames


def _in(op: str, line: int) -> str:
    return (
        "Thread 0x00007f00000000aa (most recent call first):\n"
        '  File "/usr/lib/python3.11/threading.py", line 327 in wait\n'
        '  File "/usr/lib/python3.11/threading.py", line 1002 in _bootstrap\n'
        "\n"
        "Current thread 0x00007f00000000bb (most recent call first):\n"
        f'  File "{SITE}/distributed_c10d.py", line 2900 in {op}\n'
        f'  File "{SITE}/c10d_logger.py", line 83 in wrapper\n'
        f'  File "/job/train.py", line {line} in step\n'
        '  File "/job/train.py", line 99 in <module>\n'
    )


SLEEPING = (
    "Current thread 0x00007f00000000cc (most recent call first):\n"
    '  File "/job/train.py", line 40 in load_batch\n'
    '  File "/job/train.py", line 99 in <module>\n'
)


def test_real_faulthandler_dump_is_read_thread_by_thread(tmp_path: Path) -> None:
    code = (
        "import faulthandler, sys, threading, time\n"
        "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
        "def inner():\n"
        "    faulthandler.dump_traceback(sys.stdout, all_threads=True)\n"
        "inner()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    captures, threads = _facts(tmp_path, "stacks.rank2.txt", out)
    assert not captures
    assert len(threads) == 2
    worker, main = threads
    assert {worker.rank, main.rank} == {2}  # from the file name
    assert worker.frames[0][2] == "_bootstrap"
    assert not worker.current
    assert main.current
    assert [(f[1], f[2]) for f in main.frames] == [(5, "<module>"), (4, "inner")]


def test_wrapper_header_attributes_the_threads_and_records_the_capture(tmp_path: Path) -> None:
    captures, threads = _facts(tmp_path, "a.txt", _dump(1, capture=2, frames=SLEEPING))
    (cap,) = captures
    assert (cap.rank, cap.pid, cap.host, cap.state, cap.capture) == (1, 101, "node1", "dumped", 2)
    assert (cap.world_size, cap.stalled_s) == (3, 9.0)
    (thread,) = threads
    assert (thread.rank, thread.pid, thread.capture) == (1, 101, 2)
    assert thread.frames[-1] == ("/job/train.py", 40, "load_batch")


def test_py_spy_dump(tmp_path: Path) -> None:
    text = (
        "Process 4242: python train.py\n"
        "Python v3.11.7 (/usr/bin/python3.11)\n"
        "\n"
        'Thread 4242 (idle): "MainThread"\n'
        f"    all_reduce ({SITE}/distributed_c10d.py:2900)\n"
        "        Arguments:\n"
        "            tensor: <Tensor at 0x7f>\n"
        f"    wrapper ({SITE}/c10d_logger.py:83)\n"
        "    step (train.py:52)\n"
        "    <module> (train.py:99)\n"
        'Thread 4250 (idle): "Thread-1"\n'
        "    wait (threading.py:327)\n"
    )
    _, threads = _facts(tmp_path, "stacks.rank0.txt", text)
    main, other = threads
    assert (main.thread_name, main.tool, main.rank) == ("MainThread", "py-spy", 0)
    assert main.frames[0] == ("train.py", 99, "<module>")
    assert main.frames[-1][2] == "all_reduce"
    assert other.frames == (("threading.py", 327, "wait"),)


def test_verdict_names_the_rank_outside_the_collective(tmp_path: Path) -> None:
    for rank, frames in ((0, _in("all_reduce", 52)), (1, SLEEPING), (2, _in("all_reduce", 52))):
        (tmp_path / f"r{rank}.txt").write_text(_dump(rank, frames=frames))
    facts = facts_of(read_paths([str(tmp_path)]))
    found = verdict(positions([*facts.of(StackCapture), *facts.of(ThreadStack)]))
    assert found.hung
    assert found.named == (1,)
    assert found.lines == (
        "rank 0: waits in all_reduce, called at job/train.py:52 in step",
        "rank 1: not in any collective, at job/train.py:40 in load_batch",
        "rank 2: waits in all_reduce, called at job/train.py:52 in step",
    )


def test_verdict_odd_collective_gone_rank_and_latest_capture(tmp_path: Path) -> None:
    files = {
        "old0.txt": _dump(0, frames=SLEEPING),  # capture 1: superseded
        "r0.txt": _dump(0, capture=2, frames=_in("all_reduce", 52)),
        "r1.txt": _dump(1, capture=2, frames=_in("broadcast", 60)),
        "r2.txt": _dump(2, capture=2, frames=_in("all_reduce", 52)),
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    facts = facts_of(read_paths([str(tmp_path)]))
    found = verdict(positions([*facts.of(StackCapture), *facts.of(ThreadStack)]))
    assert found.named == (1,)
    assert found.summary == (
        "the ranks wait in different collectives: rank 1 in broadcast; ranks 0, 2 in all_reduce"
    )
    (tmp_path / "r1.txt").write_text(_dump(1, capture=2, state="gone"))
    facts = facts_of(read_paths([str(tmp_path)]))
    found = verdict(positions([*facts.of(StackCapture), *facts.of(ThreadStack)]))
    assert (found.named, found.summary) == ((1,), "rank 1 is gone while ranks 0, 2 wait for it")


def test_verdict_all_in_one_collective_points_at_the_missing_rank(tmp_path: Path) -> None:
    for rank in (0, 2):
        (tmp_path / f"r{rank}.txt").write_text(_dump(rank, frames=_in("all_reduce", 52)))
    facts = facts_of(read_paths([str(tmp_path)]))
    found = verdict(positions([*facts.of(StackCapture), *facts.of(ThreadStack)]))
    assert found.hung
    assert found.named == (1,)
    assert "rank 1 were not captured" in found.summary


def test_verdict_of_a_busy_job_is_not_a_hang(tmp_path: Path) -> None:
    for rank in (0, 1, 2):
        (tmp_path / f"r{rank}.txt").write_text(_dump(rank, frames=SLEEPING))
    facts = facts_of(read_paths([str(tmp_path)]))
    found = verdict(positions([*facts.of(StackCapture), *facts.of(ThreadStack)]))
    assert not found.hung
    assert found.named == ()


def test_py_spys_short_paths_still_place_a_rank_in_its_collective(tmp_path: Path) -> None:
    """py-spy prints a module's path relative to its sys.path entry, as captured by the wrapper
    on this box: 'torch/distributed/...' is torch's, and the caller is the job's own frame."""
    waiting = (
        "# nccl-doctor stacks: capture=1 state=dumped tool=py-spy pid=25381 rank=0 local_rank=0 "
        "world_size=2 host=vm stalled_s=8\n"
        "Process 25381: /work/main/.venv/bin/python3 -u tests/run/hang_job.py\n"
        "Python v3.11.7 (/root/.pyenv/versions/3.11.7/bin/python3.11)\n\n"
        'Thread 25381 (idle): "MainThread"\n'
        "    all_reduce (torch/distributed/distributed_c10d.py:3252)\n"
        "    _exception_logger.<locals>.wrapper (torch/distributed/c10d_logger.py:83)\n"
        "    _hang (tests/run/hang_job.py:51)\n"
        "    main (tests/run/hang_job.py:97)\n"
        "    <module> (tests/run/hang_job.py:103)\n"
    )
    sleeping = _dump(1, frames=SLEEPING).replace("world_size=3", "world_size=2")
    (tmp_path / "stacks.rank0.txt").write_text(waiting)
    (tmp_path / "stacks.rank1.txt").write_text(sleeping)
    facts = facts_of(read_paths([str(tmp_path)]))
    found = verdict(positions([*facts.of(StackCapture), *facts.of(ThreadStack)]))
    assert (found.hung, found.named) == (True, (1,))
    assert found.lines[0] == "rank 0: waits in all_reduce, called at run/hang_job.py:51 in _hang"
