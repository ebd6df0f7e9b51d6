"""Coverage and advice that fit the diagnosis: what to collect depends on the cause.

An application's own exception needs no NCCL log or kernel log, a GPU
out-of-memory needs the memory and process list, a user's Ctrl-C needs
nothing chased; a fault in the system still gets them. How to keep each
rank's output follows the launcher that started the ranks.
"""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.pipeline import diagnose_paths

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "h200-cuda-999"

_WATCHDOG = (
    "[rank0]:[E1202 10:10:01.100000000 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=120, OpType=ALLREDUCE, NumelIn=1, "
    "NumelOut=1, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.\n"
)
_SUMMARY = (
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
    "============================================================\n"
    "train.py FAILED\n"
    "------------------------------------------------------------\n"
    "Failures:\n"
    "  <NO_OTHER_FAILURES>\n"
    "------------------------------------------------------------\n"
    "Root Cause (first observed failure):\n"
    "[0]:\n"
    "  time      : 2024-12-02_10:00:05\n"
    "  host      : node1\n"
    "  rank      : 1 (local_rank: 1)\n"
    "  exitcode  : 1 (pid: 2201)\n"
    "  error_file: <N/A>\n"
    "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n"
    "============================================================\n"
)


def _log(tmp_path: Path, text: str, name: str = "run.log") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def _asks(report: object) -> str:
    cov = report.coverage  # type: ignore[attr-defined]
    return " | ".join((*cov.missing, *cov.next_steps))


def test_an_application_exception_asks_for_no_nccl_log_or_dmesg(tmp_path: Path) -> None:
    log = _log(
        tmp_path,
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/work/train.py", line 40, in <module>\n'
        "[rank1]:     x = batch[idx]\n"
        "[rank1]: IndexError: list index out of range\n" + _WATCHDOG,
    )
    report = diagnose_paths([log])
    # the IndexError is the cause; the watchdog's timeout on rank 0 is its cascade
    assert report.top(1) == ["launch.rank_crash"]
    assert report.first_failure is not None
    assert report.first_failure.rank == 1
    asks = _asks(report)
    for beside_the_point in ("NCCL_DEBUG", "dmesg", "collect_env", "nvidia-smi"):
        assert beside_the_point not in asks, asks


def test_a_gpu_oom_asks_for_memory_not_nccl_logs(tmp_path: Path) -> None:
    log = _log(
        tmp_path,
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/work/train.py", line 40, in <module>\n'
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
        "GPU 1 has a total capacity of 79.15 GiB of which 1.02 GiB is free.\n",
    )
    report = diagnose_paths([log])
    assert report.top(1) == ["gpu.oom"]
    assert report.coverage.missing == (
        "GPU memory and process list while the job runs (nvidia-smi)",
    )
    asks = _asks(report)
    assert "memory.used,memory.total" in asks
    for beside_the_point in ("NCCL_DEBUG", "dmesg", "collect_env"):
        assert beside_the_point not in asks, asks


def test_ctrl_c_is_not_a_failure_to_chase(tmp_path: Path) -> None:
    log = _log(
        tmp_path,
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "/work/train.py", line 40, in <module>\n'
        "[rank0]: KeyboardInterrupt\n"
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/work/train.py", line 40, in <module>\n'
        "[rank1]: KeyboardInterrupt\n"
        "W1202 10:00:04.000000 2190 torch/distributed/elastic/agent/server/api.py:704] "
        "Received Signals.SIGINT death signal, shutting down workers\n",
    )
    report = diagnose_paths([log])
    assert report.verdict.value == "inconclusive"
    assert report.first_failure is None
    assert report.findings == ()
    assert any(
        "stopped by its user (Ctrl-C / SIGINT (ranks 0, 1)" in n for n in report.coverage.notes
    ), report.coverage.notes
    assert report.coverage.missing == ()
    assert len(report.coverage.next_steps) == 1
    assert report.coverage.next_steps[0].startswith("If you stopped it because it hung")


