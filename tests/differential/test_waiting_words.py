"""A job that waits and nothing comes is a hang in the reporter's words ("keeps waiting", "has no
response", "the nodes don't finish connecting", "the training stops", "it just sits there"); a
job that cannot be trained, or where "things break", is a failure; "a very long time for each
epoch" is slow."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import diagnose_text

_HANG = "the job hangs without an error (the reporter's words)"
_FAILS = "a rank failed with an error the catalogue does not classify"


@pytest.mark.parametrize(
    ("said", "symptom"),
    [
        ("Training on 4 GPUs prints no error, but the process keeps waiting.\n", _HANG),
        ("DDP on two nodes: both ranks are always waiting after the first batch.\n", _HANG),
        ("The all_reduce waits forever on 8 GPUs.\n", _HANG),
        ("The all_reduce test on 6 GPUs stops and has no response.\n", _HANG),
        ("With two nodes the ranks don't finish connecting.\n", _HANG),
        ("After 12 hours the GID index changed, which caused the training to stop.\n", _HANG),
        ("On 3 GPUs the training stops randomly after an hour.\n", _HANG),
        ("With strategy='ddp' on two A6000s, when I try to train it just stops.\n", _HANG),
        ("The two-node job starts both ranks and then just sits there.\n", _HANG),
        ("With 2 GPUs, DDP just stops working after the upgrade.\n", _FAILS),
        ("When one copy trains on GPU 0, the other one cannot be trained on GPU 1.\n", _FAILS),
        ("I ran it again on 2 GPUs and it still didn't run.\n", _FAILS),
        ("When Ray sets NCCL_SOCKET_IFNAME on our nodes, things break.\n", _FAILS),
        ("I could not add the 10th GPU of my node to the distributed strategy.\n", _FAILS),
        (
            "With 8 K80s I got a very long time for computing each epoch.\n",
            "the job or a benchmark is slow, with no error (the reporter's words)",
        ),
    ],
)
def test_the_words_open_their_symptom(tmp_path: Path, said: str, symptom: str) -> None:
    report = diagnose_text(tmp_path, said)
    assert report.hypotheses
    assert report.hypotheses[0].symptom == symptom


@pytest.mark.parametrize(
    "said",
    [
        "I waited for the dataset to download, then training on 4 GPUs ran fine.\n",
        "Waiting for the other ranks took 2 seconds and training on 4 GPUs went on.\n",
        # people's silence, not the job's
        "I asked on the forum about my 4-GPU training and we have no response yet.\n",
    ],
)
def test_a_wait_that_ended_is_no_hang(tmp_path: Path, said: str) -> None:
    report = diagnose_text(tmp_path, said)
    assert all(h.symptom != _HANG for h in report.hypotheses)


@pytest.mark.parametrize(
    "said",
    [
        # a loop's break, a GPU that was added, a long time that is no complaint
        "In the loop we break when the 4 GPUs have finished their epoch.\n",
        "I could add the 10th GPU of my node after updating the driver.\n",
        # the reporter stopping the run, not the run stopping
        "I stopped the training on 4 GPUs after 3 epochs; the loss was fine.\n",
        "Our 8-GPU training has run for a long time without trouble.\n",
    ],
)
def test_words_near_a_failure_are_none(tmp_path: Path, said: str) -> None:
    assert not diagnose_text(tmp_path, said).hypotheses


_CUDA_DRIVER = "the CUDA driver or runtime could not start (versions, initialisation)"


@pytest.mark.parametrize(
    "said",
    [
        "Inside the container nvidia-smi works, but torch.cuda.is_available() returns False.\n",
        "Title: can't use cuda in container (docker 19.03)\n",
        "After the driver update CUDA is not available on the node any more.\n",
    ],
)
def test_cuda_unusable_in_words_is_the_driver_class(tmp_path: Path, said: str) -> None:
    report = diagnose_text(tmp_path, said)
    assert report.hypotheses
    assert report.hypotheses[0].symptom == _CUDA_DRIVER
    assert {h.id for h in report.hypotheses[:3]} & {"driver.container", "driver.cuda_mismatch"}


def test_cuda_available_in_words_opens_no_driver_class(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        "On both nodes torch.cuda.is_available() returns True, but the DDP job hangs.\n",
    )
    assert report.hypotheses
    assert report.hypotheses[0].symptom == _HANG
