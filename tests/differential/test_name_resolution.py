"""A host name that cannot be looked up at all points at the network, not at the GPUs.

c10d resolves the store's host (MASTER_ADDR, or its own name when standalone) with
getaddrinfo before it connects, and warns once per address family that gives nothing.
``gai error: -2 - Name or service not known`` for IPv6 is routine on a host with IPv4
only; ``-3 - Temporary failure in name resolution`` (EAI_AGAIN) says the resolver
itself failed: the name is in no hosts file and DNS did not answer. Neither is a
failure by itself (the next family may still connect); beside a failure, the failed
resolver points at the name and the routine warning at nothing. Every case runs the
whole pipeline.
"""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.report import Report, Verdict
from tests.helpers import child_failed, diagnose_text

LAUNCH = "python -m torch.distributed.run --standalone --nnodes=1 --nproc-per-node=4 train.py\n"
#: c10d's socket.cpp warning, as torch 2.1 prints it.
RESOLVER_FAILED = (
    "[W socket.cpp:601] [c10d] The IPv6 network addresses of (trainbox, 53821) cannot be "
    "retrieved (gai error: -3 - Temporary failure in name resolution).\n"
)
IPV6_ONLY = RESOLVER_FAILED.replace(
    "-3 - Temporary failure in name resolution", "-2 - Name or service not known"
)
#: torchrun's summary of a worker that exited with an error.
CHILD_FAILED = child_failed(0, 1)


def _unreachable_reasons(report: Report) -> list[str]:
    return [why for h in report.hypotheses if h.id == "net.unreachable" for why in h.for_]


FAILS = "It does not train, and returns the following errors:\n"


def test_a_failed_resolver_leads_with_the_network(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, LAUNCH + FAILS + RESOLVER_FAILED)
    assert report.hypotheses[0].id == "net.unreachable"
    reasons = _unreachable_reasons(report)
    assert any("'trainbox' could not be looked up" in why for why in reasons)
    assert any("getent hosts trainbox" in why for why in reasons)


def test_a_failed_resolver_beside_a_worker_failure(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, LAUNCH + RESOLVER_FAILED + CHILD_FAILED)
    assert [f.id for f in report.findings][:1] == ["net.unreachable"]
    assert report.first_failure is not None
    assert "exitcode" in report.first_failure.message


def test_the_ipv6_warning_alone_is_no_failure(tmp_path: Path) -> None:
    for warning in (IPV6_ONLY, RESOLVER_FAILED):
        report = diagnose_text(tmp_path, LAUNCH + warning)
        assert report.verdict is Verdict.HEALTHY, warning
        assert report.first_failure is None, warning
        assert not report.hypotheses, warning


def test_the_routine_ipv6_warning_beside_a_failure_in_words(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, LAUNCH + FAILS + IPV6_ONLY)
    assert report.hypotheses
    assert report.hypotheses[0].id != "net.unreachable"
    assert not any("looked up" in why for why in _unreachable_reasons(report))


def test_the_routine_ipv6_warning_says_nothing_of_the_network(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, LAUNCH + IPV6_ONLY + CHILD_FAILED)
    assert report.first_failure is not None
    assert "exitcode" in report.first_failure.message
    assert "net.unreachable" not in [f.id for f in report.findings]
    assert report.hypotheses[0].id != "net.unreachable"
    assert not any("looked up" in why for why in _unreachable_reasons(report))


def test_a_store_that_served_after_the_warning_was_reached(tmp_path: Path) -> None:
    served = (
        "trainbox:20113:20113 [0] NCCL INFO comm 0x55d1c0a0 rank 0 nranks 4 cudaDev 0 "
        "nvmlDev 0 busId 1000 commId 0x1b2c3d4e5f - Init COMPLETE\n"
    )
    report = diagnose_text(tmp_path, LAUNCH + RESOLVER_FAILED + served + CHILD_FAILED)
    assert not any("looked up" in why for why in _unreachable_reasons(report))
