"""Horovod's failures as its Python side raises them: an NCCL call's error carried by
HorovodInternalError (one entry per ncclResult_t, each with the class that result opens, as
torch's ``NCCL error`` is), horovodrun's start timeout and the elastic driver's reasons to
stop. Before, each fell to the catch-all class; its own success line stays silent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.facts.catalogue import signature_of
from nccl_doctor.knowledge.signatures import by_id
from nccl_doctor.pipeline import diagnose_paths
from nccl_doctor.report import Report
from tests.knowledge._signature_lines import assert_reads_as

INTERNAL = "horovod.common.exceptions.HorovodInternalError: "


def _report(tmp_path: Path, text: str) -> Report:
    path = tmp_path / "log.txt"
    path.write_text(text, encoding="utf-8")
    return diagnose_paths([str(path)])


LINES = [
    (
        INTERNAL + "ncclAllReduce failed: unhandled system error",
        "horovod.nccl.op_failed_system_error",
        "nccl_system",
        {"op_name": "ncclAllReduce"},
    ),
    (
        # NCCL >= 2.19 adds its hint to the text: the short form is its prefix
        INTERNAL + "ncclCommInitRank failed: unhandled cuda error (run with NCCL_DEBUG=INFO for "
        "details)",
        "horovod.nccl.op_failed_unhandled_cuda_error",
        "nccl_unhandled_cuda",
        {"op_name": "ncclCommInitRank"},
    ),
    (
        INTERNAL + "ncclGroupEnd failed: internal error",
        "horovod.nccl.op_failed_internal_error",
        "nccl_internal",
        {"op_name": "ncclGroupEnd"},
    ),
    (
        INTERNAL + "ncclReduceScatter failed: invalid usage",
        "horovod.nccl.op_failed_invalid_usage",
        "nccl_invalid",
        {"op_name": "ncclReduceScatter"},
    ),
    (
        INTERNAL + "NCCL async error: remote process exited or there was a network error",
        "horovod.nccl.async_error_remote_error",
        "nccl_remote",
        {},
    ),
    (
        (
            "horovod.runner.common.util.timeout.TimeoutException: Timed out waiting for tasks to "
            "start. Please check connectivity between servers. You may need to increase the "
            "--start-timeout parameter if you have too many servers. Timeout after 30 seconds."
        ),
        "horovod.runner.start_timeout",
        "store_timeout",
        {"activity": "tasks to start"},
    ),
    (
        # the elastic driver's '{{activity}}' is no f-string piece: Horovod prints it as is
        (
            "TimeoutException: Timed out waiting for {activity}. Please check that you have "
            "enough resources to run at least 4 Horovod processes. Timeout after 600 seconds."
        ),
        "horovod.elastic.start_timeout",
        "store_timeout",
        {"min_np": "4"},
    ),
    (
        "ERROR:root:reset count 3 has exceeded limit 3 -> stop running",
        "horovod.elastic.reset_count_exceeded",
        "failure",
        {"reset_count": "3", "reset_limit": "3"},
    ),
    (
        (
            "RuntimeError: Horovod was shutdown because number of resets during elastic job "
            "exceeded limit: 3"
        ),
        "horovod.elastic.reset_limit",
        "failure",
        {"value": "3"},
    ),
    (
        "ERROR:root:blacklisted slots count == 8 -> stop running",
        "horovod.elastic.all_blacklisted",
        "failure",
        {"size": "8"},
    ),
]


@pytest.mark.parametrize(("line", "ident", "symptom", "fields"), LINES)
def test_horovod_lines_read_as_their_message(
    line: str, ident: str, symptom: str, fields: dict[str, str]
) -> None:
    assert_reads_as(line, ident, symptom, fields)


def test_each_nccl_result_horovod_relays_opens_that_results_class() -> None:
    """ncclGetErrorString's six failure texts, each behind both of Horovod's wrappers."""
    texts = {
        "unhandled cuda error": "nccl_unhandled_cuda",
        "unhandled system error": "nccl_system",
        "internal error": "nccl_internal",
        "invalid argument": "nccl_invalid",
        "invalid usage": "nccl_invalid",
        "remote process exited or there was a network error": "nccl_remote",
    }
    for text, cls in texts.items():
        for line in (f"ncclBroadcast failed: {text}", f"NCCL async error: {text}"):
            sig = signature_of(INTERNAL + line)
            assert sig is not None, line
            assert (sig.library, sig.symptom) == ("horovod", cls)


def test_an_nccl_system_error_in_horovod_reads_as_ncclsystemerror(tmp_path: Path) -> None:
    report = _report(
        tmp_path,
        "[1,0]<stderr>:Traceback (most recent call last):\n"
        '[1,0]<stderr>:  File "train_hvd.py", line 91, in <module>\n'
        "[1,0]<stderr>:    optimizer.step()\n"
        "[1,0]<stderr>:" + INTERNAL + "ncclAllReduce failed: unhandled system error\n",
    )
    first = report.hypotheses[0]
    assert first.symptom.startswith("NCCL reported a system error")
    assert first.id == "nccl.shm"


def test_horovodruns_start_timeout_is_the_network_between_hosts(tmp_path: Path) -> None:
    report = _report(
        tmp_path,
        "$ horovodrun -np 16 -H node1:8,node2:8 python train.py\n"
        "horovod.runner.common.util.timeout.TimeoutException: Timed out waiting for tasks to "
        "start. Please check connectivity between servers. You may need to increase the "
        "--start-timeout parameter if you have too many servers. Timeout after 30 seconds.\n",
    )
    # the network between the hosts, either side of it: the path, or the interface the task
    # service advertised (the store timeout's counts put the interface a little ahead)
    assert {h.id for h in report.hypotheses[:2]} == {"net.unreachable", "net.socket_interface"}
    assert "horovod.runner.start_timeout" in report.hypotheses[0].for_[0]


def test_a_remote_error_in_horovod_is_a_peer_that_died_first(tmp_path: Path) -> None:
    report = _report(
        tmp_path,
        "[1,3]<stderr>:"
        + INTERNAL
        + "NCCL async error: remote process exited or there was a network error\n",
    )
    assert report.hypotheses[0].id == "launch.rank_crash"


def test_elastics_success_line_and_other_failures_of_the_words_stay_silent(
    tmp_path: Path,
) -> None:
    """A worker that succeeded stops the others ('success count'); a non-NCCL call's
    ``failed:`` is no NCCL result."""
    assert signature_of("INFO:root:success count == 4 -> stop running") is None
    assert signature_of("download failed: invalid argument") is None
    report = _report(
        tmp_path,
        "INFO:root:success count == 4 -> stop running\n"
        "[1,0]<stdout>:Epoch 10 finished, loss 0.12\n",
    )
    assert report.hypotheses == ()


def test_a_message_whose_variable_was_renamed_is_one_entry() -> None:
    """0.20's first_root_rank and 0.24+'s first_global_root_rank print the same message."""
    root = by_id()["horovod.common.mismatch_8"]
    assert root.versions.seen == ("v0.20.0", "v0.24.3", "v0.28.1")
    assert "horovod.common.mismatch_10" in by_id()  # the ids after it keep their numbers
    assert "horovod.runner.nonzero_exit_2" not in by_id()
