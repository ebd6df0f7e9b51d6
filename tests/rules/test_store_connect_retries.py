"""How the c10d store client's connect attempts ended tells unreachable from not listening.

socket.cpp (SocketConnectOp, torch 2.6-2.11): an attempt that got no answer
warns ``The server socket on [h]:p has timed out, will retry``; a refused one
is logged only at trace level; every retry prints the every-30-seconds
``No socket on (h, p) is listening yet, will retry`` notice. Retries with no
unanswered attempt and no failed look-up were refused: the host answered and
nothing listened on the store's port.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import critical_ids, diagnose_text

_UNANSWERED = "".join(
    f"[rank1]:[W1205 10:{m}:12.345678901 socket.cpp:752] [c10d] The server socket on "
    "[node0.cluster]:29500 has timed out, will retry.\n"
    for m in (11, 13, 15)
)
_RETRIED = "".join(
    f"[I1205 10:11:{s}.345678901 socket.cpp:882] [c10d] No socket on (node0, 29500) is "
    "listening yet, will retry.\n"
    for s in (12, 42)
)
_GAVE_UP = (
    "torch.distributed.DistNetworkError: The client socket has timed out after 900000ms while "
    "trying to connect to (node0, 29500).\n"
)


def test_attempts_with_no_answer_are_the_network(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _UNANSWERED + _RETRIED + _GAVE_UP)
    top = report.findings[0]
    assert (top.id, top.severity.value, top.root_cause) == ("net.unreachable", "critical", True)
    assert "3 of its attempts timed out with no answer at all ([node0.cluster]:29500)" in (
        top.summary
    )


def test_attempts_refused_until_the_timeout_are_a_master_not_listening(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _RETRIED + _GAVE_UP)
    top = report.findings[0]
    assert (top.id, top.confidence.value, top.root_cause) == ("launch.rendezvous", "high", True)
    assert "refused at every attempt (2 retry notices, none timed out)" in top.summary
    assert top.fix[0].startswith("Look at the master's own output")
    assert critical_ids(report) == ["launch.rendezvous"]


def test_a_failed_look_up_is_no_refusal(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        "[W1205 10:11:10.345678901 socket.cpp:460] [c10d] The IPv4 network addresses of "
        "(node0, 29500) cannot be retrieved (gai error: -3 - Temporary failure in name "
        "resolution).\n" + _RETRIED + _GAVE_UP,
    )
    assert report.findings[0].id == "net.unreachable"


def test_unanswered_attempts_of_a_job_still_waiting_are_a_warning(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _UNANSWERED)
    (found,) = report.findings
    assert (found.id, found.severity.value) == ("net.unreachable", "warning")
    assert "timed out with no answer (3 time(s))" in found.summary
    assert critical_ids(report) == []


def test_retry_notices_of_a_staggered_start_are_nothing(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        _RETRIED + "Epoch 1/10: 100%|##########| 500/500 [01:12<00:00, 6.9it/s, loss=0.41]\n",
    )
    assert list(report.findings) == []
    assert report.first_failure is None
