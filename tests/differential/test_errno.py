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
    # then the store's other causes: the address it advertised on an interface the peer has no
    # route to comes first among them (the development corpora's counts for a store timeout)
    assert report.hypotheses[0].id == "net.socket_interface"
    assert report.hypotheses[0].symptom.startswith("the rendezvous or the c10d store")


def test_a_name_that_does_not_resolve_is_the_address_then_the_interface(tmp_path: Path) -> None:
    report = _report(tmp_path, GAI)
    assert report.top(2) == ["net.unreachable", "net.socket_interface"]
    # the name of a peer that does not resolve points at the peer, not at this host's interface
    assert all("system.gai.eai_noname" not in reason for reason in report.hypotheses[0].for_)


def test_a_store_host_that_does_not_resolve_is_unreachable_first(tmp_path: Path) -> None:
    report = _report(
        tmp_path,
        "INFO 2020-01-17 00:55:01,694 Using TCPStore for c10d::Store implementation\n"
        "INFO 2020-01-17 00:55:01,702 Rank 1 will connect to TCPStore server at "
        "trainer-z2b7s:47279\n"
        "Error: Rank -1 received an Exception. Detailed message: host not found: "
        "Name or service not known\n",
    )
    assert report.top(1) == ["net.unreachable"]


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
    # the development corpora's commonest causes of a failure no message classifies
    assert ids[0] == "nccl.p2p"
    assert set(ids[1:4]) == {"nccl.version_mismatch", "nccl.internal", "cuda.device_visibility"}
    assert "launch.rank_crash" not in ids
    # the same failure inside a container: a container alone is no shared-memory failure (a
    # too small /dev/shm fails NCCL's set-up with an error of its own)
    docker = _report(tmp_path, "I run it inside a docker container.\n" + GENERIC, "docker.txt")
    assert docker.hypotheses[0].id != "nccl.shm"
    # a /dev/shm of 64 MB that df shows is
    small = _report(
        tmp_path,
        "I run it inside a docker container.\n$ df -h /dev/shm\n"
        "Filesystem      Size  Used Avail Use% Mounted on\n"
        "shm              64M     0   64M   0% /dev/shm\n\n" + GENERIC,
        "small.txt",
    )
    assert small.hypotheses[0].id == "nccl.shm"
    assert any("under 512 MiB" in reason for reason in small.hypotheses[0].for_)
    # Ray's start-up warning says the same; a /dev/shm of 32 GiB speaks against it
    ray = _report(
        tmp_path,
        "WARNING services.py:1996 -- WARNING: The object store is using /tmp instead of /dev/shm"
        " because /dev/shm has only 67108864 bytes available.\n" + GENERIC,
        "ray.txt",
    )
    assert ray.hypotheses[0].id == "nccl.shm"
    system = (
        "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1333,"
        " unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.6\n"
    )
    assert _report(tmp_path, system, "system.txt").hypotheses[0].id == "nccl.shm"
    big = _report(
        tmp_path, "$ df -h /dev/shm\nshm  32G  1.2G  31G  4% /dev/shm\n\n" + system, "big.txt"
    )
    # 32 GiB of /dev/shm: shared memory drops out of the ranking (weighed 0.2)
    assert "nccl.shm" not in [h.id for h in big.hypotheses]
    assert big.hypotheses[0].id == "net.socket_interface"
