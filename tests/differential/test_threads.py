"""Readings the blind battery R ("the whole issue thread") asked for: other people's cases in a
thread are not the reporter's outcome, and a rendezvous said to complete rules out a launch that
gives no node rank; each firing and silent."""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.signs.settings import settings_that_worked
from tests.helpers import critical_ids, diagnose_text, facts_text

_TIMEOUT = (
    "[rank1]:[E912 10:41:07.513204118 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
    "Timeout(ms)=1800000) ran for 1800071 milliseconds before timing out.\n"
)


def test_a_setting_that_worked_for_another_user_is_not_the_reporters(tmp_path: Path) -> None:
    text = (
        _TIMEOUT
        + "我遇到过类似的，是 NCCL_P2P_LEVEL 的问题，设置 NCCL_P2P_LEVEL=NVL 就好了，可以试试。\n"
    )
    assert settings_that_worked(facts_text(tmp_path, text)) == ()
    assert "nccl.p2p" not in critical_ids(diagnose_text(tmp_path, text))


def test_advice_to_try_a_setting_is_no_outcome(tmp_path: Path) -> None:
    text = _TIMEOUT + "You can try NCCL_P2P_DISABLE=1, that fixed it on our cluster.\n"
    assert settings_that_worked(facts_text(tmp_path, text)) == ()


def test_the_reporters_own_setting_that_worked_still_counts(tmp_path: Path) -> None:
    text = _TIMEOUT + "With NCCL_P2P_DISABLE=1 our job runs through without the timeout.\n"
    found = settings_that_worked(facts_text(tmp_path, text))
    assert [(w.name, w.value) for w in found] == [("NCCL_P2P_DISABLE", "1")]


_LAUNCH = "We run torchrun with --nnodes 2 --nproc_per_node 8 train.py on both servers. {after}\n"


def test_a_launch_without_a_node_rank_is_the_rendezvous(tmp_path: Path) -> None:
    text = _LAUNCH.format(after="Both sides wait and nothing happens for 30 minutes.")
    assert diagnose_text(tmp_path, text).top(1) == ["launch.rendezvous"]


def test_a_rendezvous_said_to_complete_rules_out_a_missing_node_rank(tmp_path: Path) -> None:
    text = _LAUNCH.format(
        after="The rendezvous completes, both sides get their ranks, then the first all-reduce "
        "fails with an NCCL unhandled system error."
    )
    findings = diagnose_text(tmp_path, text).findings
    assert not [f for f in findings if f.id == "launch.rendezvous" and "node_rank" in f.summary]


# -- a duplicate GPU pairing ranks whose init lines name two machines -----------------------------

_INITS = (
    "trainer-0:201:201 [0] NCCL INFO NCCL_HOSTID set by environment to trainer\n"
    "trainer-1:198:198 [0] NCCL INFO NCCL_HOSTID set by environment to trainer\n"
    "trainer-0:201:412 [0] NCCL INFO ncclCommInitRank comm 0x5621f4c0b2a0 rank 0 nranks 16 "
    "cudaDev 0 nvmlDev 0 busId {bus0} commId 0x4f1c9a2e73b05d18 - Init START\n"
    "{host1}:198:409 [0] NCCL INFO ncclCommInitRank comm 0x55d0e13a7f60 rank 8 nranks 16 "
    "cudaDev 0 nvmlDev 0 busId 7000 commId 0x4f1c9a2e73b05d18 - Init START\n"
    "{host1}:198:409 [0] init.cc:748 NCCL WARN Duplicate GPU detected : rank 8 and rank 0 both "
    "on CUDA device 7000\n"
)


def test_a_duplicate_gpu_pairing_ranks_of_two_machines_is_host_identity(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _INITS.format(bus0="7000", host1="trainer-1"))
    assert critical_ids(report)[:1] == ["nccl.host_identity"]
    summary = report.findings[0].summary
    assert "pairing ranks on 2 machines (trainer-0, trainer-1)" in summary
    assert "NCCL_HOSTID is set ('trainer')" in summary


def test_a_duplicate_gpu_pairing_ranks_of_one_machine_is_a_duplicate(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _INITS.format(bus0="7000", host1="trainer-0"))
    assert critical_ids(report)[:1] == ["nccl.duplicate_gpu"]
