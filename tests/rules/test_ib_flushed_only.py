"""net.ib_transport: flushed completions alone do not name the IB failure.

A completion with status 5 (IBV_WC_WR_FLUSH_ERR) is a work request the adapter flushed
because its queue pair was already in the error state; the error that put it there (the
peer's exit, its own completion error) is not the flushed one. Alone, status 5 is a warning
and no root cause, and the rank that died first leads; beside a first error (12: retry
count exceeded) the transport failure stands as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nccl_doctor.findings import Severity
from tests.helpers import diagnose_text

if TYPE_CHECKING:
    from pathlib import Path


def _completion(status: int) -> str:
    return (
        "node-a1:4410:4512 [3] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from "
        f"peer 192.168.100.12<37410> with status={status} opcode=0 len=0 vendor err 249 (Send) "
        "localGid ::ffff:192.168.100.11 remoteGids::ffff:192.168.100.12\n"
    )


EXITED = (
    "[2024-08-21 09:33:14,441] [ERROR] [launch.py:325:sigkill_handler] ['/usr/bin/python', "
    "'-u', 'pretrain.py', '--local_rank=3'] exits with return code = 1\n"
)


def test_flushed_completions_alone_are_no_root_cause(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _completion(5) + _completion(5))
    (ib,) = [f for f in report.findings if f.id == "net.ib_transport"]
    assert ib.severity is Severity.WARNING
    assert not ib.root_cause
    assert "flushed work requests only" in ib.summary
    # the rank that exited first leads
    beside_exit = diagnose_text(tmp_path, EXITED + _completion(5))
    assert beside_exit.top(2) == ["launch.rank_crash", "net.ib_transport"]


def test_a_first_error_beside_the_flushes_is_the_transport_failure(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _completion(12) + _completion(5))
    (ib,) = [f for f in report.findings if f.id == "net.ib_transport"]
    assert ib.severity is Severity.CRITICAL
    assert ib.root_cause
    assert "1 flushed after it" in ib.summary
    assert report.top(1) == ["net.ib_transport"]
