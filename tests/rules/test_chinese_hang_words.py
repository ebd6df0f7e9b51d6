"""The words of a job that sits there, in Chinese as reporters write them: 卡住 (stuck), 卡死
(stuck dead), 卡在 (stuck at), 挂起 (hung). The 卡 of a card (显卡 GPU, 网卡 NIC) is none."""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.pipeline import facts_of
from nccl_doctor.signs.common import HANG_WORDS


def _told(tmp_path: Path, text: str) -> bool:
    path = tmp_path / "report.txt"
    path.write_text(text + "\n", encoding="utf-8")
    return bool(facts_of(read_paths([str(path)])).told(HANG_WORDS))


@pytest.mark.parametrize(
    "said",
    [
        "双机任务 init 之后，第一个 allreduce 一直卡住，10 分钟后 watchdog 超时。",
        "两个 pod 跨节点训练，NCCL 显示 nNodes 1，然后卡死",
        "程序卡在 dist.barrier() 不动了",
        "进程挂起，没有任何报错",
    ],
)
def test_chinese_words_of_a_stalled_job_are_a_hang(tmp_path: Path, said: str) -> None:
    assert _told(tmp_path, said)


@pytest.mark.parametrize(
    "said",
    [
        "第二张显卡在跑别的任务，显存占了 30GB。",
        "这台机器的网卡在 bond0 上，速率 100G。",
        "两张卡在训练，另外两张空闲。",
        "训练报错 NCCL error，然后退出了。",
    ],
)
def test_a_card_or_a_crash_is_no_hang(tmp_path: Path, said: str) -> None:
    assert not _told(tmp_path, said)


@pytest.mark.parametrize(
    ("said", "hang"),
    [
        ("The job is stuck at the first all_reduce.", True),
        ("Training got stuck with no output after epoch 3.", True),
        # held to a release, not a job that sits there
        ("For now we're stuck on an old torch.", False),
        ("We are stuck with the older driver until the admins upgrade.", False),
    ],
)
def test_stuck_on_an_old_release_is_no_hang(tmp_path: Path, said: str, hang: bool) -> None:
    assert _told(tmp_path, said) is hang
