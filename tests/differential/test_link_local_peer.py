"""A failed connect to a link-local address (169.254.x.x, fe80::) is an interface the hosts do
not share: the socket interface, before the connection's own pointer at net.unreachable."""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.differential.context import _link_local
from tests.helpers import diagnose_text

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
