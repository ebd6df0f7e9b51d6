"""A stall that comes and goes at the same point of the same code ("sometimes the save works",
"at step 5000 it worked"): the ranks' code paths are the same each run, so a path that always
differs (a collective one rank never calls) weighs less than a rank-local step whose length
varies (rank 0's save to a busy file system). Said the other way, nothing moves."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import cue_says, diagnose_text

_SAVE = (
    "Only rank 0 calls torch.save to our NFS share after gathering the state dict, while the "
    "other ranks go on; then ranks 1-15 die with an ALLGATHER watchdog timeout. {said}\n"
)


@pytest.mark.parametrize(
    "said",
    [
        "Sometimes the save works.",
        "At step 5000 it worked, at step 10000 it died.",
        "It happens intermittently.",
    ],
)
def test_a_stall_that_comes_and_goes_is_the_slow_rank(tmp_path: Path, said: str) -> None:
    assert cue_says("intermittent", said)
    assert diagnose_text(tmp_path, _SAVE.format(said=said)).hypotheses[0].id == "app.hang"


@pytest.mark.parametrize(
    "said",
    ["It fails every time at the first save.", "It always works on one node."],
)
def test_a_stall_every_time_leaves_the_code_path(tmp_path: Path, said: str) -> None:
    assert not cue_says("intermittent", said)
    top = diagnose_text(tmp_path, _SAVE.format(said=said)).hypotheses[0].id
    assert top == "app.collective_mismatch"
