"""A job on gloo alone never loads NCCL: NCCL's own paths give way to what gloo shares with it."""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.differential.shifts.table import NCCL_PATHS
from tests.helpers import diagnose_text

GLOO_HANG = """\
One machine, two GPUs. I start the example twice, ranks 0 and 1, with

    python train.py --dist-backend gloo --world-size 2 --rank $RANK --dist-url tcp://127.0.0.1:29500

Both print "Using distributed PyTorch with gloo backend", then the job hangs at the first
all_reduce and prints nothing more, no error.
"""

ONE_GPU_THEN = "With 1 GPU it trains.\n"


def test_a_gloo_job_s_silent_hang_does_not_lead_with_nccl_s_paths(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, GLOO_HANG)
    assert report.hypotheses[0].symptom.startswith("the job hangs without an error")
    assert not set(report.top(3)) & set(NCCL_PATHS), report.top(3)
    p2p = [h for h in report.hypotheses if h.id == "nccl.p2p"]
    assert all(any("runs on gloo" in a for a in h.against) for h in p2p)


def test_nccl_named_beside_the_gloo_backend_keeps_nccl_s_paths(tmp_path: Path) -> None:
    # a gloo job whose reporter also ran it on NCCL: NCCL is in the picture again
    text = GLOO_HANG + "NCCL_DEBUG=INFO prints nothing either when I switch to nccl.\n"
    report = diagnose_text(tmp_path, text)
    assert report.top(1) == ["nccl.p2p"]


def test_a_sentence_about_one_gpu_that_trains_is_not_a_failure_on_one_gpu(
    tmp_path: Path,
) -> None:
    # "no error even after an hour. With 1 GPU it trains": two sentences, not one that says
    # it fails on one GPU too (which would weigh P2P down)
    text = (
        "DDP with NCCL on 4 GPUs of one machine hangs at the first all_reduce: GPU utilisation "
        "sits at 100% and nothing is printed, no error even after an hour. " + ONE_GPU_THEN
    )
    report = diagnose_text(tmp_path, text)
    assert report.top(1) == ["nccl.p2p"]
