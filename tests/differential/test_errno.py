"""The C library's error texts (strerror, gai_strerror) name a failure's class.

``Address already in use``, ``No route to host``, ``Temporary failure in
name resolution``... are quoted by Python (``[Errno 113]``), c10d
(``errno: 98 - ...``) and NCCL (``Call to connect returned ...``). Where no
library's own message classifies a failure, the errno text does; a library's
message that quotes one is still that library's message.
"""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.facts.catalogue import signature_of
from nccl_doctor.pipeline import diagnose_paths

NO_ROUTE = (
    "$ torchrun --nnodes=2 --nproc_per_node=8 --rdzv_endpoint=10.1.4.12:29400 train.py\n"
    "Traceback (most recent call last):\n"
    '  File "train.py", line 31, in <module>\n'
    "    sock.connect((host, port))\n"
    "OSError: [Errno 113] No route to host\n"
)
GAI = (
    "Traceback (most recent call last):\n"
    '  File "launch.py", line 12, in <module>\n'
    "    addr = socket.gethostbyname(os.environ['MASTER_ADDR'])\n"
    "socket.gaierror: [Errno -2] Name or service not known\n"
)
IPV6_WARNING = (
    "[W socket.cpp:601] [c10d] The IPv6 network addresses of (trainer-0, 53821) cannot be "
    "retrieved (gai error: -3 - Temporary failure in name resolution).\n"
    "epoch 0 step 10 loss 2.31\n"
)
GENERIC = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 77, in <module>\n'
    "    main()\n"
    "RuntimeError: the run stopped with an unexpected state\n"
)


def _report(tmp_path: Path, text: str, name: str = "log.txt"):  # type: ignore[no-untyped-def]
    path = tmp_path / name
    path.write_text(text)
    return diagnose_paths([str(path)])


def test_no_route_to_host_across_nodes_is_the_network(tmp_path: Path) -> None:
    report = _report(tmp_path, NO_ROUTE)
    assert report.top(1) == ["net.unreachable"]  # the rule, with the store's alternatives after
    assert report.hypotheses[0].id == "launch.rendezvous"
    assert report.hypotheses[0].symptom.startswith("the rendezvous or the c10d store")


def test_a_name_that_does_not_resolve_is_the_address_then_the_interface(tmp_path: Path) -> None:
    report = _report(tmp_path, GAI)
    assert report.top(2) == ["net.unreachable", "net.socket_interface"]
    assert any("system.gai.eai_noname" in reason for reason in report.hypotheses[0].for_)


def test_c10ds_ipv6_warning_opens_no_class_though_it_quotes_gai_strerror(tmp_path: Path) -> None:
    report = _report(tmp_path, IPV6_WARNING)
    assert report.hypotheses == ()
    assert all(f.severity.value != "critical" for f in report.findings)


def test_a_librarys_message_wins_over_the_errno_text_it_quotes() -> None:
    sig = signature_of("misc/socket.cc:484 NCCL WARN Call to connect failed : Connection refused")
    assert sig is not None
    assert (sig.library, sig.symptom) == ("nccl", "nccl_system")
    bare = signature_of("ConnectionRefusedError: [Errno 111] Connection refused")
    assert bare is not None
    assert (bare.id, bare.hint_ids) == (
        "system.errno.econnrefused",
        ("net.unreachable", "net.socket_interface"),
    )


def test_an_unclassified_failure_ranks_the_commonest_causes_not_a_crash(tmp_path: Path) -> None:
    report = _report(tmp_path, GENERIC)
    ids = [h.id for h in report.hypotheses]
    assert ids[:3] == ["nccl.p2p", "net.socket_interface", "nccl.version_mismatch"]
    assert "launch.rank_crash" not in ids
    # the same failure inside a container: shared memory comes first
    docker = _report(tmp_path, "I run it inside a docker container.\n" + GENERIC, "docker.txt")
    assert docker.hypotheses[0].id == "nccl.shm"
