"""A store client of a job across nodes that dials 127.0.0.1 was launched with the wrong
MASTER_ADDR: the rendezvous's finding, naming it, not an unreachable network. On one node the
loopback store is where it should be, and a remote address that times out stays the network's."""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.facts.net import loopback, unspecified
from tests.helpers import critical_ids, diagnose_text

_LOG = (
    "node 0: torchrun --nnodes=2 --node_rank=0 --nproc_per_node=8 --master_addr=192.168.10.21 "
    "--master_port=29500 train.py\n"
    "node 1: torchrun --nnodes=2 --node_rank=1 --nproc_per_node=8 --master_addr={addr} "
    "--master_port=29500 train.py\n"
    "[rank0]: torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for "
    "clients. 1/2 clients joined.\n"
    "torch.distributed.DistNetworkError: The client socket has timed out after 900000ms while "
    "trying to connect to ({addr}, 29500).\n"
)


def test_a_client_dialling_its_own_loopback_is_the_launch(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _LOG.format(addr="127.0.0.1"))
    assert critical_ids(report) == ["launch.rendezvous"]
    [found] = report.findings
    assert "a worker dialled the store at 127.0.0.1:29500, its own loopback" in found.summary
    assert found.fix[0].startswith("Give every node the store host's address")


def test_a_remote_store_address_that_times_out_stays_the_network(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _LOG.format(addr="192.168.10.21"))
    assert "net.unreachable" in critical_ids(report)
    assert all("its own loopback" not in f.summary for f in report.findings)


@pytest.mark.parametrize(
    ("address", "own"),
    [
        ("127.0.0.1", True),
        ("127.0.1.1", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("192.168.10.21", False),
        ("0.0.0.0", False),  # noqa: S104 (an address read, not bound)
        ("node-0", False),
        # as NCCL and c10d print them: with a <port>, a :port, a bracketed IPv6 and its port
        ("127.0.0.1<43211>", True),
        ("127.0.1.1:29500", True),
        ("[::1]:29500", True),
        ("10.0.0.5<43211>", False),
        ("[fe80::1%eth0]:29500", False),
    ],
)
def test_addresses_that_name_the_host_itself(address: str, own: bool) -> None:
    assert loopback(address) is own


@pytest.mark.parametrize(
    ("address", "none"),
    [
        ("0.0.0.0", True),  # noqa: S104 (an address read, not bound)
        ("0.0.0.0<29500>", True),
        ("[::]:29500", True),
        ("127.0.0.1", False),
        ("10.0.0.5:29500", False),
    ],
)
def test_the_unspecified_address_is_no_peer(address: str, none: bool) -> None:
    assert unspecified(address) is none
