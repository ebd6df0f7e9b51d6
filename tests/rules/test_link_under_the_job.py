"""RDMA sends the peer never acknowledged (completion status 12) beside a port seen down on a
job across nodes: the link went down under the job, the more so where the kernel saw its cable
unplugged. All ports active leaves the transport's failure; a port down with no such
failure stays a warning about rails."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import critical_ids, diagnose_text

_SAID = "8 nodes x 8 H100, IB NDR. The job died again:\n"
_LOST = (
    "gpu-r2-n05:66102:66988 [6] NCCL WARN NET/IB : Got completion from peer 10.200.3.9<50512> "
    "with status=12 opcode=0 len=0 vendor err 129 (Send)\n"
    "gpu-r2-n05:66102:66988 [6] NCCL INFO transport/net.cc:1298 -> 6\n"
    "[rank38]: ncclRemoteError: A call failed possibly due to a network error or a remote "
    "process exiting prematurely.\n"
)
_PORT = (
    "CA 'mlx5_6'\n"
    "        CA type: MT4129\n"
    "        Number of ports: 1\n"
    "        Port 1:\n"
    "                State: {state}\n"
    "                Physical state: {phys}\n"
    "                Rate: {rate}\n"
    "                Link layer: InfiniBand\n"
)
_FLAP = (
    "[Thu Oct 17 13:51:44 2024] mlx5_core 0000:d2:00.0: mlx5_port_module_event:1163:(pid 0): "
    "Port module event: module 0, Cable unplugged\n"
)


def _down() -> str:
    return _PORT.format(state="Down", phys="Polling", rate="10")


def test_a_port_down_beside_unacknowledged_sends_and_a_flap_is_the_link(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _SAID + _LOST + _down() + _FLAP)
    assert critical_ids(report) == ["net.ib_link"]
    [link] = report.findings
    assert "the kernel saw its cable unplugged or its link go down" in link.summary
    assert link.confidence.value == "high"
    assert dict(report.folded)["net.ib_link"][0].id == "net.ib_transport"


def test_a_port_down_beside_unacknowledged_sends_is_the_link(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _SAID + _LOST + _down())
    assert critical_ids(report) == ["net.ib_link"]
    assert report.findings[0].confidence.value == "medium"


def test_every_port_active_leaves_the_transport(tmp_path: Path) -> None:
    active = _PORT.format(state="Active", phys="LinkUp", rate="400")
    report = diagnose_text(tmp_path, _SAID + _LOST + active)
    assert critical_ids(report) == ["net.ib_transport"]


def test_a_port_down_without_lost_sends_is_a_warning(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _SAID + "training runs, but slower than last week\n" + _down())
    [link] = [f for f in report.findings if f.id == "net.ib_link"]
    assert link.severity.value == "warning"
