"""Another collective runs on the same ranks while this one stalls: the ranks met (store,
bootstrap) and connected, so what stalls is the collective's own path (its algorithm, its
transport, an NCCL bug under it), not how the ranks find each other."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import cue_says, diagnose_text

_AFTER = "Two nodes of 8 GPUs each, NCCL 2.21.5. {}\n"


@pytest.mark.parametrize(
    "said",
    [
        (
            "Running all_reduce_perf on both nodes the bandwidth is ~95 GB/s, but it hangs in "
            "alltoall_perf."
        ),
        "broadcast works fine while all_gather hangs forever.",
        "all_to_all hangs, but allreduce works.",
    ],
)
def test_another_collective_that_runs_rules_out_how_the_ranks_meet(
    tmp_path: Path, said: str
) -> None:
    assert cue_says("other_collective_runs", said)
    report = diagnose_text(tmp_path, _AFTER.format(said))
    ids = [h.id for h in report.hypotheses]
    assert ids[0] == "nccl.internal"
    assert "net.socket_interface" not in ids[:3]
    assert "launch.rendezvous" not in ids


@pytest.mark.parametrize(
    "said",
    [
        "allreduce does not work, and all_gather hangs too.",
        "allreduce hangs and broadcast fails.",
        "all_reduce_perf works on one node but hangs on two nodes.",
        "all_reduce_perf works but all_gather_perf does not work either.",
    ],
)
def test_no_collective_said_to_run_keeps_the_meeting_causes(tmp_path: Path, said: str) -> None:
    assert not cue_says("other_collective_runs", said)
    report = diagnose_text(tmp_path, _AFTER.format(said))
    assert report.hypotheses[0].id != "nccl.internal"
