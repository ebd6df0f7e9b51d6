"""A job that waits and nothing comes is a hang in the reporter's words ("keeps waiting", "has no
response", "the nodes don't finish connecting"); a job that cannot be trained is a failure."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import diagnose_text

_HANG = "the job hangs without an error (the reporter's words)"


@pytest.mark.parametrize(
    "said",
    [
        "Training on 4 GPUs prints no error, but the process keeps waiting.\n",
        "DDP on two nodes: both ranks are always waiting after the first batch.\n",
        "The all_reduce waits forever on 8 GPUs.\n",
        "The all_reduce test on 6 GPUs stops and has no response.\n",
        "With two nodes the ranks don't finish connecting.\n",
    ],
)
def test_waiting_with_no_end_is_a_hang(tmp_path: Path, said: str) -> None:
    report = diagnose_text(tmp_path, said)
    assert report.hypotheses
    assert report.hypotheses[0].symptom == _HANG


@pytest.mark.parametrize(
    "said",
    [
        "I waited for the dataset to download, then training on 4 GPUs ran fine.\n",
        "Waiting for the other ranks took 2 seconds and training on 4 GPUs went on.\n",
    ],
)
def test_a_wait_that_ended_is_no_hang(tmp_path: Path, said: str) -> None:
    report = diagnose_text(tmp_path, said)
    assert all(h.symptom != _HANG for h in report.hypotheses)


_FAILS = "a rank failed with an error no rule explains"


@pytest.mark.parametrize(
    "said",
    [
        "When one copy trains on GPU 0, the other one cannot be trained on GPU 1.\n",
        "I ran it again on 2 GPUs and it still didn't run.\n",
    ],
)
def test_a_job_that_cannot_be_run_is_a_failure(tmp_path: Path, said: str) -> None:
    report = diagnose_text(tmp_path, said)
    assert report.hypotheses
    assert report.hypotheses[0].symptom == _FAILS


def test_no_answer_from_people_is_no_hang(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path, "I asked on the forum about my 4-GPU training and we have no response yet.\n"
    )
    assert all(h.symptom != _HANG for h in report.hypotheses)
