"""gpu.contention from the reporter's words: an OOM, and a process that is not the job's said
to hold GPU memory (no process list to read), firing and silent."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import critical_ids, diagnose_text

_OOM = (
    "With accelerate on my two RTX 3090s, rank 1 always dies with CUDA out of memory at the "
    "first step while rank 0 has plenty of headroom. {said}\n"
)


def test_an_idle_service_holding_memory_told_beside_an_oom_is_contention(tmp_path: Path) -> None:
    said = (
        "When nothing of mine is running, nvidia-smi shows a python process using about 11 GB "
        "on GPU 1: a ComfyUI service I set up for my partner."
    )
    report = diagnose_text(tmp_path, _OOM.format(said=said))
    assert critical_ids(report)[:1] == ["gpu.contention"]
    assert report.findings[0].confidence.value == "medium"


def test_a_labmates_process_told_in_chinese_is_contention(tmp_path: Path) -> None:
    said = (
        "我还没启动训练的时候 2 号卡就已经用了 9 个多 G，进程列表里有一个 python 进程，用户不是我。"
    )
    assert critical_ids(diagnose_text(tmp_path, _OOM.format(said=said)))[:1] == ["gpu.contention"]


def test_the_jobs_own_other_rank_told_is_no_contention(tmp_path: Path) -> None:
    said = "The other process (rank 0) uses about 11 GB on GPU 0, as expected."
    assert "gpu.contention" not in critical_ids(diagnose_text(tmp_path, _OOM.format(said=said)))


def test_a_process_list_read_decides_over_the_words(tmp_path: Path) -> None:
    said = "Another process uses about 11 GB on GPU 1, I think."
    table = (
        "+-----------------------------------------------------------------------------+\n"
        "| Processes:                                                                  |\n"
        "|  GPU   GI   CI        PID   Type   Process name                  GPU Memory |\n"
        "|        ID   ID                                                   Usage      |\n"
        "|=============================================================================|\n"
        "|  No running processes found                                                 |\n"
        "+-----------------------------------------------------------------------------+\n"
    )
    report = diagnose_text(tmp_path, _OOM.format(said=said) + table)
    assert "gpu.contention" not in critical_ids(report)
