"""Archives and compressed streams, read in bounded time and memory.

Everything here may be hostile: a gzip of ten gigabytes of newlines, a zip
whose entries overlap, archives nested five deep, a tar header that claims
gigabytes. Each path the user names gets a :class:`Budget` (see
:class:`Limits`): bytes out of decompressors (a fixed allowance, beyond it
at most ``ratio`` times what was read from the path itself), archive layers
within one another, archive entries. A spent budget ends the read of that
path with one coverage note; what was read before it stays.

Members are streamed, never held whole (tar: :mod:`~nccl_doctor.evidence.tar`,
never :mod:`tarfile`). A zip needs random access: one inside another archive
is spooled to a temporary file (in memory while small), and its entries are
checked before any is read (count, overlap).
"""

from __future__ import annotations

import bz2
import gzip
import io
import itertools
import lzma
import shutil
import struct
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass
from typing import IO, BinaryIO, Protocol

#: What a damaged archive or compressed stream raises while being read.
DECOMPRESSION_ERRORS = (
    OSError,
    EOFError,
    ValueError,
    zlib.error,
    lzma.LZMAError,
    zipfile.BadZipFile,
    NotImplementedError,
    RuntimeError,
)
#: Bytes read at a time from archives and decompressors.
CHUNK = 1 << 20
_COUNTED_BUFFER = 64 << 10

Report = Callable[[str, str], None]


class _Source(Protocol):
    """Anything a stream can be read from: a file, a decompressor, an archive member."""

    def read(self, size: int = -1, /) -> bytes: ...


