"""A flight-recorder dump is no failure, and a single rank has no peer to blame.

PyTorch logs ``ProcessGroupNCCL preparing to dump debug info`` at ERROR level
whoever asked for the dump: the watchdog at a timeout, a peer's signal, a
person or ``nccl-doctor run``'s pre-mortem through the debug pipe while the job
still waits. On the H200 (tests/fixtures/captured/premortem-ras-h200) each
pre-mortem's own dump request printed one, and the diagnosis of the run folder
so far named it the job's first failure and ranked the causes of a crash.
Every case runs the whole pipeline on real lines of that capture.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.differential.context import context_of
from nccl_doctor.differential.shifts import shifted
from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.pipeline import diagnose_paths, facts_of
from nccl_doctor.report import Verdict
from tests.helpers import diagnose_text

#: The job's own line, then the dump its pre-mortem asked for (torch 2.11, H200).
DUMPED = (
    "rank 0 warm-up done; queueing the long kernel\n"
    "[rank0]:[E1203 15:47:05.606989992 ProcessGroupNCCL.cpp:1628] [PG ID 0 PG GUID "
    "0(default_pg) Rank 0] ProcessGroupNCCL preparing to dump debug info. Include stack "
    "trace: 1, only active collectives: 0\n"
)
#: The watchdog's timeout a minute later, and the dump it signals.
TIMED_OUT = (
    "[rank0]:[E1203 15:48:00.205390544 ProcessGroupNCCL.cpp:689] [Rank 0] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=1048576, "
    "NumelOut=1048576, Timeout(ms)=60000) ran for 60017 milliseconds before timing out.\n"
    "[rank0]:[E1203 15:48:00.628102204 ProcessGroupNCCL.cpp:1914] [PG ID 0 PG GUID "
    "0(default_pg) Rank 0] Received a dump signal due to a collective timeout from this local "
    "rank and we will try our best to dump the debug info. Last enqueued NCCL work: 2, last "
    "completed NCCL work: 1.\n"
)
CAPTURED = Path(__file__).parents[1] / "fixtures" / "captured"
STALL = "the job stalls with no error: PyTorch dumped its flight recorder"


def test_a_dump_alone_is_a_stall_with_the_hang_causes_not_a_failure(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, DUMPED)
    assert report.first_failure is None  # was: the dump line, "First failure: rank 0 ..."
    assert report.verdict is Verdict.INCONCLUSIVE  # a stall is not healthy
    assert not [f for f in report.findings if f.severity.value == "critical"]
    assert report.hypotheses[0].symptom.startswith(STALL)
    assert report.hypotheses[0].cite.line == 2
    # the silent hang's causes, not a crash's (was: launch.rank_crash 45%)
    assert report.hypotheses[0].id == "nccl.p2p"
    assert "launch.rank_crash" not in [h.id for h in report.hypotheses]


def test_the_dump_outranks_the_reporters_words_but_not_a_failure(tmp_path: Path) -> None:
    said = diagnose_text(tmp_path, "The training is very slow after a few steps.\n\n" + DUMPED)
    assert said.hypotheses[0].symptom.startswith(STALL)  # not "the job is slow (words)"
    timed_out = diagnose_text(tmp_path, DUMPED + TIMED_OUT)
    assert timed_out.first_failure is not None
    assert timed_out.first_failure.cite.line == 3  # the watchdog's timeout, not the dump
    assert [f.id for f in timed_out.findings][:1] == ["app.hang"]


def test_a_dump_signal_from_a_peer_still_says_a_collective_timed_out(tmp_path: Path) -> None:
    signal = (
        "[rank1]:[E703 15:37:17.178677976 ProcessGroupNCCL.cpp:1914] [PG ID 0 PG GUID "
        "0(default_pg) Rank 1] Received a dump signal due to a collective timeout from  rank 7 "
        "and we will try our best to dump the debug info. Last enqueued NCCL work: 56118, "
        "last completed NCCL work: 56118.\n"
    )
    report = diagnose_text(tmp_path, signal + DUMPED.replace("rank0", "rank1"))
    assert report.first_failure is not None
    assert report.first_failure.cite.line == 1
    assert report.verdict is not Verdict.HEALTHY


SINGLE = "torchrun --nproc-per-node 1 train.py\nThe job hangs at the first all_reduce.\n"
PAIR = "torchrun --nproc-per-node 2 train.py\nThe job hangs at the first all_reduce.\n"


def _ids(text: str, tmp_path: Path) -> list[str]:
    return [h.id for h in diagnose_text(tmp_path, text).hypotheses]


def _against(text: str, tmp_path: Path, rule_id: str) -> list[str]:
    path = tmp_path / "report.txt"
    path.write_text(text)
    ctx = context_of(facts_of(read_paths([str(path)])))
    _, _, against = shifted(ctx, rule_id, "hang")
    return against


def _single_rank_reasons(text: str, tmp_path: Path, rule_id: str) -> list[str]:
    return [a for a in _against(text, tmp_path, rule_id) if "single rank" in a]


@pytest.mark.parametrize("text", [SINGLE, SINGLE.replace("1 train", "=1 train")])
def test_one_rank_has_no_transport_to_a_peer(text: str, tmp_path: Path) -> None:
    ids = _ids(text, tmp_path)
    assert ids[0] == "app.hang"  # was nccl.p2p, the hang's first prior
    assert "nccl.p2p" not in ids
    for rule_id in ("app.collective_mismatch", "nccl.duplicate_gpu", "launch.rank_crash"):
        assert _single_rank_reasons(text, tmp_path, rule_id), rule_id
    # a world of one has one local rank: P2P and SHM are weighed down once, for that fact
    for rule_id, path in (("nccl.p2p", "P2P"), ("nccl.shm", "SHM")):
        assert _against(text, tmp_path, rule_id) == [f"one rank per node: {path} is not used"]
    # NCCL's bootstrap still connects one rank to its root thread: sockets stay candidates
    assert "net.socket_interface" in ids
    for rule_id in ("net.socket_interface", "net.unreachable", "app.hang", "nccl.internal"):
        assert not _single_rank_reasons(text, tmp_path, rule_id), rule_id


@pytest.mark.parametrize("text", [PAIR, "The job hangs at the first all_reduce.\n"])
def test_two_ranks_or_an_unknown_world_keep_the_peer_causes(text: str, tmp_path: Path) -> None:
    assert _ids(text, tmp_path)[0] == "nccl.p2p"
    assert not _single_rank_reasons(text, tmp_path, "nccl.p2p")


def test_the_h200_watchdog_run_has_one_rank_on_one_host() -> None:
    """The real one-GPU watchdog job under nccl-doctor run: torchrun's summary names the host
    'localhost', the stacks 'vm'. One machine, one rank: no alternative may blame a peer
    or the network between nodes (was: launch.rank_crash 25%, 'the job spans several nodes')."""
    folder = CAPTURED / "premortem-ras-h200" / "premortem"
    facts = facts_of(read_paths([str(folder)]))
    ctx = context_of(facts)
    assert (ctx.world, ctx.nodes, ctx.multi_node) == (1, None, False)
    report = diagnose_paths([str(folder)])
    assert [f.id for f in report.findings] == ["app.hang"]
    assert report.hypotheses[0].id == "gpu.xid"
    assert "launch.rank_crash" not in [h.id for h in report.hypotheses]
    assert not any("several nodes" in why for h in report.hypotheses for why in h.for_)
