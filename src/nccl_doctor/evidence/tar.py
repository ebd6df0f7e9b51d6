"""Tar archives, read as a stream by a small reader of its own, in bounded memory.

Not :mod:`tarfile`: its PAX parsing backtracks on crafted headers in the
Pythons still in the field (CVE-2024-6232: a 512 KiB header takes hours) and
it reads a header whole however large it claims to be (9 GiB for a 3 GiB
one). Here extension headers (PAX, GNU long names) are bounded by
:attr:`Limits.header_bytes <nccl_doctor.evidence.archives.Limits>` before
they are read, and PAX records are parsed by their length prefixes, once
each. Only regular files are members; links, devices, folders and FIFOs in
the archive are never followed or opened.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterator
from typing import BinaryIO

from nccl_doctor.evidence.archives import CHUNK, Budget, Report, human_size

_BLOCK = 512
_NUL_BLOCK = bytes(_BLOCK)


def is_tar(head: bytes) -> bool:
    """Whether ``head`` is a ustar (POSIX or GNU) header block."""
    return len(head) >= 262 and head[257:262] == b"ustar"


def _number(field: bytes) -> int | None:
    """A header's octal (or GNU base-256) number."""
    if field and field[0] & 0x80:
        if field[0] == 0xFF:
            return None  # negative
        return int.from_bytes(bytes([field[0] & 0x7F]) + field[1:], "big")
    text = field.split(b"\x00", 1)[0].strip(b" ")
    if not text:
        return 0
    if not all(48 <= c <= 55 for c in text):
        return None
    return int(text, 8)


def _checksum_ok(block: bytes) -> bool:
    stored = _number(block[148:156])
    unsigned = sum(block[:148]) + 256 + sum(block[156:])
    signed = sum(struct.unpack("148b8x356b", block)) + 256
    return stored in (unsigned, signed)


def _pax(data: bytes) -> dict[str, str] | None:
    """PAX records ``"<len> <key>=<value>\\n"``, read by their lengths; ``None`` when malformed."""
    records: dict[str, str] = {}
    pos = 0
    while pos < len(data) and data[pos] != 0:
        space = data.find(b" ", pos, pos + 21)
        digits = data[pos:space]
        if space < 0 or not digits.isdigit():
            return None
        end = pos + int(digits)
        if end > len(data) or end <= space + 2 or data[end - 1] != 0x0A:
            return None
        key, eq, value = data[space + 1 : end - 1].partition(b"=")
        if not eq:
            return None
        records[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
        pos = end
    return records


class _TarMember(io.RawIOBase):
    """One member's data within the archive stream."""

    def __init__(self, stream: BinaryIO, size: int) -> None:
        self._stream = stream
        self.left = size
        self.short = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        if self.left <= 0 or self.short:
            return 0
        data = self._stream.read(min(len(buffer), self.left))
        n = len(data)
        buffer[:n] = data
        self.left -= n
        if n == 0:
            self.short = True
        return n


def _skip(stream: BinaryIO, n: int) -> bool:
    """Read past ``n`` bytes; ``False`` when the stream ended first."""
    while n > 0:
        data = stream.read(min(n, CHUNK))
        if not data:
            return False
        n -= len(data)
    return True


def _padding(size: int) -> int:
    return -size % _BLOCK


def tar_members(
    stream: BinaryIO, name: str, budget: Budget, report: Report
) -> Iterator[tuple[str, io.BufferedReader, int]]:
    """The regular files of a tar stream: ``(name, stream, size)``, each valid until the next."""
    limit = budget.limits.header_bytes
    extra: dict[str, str] = {}
    long_name: str | None = None
    while not budget.stopped:
        block = stream.read(_BLOCK)
        if len(block) < _BLOCK or block == _NUL_BLOCK:
            if block and block != _NUL_BLOCK:
                report(name, "truncated tar archive: the last entry is incomplete")
            return
        if not _checksum_ok(block):
            report(name, "corrupt tar header (bad checksum): the rest was not read")
            return
        size = _number(block[124:136])
        kind = block[156:157]
        if size is None:
            report(name, "corrupt tar header (bad size): the rest was not read")
            return
        if kind in (b"x", b"g", b"L", b"K"):
            if size > limit:
                report(
                    name,
                    f"tar extension header of {human_size(size)} (over the "
                    f"{human_size(limit)} limit; a hostile archive's shape): the rest was not read",
                )
                return
            data = stream.read(size + _padding(size))
            if len(data) < size:
                report(name, "truncated tar archive: the last entry is incomplete")
                return
            data = data[:size]
            if kind in (b"L", b"K"):
                if kind == b"L":
                    long_name = data.split(b"\x00", 1)[0].decode("utf-8", "replace")
                continue
            records = _pax(data)
            if records is None:
                report(name, "malformed PAX header in tar archive: the rest was not read")
                return
            if kind == b"x":
                extra = records
            continue
        if not budget.member(name):
            return
        path = _member_name(block, extra, long_name)
        if "size" in extra:
            declared = extra["size"]
            if not declared.isdigit() or len(declared) > 20:
                report(name, "malformed PAX size in tar archive: the rest was not read")
                return
            size = int(declared)
        sparse = kind == b"S" or any(k.startswith("GNU.sparse.") for k in extra)
        extra, long_name = {}, None
        regular = kind in (b"0", b"\x00", b"7") and not path.endswith("/")
        if kind in (b"1", b"2", b"3", b"4", b"5", b"6") or (kind == b"\x00" and not regular):
            continue  # links, devices, folders, FIFOs: no data, nothing to read
        if sparse:
            report(f"{name}:{path}", "sparse tar member: not read")
        if not regular or sparse:
            if not _skip(stream, size + _padding(size)):
                report(name, "truncated tar archive: the last entry is incomplete")
                return
            continue
        member = _TarMember(stream, size)
        yield f"{name}:{path}", io.BufferedReader(member, CHUNK), size
        if member.short or not _skip(stream, member.left):
            if not budget.stopped:
                report(f"{name}:{path}", "truncated tar archive: this member was read in part")
            return
        if not _skip(stream, _padding(size)):
            report(name, "truncated tar archive: the last entry is incomplete")
            return


def _member_name(block: bytes, extra: dict[str, str], long_name: str | None) -> str:
    if "path" in extra:
        return extra["path"]
    if long_name is not None:
        return long_name
    base = block[:100].split(b"\x00", 1)[0].decode("utf-8", "replace")
    if block[257:265] == b"ustar\x0000":
        prefix = block[345:500].split(b"\x00", 1)[0].decode("utf-8", "replace")
        if prefix:
            return f"{prefix}/{base}"
    return base
