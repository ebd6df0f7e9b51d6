"""NCCL versions: parsing, comparison, known issues, torch's bundled NCCL."""

from __future__ import annotations

import pytest

from nccl_doctor.knowledge.nccl_versions import (
    KNOWN_ISSUES,
    TORCH_NCCL,
    bundled_nccl,
    compare_versions,
    known_issues,
    parse_version,
    version_from_code,
)
from tests.knowledge._catalogue import catalogue_ids


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2.18.1", (2, 18, 1)),
        ("v2.18.3-1", (2, 18, 3)),
        ("2.21.5+cuda12.4", (2, 21, 5)),
        ("NCCL version 2.20.5+cuda12.4", (2, 20, 5)),
        ("nvidia-nccl-cu12==2.26.2", (2, 26, 2)),
        ("(2, 19, 3)", (2, 19, 3)),
        ("21903", (2, 19, 3)),
        ("2708", (2, 7, 8)),
        ("2.30", (2, 30, 0)),
    ],
)
def test_parse_version(text: str, expected: tuple[int, int, int]) -> None:
    assert parse_version(text) == expected


@pytest.mark.parametrize("junk", ["", "garbage", "v", "..", "1", None, 21903])
def test_parse_version_junk(junk: object) -> None:
    assert parse_version(junk) is None  # type: ignore[arg-type]


def test_version_codes_and_compare() -> None:
    assert version_from_code(22703) == (2, 27, 3)
    assert version_from_code(2408) == (2, 4, 8)
    assert version_from_code(0) is None
    assert compare_versions("2.18.1", "2.18.3") == -1
    assert compare_versions("2.20.5", "v2.20.5-1") == 0
    assert compare_versions("2.9.9", "2.10.3") == -1
    assert compare_versions("x", "2.1.0") is None


def test_cumem_deadlock_in_219_only() -> None:
    ids_219 = {i.id for i in known_issues("2.19.3")}
    assert "cumem-alltoall-deadlock" in ids_219
    assert "cumem-alltoall-deadlock" not in {i.id for i in known_issues("2.20.3")}
    assert "cumem-alltoall-deadlock" not in {i.id for i in known_issues("2.18.6")}
    issue = next(i for i in KNOWN_ISSUES if i.id == "cumem-alltoall-deadlock")
    assert issue.workaround == "NCCL_CUMEM_ENABLE=0"
    assert "#1116" in issue.source


def test_open_ended_issue_uses_affected_through() -> None:
    assert "nonblocking-226-hang" in {i.id for i in known_issues("2.26.2")}
    assert "nonblocking-226-hang" not in {i.id for i in known_issues("2.27.3")}
    assert "nonblocking-226-hang" not in {i.id for i in known_issues("2.21.5")}


def test_known_issues_of_old_and_new_versions() -> None:
    assert "ll128-2pow31-hang" in {i.id for i in known_issues("2.7.8")}
    assert "cuda-launch-blocking-hang" in {i.id for i in known_issues("2.14.3")}
    assert known_issues("9.0.0") == ()
    assert known_issues("not a version") == ()


def test_issue_integrity() -> None:
    ids = [i.id for i in KNOWN_ISSUES]
    assert len(ids) == len(set(ids))
    for issue in KNOWN_ISSUES:
        assert issue.fixed_in is not None or issue.affected_through is not None, issue.id
        assert issue.source
        if issue.affected_from and issue.fixed_in:
            assert compare_versions(issue.affected_from, issue.fixed_in) == -1, issue.id
        for v in (issue.affected_from, issue.fixed_in, issue.affected_through):
            assert v is None or parse_version(v) is not None


def test_torch_bundled_nccl() -> None:
    assert bundled_nccl("2.5.1+cu124") == "2.21.5"
    assert bundled_nccl("2.7.0") == "2.26.2"
    assert bundled_nccl("2.1.0") == "2.18.1"
    assert bundled_nccl("1.0.0") is None
    assert bundled_nccl(None) is None  # type: ignore[arg-type]
    for torch_version, nccl in TORCH_NCCL.items():
        assert parse_version(torch_version) is not None
        assert parse_version(nccl) is not None


def test_diagnosis_ids_are_in_the_catalogue() -> None:
    ids = catalogue_ids()
    if ids is None:
        pytest.skip("shared/spec/diagnoses.md is not present")
    assert {i.diagnosis_id for i in KNOWN_ISSUES} <= ids
