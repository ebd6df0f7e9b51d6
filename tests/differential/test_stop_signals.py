"""A rank that died of a signal: the signal tells who ended it.

SIGTERM, SIGINT and SIGHUP are sent by another process: torchrun's agent and mp.spawn stop
the other workers when one fails, a scheduler or a person stops the job. The rank itself did
nothing wrong, so its death is the weakest symptom in the evidence: any other failure, or the
reporter's words, lead; alone it ranks the senders' reasons, and where the scheduler says it
stopped the job as routine (preemption) it is no failure at all. SIGFPE and SIGILL are the
process's own faults, read as a crash. Each case runs the whole pipeline on a job's output as
torch (multiprocessing/spawn.py, elastic's error summary, DataLoader.cpp) and srun print it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.facts.catalogue import signature_of
from nccl_doctor.knowledge.signals import signal_name
from nccl_doctor.knowledge.signatures import by_id
from nccl_doctor.report import Report
from tests.helpers import child_failed, critical_ids, diagnose_text

TERMINATED = "a rank was stopped by a signal from outside it (SIGTERM, SIGINT or SIGHUP)"
CRASHED = "a rank crashed (SIGSEGV, SIGFPE or SIGILL)"


def _child_failed(exitcode: int, name: str) -> str:
    return child_failed(0, exitcode, f"Signal {-exitcode} ({name}) received by PID 20113")


SPAWN = (
    "Traceback (most recent call last):\n"
    '  File "/workspace/train.py", line 120, in <module>\n'
    "    mp.spawn(main, args=(world_size,), nprocs=world_size, join=True)\n"
    '  File "/usr/lib/python3/dist-packages/torch/multiprocessing/spawn.py", line 140, in join\n'
    "    raise ProcessExitedException(\n"
)
LOADER = (
    "Traceback (most recent call last):\n"
    '  File "/workspace/train.py", line 61, in main\n'
    "    for step, batch in enumerate(loader):\n"
    '  File "/usr/lib/python3/dist-packages/torch/utils/data/_utils/signal_handling.py", '
    "line 67, in handler\n"
    "    _error_if_any_worker_fails()\n"
)


def _report(tmp_path: Path, text: str) -> Report:
    return diagnose_text(tmp_path, text)


def _no_critical(report: Report) -> bool:
    return not any(f.severity.value == "critical" for f in report.findings)


def test_a_rank_stopped_from_outside_ranks_the_senders_reasons(tmp_path: Path) -> None:
    report = _report(tmp_path, _child_failed(-15, "SIGTERM"))
    assert report.hypotheses[0].symptom == TERMINATED
    assert [h.id for h in report.hypotheses] == [
        "launch.rank_crash",
        "app.hang",
        "host.resources",
        "gpu.xid",
    ]
    assert report.hypotheses[0].for_[0].startswith("another process failed first")
    assert _no_critical(report)


@pytest.mark.parametrize("signal", ["SIGTERM", "SIGINT", "SIGHUP"])
def test_mp_spawn_names_the_stop_signal(tmp_path: Path, signal: str) -> None:
    text = SPAWN + (
        "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal "
        f"{signal}\n"
    )
    report = _report(tmp_path, text)
    assert report.hypotheses[0].symptom == TERMINATED
    assert report.hypotheses[0].id == "launch.rank_crash"


def test_any_other_failure_outranks_a_stopped_rank(tmp_path: Path) -> None:
    # rank 0 was stopped by torchrun after rank 3's own exception; the summary's root cause
    # is the stopped one (its failure was recorded first), the cause is rank 3's
    text = _child_failed(-15, "SIGTERM") + (
        "[rank3]: Traceback (most recent call last):\n"
        '[rank3]:   File "/workspace/train.py", line 88, in collate\n'
        '[rank3]:     ids = sample["input_ids"]\n'
        "[rank3]: KeyError: 'input_ids'\n"
    )
    report = _report(tmp_path, text)
    assert report.hypotheses[0].symptom != TERMINATED
    assert report.hypotheses[0].id == "launch.rank_crash"


def test_the_time_limit_explains_the_tasks_srun_saw_terminated(tmp_path: Path) -> None:
    text = (
        "[rank0]: epoch 2 step 4100 loss 2.0113\n"
        "srun: error: gpu-a-12: tasks 0-7: Terminated\n"
        "slurmstepd: error: *** JOB 998877 ON gpu-a-12 CANCELLED AT 2024-05-02T10:11:12 DUE TO "
        "TIME LIMIT ***\n"
    )
    report = _report(tmp_path, text)
    assert report.hypotheses[0].symptom == (
        "the scheduler ended the job at its time limit, with no error of its own"
    )


def test_the_reporters_words_outrank_a_stopped_rank(tmp_path: Path) -> None:
    text = (
        "Training hangs at step 200 with 16 GPUs; after an hour I stopped it with scancel.\n"
        "```\n" + _child_failed(-15, "SIGTERM") + "```\n"
    )
    report = _report(tmp_path, text)
    assert report.hypotheses[0].symptom == "the job hangs without an error (the reporter's words)"


def test_a_preempted_job_whose_ranks_torch_saw_stopped_is_no_failure(tmp_path: Path) -> None:
    text = (
        "slurmstepd: error: *** STEP 88123.0 ON gpu-a-12 CANCELLED AT 2024-06-11T03:00:01 DUE "
        "TO PREEMPTION ***\n" + _child_failed(-15, "SIGTERM")
    )
    report = _report(tmp_path, text)
    assert report.hypotheses == ()
    assert _no_critical(report)


@pytest.mark.parametrize("signal", ["SIGFPE", "SIGILL"])
def test_a_native_fault_of_the_process_reads_as_a_crash(tmp_path: Path, signal: str) -> None:
    exc = "torch.multiprocessing.spawn.ProcessExitedException"
    line = f"{exc}: process 2 terminated with signal {signal}"
    report = _report(tmp_path, SPAWN + line + "\n")
    assert critical_ids(report) == ["launch.rank_crash"]
    # its alternatives are the causes of a crash
    assert report.hypotheses[0].symptom == CRASHED
    assert signature_of(line) == by_id()[f"torch.mp.exit_signal_{signal.lower()}"]


@pytest.mark.parametrize(
    ("text", "symptom", "signature"),
    [
        ("Floating point exception", CRASHED, "torch.dataloader.worker_killed_sigfpe"),
        ("Segmentation fault", CRASHED, "torch.dataloader.worker_killed_sigsegv"),
        ("Aborted", CRASHED, "torch.dataloader.worker_killed_sigabrt"),
        ("Terminated", TERMINATED, "torch.dataloader.worker_killed_sigterm"),
    ],
)
def test_a_data_loader_worker_killed_by_a_signal(
    tmp_path: Path, text: str, symptom: str, signature: str
) -> None:
    line = f"RuntimeError: DataLoader worker (pid 12345) is killed by signal: {text}. \n"
    report = _report(tmp_path, LOADER + line)
    lead = report.hypotheses[0]
    assert (lead.symptom, lead.id) == (symptom, "launch.rank_crash")
    assert signature in lead.for_[0]


def test_the_workers_own_fault_handler_line_reads_as_a_crash(tmp_path: Path) -> None:
    text = (
        "ERROR: Unexpected floating-point exception encountered in worker.\n"
        + LOADER
        + "RuntimeError: DataLoader worker (pid 12345) is killed by signal: "
        "Floating point exception. \n"
    )
    report = _report(tmp_path, text)
    assert report.hypotheses[0].symptom == CRASHED


def test_the_short_store_error_of_torch_2_6_blames_the_stores_host(tmp_path: Path) -> None:
    text = (
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/workspace/train.py", line 40, in <module>\n'
        "[rank1]:     dist.barrier()\n"
        "[rank1]: torch.distributed.DistNetworkError: failed to recv, got 0 bytes\n"
    )
    report = _report(tmp_path, text)
    lead = report.hypotheses[0]
    assert lead.symptom == "the rendezvous or the c10d store timed out or could not connect"
    assert lead.id == "launch.rank_crash"
    assert "torch.c10d.recv_closed_short" in lead.for_[0]


@pytest.mark.parametrize(
    ("code", "name"),
    [(-8, "SIGFPE"), (-4, "SIGILL"), (136, "SIGFPE"), (132, "SIGILL"), (-15, "SIGTERM")],
)
def test_exit_codes_name_the_fault_signals(code: int, name: str) -> None:
    assert signal_name(code) == name
