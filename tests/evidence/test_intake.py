"""Intake: files, folders, archives and stdin become streams; problems become notes."""

from __future__ import annotations

import gzip
import io
import random
import tarfile
import zipfile
from pathlib import Path

import pytest

from nccl_doctor.evidence.intake import Intake, rank_from_name


def _read_all(paths: list[str]) -> tuple[dict[str, bytes], list[str]]:
    intake = Intake()
    got = {o.name: o.stream.read() for o in intake.streams(paths)}
    return got, [f"{n.source}: {n.message}" for n in intake.notes]


def _tar_bytes(files: dict[str, bytes], mode: str = "w:gz") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_folder_is_walked_in_name_order(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "rank1.log").write_bytes(b"one\n")
    (tmp_path / "a.txt").write_bytes(b"zero\n")
    got, notes = _read_all([str(tmp_path)])
    assert list(got.values()) == [b"zero\n", b"one\n"]
    assert notes == []


def test_tgz_members_are_read_by_content(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle.data"  # the name says nothing: magic bytes decide
    bundle.write_bytes(_tar_bytes({"logs/rank0.log": b"hello\n", "smi.txt": b"table\n"}))
    got, notes = _read_all([str(bundle)])
    assert got == {f"{bundle}:logs/rank0.log": b"hello\n", f"{bundle}:smi.txt": b"table\n"}
    assert notes == []


def test_plain_tar_and_zip(tmp_path: Path) -> None:
    tar = tmp_path / "b.tar"
    tar.write_bytes(_tar_bytes({"x.log": b"x\n"}, mode="w"))
    zpath = tmp_path / "b.zip"
    with zipfile.ZipFile(zpath, "w") as z:
        z.writestr("dir/y.log", "y\n")
    got, notes = _read_all([str(tar), str(zpath)])
    assert got == {f"{tar}:x.log": b"x\n", f"{zpath}:dir/y.log": b"y\n"}
    assert notes == []


def test_gzip_of_a_single_log(tmp_path: Path) -> None:
    path = tmp_path / "train.log.gz"
    path.write_bytes(gzip.compress(b"line\n" * 3))
    got, _ = _read_all([str(path)])
    assert got == {str(path): b"line\n" * 3}


def test_truncated_tgz_gives_what_is_complete_and_a_note(tmp_path: Path) -> None:
    rng = random.Random(7)
    first = rng.randbytes(150_000).hex().encode() + b"\n"
    data = _tar_bytes({"first.log": first, "second.log": rng.randbytes(150_000).hex().encode()})
    path = tmp_path / "cut.tgz"
    path.write_bytes(data[: len(data) * 3 // 4])
    got, notes = _read_all([str(path)])
    assert got[f"{path}:first.log"] == first
    assert len(got[f"{path}:second.log"]) < 300_000
    assert any("truncated" in n for n in notes)


def test_truncated_zip_is_a_note(tmp_path: Path) -> None:
    zbuf = io.BytesIO()
    with zipfile.ZipFile(zbuf, "w") as z:
        z.writestr("y.log", "y\n" * 1000)
    path = tmp_path / "cut.zip"
    path.write_bytes(zbuf.getvalue()[:60])
    got, notes = _read_all([str(path)])
    assert got == {}
    assert notes == [f"{path}: unreadable or truncated zip archive: File is not a zip file"]


def test_problems_become_notes(tmp_path: Path) -> None:
    (tmp_path / "empty.log").write_bytes(b"")
    (tmp_path / "core.bin").write_bytes(b"\x7fELF\x00\x00\x01")
    (tmp_path / "gone").symlink_to(tmp_path / "nowhere")
    missing = str(tmp_path / "missing.log")
    got, notes = _read_all([str(tmp_path), missing])
    assert got == {}
    assert sorted(notes) == sorted(
        [
            f"{tmp_path / 'core.bin'}: binary file (not text): skipped",
            f"{tmp_path / 'empty.log'}: empty",
            f"{tmp_path / 'gone'}: dangling symbolic link: skipped",
            f"{missing}: no such file or folder",
        ]
    )


def test_non_utf8_bytes_pass_through(tmp_path: Path) -> None:
    path = tmp_path / "latin1.log"
    path.write_bytes(b"caf\xe9 NCCL WARN x\n")
    got, notes = _read_all([str(path)])
    assert got == {str(path): b"caf\xe9 NCCL WARN x\n"}
    assert notes == []


@pytest.mark.parametrize(
    ("name", "rank"),
    [
        ("logs/run1/attempt_0/3/stdout.log", 3),
        ("out/rank12.log", 12),
        ("train_rank_4.txt", 4),
        ("node-rank-2.err", 2),
        ("train.log", None),
        ("franks.log", None),
    ],
)
def test_rank_from_file_names(name: str, rank: int | None) -> None:
    assert rank_from_name(name) == rank


def test_provenance_notes_are_skipped_in_folders_but_read_when_named(tmp_path: Path) -> None:
    (tmp_path / "SOURCE.md").write_text("Cuda failure 999 'unknown error' was quoted here\n")
    (tmp_path / "train.log").write_text("log\n")
    got, notes = _read_all([str(tmp_path)])
    assert list(got) == [str(tmp_path / "train.log")]
    assert notes == [f"{tmp_path / 'SOURCE.md'}: notes about the evidence, not evidence: skipped"]
    got, notes = _read_all([str(tmp_path / "SOURCE.md")])
    assert list(got) == [str(tmp_path / "SOURCE.md")]
    assert notes == []
