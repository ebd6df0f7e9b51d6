"""A hang the reporter places inside the process group's creation is the rendezvous's; one
they place after it is not.

``init_process_group`` is where the ranks meet at the c10d store: a job that waits there
has a rank that never arrived (a world size larger than the processes started, a stray
NODE_RANK) or a store it cannot reach. launch.rendezvous reads that from the reporter's
words (a warning, low confidence). A sentence that says the initialisation went through
and something later hangs names no such wait. Each case runs the whole pipeline.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_text

_REPORT = (
    "Title: example hangs with --nproc_per_node=2 on an 8-GPU machine\n\n"
    "I run `torchrun --nproc_per_node=2 examples/train.py` on one node with 8 GPUs.\n"
    "{said}\n"
    "No error is printed, nothing happens for an hour.\n"
)


def test_a_hang_inside_init_process_group_is_the_rendezvous(tmp_path: Path) -> None:
    said = "The script hangs at torch.distributed.init_process_group(world_size=8, rank=rank)."
    report = diagnose_text(tmp_path, _REPORT.format(said=said))
    found = [(f.id, f.severity.value, f.confidence.value) for f in report.findings]
    assert found == [("launch.rendezvous", "warning", "low")]
    assert [c.text for c in report.findings[0].evidence] == [said]


def test_a_hang_after_init_process_group_returned_is_not(tmp_path: Path) -> None:
    said = "init_process_group returns fine, then the first all_reduce hangs."
    report = diagnose_text(tmp_path, _REPORT.format(said=said))
    assert [f.id for f in report.findings] == []
    assert report.hypotheses[0].symptom.startswith("the job hangs")
    assert report.top(1) == ["nccl.p2p"]


def test_the_process_group_named_in_another_sentence_of_the_paragraph_is_not(
    tmp_path: Path,
) -> None:
    """One line holds a paragraph: the process group's timeout set in one sentence, the hang
    two hours into training in another, is no hang inside its creation."""
    said = (
        "We use DDP with the init_process_group timeout set to 600 s. Around step 3,000 the job "
        "dies with watchdog timeouts, right before the hang rank 4 recompiles its forward."
    )
    report = diagnose_text(tmp_path, _REPORT.format(said=said))
    assert "launch.rendezvous" not in [f.id for f in report.findings]
