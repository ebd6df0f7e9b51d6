"""A stall after the job's collectives had completed: its ranks had met at the store and
connected through NCCL's bootstrap, so the causes of meeting (the rendezvous, a launch of
two, the bootstrap's interface) weigh less; and one node named twice (NCCL RAS gives a
rank's host as its address, the job's other files by the node's name) is one node.

Before, the real H100 pre-mortem counted two nodes (``vm`` and ``192.0.2.2``) and offered
"the nodes talk from inside containers ... the job spans several nodes" and the bootstrap's
interface as alternatives to its one-rank hang.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.differential.context import context_of
from nccl_doctor.differential.shifts import shifted
from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.ras import RasRank
from nccl_doctor.facts.stacks import StackCapture
from nccl_doctor.facts.store import Facts
from nccl_doctor.pipeline import diagnose_paths, facts_of

CAPTURED = Path(__file__).resolve().parents[1] / "fixtures" / "captured"
H100 = CAPTURED / "premortem-h100" / "premortem"
AFTER = "a collective of the job completed before the stall"


def test_real_premortem_one_node_named_by_address_and_name_is_one_node() -> None:
    facts = facts_of(read_paths([str(H100)]))
    assert facts.hosts == ("localhost", "vm")
    ctx = context_of(facts)
    assert ctx.nodes is None
    assert not ctx.multi_node
    assert ctx.connected


def test_real_premortem_alternatives_are_not_how_ranks_meet() -> None:
    report = diagnose_paths([str(H100)])
    assert [f.id for f in report.findings] == ["app.hang"]
    ids = [h.id for h in report.hypotheses]
    assert ids[0] == "gpu.xid"
    assert "net.socket_interface" not in ids
    assert "launch.rendezvous" not in ids
    for h in report.hypotheses:
        assert not any("spans several nodes" in why for why in h.for_), h
        if h.id == "net.unreachable":
            assert any(why.startswith(AFTER) for why in h.against)


def _log(tmp_path: Path, seq: int) -> Path:
    path = tmp_path / f"seq{seq}.log"
    path.write_text(
        "+ torchrun --nnodes=2 --nproc-per-node=8 --rdzv-endpoint=node-a:29500 train.py\n"
        "[rank3]:[E1205 10:11:12.345678901 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught "
        f"collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1048576,"
        " NumelOut=1048576, Timeout(ms)=600000) ran for 600093 milliseconds before timing out.\n"
    )
    return path


def test_a_timeout_past_the_first_collectives_weighs_the_meeting_down(tmp_path: Path) -> None:
    late = context_of(facts_of(read_paths([str(_log(tmp_path, 1200))])))
    first = context_of(facts_of(read_paths([str(_log(tmp_path, 1))])))
    assert late.connected
    assert not first.connected
    # both stall across nodes (x1.5); the late one had connected (x0.2)
    factor, _, against = shifted(late, "launch.rendezvous", "collective_timeout")
    assert factor == pytest.approx(0.3)
    assert [why for why in against if why.startswith(AFTER)] == against
    assert len(against) == 1
    assert shifted(first, "launch.rendezvous", "collective_timeout")[0] == pytest.approx(1.5)
    # a failure that is no stall is not weighed so
    assert not any(
        why.startswith(AFTER) for why in shifted(late, "launch.rendezvous", "store_timeout")[2]
    )


def test_the_parent_folder_of_a_capture_is_no_duplicate_launch() -> None:
    # nccl-doctor's own stack captures head the launcher's process "rank= local_rank=": no code
    # passing the local rank as the rank
    report = diagnose_paths([str(CAPTURED / "premortem-h200")])
    assert [f.id for f in report.findings] == ["app.hang"]


def _node(host: str, pid: int, rank: int) -> list[Fact]:
    cite = Cite("stacks.txt", pid, f"# nccl-doctor stacks: pid={pid} rank={rank} host={host}")
    return [StackCapture(cite=cite, host=host, rank=rank, pid=pid)]


def _ras(host: str, pid: int, rank: int) -> RasRank:
    return RasRank(cite=Cite("ncclras.json", 16, "RAS"), host=host, rank=rank, pid=pid, comm="0x1")


def test_an_address_is_its_node_only_for_the_same_process() -> None:
    same = Facts([*_node("gpu-a", 41, 0), *_node("gpu-b", 42, 1), _ras("10.0.0.1", 41, 0)])
    assert same.hosts == ("gpu-a", "gpu-b")
    # another process (or the same pid as another rank) at that address is a node of its own
    other = Facts([*_node("gpu-a", 41, 0), _ras("10.0.0.9", 77, 1), _ras("10.0.0.8", 41, 5)])
    assert other.hosts == ("gpu-a", "10.0.0.9", "10.0.0.8")
    # addresses alone stay as they are
    assert Facts([_ras("10.0.0.1", 41, 0), _ras("10.0.0.2", 42, 1)]).hosts == (
        "10.0.0.1",
        "10.0.0.2",
    )


def test_an_address_is_not_taken_for_this_machine() -> None:
    # torchrun's summary names the node "localhost": an address given for the same process is
    # a name of the node, not of "this machine", and stays
    facts = Facts([*_node("localhost", 41, 0), _ras("10.0.0.1", 41, 0)])
    assert facts.hosts == ("localhost", "10.0.0.1")
