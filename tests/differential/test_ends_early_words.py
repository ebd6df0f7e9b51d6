"""A failure said as the job ending before its time, and slowness said as time that grows.

"Exits immediately", "the processes terminate unexpectedly", "torchrun quits after a few
seconds", "the run is killed as soon as all_reduce starts", "the workers go down", "blows
up", Chinese "qi bu lai" (won't get going) and "zhi jie tui chu" (exits at once): a failure
with no message the catalogue knows. "The iteration time doubles", "takes 10x longer",
Chinese "su du hen man": slow. Each through the whole pipeline, beside the same words said of
something else: a user's Ctrl-C, maintenance, a loss that diverges, a download.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import critical_ids, diagnose_text

FAILURE = "a rank failed with an error the catalogue does not classify"
SLOW = "the job or a benchmark is slow, with no error (the reporter's words)"
HANG = "the job hangs without an error (the reporter's words)"


def _lead(tmp_path: Path, said: str) -> str | None:
    report = diagnose_text(tmp_path, said + "\n")
    assert critical_ids(report) == []
    return report.hypotheses[0].symptom if report.hypotheses else None


@pytest.mark.parametrize(
    ("said", "symptom"),
    [
        ("DDP training blows up on 4 GPUs.", FAILURE),
        ("Training exits immediately when I use 2 nodes.", FAILURE),
        ("The processes terminate unexpectedly with 8 GPUs.", FAILURE),
        ("torchrun quits after a few seconds on node 2.", FAILURE),
        ("The run is killed as soon as all_reduce starts.", FAILURE),
        ("The workers go down one after another.", FAILURE),
        ("The training is interrupted after 2 epochs.", FAILURE),
        ("多机训练起不来", FAILURE),
        ("多卡训练会直接退出", FAILURE),
        ("The iteration time doubles with 16 GPUs.", SLOW),
        ("NCCL all_reduce takes 10x longer on the new cluster.", SLOW),
        ("多机训练速度很慢", SLOW),
        # the user stopped a job that hung: the hang, not a kill
        ("The process was killed by me with Ctrl-C after it hung.", HANG),
    ],
)
def test_ending_early_or_growing_slow_opens_its_class(
    tmp_path: Path, said: str, symptom: str
) -> None:
    assert _lead(tmp_path, said) == symptom


@pytest.mark.parametrize(
    "said",
    [
        "The nodes go down for maintenance every Sunday.",
        "The loss blows up after 1000 steps.",
        "Loading the model takes much longer to download than I expected.",
        "下载很慢，但是训练正常",
        "Training exits normally after the last epoch.",
        "I stopped the run; it was interrupted by me on purpose.",
    ],
)
def test_the_same_words_said_of_something_else_open_no_class(tmp_path: Path, said: str) -> None:
    assert _lead(tmp_path, said) is None
