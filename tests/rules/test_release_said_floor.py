"""The NCCL release a report names in words, on GPUs newer than it: with no banner printed,
the one release the words name is the job's (NCCL_DEBUG=VERSION's answer, retold); a report
naming two releases (an upgrade from one to the other), or one that supports the GPU, says
nothing of the kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import diagnose_text

_RACK = (
    "Our first GB200 NVL72 rack: all_reduce_perf across 10 or more trays aborts during "
    "communicator setup, glibc prints free(): corrupted unsorted chunks and the process gets "
    "SIGABRT. {versions}\n"
)


def test_a_release_the_words_name_that_predates_the_gpu_is_too_old(tmp_path: Path) -> None:
    said = "NCCL_DEBUG=VERSION in the container reports NCCL 2.21.5."
    report = diagnose_text(tmp_path, _RACK.format(versions=said))
    assert report.top(1) == ["nccl.internal"]
    found = report.findings[0]
    assert found.summary.startswith("The job runs NCCL 2.21.5 (as the report says) on GB200")
    assert found.confidence.value == "low"


@pytest.mark.parametrize(
    "said",
    [
        "We upgraded from NCCL 2.21.5 to NCCL 2.26.2 last week.",
        "NCCL_DEBUG=VERSION in the container reports NCCL 2.26.2.",
    ],
)
def test_two_releases_named_or_one_new_enough_is_no_floor(tmp_path: Path, said: str) -> None:
    report = diagnose_text(tmp_path, _RACK.format(versions=said))
    assert not any("predates the GPU" in f.summary for f in report.findings)
