"""The reporter's words for a taken port: the store's or the rendezvous's bind failed.

"Consistently encountering port conflicts", "two experiments in one docker image": every
launcher (torchrun, accelerate, deepspeed) takes the same default port, so the second job on
a machine cannot bind it. Ports counted, or two jobs sharing GPUs, say nothing of the kind.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import diagnose_text


@pytest.mark.parametrize(
    ("said", "why"),
    [
        (
            (
                "I train two models at once, one per GPU, but the second run fails: I keep "
                "encountering port conflicts.\n"
            ),
            "the port is taken",
        ),
        ("训练第二个模型时报错，端口被占用，无法训练。\n", "the port is taken"),
        (
            (
                "I was trying to run two experiments in one docker image, 4 GPUs each. The "
                "second one fails to start.\n"
            ),
            "two jobs on one machine",
        ),
    ],
)
def test_a_taken_port_in_the_reporters_words_leads_with_the_port(
    tmp_path: Path, said: str, why: str
) -> None:
    report = diagnose_text(tmp_path, said)
    assert report.top(1) == ["launch.port_in_use"]
    assert any(why in reason for reason in report.hypotheses[0].for_)


@pytest.mark.parametrize(
    "said",
    [
        # ports counted, not taken
        (
            "When running two-node nccl-tests all_reduce_perf and 6 GPU and 3 NIC (6 Port) on "
            "each node are used, the test fails with an NCCL error.\n"
        ),
        # two jobs on the same GPUs: the GPUs are shared, not a port
        "Two training jobs on the same 4 GPUs at the same time: the second one fails.\n",
        # the port said free
        "The port is not in use (ss shows nothing on 29500) but the job fails.\n",
    ],
)
def test_other_words_about_ports_or_jobs_do_not_lead_with_the_port(
    tmp_path: Path, said: str
) -> None:
    report = diagnose_text(tmp_path, said)
    assert "launch.port_in_use" not in report.top(1)
