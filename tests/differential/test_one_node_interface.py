"""One node's ranks bootstrap over the node's own interfaces: an interface other hosts cannot
reach matters only where there are other hosts, so on one node the socket interface weighs
half; across nodes it keeps its weight (and more)."""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.differential.context import context_of
from nccl_doctor.differential.shifts import shifted
from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.pipeline import diagnose_paths, facts_of

_HANG = "DDP training with 4 GPUs {where} hangs at the first allreduce, no error. Any idea?\n"
_ONE = "the reporter says the job runs on one machine"


def _report(tmp_path: Path, where: str) -> Path:
    path = tmp_path / "report.txt"
    path.write_text(_HANG.format(where=where), encoding="utf-8")
    return path


def test_one_node_weighs_the_interface_down(tmp_path: Path) -> None:
    path = _report(tmp_path, "on one node")
    factor, _, against = shifted(
        context_of(facts_of(read_paths([str(path)]))), "net.socket_interface", "hang"
    )
    assert factor == 0.5
    assert _ONE in against
    ids = [h.id for h in diagnose_paths([str(path)]).hypotheses]
    assert ids[:3] == ["nccl.p2p", "app.hang", "app.collective_mismatch"]
    assert "net.socket_interface" not in ids


def test_several_nodes_keep_the_interface(tmp_path: Path) -> None:
    path = _report(tmp_path, "on each of 2 nodes")
    factor, for_, against = shifted(
        context_of(facts_of(read_paths([str(path)]))), "net.socket_interface", "hang"
    )
    assert factor == 1.6
    assert "the job spans several nodes" in for_
    assert _ONE not in against
    ids = [h.id for h in diagnose_paths([str(path)]).hypotheses]
    assert "net.socket_interface" in ids[:3]


def test_a_single_node_that_works_is_not_the_failing_job(tmp_path: Path) -> None:
    path = tmp_path / "report.txt"
    path.write_text("Two-node training freezes at NCCL init; single node works.\n")
    _, for_, against = shifted(
        context_of(facts_of(read_paths([str(path)]))), "net.socket_interface", "hang"
    )
    assert "the job spans several nodes" in for_
    assert _ONE not in against


def test_a_single_node_that_works_leaves_the_rdma_causes_their_weight(tmp_path: Path) -> None:
    path = tmp_path / "report.txt"
    path.write_text("Two-node training freezes at NCCL init; single node works.\n")
    ctx = context_of(facts_of(read_paths([str(path)])))
    for rdma in ("net.ib_config", "net.ib_transport", "net.gdr"):
        _, for_, against = shifted(ctx, rdma, "hang")
        assert "the job spans several nodes" in for_
        assert _ONE not in against


def test_one_machine_said_alone_weighs_the_rdma_causes_down(tmp_path: Path) -> None:
    ctx = context_of(facts_of(read_paths([str(_report(tmp_path, "on one node"))])))
    factor, _, against = shifted(ctx, "net.ib_config", "hang")
    assert _ONE in against
    assert factor < 1
