"""``RendezvousConnectionError`` says the agent could not reach the c10d store, not that a rank
stayed away.

torch's c10d rendezvous backend raises it when creating the TCPStore fails (the client
could not connect to the endpoint, or the host could not bind its port) or when a store
operation fails midway. The inner exception tells which; the rendezvous rule's "not every
rank joined" is a different failure (``RendezvousTimeoutError``, ``1/2 clients joined``).
Every case runs the whole pipeline.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import diagnose_text

LAUNCH = (
    "$ torchrun --nnodes=2 --nproc-per-node=8 --rdzv-backend=c10d "
    "--rdzv-endpoint=10.1.1.5:29400 --rdzv-id=7 train.py\n"
)
BACKEND = "/usr/local/lib/python3.10/dist-packages/torch/distributed/elastic/rendezvous"
OUTER = (
    "\nThe above exception was the direct cause of the following exception:\n\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/local/bin/torchrun", line 8, in <module>\n'
    "    sys.exit(main())\n"
    f'  File "{BACKEND}/c10d_rendezvous_backend.py", line 250, in create_backend\n'
    "    store = _create_tcp_store(params)\n"
    f'  File "{BACKEND}/c10d_rendezvous_backend.py", line 182, in _create_tcp_store\n'
    "    raise RendezvousConnectionError(\n"
    "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to "
    "the C10d store has failed. See inner exception for details.\n"
)
INNER = (
    "Traceback (most recent call last):\n"
    f'  File "{BACKEND}/c10d_rendezvous_backend.py", line 155, in _create_tcp_store\n'
    "    store = TCPStore(\n"
)
#: the client's connect to the endpoint timed out (torch 2.x socket.cpp)
TIMED_OUT = (
    INNER + "TimeoutError: The client socket has timed out after 60s while trying to connect "
    "to (10.1.1.5, 29400).\n" + OUTER
)
#: the host could not bind the endpoint's port
BIND_FAILED = (
    INNER + "torch.distributed.DistNetworkError: The server socket has failed to listen on "
    "any local network address. port: 29400, useIpv6: false, code: -98, name: EADDRINUSE, "
    "message: address already in use\n" + OUTER
)


def test_a_failed_store_connection_is_not_a_missing_rank(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, LAUNCH + OUTER.split("\n\n", 1)[1])
    assert "launch.rendezvous" not in [f.id for f in report.findings]
    ids = [h.id for h in report.hypotheses]
    assert "net.unreachable" in ids[:2]
    assert report.hypotheses[0].symptom.startswith("the rendezvous or the c10d store")


@pytest.mark.parametrize(
    ("text", "lead"),
    [(TIMED_OUT, "net.unreachable"), (BIND_FAILED, "launch.port_in_use")],
)
def test_the_inner_exception_names_the_cause(tmp_path: Path, text: str, lead: str) -> None:
    report = diagnose_text(tmp_path, LAUNCH + text)
    top = [f.id for f in report.findings][:1] or [h.id for h in report.hypotheses][:1]
    assert top == [lead]
    assert "launch.rendezvous" not in [f.id for f in report.findings]
