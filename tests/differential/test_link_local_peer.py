"""A failed connect to a link-local address (169.254.x.x, fe80::) is an interface the hosts do
not share: the socket interface, before the connection's own pointer at net.unreachable."""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.facts.net import link_local as _link_local
from tests.helpers import critical_ids, diagnose_text

SAID = (
    "Title: multi-machine DDP training cannot connect\n\n"
    "The two instances find each other for the store, only to end up with the error "
    "`misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to {peer} failed : Software "
    "caused connection abort` on the second one.\n"
)


def _top(tmp_path: Path, peer: str) -> list[str]:
    report = diagnose_text(tmp_path, SAID.format(peer=peer))
    assert report.hypotheses
    return report.top(3)


@pytest.mark.parametrize("peer", ["169.254.255.18<42219>", "fe80::222:48ff:fe49:ba90<51391>"])
def test_a_link_local_peer_is_the_wrong_interface(tmp_path: Path, peer: str) -> None:
    top = _top(tmp_path, peer)
    assert top[0] == "net.socket_interface"
    assert "net.unreachable" in top


def test_a_routable_peer_stays_a_failed_connection(tmp_path: Path) -> None:
    assert _top(tmp_path, "10.0.35.1<42219>")[0] == "net.unreachable"


@pytest.mark.parametrize(
    ("peer", "link_local"),
    [
        ("169.254.1.2<42219>", True),
        ("[fe80::1%eth0]:29500", True),
        ("fe80::1%ib0<0>", True),
        ("fe80::1", True),  # bare: its last hextet is digits, not a port
        ("169.254.3.4:29500", True),
        ("10.0.0.1<5>", False),
        ("127.0.0.1<2>", False),
        ("node-3<29500>", False),
    ],
)
def test_link_local_addresses_as_nccl_prints_them(peer: str, link_local: bool) -> None:
    assert _link_local(peer) is link_local


def _socket_log(peer: str, hosts: tuple[str, str]) -> str:
    """NCCL 2.27's INFO log of a job whose socket transport dials ``peer``, on ``hosts``, and the
    error PyTorch raises after its retries."""
    a, b = hosts
    return (
        f"{a}:2211:2301 [0] NCCL INFO NET/Socket : Using [0]enp73s0:10.1.216.156<0> "
        "[1]pod-id-link0:169.254.170.23<0>\n"
        f"{b}:1874:1990 [0] NCCL INFO NET/Socket : Using [0]enp73s0:10.1.227.0<0> "
        "[1]pod-id-link0:169.254.170.23<0>\n"
        f"{a}:2211:2415 [0] NCCL INFO socketPollConnect: connect to {peer} returned Connection "
        "refused, retrying (13/34) after sleep for 1300 msec\n"
        f"{a}:2211:2415 [0] misc/socket.cc:582 NCCL WARN socketPollConnect: connect to {peer} "
        "returned Connection refused, exceeded error retry count after 35 attempts\n"
        "RuntimeError: NCCL error: remote process exited or there was a network error\n"
    )


_TWO_HOSTS = ("ip-10-1-216-156", "ip-10-1-227-0")


def test_a_retried_connect_to_a_link_local_peer_across_hosts_is_the_interface(
    tmp_path: Path,
) -> None:
    report = diagnose_text(tmp_path, _socket_log("169.254.170.23<45321>", _TWO_HOSTS))
    assert critical_ids(report) == ["net.socket_interface"]
    [finding] = [f for f in report.findings if f.id == "net.socket_interface"]
    assert "169.254.170.23" in finding.summary
    assert "link-local" in finding.summary


def test_a_retried_connect_to_a_routable_peer_stays_unreachable(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _socket_log("10.1.227.0<45321>", _TWO_HOSTS))
    assert critical_ids(report) == ["net.unreachable"]


def test_a_link_local_peer_on_one_host_is_no_interface_finding(tmp_path: Path) -> None:
    # one host: its own link-local address is reachable; the refused connect is a peer that
    # was not listening, not an interface the hosts do not share
    one = ("ip-10-1-216-156", "ip-10-1-216-156")
    report = diagnose_text(tmp_path, _socket_log("169.254.170.23<45321>", one))
    assert "net.socket_interface" not in critical_ids(report)
