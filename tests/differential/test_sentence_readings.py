"""What a sentence names lets it in: an NCCL result by its enum name, a CUDA error by its
number, a command or a setting it opens with.

A report's sentence often carries the one machine word that tells the class ("NCCL refuses
with ncclInvalidUsage", "every CUDA call returns error 803"), or opens with what it ran
("all_reduce_perf -g 8 dies ...", "NCCL_SOCKET_IFNAME=eth0 worked on the old cluster, but
..."): each is read as the person's words now. A command or an environment line alone stays
machine output, a number that is no error (0) or is denied opens nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.differential.symptoms import LABELS
from tests.helpers import critical_ids, diagnose_text, facts_text


@pytest.mark.parametrize(
    ("said", "cls", "first"),
    [
        ("NCCL refuses with ncclInvalidUsage at startup on 4 GPUs.", "nccl_invalid", None),
        ("NCCL refuses with ncclInvalidUsage at startup and the job fails.", "nccl_invalid", None),
        ("After an apt upgrade every CUDA call returns error 803.", "cuda_driver",
         "driver.version_mismatch"),
        ("All CUDA programs report 802 after the reboot of the H800 box.", "cuda_driver",
         "gpu.fabric_manager"),
        (("all_reduce_perf -g 8 dies with a Cuda failure during setup, but all_gather_perf "
          "runs to completion."), "failure", None),
        (("NCCL_SOCKET_IFNAME=eth0 worked on the old cluster, but on the new nodes every rank "
          "fails at init."), "failure", None),
        (("Rank 1 times out connecting to (10.128.0.5, 29500) and nc from the worker times out "
          "too."), "store_timeout", None),
        ("The new node gives half the busbw of the others.", "slow", None),
        ("Four nodes give no speedup at all over one node.", "slow", None),
        ("On the IB cluster we get the same throughput as our old 25GbE nodes.", "slow", None),
        ("Training on 16 GPUs doesn't scale past one node.", "slow", None),
        ("B 机器比另一台同配置的慢 30%。", "slow", None),
    ],
)  # fmt: skip
def test_a_sentence_that_names_it_opens_its_class(
    tmp_path: Path, said: str, cls: str, first: str | None
) -> None:
    report = diagnose_text(tmp_path, said + "\n")
    assert report.hypotheses[0].symptom == LABELS[cls]
    if first is not None:
        assert report.hypotheses[0].id == first
    assert critical_ids(report) == []


@pytest.mark.parametrize(
    "said",
    [
        "There was no ncclSystemError this time, the run finished.",
        "After the reinstall CUDA no longer returns error 803.",
        "nvidia-smi works and CUDA reports 0 errors on all 8 GPUs.",
        "mpirun -np 8 ./build/all_reduce_perf -b 8 -e 1G -f 2 -g 1",
        # what a program scales, a throughput that did not change
        "The scheduler doesn't scale the learning rate with the batch size.",
        "After the upgrade the run finished with the same throughput as before.",
    ],
)
def test_a_name_denied_or_a_command_alone_opens_no_class(tmp_path: Path, said: str) -> None:
    assert diagnose_text(tmp_path, said + "\n").hypotheses == ()


def test_a_command_or_an_environment_line_alone_stays_machine_output(tmp_path: Path) -> None:
    for line in (
        "mpirun -np 8 ./build/all_reduce_perf -b 8 -e 1G -f 2 -g 1",
        "NCCL_DEBUG=INFO NCCL_IB_DISABLE=1 python train.py --epochs 3",
    ):
        assert [s.prose for s in facts_text(tmp_path, line + "\n").lines] == [False]
    said = "all_reduce_perf -g 8 dies with a Cuda failure during setup, but the rest runs."
    assert [s.prose for s in facts_text(tmp_path, said + "\n").lines] == [True]


def test_a_quoted_message_denied_or_over_opens_no_class(tmp_path: Path) -> None:
    """The C library's texts are looked up in a sentence with no error word (3c8565b); the
    lookup honours the sentence's denial and its "it is over", as the reporter's other words
    do."""
    said = "Too many open files with 8 dataloader workers per rank."
    lead = diagnose_text(tmp_path, said + "\n").hypotheses[0]
    assert lead.symptom == LABELS["host_limit"]
    for over in (
        "We no longer see too many open files after raising ulimit -n.",
        "The 'No route to host' error is gone after opening the firewall.",
    ):
        assert diagnose_text(tmp_path, over + "\n").hypotheses == ()
