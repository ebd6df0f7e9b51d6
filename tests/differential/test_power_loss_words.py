"""The whole machine turning itself off or restarting under the job is its own symptom.

A job that stops is a hang or a failure; a host that loses power or panics under the GPUs'
load is the power supply's protection tripped by the GPUs' transients, heat, or a fault that
reset the host. The reporter's words open the class; a reboot someone did ("after a reboot",
"I had to restart the machine") and a system that ends a process do not. Every case runs the
whole pipeline.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import diagnose_text, ranked_without_critical

_LABEL = "the whole machine powered off or restarted under the job (the reporter's words)"


@pytest.mark.parametrize(
    "said",
    [
        (
            "Title: [bug] vllm/qwen38-27b-dual-fast usage is shutting down system\n"
            "Two RTX 3090s, tensor parallel 2, power-capped to 280 W.\n"
        ),
        "As soon as DDP training starts on both 4090s the PC reboots.\n",
        "The server suddenly powers off a few minutes into the all_reduce benchmark.\n",
        "双卡训练几分钟后电脑直接断电重启\n",
    ],
)
def test_a_machine_that_turns_itself_off_points_at_power(tmp_path: Path, said: str) -> None:
    report = diagnose_text(tmp_path, said)
    assert report.hypotheses[0].symptom == _LABEL
    assert [h.id for h in report.hypotheses][:2] == ["gpu.thermal_power", "gpu.xid"]


@pytest.mark.parametrize(
    "said",
    [
        "After a reboot of the machine NCCL fails with unhandled system error.\n",
        "I had to restart the server after installing the driver, now training hangs.\n",
        "The system shuts down the process after 30 minutes with a watchdog timeout.\n",
        # a machine named, not one turning itself off
        "DDP on a powerful machine with 8 A100s fails with unhandled system error.\n",
        "The vLLM server restarts the worker and then NCCL fails with a timeout.\n",
        "I shut down the server and moved the job; it fails the same way.\n",
    ],
)
def test_a_reboot_someone_did_is_not_the_symptom(tmp_path: Path, said: str) -> None:
    report = diagnose_text(tmp_path, said)
    assert all(h.symptom != _LABEL for h in report.hypotheses)
    assert "gpu.thermal_power" not in ranked_without_critical(tmp_path, said)[:1]
