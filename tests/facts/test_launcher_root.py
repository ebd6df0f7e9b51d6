"""torchrun's root cause, read through a tie on its one-second clock."""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.failures import first_failure
from nccl_doctor.pipeline import facts_of


def _summary(root: tuple[int, int, str], other: tuple[int, int, str]) -> str:
    def entry(index: int, rank: int, code: int, signal: str) -> str:
        return (
            f"[{index}]:\n"
            "  time      : 2026-12-04_12:21:04\n"
            "  host      : localhost\n"
            f"  rank      : {rank} (local_rank: {rank})\n"
            f"  exitcode  : {code} (pid: 1419{7 + rank})"
            + (f"  ({signal})\n" if signal else "\n")
            + "  error_file: <N/A>\n"
            + (
                f"  traceback : Signal {-code} ({signal}) received by PID 1419{7 + rank}\n"
                if signal
                else "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n"
            )
        )

    return (
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
        "=======================================================\n"
        "/work/job.py FAILED\n"
        "-------------------------------------------------------\n"
        "Failures:\n"
        + entry(1, *other)
        + "-------------------------------------------------------\n"
        "Root Cause (first observed failure):\n"
        + entry(0, *root)
        + "=======================================================\n"
    )


def _first_rank(tmp_path: Path, text: str) -> int | None:
    path = tmp_path / "console.log"
    path.write_text(text)
    failure, _ = first_failure(facts_of(read_paths([str(path)])))
    assert failure is not None
    return failure.rank


def test_the_launchers_root_cause_is_the_first_failure(tmp_path: Path) -> None:
    text = _summary((1, -9, "SIGKILL"), (0, -15, "SIGTERM"))
    assert _first_rank(tmp_path, text) == 1


def test_a_worker_the_launcher_terminated_is_no_root_cause(tmp_path: Path) -> None:
    # the tie went the other way: the survivor torchrun sent SIGTERM is named
    text = _summary((0, -15, "SIGTERM"), (1, -9, "SIGKILL"))
    assert _first_rank(tmp_path, text) == 1


def test_a_worker_killed_by_a_signal_outranks_a_survivors_timeout(tmp_path: Path) -> None:
    # rank 0 timed out waiting for the rank the kernel killed; torchrun names the killed one
    timeout = (
        "[rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81]"
        " Timed out waiting 1800000ms for recv operation to complete\n"
    )
    text = timeout + _summary((1, -9, "SIGKILL"), (0, -15, "SIGTERM"))
    assert _first_rank(tmp_path, text) == 1


def test_the_watchdogs_abort_does_not_outrank_the_timeout_it_follows(tmp_path: Path) -> None:
    # ProcessGroupNCCL's watchdog aborts (SIGABRT) the rank whose collective timed out
    timeout = (
        "[rank1]:[E1204 12:00:00.000 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught"
        " collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1,"
        " NumelOut=1, Timeout(ms)=600000) ran for 600090 milliseconds before timing out.\n"
    )
    text = timeout + _summary((1, -6, "SIGABRT"), (0, -15, "SIGTERM"))
    path = tmp_path / "console.log"
    path.write_text(text)
    failure, _ = first_failure(facts_of(read_paths([str(path)])))
    assert failure is not None
    assert "Watchdog caught collective operation timeout" in failure.fact.cite.text


def test_a_survivors_own_exit_in_the_same_second_does_not_outrank_a_crash(
    tmp_path: Path,
) -> None:
    # rank 0 read its peer's reset and exited (code 1) before torchrun's poll saw rank 1's
    # SIGSEGV: both tie on the one-second clock and torchrun names rank 0
    reset = (
        "[rank0]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/"
        "pair.cc:537] Read error [127.0.0.1]:30622: Connection reset by peer.\n"
    )
    exited = _summary((0, 1, ""), (1, -11, "SIGSEGV"))
    assert _first_rank(tmp_path, reset + exited) == 1


def test_a_crash_in_another_second_leaves_the_launchers_root(tmp_path: Path) -> None:
    later = _summary((0, 1, ""), (1, -11, "SIGSEGV")).replace(
        "[1]:\n  time      : 2026-12-04_12:21:04", "[1]:\n  time      : 2026-12-04_12:21:09"
    )
    assert _first_rank(tmp_path, later) == 0
