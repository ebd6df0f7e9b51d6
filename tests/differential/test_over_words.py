"""A failure the reporter says is over opens no class; one gone only under a workaround does.

"The OOM we saw last week is gone since we enabled gradient checkpointing", "the segfault was
fixed by upgrading, closing this", Chinese "mei you zai hang guo", Japanese "sai gen shinaku
narimashita": nothing is failing now. "The hang is gone when I set NCCL_P2P_DISABLE=1" is a
workaround: the hang stands without it, and its class opens as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import diagnose_text

HANG = "the job hangs without an error (the reporter's words)"


@pytest.mark.parametrize(
    "said",
    [
        "The OOM we saw last week is gone since we enabled gradient checkpointing.",
        "The segfault was fixed by upgrading to 2.2, closing this.",
        "The hang does not reproduce anymore after the driver update.",
        "更新: upgrade 到 NCCL 2.21 之后 training 很稳定, 没有再 hang 过。",
        "以前報告したハングはドライバ更新後に再現しなくなりました。",
    ],
)
def test_a_failure_said_to_be_over_opens_no_class(tmp_path: Path, said: str) -> None:
    assert diagnose_text(tmp_path, said + "\n").hypotheses == ()


@pytest.mark.parametrize(
    "said",
    [
        "The hang is gone when I set NCCL_P2P_DISABLE=1, why?",
        "The hang is gone after I export NCCL_P2P_DISABLE=1.",
        "The hang was fixed, but now the job hangs again at epoch 2.",
    ],
)
def test_a_failure_gone_only_under_a_workaround_still_opens_its_class(
    tmp_path: Path, said: str
) -> None:
    report = diagnose_text(tmp_path, said + "\n")
    assert [h.symptom for h in report.hypotheses][:1] == [HANG]
