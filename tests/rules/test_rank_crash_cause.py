"""A rank whose own NCCL call failed died first; why the call failed is the cause.

launch.rank_crash names the first death and folds the survivors' errors under it. A rank
whose own error is PyTorch's report of a failed NCCL call (not ncclRemoteError) leaves the
cause open: the stack under the job failed there. The finding is then context, and the
differential of the NCCL error leads. A rank's own Python error stays the cause. A SIGKILL
with nothing of its own names who went first, not what killed it (the host's OOM killer
most often): the finding stays critical, is no root cause, and the kill's ranked causes
lead the answer. Every case runs the whole pipeline.
"""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.findings import Severity
from tests.helpers import child_failed, diagnose_text

HOST = "gpu-node-3"
LAUNCH = "$ deepspeed --num_gpus 8 train.py --deepspeed ds_config.json\n"


KILLED = child_failed(3, -9, "Signal 9 (SIGKILL) received by PID 20113", host=HOST)
NCCL_FAILED = (
    "[rank1]: Traceback (most recent call last):\n"
    '[rank1]:   File "train.py", line 40, in <module>\n'
    "[rank1]:     model = DDP(model, device_ids=[local_rank])\n"
    "[rank1]: torch.distributed.DistBackendError: NCCL error in: "
    "../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, unhandled system error (run with "
    "NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n" + child_failed(1, 1, host=HOST)
)
OWN_BUG = (
    "[rank1]: Traceback (most recent call last):\n"
    '[rank1]:   File "train.py", line 88, in <module>\n'
    "[rank1]:     batch = collate(samples)\n"
    "[rank1]: KeyError: 'input_ids'\n" + child_failed(1, 1, host=HOST)
)


#: the job's one error is an NCCL report no rank is named on; the launcher says which rank
#: exited with an error code, its traceback not kept
UNNAMED = (
    "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)\n"
    "E0323 21:57:08.583000 23 torch/distributed/elastic/multiprocessing/api.py:869] failed "
    "(exitcode: 1) local_rank: 0 (pid: 88) of binary: /usr/bin/python3\n"
)


def test_an_unnamed_nccl_error_beside_an_exit_is_that_ranks(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, LAUNCH + UNNAMED)
    crash = [f for f in report.findings if f.id == "launch.rank_crash"]
    assert [(f.severity, f.root_cause) for f in crash] == [(Severity.INFO, False)]
    assert report.top(1) == ["nccl.shm"]


def test_a_kill_beside_an_nccl_error_stays_the_cause(tmp_path: Path) -> None:
    killed = UNNAMED.replace("(exitcode: 1)", "(exitcode: -9)")
    report = diagnose_text(tmp_path, LAUNCH + killed)
    assert report.top(1) == ["launch.rank_crash"]


def test_a_failed_nccl_call_leaves_the_cause_to_its_error(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, LAUNCH + NCCL_FAILED)
    crash = [f for f in report.findings if f.id == "launch.rank_crash"]
    assert [(f.severity, f.root_cause) for f in crash] == [(Severity.INFO, False)]
    assert crash[0].summary.startswith("Rank 1 on gpu-node-3 ended first, on a failed NCCL call")
    assert report.hypotheses[0].symptom.startswith("NCCL reported a system error")
    assert report.top(2) == ["nccl.shm", "net.socket_interface"]


def test_a_ranks_own_error_stays_the_cause(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, LAUNCH + OWN_BUG)
    assert report.top(1) == ["launch.rank_crash"]
    crash = report.findings[0]
    assert (crash.severity, crash.root_cause) == (Severity.CRITICAL, True)
    assert "KeyError: 'input_ids'" in crash.summary


def test_a_bare_kill_names_who_and_ranks_what_killed_it(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, LAUNCH + KILLED)
    crash = report.findings[0]
    assert (crash.id, crash.severity, crash.root_cause) == (
        "launch.rank_crash",
        Severity.CRITICAL,
        False,
    )
    assert "SIGKILL" in crash.summary
    assert report.verdict.value == "failed"  # a rank was lost: critical, exit 1
    assert report.hypotheses_heading.startswith("Possible causes of a rank was killed")
    assert report.top(3) == ["host.resources", "app.hang", "gpu.xid"]
    assert report.top(4)[3] == "launch.rank_crash"


WATCHDOG = (
    "[rank{r}]:[E1205 10:11:12.345678901 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=1200, OpType=ALLREDUCE, NumelIn=1048576, "
    "NumelOut=1048576, Timeout(ms)=600000) ran for 600093 milliseconds before timing out.\n"
)
FOUR = "+ torchrun --nnodes=1 --nproc-per-node=4 train.py\n"


def test_ranks_silent_beside_others_timeouts_died_or_stalled_first(tmp_path: Path) -> None:
    # a combined log: ranks 1 and 2 report the timeout, ranks 0 and 3 say nothing
    report = diagnose_text(tmp_path, FOUR + WATCHDOG.format(r=1) + WATCHDOG.format(r=2))
    top = report.findings[0]
    assert top.id == "launch.rank_crash"
    assert top.subjects.ranks == (0, 3)
    assert top.summary.startswith("Ranks 0, 3 never reported the ALLREDUCE SeqNum=1200 timeout")


def test_one_ranks_own_log_says_nothing_of_the_others(tmp_path: Path) -> None:
    # the paste holds rank 3's output alone: the other ranks are absent from it, not silent
    report = diagnose_text(tmp_path, FOUR + "[rank3]: step 1199 loss 2.31\n" + WATCHDOG.format(r=3))
    assert [f.id for f in report.findings] == ["app.hang"]


def test_a_report_that_pastes_some_ranks_lines_says_nothing_of_the_rest(tmp_path: Path) -> None:
    # a person's report pasting two of four ranks' timeouts: the others may only be cut
    said = "The job stops at step 1200 and times out after ten minutes, the log:\n"
    report = diagnose_text(tmp_path, said + FOUR + WATCHDOG.format(r=1) + WATCHDOG.format(r=2))
    assert not any("never reported" in f.summary for f in report.findings)
    # every rank's line but one: that one was silent, the paste or not
    one_left = diagnose_text(
        tmp_path, said + FOUR + "".join(WATCHDOG.format(r=r) for r in (1, 2, 3))
    )
    assert one_left.findings[0].summary.startswith(
        "Rank 0 never reported the ALLREDUCE SeqNum=1200 timeout"
    )
