"""Readings the blind battery N ("older stacks", 2017-2022) asked for: each fires on a small
realistic report, and stays silent where its mechanism does not hold."""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.signs.settings import settings_that_did_not_help, settings_that_worked
from tests.helpers import critical_ids, diagnose_text, facts_text

# -- "nothing helps" denies the outcome -----------------------------------------------------------


def test_settings_tried_where_nothing_helps_did_not_help(tmp_path: Path) -> None:
    text = "I tried NCCL_P2P_DISABLE=1 and NCCL_BUFFSIZE changes, nothing helps.\n"
    facts = facts_text(tmp_path, text)
    assert settings_that_worked(facts) == ()
    assert [s.name for s in settings_that_did_not_help(facts)][:1] == ["NCCL_P2P_DISABLE"]


def test_a_setting_that_helps_still_helps(tmp_path: Path) -> None:
    facts = facts_text(tmp_path, "I tried NCCL_P2P_DISABLE=1 and it helps.\n")
    assert [(s.name, s.value) for s in settings_that_worked(facts)] == [("NCCL_P2P_DISABLE", "1")]


# -- error 999 at the first CUDA call, retold, after a suspend ------------------------------------

_RESUMED = (
    "I put the machine to sleep (systemctl suspend) in the evening. In the morning both ranks "
    "fail with CUDA error: unknown error at the first .cuda() call; nvidia-smi looks fine.\n"
)


def test_unknown_error_at_the_first_cuda_call_after_suspend_is_uvm(tmp_path: Path) -> None:
    assert critical_ids(diagnose_text(tmp_path, _RESUMED))[:1] == ["driver.uvm"]


def test_unknown_error_later_in_training_after_suspend_is_no_uvm(tmp_path: Path) -> None:
    text = _RESUMED.replace("at the first .cuda() call", "after 2000 steps of training")
    assert "driver.uvm" not in critical_ids(diagnose_text(tmp_path, text))


# -- multiprocessing's ancdata message in a sentence that blames NCCL -----------------------------


def test_ancdata_told_beside_nccl_words_is_the_open_file_limit(tmp_path: Path) -> None:
    text = (
        "After two epochs a rank dies with the message received 0 items of ancdata from the "
        "DataLoader, and the others end in NCCL watchdog timeouts, so I thought NCCL was it.\n"
    )
    report = diagnose_text(tmp_path, text)
    assert critical_ids(report)[:1] == ["host.resources"]
    assert "open-file limit" in report.findings[0].summary


def test_ancdata_said_to_be_gone_is_no_limit(tmp_path: Path) -> None:
    text = (
        "Since we raised ulimit -n we no longer see received 0 items of ancdata; now the NCCL "
        "watchdog times out in the first all_reduce after two epochs.\n"
    )
    assert "host.resources" not in critical_ids(diagnose_text(tmp_path, text))


# -- the earliest line of the job on one rank, before everyone else's timeouts ---------------------


def test_the_earliest_thing_in_one_ranks_file_is_that_ranks_crash(tmp_path: Path) -> None:
    text = (
        "All ranks except rank 11 print the NCCL watchdog timeout after 30 minutes. The earliest "
        "thing in the whole job is in rank 11's file, about 31 minutes before everyone else's "
        "timeouts: a Python traceback from the data loading, then the file ends.\n"
    )
    assert diagnose_text(tmp_path, text).top(1) == ["launch.rank_crash"]


def test_the_earliest_line_naming_no_rank_is_no_crash(tmp_path: Path) -> None:
    text = (
        "All ranks print the NCCL watchdog timeout after 30 minutes. The earliest thing in the "
        "whole job is the warning about NCCL_ASYNC_ERROR_HANDLING before everyone else's lines.\n"
    )
    assert diagnose_text(tmp_path, text).top(1) != ["launch.rank_crash"]


# -- the launcher's root cause retold with a signal of the process's own fault --------------------

_THREAD = (
    "Most ranks report that the connection was closed by peer or that a remote process "
    "exited. {said}\n"
)


def test_the_root_cause_retold_with_sigsegv_is_that_ranks_crash(tmp_path: Path) -> None:
    said = (
        "The root cause entry in the torchrun summary always has exitcode -11 and says Signal 11 "
        "(SIGSEGV) received by that PID, for a different local rank each time."
    )
    assert diagnose_text(tmp_path, _THREAD.format(said=said)).top(1) == ["launch.rank_crash"]


def test_the_root_cause_retold_with_sigterm_is_no_crash_of_its_own(tmp_path: Path) -> None:
    said = (
        "The root cause entry in the torchrun summary has exitcode -15 (SIGTERM): our scheduler "
        "preempts the job."
    )
    assert diagnose_text(tmp_path, _THREAD.format(said=said)).top(1) != ["launch.rank_crash"]


# -- GPUDirect RDMA asked about is no GDR problem said --------------------------------------------

_REG_MR = (
    "node-b:214:342 [0] misc/ibvwrap.cc:252 NCCL WARN Call to ibv_reg_mr failed\n"
    "node-b:214:342 [0] NCCL INFO transport/net_ib.cc:613 -> 2\n"
    "{said}\n"
)


def test_gpudirect_said_not_loaded_is_a_gdr_problem(tmp_path: Path) -> None:
    said = "On node-b nv_peer_mem is not loaded, the other node has it."
    findings = diagnose_text(tmp_path, _REG_MR.format(said=said)).findings
    assert [f.id for f in findings if f.id == "net.gdr"] == ["net.gdr"]


def test_gpudirect_asked_about_is_no_gdr_problem(tmp_path: Path) -> None:
    said = (
        "Is GPUDirect RDMA the problem here (GDRDMA shows in the channel line, nv_peer_mem is "
        "loaded on the hosts)?"
    )
    findings = diagnose_text(tmp_path, _REG_MR.format(said=said)).findings
    assert "net.gdr" not in [f.id for f in findings]


# -- the rank the others wait for, still at its own work ------------------------------------------

_RANK0_ONLY = (
    "Every 10 epochs we evaluate and save a checkpoint on rank 0 only (if dist.get_rank() == 0: "
    "evaluate(model.module); save_checkpoint()). At epoch 10 all ranks except rank 0 print the "
    "NCCL watchdog timeout for an ALLREDUCE after 1800000 ms, with the same sequence number. "
    "{said}\n"
)


def test_rank_0_still_writing_its_checkpoint_is_a_long_step(tmp_path: Path) -> None:
    said = "Rank 0's own log shows it was in the middle of writing the checkpoint to NFS."
    assert diagnose_text(tmp_path, _RANK0_ONLY.format(said=said)).top(1) == ["app.hang"]


def test_rank_0_calling_a_collective_of_its_own_is_a_mismatch(tmp_path: Path) -> None:
    said = "Rank 0's evaluation calls dist.all_gather to collect the predictions."
    assert diagnose_text(tmp_path, _RANK0_ONLY.format(said=said)).top(1) == [
        "app.collective_mismatch"
    ]
