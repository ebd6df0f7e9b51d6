"""Hostile archives: bombs, nesting, overlapping zips, tar headers that hang or claim gigabytes.

Each input is built here, small: a budget lowered for the test stands in for
gigabytes, and gzip members repeat (a gzip file may hold many) so that ten
GiB of newlines take ten MB.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import struct
import subprocess
import sys
import tarfile
import textwrap
import tracemalloc
import zipfile
from pathlib import Path

import pytest

from nccl_doctor.evidence.archives import Limits
from nccl_doctor.evidence.intake import Intake

ROOT = Path(__file__).resolve().parents[2]
MiB = 1 << 20


def _read(paths: list[str], limits: Limits | None = None) -> tuple[dict[str, bytes], list[str]]:
    intake = Intake(limits)
    got = {o.name: o.stream.read() for o in intake.streams(paths)}
    return got, [f"{n.source}: {n.message}" for n in intake.notes]


def _sizes(paths: list[str], limits: Limits | None = None) -> tuple[dict[str, int], list[str]]:
    """Bytes per stream, read in chunks (a bomb must not be held whole by the test either)."""
    intake = Intake(limits)
    got: dict[str, int] = {}
    for opened in intake.streams(paths):
        n = 0
        while chunk := opened.stream.read(MiB):
            n += len(chunk)
        got[opened.name] = n
    return got, [f"{n.source}: {n.message}" for n in intake.notes]


def _newline_bomb(gib: int) -> bytes:
    """A gzip of ``gib`` GiB of newlines: the same 1 KiB member, repeated."""
    return gzip.compress(b"\n" * MiB, 9) * (gib << 10)


def _zip(files: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as z:
        for name, data in files.items():
            z.writestr(name, data)
    return buf.getvalue()


def _tar(files: dict[str, bytes], fmt: int = tarfile.PAX_FORMAT) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _tar_header(name: bytes, size: int, kind: bytes) -> bytes:
    """One ustar header block with a valid checksum."""
    block = bytearray(512)
    block[: len(name)] = name
    block[100:108] = b"0000644\x00"
    block[124:136] = b"%011o\x00" % size
    block[136:148] = b"00000000000\x00"
    block[156:157] = kind
    block[257:265] = b"ustar\x0000"
    block[148:156] = b" " * 8
    block[148:156] = b"%06o\x00 " % sum(block)
    return bytes(block)


# -- single compressed logs ----------------------------------------------------------


@pytest.mark.parametrize(
    ("suffix", "compress"), [("gz", gzip.compress), ("bz2", bz2.compress), ("xz", lzma.compress)]
)
def test_a_compressed_single_log(tmp_path: Path, suffix: str, compress: object) -> None:
    path = tmp_path / f"rank3.log.{suffix}"
    path.write_bytes(compress(b"NCCL WARN x\n" * 3))  # type: ignore[operator]
    intake = Intake()
    got = [(o.name, o.default_rank, o.stream.read()) for o in intake.streams([str(path)])]
    assert got == [(str(path), 3, b"NCCL WARN x\n" * 3)]
    assert intake.notes == []


# -- decompression bombs -------------------------------------------------------------


def test_ten_gib_of_newlines_stop_at_the_free_allowance(tmp_path: Path) -> None:
    bomb = tmp_path / "train.log.gz"
    bomb.write_bytes(_newline_bomb(10))  # 10 MiB on disk, 10 GiB inside
    got, notes = _sizes([str(bomb)])
    assert 256 * MiB <= got[str(bomb)] < 300 * MiB  # Limits.free_bytes, not 10 GiB
    (note,) = notes
    assert note.startswith(f"{bomb}: stopped after 256 MiB decompressed from ")
    assert note.endswith(
        "(more than 500:1, the shape of a decompression bomb); the rest was not read"
    )


def test_real_ratios_pass_and_a_bomb_stops_where_the_ratio_says(tmp_path: Path) -> None:
    lines = b"".join(
        b"host1:%d:%d [0] NCCL INFO Channel %02d : 0 1\n" % (i, i * 7, i % 32)
        for i in range(200_000)
    )
    log = tmp_path / "nccl.log.gz"
    log.write_bytes(gzip.compress(lines))
    limits = Limits(free_bytes=MiB, ratio=100)
    assert _sizes([str(log)], limits) == ({str(log): len(lines)}, [])
    bomb = tmp_path / "bomb.gz"
    bomb.write_bytes(gzip.compress(b"\n" * (64 * MiB)))
    got, notes = _sizes([str(bomb)], limits)
    assert MiB <= got[str(bomb)] < 16 * MiB
    assert "more than 100:1, the shape of a decompression bomb" in notes[0]


def test_the_absolute_limit_holds_whatever_the_ratio(tmp_path: Path) -> None:
    path = tmp_path / "big.gz"
    path.write_bytes(gzip.compress(os.urandom(3 * MiB // 2).hex().encode()))
    got, notes = _sizes([str(path)], Limits(free_bytes=MiB, ratio=1000, expanded_bytes=2 * MiB))
    assert got == {str(path): 2 * MiB}
    assert notes == [
        f"{path}: stopped after 2 MiB of decompressed data (the limit); the rest was not read"
    ]


def test_a_spent_budget_ends_the_whole_archive_but_not_the_next_path(tmp_path: Path) -> None:
    archive = tmp_path / "bundle.zip"
    archive.write_bytes(_zip({"a.log": b"\n" * (8 * MiB), "b.log": b"b\n"}))
    other = tmp_path / "other.log"
    other.write_text("other\n")
    got, notes = _sizes([str(archive), str(other)], Limits(free_bytes=MiB, ratio=10))
    assert got == {f"{archive}:a.log": MiB, str(other): 6}
    (note,) = notes
    assert note.startswith(f"{archive}:a.log: stopped after 1 MiB decompressed")
    assert note.endswith(
        f"the rest was not read, nor any other archive or compressed file under {archive}"
    )


def test_after_a_bomb_in_a_folder_its_plain_files_are_still_read(tmp_path: Path) -> None:
    (tmp_path / "a-bomb.gz").write_bytes(gzip.compress(b"\n" * (8 * MiB)))
    (tmp_path / "b.log.gz").write_bytes(gzip.compress(b"b\n"))
    (tmp_path / "c.log").write_text("c\n")
    got, notes = _sizes([str(tmp_path)], Limits(free_bytes=MiB, ratio=10))
    assert got == {str(tmp_path / "a-bomb.gz"): MiB, str(tmp_path / "c.log"): 2}
    assert notes[0].startswith(f"{tmp_path / 'a-bomb.gz'}: stopped after 1 MiB decompressed")
    assert notes[1:] == [
        f"{tmp_path / 'b.log.gz'}: not opened: the read budget of {tmp_path} was spent"
    ]


def test_overlapping_zip_entries_are_refused(tmp_path: Path) -> None:
    one = _zip({"a.log": b"\n" * MiB})
    eocd = one.rindex(b"PK\x05\x06")
    cd_size, cd_offset = struct.unpack("<II", one[eocd + 12 : eocd + 20])
    central = one[cd_offset : cd_offset + cd_size]
    copies = 1000  # every entry points at the same data: 1 GiB from 1 KiB
    end = struct.pack(
        "<4s4H2IH", b"PK\x05\x06", 0, 0, copies, copies, cd_size * copies, cd_offset, 0
    )
    path = tmp_path / "overlap.zip"
    path.write_bytes(one[:cd_offset] + central * copies + end)
    assert len(zipfile.ZipFile(path).infolist()) == copies  # what zipfile itself would read
    got, notes = _read([str(path)])
    assert got == {}
    assert notes == [
        f"{path}: zip entries overlap (the shape of a zip bomb, never of a real archive): not read"
    ]


def test_zips_nested_five_deep_are_opened_to_the_layer_limit(tmp_path: Path) -> None:
    inner = _zip({"level5.log": b"five\n"})
    for level in range(4, 0, -1):
        inner = _zip({f"level{level}.log": b"%d\n" % level, "inner.zip": inner})
    path = tmp_path / "nested.zip"
    path.write_bytes(inner)
    got, notes = _read([str(path)])
    assert sorted(got.values()) == [b"1\n", b"2\n", b"3\n", b"4\n"]
    assert notes == [f"{path}: 1 archive(s) nested more than 4 deep: not opened"]


def test_archive_entries_are_counted_across_nested_archives(tmp_path: Path) -> None:
    leaf = _zip({f"{i}.log": b"x\n" for i in range(16)})
    middle = _zip({f"{i}.zip": leaf for i in range(16)})
    path = tmp_path / "fan.zip"
    path.write_bytes(_zip({f"{i}.zip": middle for i in range(16)}))  # 4,096 logs
    got, notes = _read([str(path)], Limits(members=500))
    assert len(got) < 500
    (note,) = notes
    assert note.startswith(f"{path}:1.zip:")
    assert note.endswith(
        ".zip: stopped after 500 archive entries (the limit); the rest was not read, "
        f"nor any other archive or compressed file under {path}"
    )


def test_a_zip_listing_too_many_entries_is_not_parsed(tmp_path: Path) -> None:
    path = tmp_path / "many.zip"
    path.write_bytes(_zip({f"{i}.log": b"" for i in range(50)}))
    assert _read([str(path)], Limits(members=10)) == (
        {},
        [f"{path}: zip archive of 50 entries (over the 10 limit): not read"],
    )


def test_a_zip_inside_a_tar_is_spooled_not_held_in_memory(tmp_path: Path) -> None:
    big = b"".join(
        b"line %08d " % i + os.urandom(20).hex().encode() + b"\n" for i in range(600_000)
    )
    path = tmp_path / "bundle.tar"
    path.write_bytes(_tar({"inner.zip": _zip({"big.log": big}, zipfile.ZIP_STORED)}))
    size = len(big)
    del big
    tracemalloc.start()
    try:
        got, notes = _sizes([str(path)], Limits(spool_memory=MiB))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (got, notes) == ({f"{path}:inner.zip:big.log": size}, [])
    assert size > 30 * MiB
    assert peak < 12 * MiB  # the whole member was held (twice) before


# -- tar headers ----------------------------------------------------------------------


def test_pax_and_gnu_long_names_are_read(tmp_path: Path) -> None:
    name = "logs/" + "n" * 120 + "/rank7.log"
    pax = tmp_path / "pax.tar"
    pax.write_bytes(_tar({name: b"pax\n", "ünïcode.log": b"u\n"}))
    gnu = tmp_path / "gnu.tar"
    gnu.write_bytes(_tar({name: b"gnu\n"}, tarfile.GNU_FORMAT))
    got, notes = _read([str(pax), str(gnu)])
    assert got == {
        f"{pax}:{name}": b"pax\n",
        f"{pax}:ünïcode.log": b"u\n",
        f"{gnu}:{name}": b"gnu\n",
    }
    assert notes == []


def test_a_pax_header_claiming_3_gib_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "huge-header.tar"
    first = _tar({"first.log": b"first\n"}, tarfile.USTAR_FORMAT)[:1024]  # header and data
    path.write_bytes(first + _tar_header(b"PaxHeader", 3 << 30, b"x") + b"1" * 4096)
    tracemalloc.start()
    try:
        got, notes = _read([str(path)])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got == {f"{path}:first.log": b"first\n"}
    assert notes == [
        (
            f"{path}: tar extension header of 3 GiB (over the 1 MiB limit; a hostile archive's "
            "shape): the rest was not read"
        )
    ]
    assert peak < 8 * MiB


def test_a_backtracking_pax_header_never_reaches_tarfile(tmp_path: Path) -> None:
    """CVE-2024-6232: Python 3.11.7's tarfile takes hours on this 512 KiB header."""
    body = b"1" * (512 << 10)
    path = tmp_path / "cve.tar"
    path.write_bytes(_tar_header(b"PaxHeader", len(body), b"x") + body + bytes(1024))
    script = textwrap.dedent(
        f"""
        import sys
        from nccl_doctor.evidence.intake import Intake
        intake = Intake()
        print([o.name for o in intake.streams([{str(path)!r}])])
        print([n.message for n in intake.notes])
        print("tarfile" in sys.modules)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
        check=True,
    )
    assert done.stdout.splitlines() == [
        "[]",
        "['malformed PAX header in tar archive: the rest was not read']",
        "False",
    ]


def test_tar_links_devices_and_folders_are_not_members(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, kind in (("dir", tarfile.DIRTYPE), ("fifo", tarfile.FIFOTYPE)):
            tar.addfile(tarfile.TarInfo(name) if kind is None else _typed(name, kind))
        link = _typed("link.log", tarfile.SYMTYPE)
        link.linkname = "/etc/passwd"
        tar.addfile(link)
        data = tarfile.TarInfo("real.log")
        data.size = 2
        tar.addfile(data, io.BytesIO(b"r\n"))
    path = tmp_path / "kinds.tar"
    path.write_bytes(buf.getvalue())
    assert _read([str(path)]) == ({f"{path}:real.log": b"r\n"}, [])


def _typed(name: str, kind: bytes) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    return info
