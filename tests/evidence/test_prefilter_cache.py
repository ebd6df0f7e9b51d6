"""The compiled Hyperscan database is cached on disk and survives a corrupt cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.evidence.prefilter import HyperscanPrefilter, make_prefilter

pytest.importorskip("hyperscan")

ANCHORS = ("NCCL WARN", "Traceback (most recent call last)", "Xid")
BUF = b"a\nx NCCL WARN y\nb\nNVRM: Xid 79\nTraceback (most recent call last):\nend"


def test_cache_is_written_then_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = make_prefilter(ANCHORS, cache=True)
    files = list((tmp_path / "nccl-doctor").glob("prefilter-*.hsdb"))
    assert len(files) == 1
    second = make_prefilter(ANCHORS, cache=True)
    assert isinstance(second, HyperscanPrefilter)
    assert first.line_spans(BUF) == second.line_spans(BUF) == [(2, 15), (18, 30), (31, 65)]


def test_corrupt_cache_falls_back_to_compiling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    make_prefilter(ANCHORS, cache=True)
    (cached,) = (tmp_path / "nccl-doctor").glob("prefilter-*.hsdb")
    cached.write_bytes(b"garbage")
    again = make_prefilter(ANCHORS, cache=True)
    assert again.line_spans(BUF) == [(2, 15), (18, 30), (31, 65)]


def test_without_cache_nothing_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    make_prefilter(ANCHORS)
    assert not (tmp_path / "nccl-doctor").exists()
