"""DDP's check of the parameter counts across ranks (c10d comm.cpp): the counts arrive by an
all-gather, so a peer read as having 0 parameters is the gather's buffer never filled (a rank
with none stops earlier, in DDP's own constructor), not a model. Two real counts that differ
are a model that differs; a 0 beside P2P said to fix it is the P2P path moving no data."""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.signs.settings import settings_that_worked
from tests.helpers import critical_ids, diagnose_text, facts_text

_COUNTS = (
    "RuntimeError: DDP expects same model across all ranks, but Rank 0 has 4 params, while "
    "rank 1 has inconsistent {other} params.\n"
)


def test_two_real_counts_that_differ_are_a_model_that_differs(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _COUNTS.format(other=3))
    assert critical_ids(report) == ["app.param_mismatch"]
    assert report.findings[0].summary == (
        "Rank 0 has 4 parameters but rank 1 has 3: the models differ."
    )


def test_a_peer_read_as_zero_is_no_model_of_its_own(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _COUNTS.format(other=0))
    assert critical_ids(report) == []
    [found] = [f for f in report.findings if f.id == "app.param_mismatch"]
    assert (found.severity.value, found.confidence.value) == ("warning", "low")
    assert "DDP read 0 from rank 1" in found.summary


def test_a_zero_with_p2p_off_making_it_train_is_the_p2p_path(tmp_path: Path) -> None:
    said = "With NCCL_P2P_DISABLE=1 it actually trains, a bit slower.\n"
    report = diagnose_text(tmp_path, _COUNTS.format(other=0) + said)
    assert critical_ids(report) == ["nccl.p2p"]
    assert "DDP read 0 parameters from a peer" in report.findings[0].summary
    assert [f.id for f in dict(report.folded)["nccl.p2p"]] == ["app.param_mismatch"]
    # the same words beside two real counts: the model differs, P2P only a warning
    report = diagnose_text(tmp_path, _COUNTS.format(other=3) + said)
    assert critical_ids(report) == ["app.param_mismatch"]


@pytest.mark.parametrize(
    ("said", "worked"),
    [
        ("Someone told me to try `NCCL_P2P_DISABLE=1` and with that it actually trains.", True),
        ("With NCCL_P2P_DISABLE=1 the run completes.", True),
        ("With NCCL_P2P_DISABLE=1 all_reduce_perf passes.", True),
        ("With NCCL_P2P_DISABLE=1 the run never completes.", False),
        ("Even with NCCL_P2P_DISABLE=1 it still trains at a crawl and then hangs.", False),
        # how the setting was given, not what it did
        ("I passed NCCL_P2P_DISABLE=1 to the container with docker run -e.", False),
    ],
)
def test_getting_through_with_a_setting_is_it_working(
    tmp_path: Path, said: str, worked: bool
) -> None:
    found = [s.name for s in settings_that_worked(facts_text(tmp_path, said + "\n"))]
    assert found == (["NCCL_P2P_DISABLE"] if worked else [])
