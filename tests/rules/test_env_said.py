"""nccl.env: a variable a person's sentence names that NCCL would not take as written.

NCCL reads its settings by exact name and parses switches as numbers: a misspelt name is
never read, ``NCCL_IB_DISABLE=true`` is read as 0. A report that says it set one is answered
with the correction, however the job's output reads; a name or value that is right, a
family named with a wildcard, a name in lower case are not settings to correct.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nccl_doctor.findings import Confidence, Severity
from tests.helpers import diagnose_text

if TYPE_CHECKING:
    from pathlib import Path


def _env(tmp_path: Path, text: str) -> list[str]:
    report = diagnose_text(tmp_path, text)
    return [f.summary for f in report.findings if f.id == "nccl.env"]


def test_a_misspelt_name_in_a_sentence_is_corrected(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        "I put export NCCL_SOCKET_IFNAMES=eth0 in the job script but NCCL_DEBUG=INFO still "
        "shows bootstrap on docker0. Am I setting it wrong?\n",
    )
    (env,) = [f for f in report.findings if f.id == "nccl.env"]
    assert (
        "NCCL_SOCKET_IFNAMES (as written) is not read by anything; did you mean "
        "NCCL_SOCKET_IFNAME?" in env.summary
    )
    assert env.severity is Severity.WARNING
    assert env.confidence is Confidence.MEDIUM  # the job's own environment was not seen
    assert [c.line for c in env.evidence] == [1]
    assert report.top(1) == ["nccl.env"]


def test_a_value_nccl_reads_as_zero_is_corrected(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        "I export NCCL_IB_DISABLE=true because I want sockets for a test, but the log still "
        "says NET/IB and it keeps using IB.\n",
    )
    (env,) = [f for f in report.findings if f.id == "nccl.env"]
    assert "NCCL_IB_DISABLE: 'true' is not a number: NCCL reads it as 0" in env.summary
    assert report.top(1) == ["nccl.env"]
    algo = _env(tmp_path, "Tried forcing NCCL_ALGO=ring,tree_v2 and nothing changes.\n")
    assert algo == [
        (
            "1 NCCL/torch setting(s) wrong or harmful: NCCL_ALGO: unknown value 'tree_v2'; "
            "expected Tree, Ring, CollNet, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT "
            "(as written)"
        )
    ]


def test_settings_written_right_are_not_corrected(tmp_path: Path) -> None:
    assert not _env(
        tmp_path,
        "I set NCCL_SOCKET_IFNAME=eth0 and NCCL_IB_DISABLE=1, and TORCH_NCCL_BLOCKING_WAIT=1 "
        "too, but the job still hangs at the first allreduce.\n",
    )
    # a family with a wildcard or a trailing underscore, a name in lower case
    assert not _env(
        tmp_path,
        "None of the NCCL_IB_* variables changed anything, nor the NCCL_SOCKET_ ones, and "
        "nccl_socket_ifnames=eth0 was a typo of mine in this post only.\n",
    )


def test_a_name_the_jobs_output_shows_is_read_from_the_output(tmp_path: Path) -> None:
    summaries = _env(
        tmp_path,
        "NCCL_SOCKET_IFNAMES=eth0\n"  # the environment dump
        "I set NCCL_SOCKET_IFNAMES=eth0 as the docs say.\n",
    )
    assert summaries == [
        (
            "1 NCCL/torch setting(s) wrong or harmful: NCCL_SOCKET_IFNAMES is not read by "
            "anything; did you mean NCCL_SOCKET_IFNAME?"
        )
    ]


WATCHDOG = (
    "[rank3]:[E1205 08:12:44.801 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective "
    "operation timeout: WorkNCCL(SeqNum=4471, OpType=_ALLGATHER_BASE, NumelIn=1048576, "
    "NumelOut=8388608, Timeout(ms)=600000) ran for 600017 milliseconds before timing out.\n"
)


def test_beside_a_timeout_a_misspelt_interface_is_weighed_a_bad_log_level_noted(
    tmp_path: Path,
) -> None:
    wrong_name = diagnose_text(tmp_path, WATCHDOG + "Two nodes; I set NCCL_SOCKET_IFNAMES=ib0.\n")
    assert wrong_name.top(3)[:2] == ["app.hang", "nccl.env"]
    log_level = diagnose_text(tmp_path, WATCHDOG + "Two nodes; I set NCCL_DEBUG=INFOO.\n")
    (env,) = [f for f in log_level.findings if f.id == "nccl.env"]
    assert env.severity is Severity.INFO
    assert not env.cause
    assert "nccl.env" not in log_level.top(3)