def human_size(n: int) -> str:
    """``3 GiB``, ``1.5 MiB``, ``12 bytes``."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.3g} {unit}"
    return f"{n} bytes"


@dataclass(frozen=True, slots=True)
class Limits:
    """What reading one path the user named may cost."""

    #: bytes out of decompressors, whatever the ratio
    free_bytes: int = 256 << 20
    #: beyond ``free_bytes``, out of decompressors per byte read from the path
    ratio: int = 500
    #: bytes out of decompressors, in all
    expanded_bytes: int = 32 << 30
    #: archives and compressions within one another (a ``.tar.gz`` is two)
    layers: int = 4
    #: archive entries
    members: int = 100_000
    #: one tar extension header (PAX, GNU long name)
    header_bytes: int = 1 << 20
    #: folder levels below a folder named
    folder_depth: int = 32
    #: a nested zip is spooled in memory up to this size, then to a temporary file
    spool_memory: int = 16 << 20


class Budget:
    """The costs of one path the user named, and whether a limit ended its read."""

    def __init__(self, limits: Limits, source: str, report: Report) -> None:
        self.limits = limits
        self.source = source
        self._report = report
        self.consumed = 0
        self.expanded = 0
        self.members = 0
        self.too_deep = 0
        self.stopped = False

    def stop(self, why: str, where: str) -> None:
        """End the reading of archives and compressed data under this path, with a note (once).

        ``where`` is what was being read: the path itself, or a file or member under it.
        """
        if not self.stopped:
            self.stopped = True
            rest = "the rest was not read"
            if where != self.source:
                rest += f", nor any other archive or compressed file under {self.source}"
            self._report(where, f"{why}; {rest}")

    def allowed(self) -> int:
        """How many bytes decompressors may give in all, given what was read so far."""
        lim = self.limits
        return min(lim.expanded_bytes, max(lim.free_bytes, lim.ratio * self.consumed))

    def expand(self, n: int, where: str) -> int:
        """Account ``n`` decompressed bytes of ``where``; how many of them may be used."""
        allowed = self.allowed()
        if self.expanded + n <= allowed:
            self.expanded += n
            return n
        keep = max(0, allowed - self.expanded)
        self.expanded += keep
        lim = self.limits
        if allowed >= lim.expanded_bytes:
            why = f"stopped after {human_size(allowed)} of decompressed data (the limit)"
        else:
            out, read = human_size(self.expanded), human_size(self.consumed)
            why = (
                f"stopped after {out} decompressed from {read} "
                f"(more than {lim.ratio}:1, the shape of a decompression bomb)"
            )
        self.stop(why, where)
        return keep

    def member(self, where: str) -> bool:
        """Count one entry of the archive ``where``; ``False`` once there are too many."""
        self.members += 1
        if self.members > self.limits.members:
            self.stop(f"stopped after {self.limits.members} archive entries (the limit)", where)
        return not self.stopped

    def finish(self) -> None:
        """The notes only known at the end of the path."""
        if self.too_deep:
            self._report(
                self.source,
                f"{self.too_deep} archive(s) nested more than {self.limits.layers} deep: "
                "not opened",
            )


class _Raw(io.RawIOBase):
    """Lets any binary stream sit under a BufferedReader (for ``peek``)."""

    def __init__(self, stream: _Source) -> None:
        self._stream = stream
        # one read of the layer below at a time: an error there then loses nothing read before
        self._read = getattr(stream, "read1", stream.read)
        # ...straight into the caller's buffer where the layer can (a file: one copy, not two)
        self._into: Callable[[memoryview], int | None] | None = getattr(stream, "readinto1", None)
        if self._into is None and isinstance(stream, io.RawIOBase):
            self._into = stream.readinto

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        if self._into is not None:
            return self._into(memoryview(buffer)) or 0
        data = self._read(len(buffer))
        n = len(data)
        buffer[:n] = data
        return n


class _Counted(_Raw):
    """The path itself: counts what is read (the ratio's denominator); seeks when it can."""

    def __init__(self, stream: IO[bytes], budget: Budget) -> None:
        super().__init__(stream)
        self._file = stream
        self._budget = budget

        #: the bytes read through this stream
        self.count = 0

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        n = super().readinto(buffer)
        self._budget.consumed += n
        self.count += n
        return n

    def seekable(self) -> bool:
        try:
            return self._file.seekable()
        except (OSError, ValueError):
            return False

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._file.seek(offset, whence)

    def tell(self) -> int:
        return self._file.tell()


class _Guarded(_Raw):
    """A stream whose errors end it with a note; decompressed bytes are budgeted."""

    def __init__(
        self, stream: _Source, name: str, budget: Budget, report: Report, *, expands: bool
    ) -> None:
        super().__init__(stream)
        self._name = name
        self._budget = budget
        self._report = report
        self._expands = expands
        self._done = False

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        if self._done or self._budget.stopped:
            return 0
        try:
            n = super().readinto(buffer)
        except DECOMPRESSION_ERRORS as exc:
            self._done = True
            self._report(self._name, f"truncated or corrupt data, read in part: {exc}")
            return 0
        if self._expands:
            n = self._budget.expand(n, self._name)
        return n

    def close(self) -> None:
        close = getattr(self._stream, "close", None)
        if close is not None and not self.closed:
            with suppress(*DECOMPRESSION_ERRORS):
                close()
        super().close()


def counted(stream: IO[bytes], budget: Budget) -> io.BufferedReader:
    """The stream of a path the user named, buffered, its bytes counted.

    Its buffer is small so that what was counted is close to what a
    decompressor has taken (large reads pass the buffer by).
    """
    return io.BufferedReader(_Counted(stream, budget), _COUNTED_BUFFER)


def counted_bytes(stream: IO[bytes]) -> int | None:
    """The bytes read so far from a path's stream (see :func:`counted`), else ``None``."""
    raw = getattr(stream, "raw", None)
    return raw.count if isinstance(raw, _Counted) else None


def settle(stream: IO[bytes], total: int) -> None:
    """Count ``total`` bytes as read from a path's stream (see :func:`counted`) that was read
    elsewhere: its budget then holds what reading it here would have left."""
    raw = getattr(stream, "raw", None)
    if isinstance(raw, _Counted):
        raw._budget.consumed += total - raw.count
        raw.count = total


def guarded(
    stream: _Source, name: str, budget: Budget, report: Report, *, expands: bool
) -> io.BufferedReader:
    """``stream`` buffered, its errors notes, its bytes budgeted when it ``expands``."""
    return io.BufferedReader(_Guarded(stream, name, budget, report, expands=expands), CHUNK)


# -- compression ---------------------------------------------------------------


def compression(head: bytes) -> str | None:
    """``gz``, ``bz2`` or ``xz`` when ``head`` opens such a stream."""
    if head.startswith(b"\x1f\x8b"):
        return "gz"
    if head.startswith(b"BZh"):
        return "bz2"
    if head.startswith(b"\xfd7zXZ\x00"):
        return "xz"
    return None


def decompressed(
    stream: BinaryIO, kind: str, name: str, budget: Budget, report: Report
) -> io.BufferedReader:
    """The decompressed stream (its bytes budgeted, its errors notes); closing it closes all."""
    inner: _Source
    if kind == "gz":
        inner = gzip.GzipFile(fileobj=stream, mode="rb")
    elif kind == "bz2":
        inner = bz2.BZ2File(stream, mode="rb")
    else:
        inner = lzma.LZMAFile(stream, mode="rb")  # noqa: SIM115 -- closed with the result
    return guarded(inner, name, budget, report, expands=True)


# -- zip -----------------------------------------------------------------------

_EOCD = b"PK\x05\x06"
_EOCD64_LOCATOR = b"PK\x06\x07"
#: The smallest span a zip entry takes before its data: the local header's fixed part.
_LOCAL_HEADER = 30


def is_zip(head: bytes) -> bool:
    """Whether ``head`` opens a zip archive."""
    return head.startswith((b"PK\x03\x04", b"PK\x05\x06"))


def _zip_entry_count(fp: IO[bytes]) -> int | None:
    """How many entries the zip's end record lists (before zipfile reads them all)."""
    end = fp.seek(0, io.SEEK_END)
    start = max(0, end - (1 << 16) - 22)
    fp.seek(start)
    tail = fp.read(end - start)
    at = tail.rfind(_EOCD)
    if at < 0 or len(tail) < at + 22:
        return None
    count = int(struct.unpack("<H", tail[at + 10 : at + 12])[0])
    locator = at - 20
    if count == 0xFFFF and locator >= 0 and tail[locator : locator + 4] == _EOCD64_LOCATOR:
        (offset,) = struct.unpack("<Q", tail[locator + 8 : locator + 16])
        fp.seek(offset)
        record = fp.read(56)
        if len(record) == 56 and record[:4] == b"PK\x06\x06":
            count = int(struct.unpack("<Q", record[32:40])[0])
    return count


def _overlapping(infos: list[zipfile.ZipInfo]) -> bool:
    """Whether two entries share bytes: the shape of a zip bomb, never of a real archive."""
    spans = sorted((i.header_offset, i.compress_size) for i in infos)
    return any(
        a_offset + _LOCAL_HEADER + a_size > b_offset
        for (a_offset, a_size), (b_offset, _) in itertools.pairwise(spans)
    )


def _spooled(stream: BinaryIO, budget: Budget) -> IO[bytes]:
    """A nested archive copied where it can be read at random (memory while small, then disk)."""
    limit = budget.limits.spool_memory
    spool = tempfile.SpooledTemporaryFile(max_size=limit)  # noqa: SIM115 -- the caller closes it
    try:
        shutil.copyfileobj(stream, spool, CHUNK)
        spool.seek(0)
    except BaseException:
        spool.close()
        raise
    return spool


def zip_members(
    stream: BinaryIO, name: str, budget: Budget, report: Report
) -> Iterator[tuple[str, io.BufferedReader, int]]:
    """The files of a zip: ``(name, stream, size)``, each valid until the next."""
    try:
        fp: IO[bytes] = stream if stream.seekable() else _spooled(stream, budget)
    except OSError as exc:
        report(name, f"cannot copy the zip archive to read it: {exc.strerror or exc}")
        return
    try:
        if budget.stopped:
            return
        try:
            count = _zip_entry_count(fp)
            if count is not None and count > budget.limits.members:
                report(
                    name,
                    f"zip archive of {count} entries (over the {budget.limits.members} limit): "
                    "not read",
                )
                return
            fp.seek(0)
            archive = zipfile.ZipFile(fp)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, struct.error) as exc:
            report(name, f"unreadable or truncated zip archive: {exc}")
            return
        with archive:
            infos = archive.infolist()
            if _overlapping(infos):
                report(
                    name,
                    "zip entries overlap (the shape of a zip bomb, never of a real archive): "
                    "not read",
                )
                return
            for info in infos:
                if info.is_dir():
                    continue
                if not budget.member(name):
                    return
                member_name = f"{name}:{info.filename}"
                try:
                    handle = archive.open(info)
                except DECOMPRESSION_ERRORS as exc:
                    report(member_name, f"cannot read zip member: {exc}")
                    continue
                with handle:
                    expands = info.compress_type != zipfile.ZIP_STORED
                    yield (
                        member_name,
                        guarded(handle, member_name, budget, report, expands=expands),
                        info.file_size,
                    )
                if budget.stopped:
                    return
    finally:
        if fp is not stream:
            with suppress(OSError):
                fp.close()
