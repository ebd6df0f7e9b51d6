"""A job the reporter says completes, and a message they call an error, is no failure.

People ask what an alarming line means while the job does its work ("the
training completes but prints these errors", "how to fix this error;
errno: 97 ..."). Ranking a failure's causes then reads as a diagnosis of a
failure nobody had. Where every failure word is a name for a line ("error")
and the reporter says the job completes, or the line quotes a notice the
evidence shows, no failure is said. A condition of success ("works fine with
NCCL_P2P_DISABLE=1", "runs fine on one GPU") or a failure of the job's own
("crashes at the end") still is. Every case runs the whole pipeline.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import critical_ids, diagnose_text

#: Open MPI's single-copy transport denied in an unprivileged container: no NCCL line.
MPI_LINES = (
    "[96c7e3d99641:24984] Read -1, expected 122880, errno = 1\n"
    "[96c7e3d99641:24986] Read -1, expected 122880, errno = 1\n"
)


def test_a_job_that_completes_with_lines_called_errors_gets_no_causes(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        "Title: Horovod error: Read -1, expected\n\n"
        "Running the example on 4 GPUs of one node, I get the error below. "
        "The training completes but the output is full of these errors:\n"
        + MPI_LINES
        + "How severe is this error?\n",
    )
    assert report.hypotheses == ()
    assert critical_ids(report) == []


def test_works_fine_said_first_in_a_sentence_counts(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        "mpirun -np 8 -H localhost:8 python train.py\n"
        "Works fine, uses all gpus (8) and finish as expected.\n"
        "But the output is full of errors like these:\n" + MPI_LINES,
    )
    assert report.hypotheses == ()


def test_the_same_lines_from_a_job_that_fails_still_get_causes(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        "Title: Horovod error: Read -1, expected\n\n"
        "Running the example on 4 GPUs of one node fails with the error below:\n" + MPI_LINES,
    )
    assert report.hypotheses
    assert report.hypotheses[0].symptom.startswith("a rank failed")


def test_success_under_a_condition_is_a_workaround_not_health(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        "Training on 4 GPUs gives an error at the first step. "
        "It works fine with NCCL_P2P_DISABLE=1.\n",
    )
    assert report.top(1) == ["nccl.p2p"]


def test_success_at_a_smaller_scale_is_a_contrast_not_health(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        "I checked single node training and it works fine.\n"
        "Error occurred during num_nodes=2\n"
        "init_method=tcp://10.0.0.110:2376\n",
    )
    assert report.hypotheses


def test_a_crash_beside_a_completed_run_is_still_a_failure(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        "The training completes, but then rank 3 crashes with this error:\n" + MPI_LINES,
    )
    assert report.hypotheses


#: c10d's warning for one address family of several (a host without IPv6): a notice.
IPV6 = (
    "[W socket.cpp:464] [c10d] The server socket cannot be initialized on [::]:50704 "
    "(errno: 97 - Address family not supported by protocol).\n"
)


def test_a_title_quoting_part_of_a_notice_says_no_failure(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        "[Issue title: hello; how to fix this error; errno: 97 - Address family not "
        "supported by protocol]\n\n"
        "python main.py --num_workers 2\n" + IPV6 + "100%|#####| 994/994 [02:25<00:00]\n",
    )
    assert report.hypotheses == ()
    assert report.notices


def test_a_notice_quoted_beside_a_failure_of_the_job_still_gets_causes(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        "[Issue title: training fails to start; errno: 97 - Address family not supported by "
        "protocol]\n\n" + IPV6,
    )
    assert report.hypotheses
