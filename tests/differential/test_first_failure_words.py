"""Words that name the first failure: the out-of-memory error by the names it goes by, and
one rank's own error before the others waited on it.

torch raises ``torch.OutOfMemoryError`` (``torch.cuda.OutOfMemoryError`` is its alias), the
driver API returns ``CUDA_ERROR_OUT_OF_MEMORY`` and the runtime ``cudaErrorMemoryAllocation``:
a reporter who quotes one of those names says the GPU ran out of memory. A rank that raised
its own exception or exited, and the others that then timed out or hung, is a peer that left:
its error is the cause and their timeouts follow (``launch.rank_crash``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.helpers import critical_ids, cue_says, diagnose_text

if TYPE_CHECKING:
    from pathlib import Path

OOM = "CUDA ran out of memory"


@pytest.mark.parametrize(
    "said",
    [
        (
            'FSDP on 8x A100 40GB: rank 3 raises torch.OutOfMemoryError "Tried to allocate 2.00 '
            'GiB" on step 1, then the rest hang in allgather.'
        ),
        "The loader thread dies with torch.cuda.OutOfMemoryError after the third epoch.",
        "cuMemAlloc returns CUDA_ERROR_OUT_OF_MEMORY on the second GPU.",
        "Every rank gets cudaErrorMemoryAllocation right after the model is built.",
    ],
)
def test_the_out_of_memory_error_by_its_names_opens_the_class(tmp_path: Path, said: str) -> None:
    report = diagnose_text(tmp_path, said + "\n")
    assert report.hypotheses[0].symptom == OOM
    assert report.top(1) == ["gpu.oom"]
    assert critical_ids(report) == []


def test_the_out_of_memory_error_said_gone_opens_nothing(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        "We no longer get torch.OutOfMemoryError since we enabled activation checkpointing.\n",
    )
    assert all(h.symptom != OOM for h in report.hypotheses)
    # a class name that only holds the words ("MyOutOfMemoryErrorHandler") is no error
    other = diagnose_text(tmp_path, "The MyOutOfMemoryErrorHandler class logs to wandb.\n")
    assert all(h.symptom != OOM for h in other.hypotheses)


FIRST = [
    (
        "8-GPU job: rank 5 prints a KeyError from my dataset's __getitem__ and exits, then 30 "
        "minutes later all the other ranks die with the NCCL watchdog timeout."
    ),
    (
        "At the end of every epoch rank 0 throws a shape error inside torchmetrics compute(), then "
        "ranks 1-7 sit in allreduce until the timeout."
    ),
    (
        "rank 2 raised a ValueError in the data loader; the remaining ranks hung in allreduce "
        "until the watchdog fired."
    ),
    (
        "One of the ranks on node gpu03 prints a Python traceback ending in a FileNotFoundError "
        "and exits. After that the other 31 ranks just sit there until the watchdog timeout."
    ),
]


@pytest.mark.parametrize("said", FIRST)
def test_one_ranks_own_error_before_the_others_wait_is_the_cause(tmp_path: Path, said: str) -> None:
    assert cue_says("rank_failed_first", said)
    report = diagnose_text(tmp_path, said + "\n")
    assert report.top(1) == ["launch.rank_crash"]
    assert critical_ids(report) == []


@pytest.mark.parametrize(
    "said",
    [
        # what rank 0 prints is no error; a slow rank is no failed one
        "rank 0 prints the loss every step, then the other ranks wait at the barrier.",
        "One of the ranks prints the loss every step, then the other ranks wait at the barrier.",
        "rank 0 is slow to save the checkpoint and the other ranks time out.",
        # no rank of its own failed first: every rank waits
        "All ranks hang in the first allreduce until the watchdog timeout.",
    ],
)
def test_a_rank_that_did_not_fail_first_is_no_crash(tmp_path: Path, said: str) -> None:
    assert not cue_says("rank_failed_first", said)
    report = diagnose_text(tmp_path, said + "\n")
    assert report.top(1) != ["launch.rank_crash"]


_WATCHDOG = (
    "[rank3]:[E ProcessGroupNCCL.cpp:1414] [Rank 3] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=4410, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, "
    "Timeout(ms)=1800000) ran for 1800021 milliseconds before timing out.\n"
)


@pytest.mark.parametrize(
    "said",
    [
        (
            "The earliest error is rank 17's FileNotFoundError, 30 minutes before the other ranks' "
            "NCCL timeouts."
        ),
        (
            "最早的一条报错是 rank 17 的 Python 异常 FileNotFoundError，"
            "比其他 rank 的 NCCL 超时早了 30 分钟。"
        ),
    ],
)
def test_the_reporters_timeline_beside_the_timeouts_is_the_rank_that_left(
    tmp_path: Path, said: str
) -> None:
    """The paste shows only the others' watchdog timeouts; the reporter tells which rank
    failed of its own first: that rank is the cause, the timeouts fold under it."""
    report = diagnose_text(tmp_path, said + "\n" + _WATCHDOG)
    assert critical_ids(report) == ["launch.rank_crash"]
    assert report.findings[0].summary.startswith(
        "The report says one rank failed with its own error first and the others then waited"
    )


def test_the_timeouts_with_no_rank_said_first_stay_the_hang(tmp_path: Path) -> None:
    said = "The earliest error is the NCCL timeout on every rank at the same time.\n"
    report = diagnose_text(tmp_path, said + _WATCHDOG)
    assert "launch.rank_crash" not in critical_ids(report)
