"""Completion status 12 on RoCE with no NCCL_IB_GID_INDEX: a GID the peer cannot route fails
the job's first transfer, so it is the reading where the job never ran; a job said to have run
for hours, or thousands of steps, had routed its traffic, and the transport's failure stands."""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.pipeline import facts_of
from nccl_doctor.signs.common import RAN_A_WHILE
from tests.helpers import critical_ids, diagnose_text

_LOG = (
    "{said}\n"
    "node-117:2203195:2204118 [3] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE ; "
    "OOB eth0:10.128.19.62<0>\n"
    "node-117:2203195:2204118 [3] NCCL WARN NET/IB : Got completion from peer "
    "10.128.18.41<56231> with status=12 opcode=0 len=0 vendor err 129 (Send) localGid "
    "::ffff:10.128.19.62 remoteGids::ffff:10.128.18.41\n"
    "node-117:2203195:2204118 [3] NCCL INFO transport/net.cc:1298 -> 6\n"
    "ncclRemoteError: A call failed possibly due to a network error or a remote process "
    "exiting prematurely.\n"
)


def test_status_12_at_the_first_step_on_roce_is_the_gid(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _LOG.format(said="The first step fails on 2 RoCE nodes:"))
    assert critical_ids(report)[0] == "net.ib_config"


def test_status_12_after_hours_of_training_is_the_transport(tmp_path: Path) -> None:
    said = "Healthy for ~9h, then after 9 hours of training on 32 RoCE nodes:"
    report = diagnose_text(tmp_path, _LOG.format(said=said))
    assert "net.ib_config" not in critical_ids(report)
    assert critical_ids(report)[0] == "net.ib_transport"


@pytest.mark.parametrize(
    ("said", "ran"),
    [
        ("It crashed after 9 hours of training.", True),
        ("healthy for ~9h, then this", True),
        ("It dies after 20,000 steps every time.", True),
        ("after about 3 days the job stops", True),
        ("It fails 2 hours ago on the first step.", False),
        ("It fails after 20 steps.", False),
        ("We waited for 30 minutes at init.", False),
    ],
)
def test_the_words_of_a_job_that_ran_a_while(tmp_path: Path, said: str, ran: bool) -> None:
    path = tmp_path / "said.txt"
    path.write_text(said + "\n")
    assert bool(facts_of(read_paths([str(path)])).told(RAN_A_WHILE)) is ran
