"""nccl.version_mismatch from NCCL's banner retold in a sentence: each release with the
banner's +cuda suffix is a process's own print, also where words stand between the quoted
"NCCL version" and the releases; one banner, or a change told from one to the other, is no
mix."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import diagnose_text

_HANG = "Jobs with one node from each rack hang in init_process_group and die after 10 minutes.\n"


def _mixed(tmp_path: Path, said: str) -> list[str]:
    report = diagnose_text(tmp_path, _HANG + said)
    return [f.summary for f in report.findings if f.id == "nccl.version_mismatch"]


def test_two_banners_told_after_the_quoted_name_are_a_mix(tmp_path: Path) -> None:
    said = (
        'The only thing that looks off is that the two hosts print a different "NCCL version" '
        "line: the rack B node says 2.27.5+cuda12.9, the rack A node says 2.21.5+cuda12.4.\n"
    )
    assert _mixed(tmp_path, said) == [
        "The job loads 2 NCCL versions (2.27.5, 2.21.5); all ranks must run the same NCCL"
    ]
    assert diagnose_text(tmp_path, _HANG + said).top(1) == ["nccl.version_mismatch"]


@pytest.mark.parametrize(
    "said",
    [
        'Both hosts print the same "NCCL version" line: 2.27.5+cuda12.9.\n',
        (
            'After we upgraded, the "NCCL version" line went from 2.21.5+cuda12.4 to '
            "2.27.5+cuda12.9.\n"
        ),
    ],
)
def test_one_banner_or_a_change_told_is_no_mix(tmp_path: Path, said: str) -> None:
    assert _mixed(tmp_path, said) == []
