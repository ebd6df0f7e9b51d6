"""Writing what nccl-doctor saves: whole and on disk, or an error that says so.

A write that fails for want of space (``ENOSPC``, ``EDQUOT``, ``EFBIG``)
often fails late: at ``close`` on a network file system, or only at
``fsync`` with delayed allocation. Every file nccl-doctor saves for later
(capture bundles) goes through :func:`write_file` or :func:`replace_file`,
which sync before they report success; a failure raises :class:`OSError`
and leaves no partial file behind.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


def write_file(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (created or truncated) and sync it; a failure removes it."""
    try:
        with path.open("wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError:
        with contextlib.suppress(OSError):
            if path.is_file() and not path.is_symlink():
                path.unlink()
        raise


def replace_file(path: Path, fill: Callable[[BinaryIO], None]) -> None:
    """Write ``path`` through ``fill`` into a temporary file beside it, sync, rename over it.

    Readers see the old file or the whole new one, never a part; on a failure
    the temporary file is removed and ``path`` is left as it was.
    """
    temp = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        with temp.open("xb") as handle:
            fill(handle)
            handle.flush()
            os.fsync(handle.fileno())
        temp.replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
