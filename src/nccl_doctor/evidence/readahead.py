"""Asks the kernel to read a folder's coming files into its page cache while the reader reads one.

The kernel reads ahead within a file, not across files: a folder of per-rank
logs that is not in the page cache (just copied off a cluster's file system,
or paged out) waits on the disk for the first bytes of every file. Asked
:data:`FILES` files ahead (in a folder's listing, or among the paths named,
as a shell's ``*.log`` names them), the disk reads them while the reader
scans the one before. Measured on issue 17's 513 per-rank files (512 MiB)
read from disk: ``diagnose`` 1.9-2.7 s without, 1.25-2.0 s with (``grep -r``
0.6-1.0 s).

A file whose first page is cached is left alone: asking costs ~20 us a file
even then (the kernel looks up each page it was asked for: 10 ms for those
513 files), the probe (a one-byte read that may not wait) ~1.5 us. Nothing is
read into the process, no thread is started, and every error is ignored: the
reader's own open and read meet it and note it as before.
"""

from __future__ import annotations

import os
import stat
from contextlib import suppress

from nccl_doctor.evidence import chunks

#: How many files of a folder are asked for ahead of the one being read.
FILES = 2
#: How much of each: the files read into the memory shared by a read are no larger.
BYTES = chunks.SHARED_BUFFER_MAX

_NOWAIT: int | None = getattr(os, "RWF_NOWAIT", None)
_WILLNEED: int | None = getattr(os, "POSIX_FADV_WILLNEED", None)


def hint(path: str, *, named: bool = False) -> None:
    """Ask the kernel to read the start of ``path`` (a regular file, as its folder listed it)
    in the background when its first page is not in the page cache.

    A path the user ``named`` is looked at first and left alone unless it is a
    regular file: opening a FIFO or a device is not harmless, and the reader
    does not open such a path either.
    """
    if _NOWAIT is None or _WILLNEED is None:
        return
    try:
        if named and not stat.S_ISREG(os.stat(path).st_mode):  # noqa: PTH116 -- as intake._file
            return
        # non-blocking as the reader's own open: the file may have become a FIFO since
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.preadv(fd, [bytearray(1)], 0, _NOWAIT)
    except BlockingIOError:  # not cached: reading it would wait for the disk
        with suppress(OSError):
            os.posix_fadvise(fd, 0, BYTES, _WILLNEED)
    except OSError:  # not a regular file any more, or a file system that cannot tell
        pass
    finally:
        os.close(fd)
