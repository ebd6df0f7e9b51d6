"""A rank that ends with SIGABRT and nothing of its own beside a collective timeout on its host is
the watchdog's teardown, though another rank printed the timeout (the launcher names it by local
rank, the reporter pastes one rank's lines): folded under the hang. One on another host, or with
an error of its own, stays a rank that died first."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import child_failed, diagnose_text

_TIMEOUT = (
    "[rank3]:[E1008 14:52:17.538126631 ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
    "Timeout(ms)=1800000) ran for 1800089 milliseconds before timing out.\n"
)
_AGENT = (
    "W1008 14:52:19.114000 139911 torch/distributed/elastic/multiprocessing/api.py:858] Sending "
    "process 140021 closing signal SIGTERM\n"
    "E1008 14:52:20.227000 139911 torch/distributed/elastic/multiprocessing/api.py:833] failed "
    "(exitcode: -6) local_rank: 1 (pid: 140022) of binary: /usr/bin/python\n"
)


def test_a_bare_abort_beside_anothers_timeout_is_the_teardown(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _TIMEOUT + _AGENT)
    # the first collective, none completed: what held it is the differential's to rank
    assert report.top(1) != ["launch.rank_crash"]
    assert "app.hang" in report.top(3)
    [crash] = [f for f in report.findings if f.id == "launch.rank_crash"]
    assert crash.summary.startswith("Local rank 1 ended with exit code -6 (SIGABRT) after its")
    assert crash.cause is False


def test_an_abort_with_its_own_error_stays_the_first_death(tmp_path: Path) -> None:
    own = child_failed(
        1, -6, "terminate called after throwing an instance of 'c10::Error' what(): CUDA error"
    )
    report = diagnose_text(tmp_path, _TIMEOUT + own)
    [crash] = [f for f in report.findings if f.id == "launch.rank_crash"]
    assert crash.summary.startswith("Rank 1 on trainbox died first with exit code -6 (SIGABRT): ")
    assert crash.cause is True


def test_a_bare_abort_on_another_host_stays_the_first_death(tmp_path: Path) -> None:
    other = child_failed(9, -6, "Signal 6 (SIGABRT) received by PID 20113", host="gpu-node2")
    report = diagnose_text(tmp_path, "gpu-node1: " + _TIMEOUT + other)
    [crash] = [f for f in report.findings if f.id == "launch.rank_crash"]
    assert crash.summary.startswith("Rank 9 on gpu-node2 died first with exit code -6 (SIGABRT)")
    assert crash.cause is True
