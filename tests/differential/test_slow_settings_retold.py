"""A slow job whose own settings, as NCCL echoed them and the reporter retells them, turn its
node's transports off ("NCCL_P2P_DISABLE set by environment to 1."): the settings are the
cause. The slowness said as a share of the old throughput, or a figure against the expected
one, is the slow class; the GPUs per node counted in words ("8x H100 nodes") say the node has
peers to talk to."""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.differential.context import context_of
from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.pipeline import facts_of
from tests.helpers import diagnose_text

_SLOW = "Our 2-node fine-tune on 8x H100 nodes runs at about 55% of the old throughput. "
_ECHO = (
    "The new image's NCCL_DEBUG=INFO output contains \"NCCL_P2P_DISABLE set by environment to "
    '1." and "NCCL_SHM_DISABLE set by environment to 1.", which I never set.'
)
SLOW = "the job or a benchmark is slow, with no error (the reporter's words)"


def test_settings_retold_that_turn_the_nodes_paths_off_lead_a_slow_job(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _SLOW + "\n" + _ECHO + "\n")
    assert report.hypotheses[0].id == "nccl.env"
    assert report.hypotheses[0].symptom == SLOW
    path = tmp_path / "r.txt"
    path.write_text(_SLOW + "\n" + _ECHO + "\n", encoding="utf-8")
    ctx = context_of(facts_of(read_paths([str(path)])))
    assert (ctx.p2p_disabled, ctx.shm_disabled, ctx.gpus_said) == (True, True, 8)


def test_the_echo_retold_in_the_past_tense_with_the_sentence_going_on_is_read(
    tmp_path: Path,
) -> None:
    said = (
        "Our 4-node job gets no speedup at all on the new InfiniBand cluster. With "
        "NCCL_DEBUG=INFO it prints that NCCL_IB_DISABLE was set by environment to 1, then says "
        "Using network Socket.\n"
    )
    path = tmp_path / "r.txt"
    path.write_text(said, encoding="utf-8")
    ctx = context_of(facts_of(read_paths([str(path)])))
    assert (ctx.ib_disabled, ctx.multi_node) == (True, True)
    report = diagnose_text(tmp_path, said)
    assert (report.hypotheses[0].id, report.hypotheses[0].symptom) == ("nccl.env", SLOW)
    # the variable set to 0, the sentence's comma no part of it: IB stays on
    path.write_text(said.replace("to 1,", "to 0,"), encoding="utf-8")
    assert context_of(facts_of(read_paths([str(path)]))).ib_disabled is False


def test_the_same_slowness_without_the_settings_is_not_them(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _SLOW + "Nothing in the environment changed.\n")
    assert report.hypotheses[0].symptom == SLOW
    assert report.hypotheses[0].id != "nccl.env"


@pytest.mark.parametrize(
    "said",
    [
        "all_reduce_perf on one node shows ~45 GB/s busbw instead of the ~480 GB/s we had.",
        "The job runs at only 40% of the expected throughput.",
    ],
)
def test_a_share_or_a_figure_against_the_expected_one_is_slow(tmp_path: Path, said: str) -> None:
    assert diagnose_text(tmp_path, said + "\n").hypotheses[0].symptom == SLOW


def test_a_percentage_of_something_else_is_no_slowness(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, "GPU memory is at 95% of capacity and the job hangs.\n")
    assert all(h.symptom != SLOW for h in report.hypotheses)
