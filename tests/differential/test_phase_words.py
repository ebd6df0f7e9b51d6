"""When the job hangs, and across how many nodes, in the reporter's own paraphrases.

The phase decides between causes: a hang before any training step is set-up (the rendezvous
across nodes, NCCL's bootstrap, the GPU path), one after hours of training is the job's own
or the path it uses now; NCCL's own communicator set-up comes after the store's rendezvous, so
a hang there across nodes is its bootstrap sockets', not the rendezvous'. "After 30 minutes"
is as often the process group's timeout itself as a run that went on. Every diagnosis case
runs the whole pipeline.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import cue_says, diagnose_text


@pytest.mark.parametrize(
    "said",
    [
        "It is stuck at the very beginning, before the first step.",
        "Training never gets past initialization.",
        "It freezes right after loading the model, before training starts.",
        "It hangs when creating the process group.",
        "Stuck at model = DDP(model) forever.",
        "The first all_reduce never returns.",
    ],
)
def test_a_hang_before_training_is_said_in_many_ways(said: str) -> None:
    assert cue_says("startup_hang", said)


@pytest.mark.parametrize(
    "said",
    [
        "Training hangs after about 2 hours.",
        "It freezes randomly in the middle of an epoch.",
        "It runs for a while and then hangs.",
        "hangs after 3 days of training",
    ],
)
def test_a_hang_after_training_ran_is_said_in_many_ways(said: str) -> None:
    assert cue_says("ran_before", said)


@pytest.mark.parametrize(
    "said",
    [
        # the default timeout's length, not a run that went on
        "Tokenization fails after 30 minutes on big datasets",
        "It hangs at start-up for 2 minutes and then continues",
    ],
)
def test_a_timeout_length_is_no_late_hang(said: str) -> None:
    assert not cue_says("ran_before", said)


@pytest.mark.parametrize(
    ("cue", "said"),
    [
        ("multi_node", "multi-machine training hangs"),
        ("multi_node", "across two servers it fails"),
        ("multi_node", "works on a single node but hangs on two"),
        ("one_node_only", "It only fails on node 3."),
        ("one_node_only", "Only one server has this problem."),
        ("rank_branch", "one rank runs out of data before the others"),
    ],
)
def test_the_jobs_scale_and_its_ranks_in_other_words(cue: str, said: str) -> None:
    assert cue_says(cue, said)


@pytest.mark.parametrize(
    ("said", "busy"),
    [
        ("Rank 0's progress bar is still in the validation loop at that point.", True),
        ("rank 0 was still running inference on the test set when the others timed out", True),
        ("Rank 0 is still alive but prints nothing.", False),
        # sampling, decoding or scoring on its own (a generative model's evaluation)
        ("torchrun kills rank 0 while it is still in the middle of sampling.", True),
        ("rank 0 was still decoding the test set", True),
        ("Rank 0 finished sampling long before the others reached the barrier.", False),
    ],
)
def test_the_rank_the_others_wait_for_still_at_its_own_work(said: str, busy: bool) -> None:
    assert cue_says("origin_busy", said) is busy


def test_an_nccl_init_hang_across_nodes_is_the_bootstrap_not_the_rendezvous(
    tmp_path: Path,
) -> None:
    nccl = "Two-node training with TP=2 freezes at NCCL init; single node works."
    store = "Two-node training hangs at startup; single node works."
    assert cue_says("nccl_init_hang", nccl)
    assert not cue_says("startup_hang", nccl)
    assert diagnose_text(tmp_path, nccl).top(1) == ["net.socket_interface"]
    assert diagnose_text(tmp_path, store).top(1) == ["launch.rendezvous"]


@pytest.mark.parametrize(
    ("said", "init"),
    [
        ("The c10d rendezvous completes, but NCCL init then hangs until the timeout.", True),
        ("NCCL's communicator initialization never completes on the second node.", True),
        ("NCCL init works; the first allreduce hangs later.", False),
        ("The NCCL init log looks fine.", False),
    ],
)
def test_nccl_init_as_the_subject_that_hangs(said: str, init: bool) -> None:
    assert cue_says("nccl_init_hang", said) is init


def test_one_rank_sampling_while_the_others_wait_at_a_barrier_is_its_own_slow_work(
    tmp_path: Path,
) -> None:
    said = (
        "DDP job on 4 GPUs: at the end of each epoch rank 0 alone samples 50k images for FID, "
        "then every rank calls dist.barrier(). 30 minutes later ranks 1-3 die with the watchdog "
        "timeout (OpType=BARRIER, Timeout(ms)=1800000) and torchrun kills rank 0 while it is "
        "still in the middle of sampling.\n"
    )
    assert diagnose_text(tmp_path, said).top(1) == ["app.hang"]
