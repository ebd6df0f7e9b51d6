"""Turn what the user named (files, folders, archives, ``-``) into byte streams.

Kinds are never taken from names; this module only opens things. It knows
archives by their magic bytes (tar, gzip, bzip2, xz, zip), walks folders in
name order, and turns every problem (missing path, dangling link, no
permission, truncated archive, binary file) into a coverage note instead of
an exception.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import re
import sys
import tarfile
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO, BinaryIO

from nccl_doctor.parse.flight_recorder import KIND as FLIGHT_RECORDER
from nccl_doctor.parse.flight_recorder import looks_like_dump

#: What a damaged archive or compressed stream raises while being read.
_DECOMPRESSION_ERRORS = (
    OSError,
    EOFError,
    ValueError,
    zlib.error,
    lzma.LZMAError,
    tarfile.TarError,
    zipfile.BadZipFile,
)

#: Files that describe a folder of evidence rather than hold it (an incident's
#: SOURCE note quotes the error it documents). Skipped when a folder is walked,
#: read when named on their own.
PROVENANCE_NAMES = frozenset({"SOURCE.md", "SOURCES.md", "README.md"})

#: How many leading bytes decide "binary" (a NUL byte among them).
SNIFF_BYTES = 8192

_TORCHRUN_LOG_DIR = re.compile(r"attempt_\d+/(?P<rank>\d+)/(?:stdout|stderr|error)\.(?:log|json)$")
_RANK_IN_NAME = re.compile(r"(?:^|[/_.-])rank[_-]?(?P<rank>\d+)(?:[/_.-]|$)", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Note:
    """A coverage note: something that could not be read, or was read only in part."""

    source: str
    message: str


@dataclass(slots=True)
class Opened:
    """One readable stream and the name citations will use for it."""

    name: str
    stream: BinaryIO
    size: int | None
    default_rank: int | None
    #: a whole-file kind read without the line reader (``flight-recorder``), else ``None``
    file_kind: str | None = None


def rank_from_name(name: str) -> int | None:
    """The rank a per-rank log file's path names, if any.

    torchrun ``--log-dir`` writes ``.../attempt_0/<local_rank>/stdout.log``;
    many scripts write ``rank3.log`` or ``train_rank_3.txt``.
    """
    if m := _TORCHRUN_LOG_DIR.search(name):
        return int(m["rank"])
    if m := _RANK_IN_NAME.search(Path(name).name):
        return int(m["rank"])
    return None


def _is_binary(head: bytes) -> bool:
    return b"\x00" in head[:SNIFF_BYTES]


def _compression(head: bytes) -> str | None:
    if head.startswith(b"\x1f\x8b"):
        return "gz"
    if head.startswith(b"BZh"):
        return "bz2"
    if head.startswith(b"\xfd7zXZ\x00"):
        return "xz"
    return None


def _is_tar(head: bytes) -> bool:
    return len(head) >= 262 and head[257:262] == b"ustar"


class Intake:
    """Opens the user's paths one stream at a time, collecting notes."""

    def __init__(self) -> None:
        self.notes: list[Note] = []
        self.opened = 0

    def note(self, source: str, message: str) -> None:
        """Record a coverage note."""
        self.notes.append(Note(source, message))

    def streams(self, paths: Sequence[str]) -> Iterator[Opened]:
        """Every readable stream under ``paths``; each is valid until the next is asked for."""
        for path in paths:
            if path == "-":
                yield from self._from_stream("<stdin>", sys.stdin.buffer, None)
            else:
                yield from self._from_path(Path(path), path)

    def _from_path(self, path: Path, name: str) -> Iterator[Opened]:
        if path.is_symlink() and not path.exists():
            self.note(name, "dangling symbolic link: skipped")
            return
        if path.is_dir():
            try:
                children = sorted(path.rglob("*"))
            except OSError as exc:
                self.note(name, f"cannot list folder: {exc.strerror or exc}")
                return
            if not any(c.is_file() for c in children):
                self.note(name, "folder holds no files")
                return
            for child in children:
                if child.name in PROVENANCE_NAMES and child.is_file():
                    self.note(str(child), "notes about the evidence, not evidence: skipped")
                elif child.is_file() or (child.is_symlink() and not child.exists()):
                    yield from self._from_path(child, str(child))
            return
        if not path.exists():
            self.note(name, "no such file or folder")
            return
        try:
            handle = path.open("rb")
        except OSError as exc:
            self.note(name, f"cannot open: {exc.strerror or exc}")
            return
        with handle:
            size = None
            with suppress(OSError):
                size = os.fstat(handle.fileno()).st_size
            yield from self._from_stream(name, handle, size)

    def _from_stream(self, name: str, stream: BinaryIO, size: int | None) -> Iterator[Opened]:
        buffered = (
            stream
            if isinstance(stream, io.BufferedReader)
            else io.BufferedReader(_RawAdapter(stream))
        )
        try:
            head = buffered.peek(SNIFF_BYTES)[:SNIFF_BYTES]
        except OSError as exc:
            self.note(name, f"cannot read: {exc.strerror or exc}")
            return
        if not head:
            self.note(name, "empty")
            return
        if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
            yield from self._zip(name, buffered)
            return
        if _is_tar(head):
            yield from self._tar(name, buffered)
            return
        compression = _compression(head)
        if compression is not None:
            yield from self._compressed(name, buffered, compression)
            return
        if looks_like_dump(head):
            self.opened += 1
            yield Opened(name, buffered, size, rank_from_name(name), FLIGHT_RECORDER)
            return
        if _is_binary(head):
            self.note(name, "binary file (not text): skipped")
            return
        self.opened += 1
        yield Opened(name, buffered, size, rank_from_name(name))

    def _compressed(self, name: str, stream: BinaryIO, compression: str) -> Iterator[Opened]:
        opener = {"gz": gzip.GzipFile, "bz2": bz2.BZ2File, "xz": lzma.LZMAFile}[compression]
        inner = io.BufferedReader(_GuardedRaw(opener(fileobj=stream), name, self))
        try:
            head = inner.peek(SNIFF_BYTES)[:SNIFF_BYTES]
        except _DECOMPRESSION_ERRORS as exc:
            self.note(name, f"corrupt {compression} data: {exc}")
            return
        if _is_tar(head):
            yield from self._tar(name, inner)
            return
        if not head:
            self.note(name, "empty")
            return
        if _is_binary(head):
            self.note(name, "binary file (not text) inside compression: skipped")
            return
        self.opened += 1
        base = re.sub(r"\.(gz|bz2|xz)$", "", name)
        yield Opened(name, inner, None, rank_from_name(base))

    def _tar(self, name: str, stream: BinaryIO) -> Iterator[Opened]:
        try:
            archive = tarfile.open(fileobj=stream, mode="r|")  # noqa: SIM115 -- closed below
        except (tarfile.TarError, OSError, EOFError) as exc:
            self.note(name, f"unreadable tar archive: {exc}")
            return
        try:
            while True:
                try:
                    member = archive.next()
                except _DECOMPRESSION_ERRORS as exc:
                    self.note(name, f"truncated or corrupt tar archive: {exc}")
                    return
                if member is None:
                    return
                if not member.isfile():
                    continue
                handle = archive.extractfile(member)
                if handle is None:
                    continue
                member_name = f"{name}:{member.name}"
                yield from self._from_stream(
                    member_name, _guarded_stream(handle, member_name, self), member.size
                )
        finally:
            archive.close()

    def _zip(self, name: str, stream: BinaryIO) -> Iterator[Opened]:
        try:
            data = stream if stream.seekable() else io.BytesIO(stream.read())
            archive = zipfile.ZipFile(data)
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            self.note(name, f"unreadable or truncated zip archive: {exc}")
            return
        with archive:
            for info in archive.infolist():
                if info.is_dir():
                    continue
                member_name = f"{name}:{info.filename}"
                try:
                    handle = archive.open(info)
                except (zipfile.BadZipFile, OSError, NotImplementedError, RuntimeError) as exc:
                    self.note(member_name, f"cannot read zip member: {exc}")
                    continue
                with handle:
                    yield from self._from_stream(
                        member_name, _guarded_stream(handle, member_name, self), info.file_size
                    )


class _RawAdapter(io.RawIOBase):
    """Lets any binary stream sit under a BufferedReader (for ``peek``)."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self._stream.read(len(buffer))
        n = len(data)
        buffer[:n] = data
        return n


class _GuardedRaw(_RawAdapter):
    """A raw stream whose decompression errors end the stream with a note."""

    def __init__(self, stream: IO[bytes], name: str, intake: Intake) -> None:
        super().__init__(stream)
        self._name = name
        self._intake = intake
        self._failed = False

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        if self._failed:
            return 0
        try:
            return super().readinto(buffer)
        except _DECOMPRESSION_ERRORS as exc:
            self._failed = True
            self._intake.note(self._name, f"truncated or corrupt data, read in part: {exc}")
            return 0


def _guarded_stream(stream: IO[bytes], name: str, intake: Intake) -> BinaryIO:
    """A buffered stream whose decompression errors end it with a coverage note."""
    return io.BufferedReader(_GuardedRaw(stream, name, intake))
