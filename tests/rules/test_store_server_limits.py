"""What the c10d store's server and ProcessGroupNCCL's heartbeat monitor say about a stuck job.

TCPStoreLibUvBackend.cpp's 'Failed to accept client due to ... EMFILE' is the
store's host out of file descriptors: the ranks it turns away never join, so the
rendezvous timeout follows from it. ProcessGroupNCCL.cpp's 'Could not acquire GIL
within 300 ms on exit' (2.4-2.11) is a rank whose Python side is wedged.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import critical_ids, diagnose_text

_TURNED_AWAY = (
    "[W1205 10:11:12.345678901 TCPStoreLibUvBackend.cpp:1053] [c10d] Failed to accept client "
    "due to Failed to accept socket. code: -24, name: EMFILE, message: too many open files\n"
)
_TIMED_OUT = (
    "torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients. "
    "1022/1024 clients joined.\n"
)


def test_a_store_out_of_descriptors_explains_the_rendezvous_timeout(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _TURNED_AWAY * 2 + _TIMED_OUT)
    assert critical_ids(report) == ["host.resources"]
    top = report.findings[0]
    assert top.root_cause
    folded = dict(report.folded)
    assert [f.id for f in folded["host.resources"]] == ["launch.rendezvous"]


def test_a_rendezvous_timeout_beside_another_limit_stays_its_own(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        "OSError: [Errno 24] Too many open files: '/data/shard-00017.tar'\n" + _TIMED_OUT,
    )
    assert set(critical_ids(report)) == {"host.resources", "launch.rendezvous"}


def test_a_rank_whose_gil_is_held_is_a_hang(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        "[rank4]:[E427 10:11:12.345678901 ProcessGroupNCCL.cpp:1972] [PG ID 0 PG GUID "
        "0(default_pg) Rank 4] Could not acquire GIL within 300 ms on exit, possible GIL "
        "induced hang\n",
    )
    assert report.hypotheses[0].id == "app.hang"
    assert "torch.pgnccl.gil_not_acquired" in report.hypotheses[0].for_[0]