def test_a_hang_the_user_interrupted_is_still_the_hang(tmp_path: Path) -> None:
    log = _log(
        tmp_path,
        _WATCHDOG + "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/work/train.py", line 40, in <module>\n'
        "[rank1]: KeyboardInterrupt\n",
    )
    report = diagnose_paths([log])
    assert report.verdict.value == "failed"
    assert report.first_failure is not None
    assert report.first_failure.rank == 0


def test_a_fault_in_the_system_still_asks_for_nccl_and_kernel_logs() -> None:
    report = diagnose_paths([str(EXAMPLE)])
    missing = report.coverage.missing
    assert "NCCL's own log (NCCL_DEBUG output)" in missing
    assert "kernel log (NVRM/Xid lines) from the host" in missing


def test_a_rank_without_its_error_is_missing_evidence(tmp_path: Path) -> None:
    # torchrun's summary alone: rank 1 failed, error_file <N/A>, no traceback of it
    report = diagnose_paths([_log(tmp_path, _SUMMARY)])
    assert report.top(1) == ["launch.rank_crash"]
    assert report.coverage.missing[0] == (
        "the error of rank 1: torchrun's summary has `error_file: <N/A>` and no traceback of "
        "it was given"
    )
    steps = " ".join(report.coverage.next_steps)
    assert "torchrun --log-dir DIR --redirects 3" in steps
    assert "@torch.distributed.elastic.multiprocessing.errors.record" in steps


def test_a_rank_whose_traceback_was_given_is_not_missing(tmp_path: Path) -> None:
    log = _log(
        tmp_path,
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/work/train.py", line 40, in <module>\n'
        "[rank1]: ValueError: bad batch\n" + _SUMMARY,
    )
    report = diagnose_paths([log])
    assert not any("the error of rank" in m for m in report.coverage.missing)
    assert not any("@torch" in s for s in report.coverage.next_steps)


def test_keeping_each_ranks_output_is_said_for_the_launcher_used(tmp_path: Path) -> None:
    world = (
        "[rank0]:[I1202 10:00:00.000000 ProcessGroupNCCL.cpp:987] [PG ID 0 PG GUID 0 Rank 0] "
        "ProcessGroupNCCL initialization options: size: 4, global rank: 0, TIMEOUT(ms): 600000\n"
    )
    crash = (
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/work/train.py", line 40, in <module>\n'
        "[rank1]: ValueError: bad batch\n"
    )
    srun = diagnose_paths([_log(tmp_path, world + crash + "srun: error: node1: task 1: Exited\n")])
    spawn = diagnose_paths([str(EXAMPLE)])
    assert any(m.startswith("output of ranks 2, 3 (world size 4)") for m in srun.coverage.missing)
    assert "`srun --output=%x-%j-%t.out ...`" in " ".join(srun.coverage.next_steps)
    spawn_steps = " ".join(spawn.coverage.next_steps)
    assert "mp.spawn shows only the first failing process's error" in spawn_steps
    assert "torchrun" not in spawn_steps


_NCCL_TESTS_RUN = "mpirun -np 1 ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 2\n"


def test_a_screenshot_in_place_of_the_output_is_asked_for_as_text_and_is_not_healthy(
    tmp_path: Path,
) -> None:
    """A command, then the screenshot of what it printed: nothing read says it went well."""
    for picture in (
        "![image](https://github.com/user-attachments/assets/3c51da62-9a16-464a)\n",
        '<img width="1491" alt="err" src="https://user-images.githubusercontent.com/1/2.png">\n',
    ):
        log = _log(tmp_path, "when I run this command:\n" + _NCCL_TESTS_RUN + picture)
        report = diagnose_paths([log])
        assert report.verdict.value == "inconclusive"
        assert f"the text of the picture(s) linked at {log}:3 (only text is read)" in (
            report.coverage.missing
        )
        assert any("screenshot shows" in s for s in report.coverage.next_steps)


def test_a_log_that_names_an_image_file_it_saved_asks_for_no_picture(tmp_path: Path) -> None:
    log = _log(
        tmp_path,
        _NCCL_TESTS_RUN + "saved the plot to https://example.com/runs/busbw.png\n",
    )
    report = diagnose_paths([log])
    assert report.verdict.value == "healthy"
    assert not any("picture" in m for m in report.coverage.missing)
