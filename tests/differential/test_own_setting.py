"""A hang that comes and goes with a setting of the program's own weighs for its code path.

"When I set ``filter_empty_gt=False`` the training keeps waiting", "stuck if set
``packing=false``": the program's path or its data decide whether the ranks meet in the same
collectives. NCCL's, the launcher's and the GPUs' settings say nothing of the kind.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import diagnose_text

_WHY = "a setting of the program's own"


@pytest.mark.parametrize(
    "said",
    [
        (
            "Training on 4 GPUs: when I set `filter_empty_gt=False` there is no error message, "
            "but the training process keeps waiting forever.\n"
        ),
        "Title: distributed training got stuck if set `packing=false`\n",
        "It hangs with use_cache = True; with use_cache = False it works.\n",
    ],
)
def test_a_hang_that_follows_the_programs_own_setting_leads_with_a_mismatch(
    tmp_path: Path, said: str
) -> None:
    report = diagnose_text(tmp_path, said)
    assert report.top(1) == ["app.collective_mismatch"]
    assert any(_WHY in reason for reason in report.hypotheses[0].for_)


@pytest.mark.parametrize(
    "said",
    [
        # NCCL's own switch: the path between the GPUs, not the program's
        "DDP on 4 GPUs hangs; with NCCL_P2P_DISABLE=1 it works.\n",
        # the parallel size decides how many GPUs talk, not which code runs
        "vLLM hangs at start-up with tensor_parallel_size=4, and works with one GPU.\n",
        # the data loader's workers are the host's processes, not the ranks' path
        "Training on 4 GPUs hangs at the first batch; with num_workers=0 it works.\n",
        "Training on 4 GPUs hangs at the first batch and prints nothing.\n",
    ],
)
def test_other_settings_give_no_weight_to_the_programs_path(tmp_path: Path, said: str) -> None:
    report = diagnose_text(tmp_path, said)
    assert report.hypotheses
    assert all(_WHY not in reason for h in report.hypotheses for reason in h.for_)
