"""Bytes to windows of whole lines: what the reader reads at a time, and where lines end.

A source is read :data:`CHUNK_BYTES` at a time (small files into one buffer
shared by the read, see :func:`reads`), and cut at its last newline; a line
that spans two reads is joined into a window of its own, and one longer than
:data:`LINE_MAX_BYTES` is cut there. :func:`newlines` counts the lines a
window holds, at ``memchr`` speed, so every cited line keeps its number.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    from nccl_doctor.evidence.sections import SourceSummary

#: Bytes read at a time.
CHUNK_BYTES = 512 << 10
#: Files up to this size are read into memory shared by all sources (see :func:`reads`).
SHARED_BUFFER_MAX = 8 << 20
#: Newlines are counted in pieces of this many bytes (see :func:`newlines`).
COUNT_PIECE = 32 << 10
#: Bytes whose newlines a source may leave uncounted for a while (see :class:`Uncounted`).
UNCOUNTED_MAX = 4 << 20
#: Longer lines are cut to this many bytes (with a coverage note): no message needs more,
#: and it bounds what one line costs the parsers, whatever their patterns.
LINE_MAX_BYTES = 64 << 10


def newlines(data: bytes | bytearray, start: int, stop: int) -> int:
    """The newlines in ``data[start:stop]``, counted at ``memchr`` speed.

    ``bytes.count`` of one byte is a byte-by-byte loop in CPython (about
    1.3 GB/s, half of ``grep``'s whole time on a large log); deleting the
    newlines with ``replace`` finds them with ``memchr``, several times
    faster. The copies are made in pieces small enough to come from the
    allocator's free lists, not from fresh pages.
    """
    if stop - start <= COUNT_PIECE:
        return data.count(b"\n", start, stop)
    found = 0
    for at in range(start, stop, COUNT_PIECE):
        piece = data[at : min(at + COUNT_PIECE, stop)]
        found += len(piece) - len(piece.replace(b"\n", b""))
    return found


class Uncounted:
    """The bytes past the last line a source read, their lines counted only if a later line
    is read (or the source's line total is asked for).

    A log's lines of interest often end well before the log does (a healthy
    rank of a per-rank folder: its init lines, then hours of chatter), and
    numbering lines nobody cites is half the counting in such a folder. The
    bytes are held, not counted: those read into the shared memory are copied
    (a copy is several times faster than a count), fresh bytes are held as
    they are. Past :data:`UNCOUNTED_MAX` bytes held they are counted, so
    little is held for long.
    """

    __slots__ = ("_held", "_pieces", "_unended")

    def __init__(self) -> None:
        self._pieces: list[tuple[bytes, int, int]] = []
        self._held = 0
        #: a last line without a newline (it counts as a line too)
        self._unended = 0

    def __bool__(self) -> bool:
        return bool(self._pieces or self._unended)

    def hold(self, data: bytes | bytearray, start: int, stop: int) -> int:
        """Hold ``data[start:stop]`` (a window's rest: whole lines, or a source's last line
        without a newline); the lines counted now (none, unless too much is held)."""
        if data[stop - 1] != 10:
            self._unended += 1
        if isinstance(data, bytes):
            self._pieces.append((data, start, stop))
            self._held += len(data)  # what is kept alive, not only the piece
        else:  # memory the next read overwrites
            self._pieces.append((bytes(memoryview(data)[start:stop]), 0, stop - start))
            self._held += stop - start
        return self.count() if self._held > UNCOUNTED_MAX else 0

    def count(self) -> int:
        """The lines held, counted now; nothing is held after."""
        found = sum(newlines(d, a, b) for d, a, b in self._pieces) + self._unended
        self._pieces.clear()
        self._held = self._unended = 0
        return found


def reads(stream: BinaryIO, buffer: bytearray | None) -> Iterator[tuple[bytes | bytearray, int]]:
    """The bytes of ``stream``, a chunk at a time, each with its length: into ``buffer`` when
    one is given (each chunk valid until the next, its bytes past the length stale), else
    fresh bytes.

    A folder of a thousand 1 MiB logs read into fresh bytes costs a page fault
    per 4 KiB (the allocator gives the pages back between files): more than
    reading them. Reading a large file into the same memory is slower than
    into fresh bytes (measured: ~0.15 s a 512 MiB log), so large files do not.
    A short read stays in the buffer (a copy of it cost ~0.05 s for 513 files).
    """
    readinto = getattr(stream, "readinto", None)
    if buffer is None or readinto is None:
        while data := stream.read(CHUNK_BYTES):
            yield data, len(data)
        return
    view = memoryview(buffer)
    while n := readinto(view):
        yield buffer, n


def line_chunks(
    stream: BinaryIO,
    summary: SourceSummary,
    cut: Callable[[], None],
    buffer: bytearray | None = None,
) -> Iterator[tuple[bytes | bytearray, int, int]]:
    """Windows ``(data, start, stop)`` where ``data[start:stop]`` is a run of whole lines.

    Most windows lie in the bytes as read (no copy; with a ``buffer``, valid
    until the next window); a line that spans two reads is joined into a
    window of its own. A line longer than LINE_MAX_BYTES is cut there, and
    ``cut`` called.
    """
    tail = b""  # the start of a line whose end is not read yet
    skipping = False  # inside the rest of an over-long line
    for data, size in reads(stream, buffer):
        summary.bytes_read += size
        start = 0
        if skipping:
            nl = data.find(b"\n", 0, size)
            if nl < 0:
                continue
            start, skipping = nl + 1, False
        if tail:
            nl = data.find(b"\n", start, size)
            piece = bytes(data[start:size] if nl < 0 else data[start : nl + 1])
            if len(tail) + len(piece) > LINE_MAX_BYTES:
                line = (tail + piece)[:LINE_MAX_BYTES] + b"\n"
                cut()
                tail, skipping = b"", nl < 0
                yield line, 0, len(line)
                if nl < 0:
                    continue
                start = nl + 1
            elif nl < 0:
                tail += piece
                continue
            else:
                line, tail = tail + piece, b""
                yield line, 0, len(line)
                start = nl + 1
        last = data.rfind(b"\n", start, size)
        if last < 0:
            tail = bytes(data[start:size])
        else:
            if last >= start:
                yield data, start, last + 1
            tail = bytes(data[last + 1 : size])
        if len(tail) > LINE_MAX_BYTES:
            line = tail[:LINE_MAX_BYTES] + b"\n"
            cut()
            tail, skipping = b"", True
            yield line, 0, len(line)
    if tail:
        yield tail, 0, len(tail)
