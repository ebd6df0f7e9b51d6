"""A folder's coming files asked of the kernel ahead (evidence/readahead.py): only a hint.

The read of a folder is the same with the hints as without, whatever happens
to the files between the listing and the read; the hints name only the plain
files the walk reads next, and a file that is not one is never read from.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nccl_doctor.evidence import intake, readahead, reader
from nccl_doctor.evidence.reader import ReadResult, read_paths

if TYPE_CHECKING:
    import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _per_rank(folder: Path) -> Path:
    """A small folder of per-rank logs from bench/gen_pgs.py (issue 17's shape)."""
    spec = importlib.util.spec_from_file_location("gen_pgs", BENCH / "gen_pgs.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    target = folder / "ranks"
    args = argparse.Namespace(
        out=None,
        per_rank=target,
        pgs=20,
        pg_layout="start",
        size_mib=1.0,
        ranks=16,
        gpus_per_host=8,
        seed=7,
    )
    module.generate(args)
    return target


def _asked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every file hinted, each as if not cached (so the kernel is asked for it); the list of
    the paths asked for."""
    asked: list[str] = []
    real = readahead.hint

    def hint(path: str, *, named: bool = False) -> None:
        asked.append(path)
        real(path, named=named)

    def not_cached(*_: Any) -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(readahead, "hint", hint)
    monkeypatch.setattr(readahead.os, "preadv", not_cached)
    return asked


def _without(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(readahead, "hint", lambda path, named=False: None)


def _cited(result: ReadResult) -> list[tuple[str, int, object]]:
    return [(f.cite.source, f.cite.line, f) for f in result.facts]


def _both(
    monkeypatch: pytest.MonkeyPatch, folder: Path
) -> tuple[ReadResult, ReadResult, list[str]]:
    """The folder read without hints, then with every coming file asked for."""
    with monkeypatch.context() as m:
        _without(m)
        without = read_paths([str(folder)])
    with monkeypatch.context() as m:
        asked = _asked(m)
        with_hints = read_paths([str(folder)])
    return without, with_hints, asked


def test_a_folder_reads_the_same_with_hints_as_without(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _per_rank(tmp_path)
    without, with_hints, asked = _both(monkeypatch, folder)
    files = sorted(str(p) for p in folder.iterdir())
    assert asked == files[1:]  # each once, the first read before any was asked for
    assert _cited(with_hints) == _cited(without)
    assert any(f.cite.line > 100 for f in without.facts)  # line numbers deep in the files
    assert with_hints.sources == without.sources
    assert with_hints.notes == without.notes
    assert with_hints == without


def test_an_unreadable_file_mid_folder_is_the_same_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _per_rank(tmp_path)
    locked = str(sorted(folder.iterdir())[4])  # a rank's log, mid-folder
    real_open = os.open

    def refusing(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if str(path) == locked:  # what chmod 000 does to anyone but root
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing)
    without, with_hints, asked = _both(monkeypatch, folder)
    assert locked in asked
    assert [n for n in without.notes if n.source == locked] == [
        reader.Note(locked, "cannot open: Permission denied")
    ]
    assert with_hints == without
    assert locked not in {s.source for s in with_hints.sources}


def test_a_file_deleted_between_listing_and_reading_is_the_same_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _per_rank(tmp_path)
    before, gone = sorted(folder.iterdir())[3:5]
    kept = gone.read_bytes()
    real_read = reader.read_opened
    results = []
    for hinted in (False, True):

        def deleting(opened: Any, *args: Any, **kwargs: Any) -> Any:
            if opened.name == str(before):  # the next one was listed (and asked for) by now
                gone.unlink()
            return real_read(opened, *args, **kwargs)

        with monkeypatch.context() as m:
            asked = _asked(m) if hinted else []
            if not hinted:
                _without(m)
            m.setattr(reader, "read_opened", deleting)
            results.append(read_paths([str(folder)]))
        gone.write_bytes(kept)
        assert (str(gone) in asked) is hinted
    without, with_hints = results
    assert reader.Note(str(gone), "cannot open: No such file or directory") in without.notes
    assert with_hints == without


def test_only_the_plain_files_the_walk_reads_next_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "job"
    (folder / "d").mkdir(parents=True)
    for name in ("a.log", "b.log", "c.log", "d/e.log", "z.log", "README.md"):
        (folder / name).write_text("NCCL WARN x\n")
    os.mkfifo(folder / "fifo")
    (folder / "link").symlink_to(folder / "a.log")
    monkeypatch.setattr(readahead, "FILES", 2)
    asked = _asked(monkeypatch)
    got = [o.name for o in intake.Intake().streams([str(folder)])]
    assert got == [str(folder / n) for n in ("a.log", "b.log", "c.log", "d/e.log", "link", "z.log")]
    # at a.log: b and c; then d (a folder) and the FIFO are passed by; at the link: z
    assert asked == [str(folder / n) for n in ("b.log", "c.log", "z.log")]


def test_a_hint_never_reads_and_never_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    log = tmp_path / "a.log"
    log.write_text("NCCL WARN x\n")
    advised: list[int] = []
    monkeypatch.setattr(readahead.os, "posix_fadvise", lambda fd, *_: advised.append(fd))
    readahead.hint(str(log))  # just written: its page is cached (or the probe cannot tell)
    assert advised == []
    for path in (fifo, tmp_path, tmp_path / "missing.log"):
        readahead.hint(str(path))  # a FIFO with no writer would block a read; none is made
    assert advised == []
    _asked(monkeypatch)
    readahead.hint(str(log))
    assert len(advised) == 1


def test_paths_named_are_asked_for_once_and_only_regular_files_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("a.log", "b.log", "c.log"):
        (tmp_path / name).write_text("NCCL WARN x\n")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "d").mkdir()
    paths = [str(tmp_path / n) for n in ("a.log", "fifo", "b.log", "c.log", "d")]
    monkeypatch.setattr(readahead, "FILES", 2)
    asked = _asked(monkeypatch)
    opened: list[str] = []
    real_open = os.open

    def recording(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        opened.append(str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", recording)
    notes = intake.Intake()
    got = [o.name for o in notes.streams(paths)]
    assert got == [paths[0], paths[2], paths[3]]
    assert asked == paths[1:]  # each once, the first read before any was asked for
    assert str(fifo) not in opened  # looked at, never opened: not by the hint, not by the read
    assert any(n.source == str(fifo) for n in notes.notes)
