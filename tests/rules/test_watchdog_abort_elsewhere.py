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


_PASTE = (
    "Watchdog after 30 min on all 8 ranks at the same SeqNum:\n\n"
    "{timeouts}"
    "NCCL_DEBUG=INFO init (rank 0):\n"
    "hgx-03:7712:7801 [0] NCCL INFO comm 0x55bb rank 0 nranks 8 cudaDev 0 nvmlDev 0 busId 18000 "
    "commId 0xd31cb1b70e35f5d9 - Init COMPLETE\n"
)
_ONE = (
    "[rank{r}]:[E ProcessGroupNCCL.cpp:523] [Rank {r}] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=20317, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, "
    "Timeout(ms)=1800000) ran for 1800384 milliseconds before timing out.\n"
)


def _origin(tmp_path: Path, ranks: range | tuple[int, ...]) -> str:
    text = _PASTE.format(timeouts="".join(_ONE.format(r=r) for r in ranks))
    [hang] = [f for f in diagnose_text(tmp_path, text).findings if f.id == "app.hang"]
    return hang.summary


def test_a_paste_of_some_ranks_shows_no_rank_silent(tmp_path: Path) -> None:
    # ranks 2 and 5 pasted, the rest cut: rank 0's init sample is no silence
    assert "rank 0 is the origin" not in _origin(tmp_path, (2, 5))


def test_a_paste_of_every_other_rank_shows_the_silent_one(tmp_path: Path) -> None:
    assert "rank 0 is the origin: never joined" in _origin(tmp_path, range(1, 8))
