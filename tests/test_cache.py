"""The start-up cache: entries kept between runs, merged, bounded; a bad file costs nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nccl_doctor import cache
from nccl_doctor.cache import JsonCache
from nccl_doctor.facts import literals


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path / "nccl-doctor"


def test_entries_are_written_merged_with_other_runs_and_read_back(home: Path) -> None:
    first = JsonCache("t")
    assert first.get("a") is None
    first.put("a", [1, "x"])
    assert first.get("a") == [1, "x"]
    assert not (home / "t.json").exists()  # written at exit (or save), not per entry
    other = JsonCache("t")  # another process, added an entry meanwhile
    other.put("b", True)
    other.save()
    first.save()
    assert json.loads((home / "t.json").read_text()) == {"a": [1, "x"], "b": True}
    assert JsonCache("t").get("b") is True
    assert list(home.iterdir()) == [home / "t.json"]  # no temporary file left


def test_a_full_cache_keeps_new_entries_for_the_run_only(home: Path) -> None:
    small = JsonCache("t", most=2)
    for key in "abc":
        small.put(key, 1)
    small.save()
    assert small.get("c") == 1
    assert sorted(json.loads((home / "t.json").read_text())) == ["a", "b"]


@pytest.mark.parametrize("content", [b"not json", b"[1, 2]", b""])
def test_a_corrupt_file_is_an_empty_cache(home: Path, content: bytes) -> None:
    home.mkdir(parents=True)
    (home / "t.json").write_bytes(content)
    kept = JsonCache("t")
    assert kept.get("a") is None
    kept.put("a", 1)
    kept.save()
    assert json.loads((home / "t.json").read_text()) == {"a": 1}


def test_an_unwritable_cache_only_costs_the_recomputing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # a file where the folder should be
    kept = JsonCache("t")
    kept.put("a", 1)
    kept.save()  # no error
    assert kept.get("a") == 1
    cache.write_atomic(blocker / "nccl-doctor" / "x.bin", b"data")  # no error either


def test_pattern_analyses_are_kept_and_read_back_as_computed(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = JsonCache("patterns-test")
    monkeypatch.setattr(literals, "_kept", lambda: kept)
    pattern = r"Cannot allocate memory|\[Errno 12\]|\bENOMEM\b"
    assert not literals.known(pattern, re.IGNORECASE)
    computed = literals.analysis(pattern, re.IGNORECASE)
    assert computed == (
        literals.required_words(pattern, re.IGNORECASE),
        literals.shape_blind(pattern, re.IGNORECASE),
    )
    assert computed[0] == (("cannot allocate memory", "[errno 12]", "enomem"),)
    kept.save()
    again = JsonCache("patterns-test")  # the next run
    monkeypatch.setattr(literals, "_kept", lambda: again)
    assert literals.known(pattern, re.IGNORECASE)
    assert not literals.known(pattern, 0)  # the flags are part of the key
    monkeypatch.setattr(literals, "required_words", None)  # read back, never recomputed
    assert literals.analysis(pattern, re.IGNORECASE) == computed


def test_a_pattern_that_does_not_compile_is_never_kept(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = JsonCache("patterns-test")
    monkeypatch.setattr(literals, "_kept", lambda: kept)
    with pytest.raises(re.error):
        literals.analysis("(?<=a+)b")  # parses, but look-behind must be fixed-width
    assert not literals.known("(?<=a+)b")


@pytest.mark.parametrize(
    "value", [[[["word"]], "yes"], [[["word", 3]], True], [[[]], False], "x", [None]]
)
def test_a_foreign_entry_is_recomputed(
    home: Path, monkeypatch: pytest.MonkeyPatch, value: object
) -> None:
    kept = JsonCache("patterns-test")
    monkeypatch.setattr(literals, "_kept", lambda: kept)
    kept.put("0\0out of memory", value)
    assert not literals.known("out of memory")
    assert literals.analysis("out of memory") == ((("out of memory",),), False)


def test_the_file_stays_where_the_cache_was_when_made(
    home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    kept = JsonCache("t")
    kept.put("a", 1)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "elsewhere"))
    kept.save()  # as at exit, after a test's environment was undone
    assert json.loads((home / "t.json").read_text()) == {"a": 1}
    assert not (tmp_path / "elsewhere").exists()


def test_only_the_newest_files_of_a_kind_are_kept(home: Path) -> None:
    import os

    for i in range(cache.KEEP + 3):  # one per version of the code: each writes a new file
        path = home / f"patterns-v{i}.json"
        cache.write_atomic(path, b"{}")
        os.utime(path, (1_000_000 + i, 1_000_000 + i))
    cache.write_atomic(home / "prefilter-x.hsdb", b"db")  # another kind: not counted with them
    kept = sorted(p.name for p in home.glob("patterns-*.json"))
    assert kept == [f"patterns-v{i}.json" for i in range(3, cache.KEEP + 3)]
    assert (home / "prefilter-x.hsdb").exists()


def test_files_in_use_are_kept_and_a_kind_may_keep_more(home: Path) -> None:
    """The reader's scan databases (one per set of budgeted groups, several a read) are kept
    64 deep, and one loaded is marked used, so the files a version reads are not pruned
    when others write theirs."""
    import os

    for i in range(6):
        path = home / f"prefilter-v{i}.hsdb"
        cache.write_atomic(path, b"db", keep=64)
        os.utime(path, (1_000_000 + i, 1_000_000 + i))
    assert len(list(home.glob("prefilter-*.hsdb"))) == 6  # more than KEEP
    cache.touch(home / "prefilter-v0.hsdb")  # the oldest, loaded now
    cache.write_atomic(home / "prefilter-new.hsdb", b"db", keep=2)
    kept = sorted(p.name for p in home.glob("prefilter-*.hsdb"))
    assert kept == ["prefilter-new.hsdb", "prefilter-v0.hsdb"]
