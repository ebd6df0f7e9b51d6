"""A watchdog timeout at the default group's first collective: nothing ever crossed it."""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.job import first_collective_timeout
from nccl_doctor.pipeline import facts_of
from tests.helpers import diagnose_text


def _timeout(seq: int, prefix: str = "[Rank 1]") -> str:
    return (
        f"[rank1]:[E1204 10:00:00.000000 812 ProcessGroupNCCL.cpp:632] {prefix} Watchdog caught "
        f"collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=_ALLGATHER_BASE, "
        "NumelIn=1048576, NumelOut=2097152, Timeout(ms)=600000) ran for 600120 milliseconds "
        "before timing out.\n"
    )


@pytest.mark.parametrize(
    ("text", "first"),
    [
        (_timeout(2), True),
        (_timeout(1, "[PG ID 0 PG GUID 0(default_pg) Rank 1]"), True),
        (_timeout(1, "[PG ID 0 PG GUID 0 Rank 1]"), True),
        (_timeout(1, "[PG 0 Rank 1]"), True),
        # a subgroup numbers its collectives from 1 again, mid-training
        (_timeout(1, "[PG ID 3 PG GUID 7 Rank 1]"), False),
        (_timeout(57), False),
        # the watchdog counted completed work: the ranks had connected
        (
            _timeout(2)
            + "[rank1]:[E1204 10:00:00.100000 812 ProcessGroupNCCL.cpp:681] [Rank 1] Timeout at "
            "NCCL work: 2, last enqueued NCCL work: 2, last completed NCCL work: 1.\n",
            False,
        ),
    ],
)
def test_a_timeout_at_the_first_collective_is_told_apart(
    tmp_path: Path, text: str, first: bool
) -> None:
    path = tmp_path / "rank1.log"
    path.write_text(text)
    facts = facts_of(read_paths([str(path)]))
    assert (first_collective_timeout(facts) is not None) is first


def test_the_first_collective_alone_leaves_the_cause_to_the_differential(
    tmp_path: Path,
) -> None:
    # nothing shows a rank elsewhere: the GPU path and the code are both ranked, no finding
    report = diagnose_text(tmp_path, _timeout(2))
    assert not [f for f in report.findings if f.id == "app.hang"]
    assert [h.id for h in report.hypotheses[:2]] == ["nccl.p2p", "app.hang"]
    report = diagnose_text(tmp_path, _timeout(57))
    assert report.findings[0].id == "app.hang"
    assert "first collective" not in report.findings[0].summary
    assert report.hypotheses[0].id != "nccl.p2p"


def test_a_rank_busy_for_most_of_the_timeout_keeps_the_hang_a_finding(tmp_path: Path) -> None:
    # a progress bar ran 9 of the 10 minutes before the timeout (tqdm's carriage returns run
    # it into the watchdog's line): a rank was at its own work, not connecting
    busy = (
        "Running tokenizer on dataset:   9%|###8      | 280000/2969526 [09:05<4:48:08, 155.57 ex/s]"
    )
    report = diagnose_text(tmp_path, busy + _timeout(2))
    hang = report.findings[0]
    assert hang.id == "app.hang"
    assert hang.confidence.value == "medium"
    # the bar explains the wait: no doubt left about ranks that never connected
    assert "a progress bar had run 9:05 when the others timed out" in hang.summary
    assert "none has completed" not in hang.summary
    assert hang.fix[0].startswith("Do the long single-rank work")


def test_across_nodes_the_first_collective_weighs_the_network(tmp_path: Path) -> None:
    said = "DDP on 2 nodes with 8 GPUs each: the first step never finishes.\n"
    report = diagnose_text(tmp_path, said + _timeout(1))
    ranked = {h.id: h for h in report.hypotheses}
    assert "net.socket_interface" in ranked or "net.unreachable" in ranked
    network = ranked.get("net.socket_interface") or ranked["net.unreachable"]
    assert any("may never have connected" in reason for reason in network.for_)
