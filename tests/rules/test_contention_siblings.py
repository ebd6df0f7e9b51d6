"""The other processes an OOM lists, or nvidia-smi shows, are the job's own ranks when a
launcher started them beside a known worker and they hold about what it holds (every rank on
GPU 0, none selecting its own): gpu.oom, not gpu.contention. Far more memory next to a close
PID is still someone else's (the captured oom-foreign-h200 case holds that side too)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import critical_ids, diagnose_text, ranked_without_critical

_OOM = (
    "[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.41 GiB. GPU 0 has "
    "a total capacity of 47.53 GiB of which 1.07 GiB is free. Process 412331 has {a} GiB memory "
    "in use. Process 412332 has 11.47 GiB memory in use. Process 412334 has 11.63 GiB memory in "
    "use. Including non-PyTorch memory, this process has 11.39 GiB memory in use. Of the "
    "allocated memory 10.86 GiB is allocated by PyTorch, and 26.09 MiB is reserved by PyTorch "
    "but unallocated.\n"
    "E1118 16:02:42.112000 412310 torch/distributed/elastic/multiprocessing/api.py:869] failed "
    "(exitcode: 1) local_rank: 2 (pid: 412333) of binary: /opt/conda/bin/python\n"
)


def test_sibling_ranks_holding_what_the_failing_one_holds_are_the_jobs_own(
    tmp_path: Path,
) -> None:
    report = diagnose_text(tmp_path, _OOM.format(a="11.92"))
    assert "gpu.contention" not in critical_ids(report)
    assert ranked_without_critical(tmp_path, _OOM.format(a="11.92"))[:1] == ["gpu.oom"]


def test_a_process_holding_far_more_beside_them_is_contention(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _OOM.format(a="30.20"))
    assert critical_ids(report)[:1] == ["gpu.contention"]
    assert "PID 412331 holds 30.2 GiB" in report.findings[0].summary


def test_the_reporter_saying_the_listed_processes_are_theirs_is_no_contention(
    tmp_path: Path,
) -> None:
    said = (
        "All four tasks die in model.to('cuda') with CUDA out of memory; the message lists three "
        "other processes with around 11 GB each besides this process. nvidia-smi shows all four "
        "python processes on GPU 0 and they are all mine (the PIDs match my four tasks).\n"
    )
    report = diagnose_text(tmp_path, said)
    assert "gpu.contention" not in critical_ids(report)
    assert critical_ids(report)[:1] == ["gpu.oom"]


_OWN = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.02 GiB. GPU 1 has a total "
    "capacity of 47.53 GiB of which 634.12 MiB is free. Including non-PyTorch memory, this "
    "process has 46.90 GiB memory in use. Of the allocated memory 44.71 GiB is allocated by "
    "PyTorch, and 1.67 GiB is reserved by PyTorch but unallocated.\n"
)


def test_others_programs_denied_in_chinese_leave_the_jobs_own_oom(tmp_path: Path) -> None:
    # "nvidia-smi shows only my own two python processes on both cards, no one else's programs"
    denied = "nvidia-smi 看了，两张卡上只有我自己的两个 python 进程，没有别人的程序。\n"
    assert critical_ids(diagnose_text(tmp_path, denied + _OWN)) == ["gpu.oom"]
    # a senior's notebook said to hold the card is someone else's
    held = "nvidia-smi 看了，第二张卡上有师兄的 jupyter 进程占了 30G。\n"
    assert critical_ids(diagnose_text(tmp_path, held + _OWN)) == ["gpu.contention"]


def test_a_process_of_another_user_said_to_hold_the_gpu_is_contention(tmp_path: Path) -> None:
    oom = (
        "Workers 0 and 1 fail in DDP construction with CUDA out of memory; the message lists "
        "PID 77012 with about 61 GiB in use. {whose}\n"
    )
    other = "ps says it is a python process of another user, a vLLM server started days ago."
    assert critical_ids(diagnose_text(tmp_path, oom.format(whose=other))) == ["gpu.contention"]
    mine = "ps says it is my own process of the same job, started with the others."
    assert critical_ids(diagnose_text(tmp_path, oom.format(whose=mine))) == ["gpu.oom"]
