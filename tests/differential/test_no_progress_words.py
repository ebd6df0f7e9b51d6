"""A hang said as nothing more coming: no output, no progress, a counter that stays put.

Reporters often never write "hang": they say the job "does nothing", that "nothing else is
printed", that it "doesn't proceed past the first batch" or "stays at 0%". Each is the hang
symptom class, read through the whole pipeline; a condition, a decision or a measure said in
the same words is not ("if nothing happens, check ...", "we will not proceed with the
upgrade", "the accuracy stays at 90%").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import critical_ids, diagnose_text

HANG = "the job hangs without an error (the reporter's words)"


@pytest.mark.parametrize(
    "said",
    [
        "I launch the script on 2 GPUs and nothing happens.",
        "After printing the model summary nothing else is printed.",
        'The log stops at "Initializing distributed" and nothing more comes.',
        "The training doesn't proceed past the first batch.",
        "It does not move on after the dataloader is built.",
        "The progress bar stays at 0% forever.",
        "No further output after init_process_group with 8 GPUs.",
        "The job never starts training with 4 GPUs.",
        "程序运行后没有任何输出，也不报错",
        "多卡训练时一直不动，没有报错",
    ],
)
def test_nothing_more_coming_is_a_hang(tmp_path: Path, said: str) -> None:
    report = diagnose_text(tmp_path, said + "\n")
    assert [h.symptom for h in report.hypotheses][:1] == [HANG]
    assert critical_ids(report) == []


@pytest.mark.parametrize(
    "said",
    [
        "If nothing happens, check the firewall.",
        "I set NCCL_P2P_DISABLE=1 and then nothing changed.",
        "Nothing happens to the loss when I change the learning rate.",
        "No further output is needed, the run finished fine.",
        "The loss does not continue to drop after epoch 3.",
        "The accuracy stays at 90% after the fix.",
        "We do not progress to multi-node until this works.",
        "I will not proceed with the upgrade.",
        "没有报错，训练正常结束",
    ],
)
def test_the_same_words_said_of_something_else_are_no_hang(tmp_path: Path, said: str) -> None:
    report = diagnose_text(tmp_path, said + "\n")
    assert HANG not in [h.symptom for h in report.hypotheses]
