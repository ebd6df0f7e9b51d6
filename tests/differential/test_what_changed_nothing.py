"""What the reporter tried that changed nothing, and a machine that needs a power cycle.

An expert's first questions are experiments: does ``NCCL_P2P_DISABLE=1``
change it? does gloo fail the same way? one GPU? Each answer that leaves the
failure as it was rules a path out. Every case runs the whole pipeline on a
small, realistic bug report, and each cue has a case where it must stay silent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import diagnose_text

HANG = (
    "DDP training on one machine with 4x RTX A6000 hangs after a few hundred steps.\n"
    "GPU utilization stays at 100% and nothing is printed.\n"
)
FAILURE = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 41, in <module>\n'
    "    model = DDP(model, device_ids=[rank])\n"
    "RuntimeError: Stop_waiting response is expected\n"
    "\n"
)


def _p2p(report_ids: list[str]) -> int:
    return report_ids.index("nccl.p2p") if "nccl.p2p" in report_ids else 99


@pytest.mark.parametrize(
    "said",
    [
        "I tried NCCL_P2P_DISABLE=1 but it still hangs.",
        "Even with NCCL_P2P_DISABLE=1 the job hangs at the same step.",
        "export NCCL_P2P_DISABLE=1 did not help.",
        "NCCL_P2P_DISABLE also tried all cases.",
    ],
)
def test_p2p_turned_off_without_help_rules_p2p_out(tmp_path: Path, said: str) -> None:
    before = diagnose_text(tmp_path, HANG)
    assert before.top(1) == ["nccl.p2p"]
    after = diagnose_text(tmp_path, HANG + said + "\n")
    ids = [h.id for h in after.hypotheses]
    assert ids[0] != "nccl.p2p"
    assert _p2p(ids) > 0
    p2p = [h for h in after.hypotheses if h.id == "nccl.p2p"]
    # the reason names the switch and that the failure stayed (said in words, or an export
    # line read as the job's environment)
    assert all(
        any(
            "NCCL_P2P_DISABLE" in r and ("did not change the failure" in r or "still fails" in r)
            for r in h.against
        )
        for h in p2p
    )


@pytest.mark.parametrize(
    "said",
    [
        "Setting NCCL_P2P_DISABLE=1 fixed it, but it is slower.",
        # the value that leaves P2P on turns nothing off: it says nothing about P2P
        "I tried NCCL_P2P_DISABLE=0, still hangs.",
        # a switch that is no path (a timeout) rules no path out
        "TORCH_NCCL_ASYNC_ERROR_HANDLING=1 did not help.",
    ],
)
def test_a_setting_that_worked_or_turns_no_path_off_does_not_count_against_p2p(
    tmp_path: Path, said: str
) -> None:
    report = diagnose_text(tmp_path, HANG + said + "\n")
    top = [*(f.id for f in report.findings), *(h.id for h in report.hypotheses)]
    assert top[0] == "nccl.p2p"
    assert all("did not change the failure" not in r for h in report.hypotheses for r in h.against)


def test_ib_turned_off_without_help_rules_the_ib_ids_out(tmp_path: Path) -> None:
    text = (
        "Training on two nodes (8x A100 and InfiniBand each) fails with NCCL error: "
        "unhandled system error.\n"
    )
    before = diagnose_text(tmp_path, text)
    assert "net.ib_config" in before.top(4)
    report = diagnose_text(tmp_path, text + "Setting NCCL_IB_DISABLE=1 did not help.\n")
    assert "net.ib_config" not in [h.id for h in report.hypotheses]
    assert report.findings[0].id == before.findings[0].id == "net.unreachable"


def test_gloo_failing_the_same_way_points_under_both_backends(tmp_path: Path) -> None:
    before = diagnose_text(tmp_path, FAILURE)
    assert before.hypotheses[0].id == "nccl.p2p"
    report = diagnose_text(tmp_path, FAILURE + "With backend='gloo' I get the same error.\n")
    ids = [h.id for h in report.hypotheses]
    assert ids[0] in ("net.unreachable", "net.socket_interface")
    assert "nccl.p2p" not in ids[:3]
    assert any("gloo fails the same way" in r for r in report.hypotheses[0].for_)


@pytest.mark.parametrize(
    "said",
    [
        "It works with gloo.",
        "The same code with gloo works fine.",
        "I have not tried gloo yet.",
    ],
)
def test_gloo_working_or_untried_is_not_gloo_failing(tmp_path: Path, said: str) -> None:
    report = diagnose_text(tmp_path, FAILURE + said + "\n")
    assert report.hypotheses[0].id == "nccl.p2p"
    assert all("gloo fails the same way" not in r for h in report.hypotheses for r in h.for_)


@pytest.mark.parametrize(
    "said",
    [
        "It even hangs with a single GPU.",
        "Training on a single GPU also gets stuck at the same point.",
    ],
)
def test_one_gpu_failing_too_rules_the_gpu_to_gpu_paths_out(tmp_path: Path, said: str) -> None:
    report = diagnose_text(tmp_path, HANG + said + "\n")
    ids = [h.id for h in report.hypotheses]
    assert _p2p(ids) > 2
    assert "nccl.shm" not in ids[:3]


@pytest.mark.parametrize(
    "said",
    [
        "A single GPU works fine, 2 or more GPUs hang.",
        "Training on a single GPU is fine, but on 4 GPUs it hangs.",
    ],
)
def test_one_gpu_working_is_not_one_gpu_failing(tmp_path: Path, said: str) -> None:
    report = diagnose_text(tmp_path, HANG + said + "\n")
    assert report.hypotheses[0].id == "nccl.p2p"
    assert all("fails on a single GPU too" not in r for h in report.hypotheses for r in h.against)


def test_a_machine_that_needs_a_power_cycle_lost_a_gpu(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        HANG + "Then the computer must be rebooted by removing the power.\n",
    )
    top = report.hypotheses[0]
    assert top.id == "gpu.lost"
    assert (
        top.for_.count(
            "only a reboot or a power cycle brings the machine back: the driver lost a GPU"
        )
        == 1
    )  # the strong shift that brought it in is said once
    assert "app.hang" not in report.top(3)


@pytest.mark.parametrize(
    "said",
    [
        "I had to restart the training script.",
        "I had to reboot after updating the driver to 550.",
        # a desktop that freezes while the job runs and recovers: no GPU was lost
        "While nccl-tests runs the system freezes; when the test finishes it is back to normal.",
    ],
)
def test_a_restarted_job_or_a_passing_freeze_is_no_lost_gpu(tmp_path: Path, said: str) -> None:
    report = diagnose_text(tmp_path, HANG + said + "\n")
    assert "gpu.lost" not in [h.id for h in report.hypotheses]
