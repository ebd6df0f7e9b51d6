"""A store port someone else already listens on, shown by a listing (ss, netstat, lsof) rather
than by the bind error: on one host, with the job failed in its store's set-up, the port was
taken. Across nodes a listing of the master's port shows the store up, not taken; another port
listed says nothing of this one."""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.pipeline import facts_of
from nccl_doctor.signs.launch import PORT_LISTENED
from tests.helpers import critical_ids, diagnose_text

_FAILED = (
    "CUDA_VISIBLE_DEVICES=0,1,2,3 torchrun --nnodes={n} --nproc_per_node=4 "
    "--rdzv_backend=c10d --rdzv_endpoint=localhost:29500 train.py\n"
    "Traceback (most recent call last):\n"
    '  File "/env/lib/python3.11/site-packages/torch/distributed/elastic/rendezvous/'
    'c10d_rendezvous_backend.py", line 181, in _create_tcp_store\n'
    "    raise RendezvousConnectionError(\n"
    "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to "
    "the C10d store has failed. See inner exception for details.\n"
    "\n$ sudo ss -ltnp 'sport = :{port}'\n"
    "State  Recv-Q Send-Q Local Address:Port  Peer Address:Port Process\n"
    'LISTEN 0      4096         0.0.0.0:{port}      0.0.0.0:*     users:(("torchrun",pid=2291877,'
    "fd=3))\n"
)


def test_a_listener_on_the_store_port_of_a_failed_one_host_job(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _FAILED.format(n=1, port=29500))
    assert critical_ids(report) == ["launch.port_in_use"]
    assert report.findings[0].summary.startswith("Something already listens on the store's port")


def test_a_listener_on_another_port_says_nothing_of_the_store(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _FAILED.format(n=1, port=8888))
    assert "launch.port_in_use" not in critical_ids(report)


def test_a_listener_across_nodes_is_the_store_up(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _FAILED.format(n=2, port=29500))
    assert "launch.port_in_use" not in critical_ids(report)


@pytest.mark.parametrize(
    ("line", "port"),
    [
        ("LISTEN 0      4096         0.0.0.0:29500      0.0.0.0:*", 29500),
        (
            (
                "tcp        0      0 0.0.0.0:29501           0.0.0.0:*               LISTEN      "
                "2291877/python"
            ),
            29501,
        ),
        ("python  2291877 akumar    3u  IPv4 0x1234      0t0  TCP *:29502 (LISTEN)", 29502),
        ("ESTAB  0      0      10.0.0.1:29500     10.0.0.2:41234", None),
    ],
)
def test_listings_of_a_listening_port(tmp_path: Path, line: str, port: int | None) -> None:
    path = tmp_path / "ss.txt"
    path.write_text(line + "\n")
    hits = facts_of(read_paths([str(path)])).seen(PORT_LISTENED)
    found = [int(h.match["port"] or h.match["nport"] or h.match["lport"]) for h in hits]
    assert found == ([port] if port else [])
