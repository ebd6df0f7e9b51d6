"""What nccl-doctor keeps between runs to start faster: derived data only, never evidence.

Every entry is something a run can always recompute (a compiled Hyperscan
database, what a pattern's syntax tree says), kept under
``$XDG_CACHE_HOME/nccl-doctor`` (``~/.cache/nccl-doctor``) in a file whose
name holds a hash of everything the entry was derived from, so a stale entry
is never read. Any problem with the cache (a read-only home, a corrupt or
foreign file) costs only the recomputing.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
from pathlib import Path
from typing import Any


def cache_dir() -> Path:
    """Where the cached files are."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "nccl-doctor"


#: Files of one kind (``patterns-*.json``, ``prefilter-*.hsdb``) kept: the newest few. Each
#: new version of nccl-doctor (or of Python, or of the anchors) writes a new one.
KEEP = 4


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename (readers see all or
    nothing), then drop all but the :data:`KEEP` newest files of its kind; a failure leaves
    the cache as it was."""
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        try:
            tmp.write_bytes(data)
            tmp.replace(path)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink()
            return
        _prune(path)


def _prune(path: Path) -> None:
    """Remove the older files of ``path``'s kind (same name up to its first ``-``, same suffix)."""
    kind = path.name.split("-", 1)[0]
    siblings = []
    for other in path.parent.glob(f"{kind}-*{path.suffix}"):
        with contextlib.suppress(OSError):
            siblings.append((other.stat().st_mtime, other))
    for _, old in sorted(siblings, reverse=True)[KEEP:]:
        if old != path:
            with contextlib.suppress(OSError):
                old.unlink()


class JsonCache:
    """A dict of JSON values kept in ``<cache>/<name>.json``, read once, written at exit.

    ``get`` answers from the file as it was when first asked (``None``: not
    there); ``put`` adds an entry, and the entries added are merged into the
    file when the process ends (other processes' entries are kept).
    """

    def __init__(self, name: str, most: int = 4096) -> None:
        self.name = name
        self.most = most
        #: the file, where the environment put the cache when this cache was made
        self.path = cache_dir() / f"{name}.json"
        self._entries: dict[str, Any] | None = None
        self._added: dict[str, Any] = {}
        self._at_exit = False

    def _load(self) -> dict[str, Any]:
        try:
            found = json.loads(self.path.read_bytes())
        except (OSError, ValueError):
            return {}
        return found if isinstance(found, dict) else {}

    def get(self, key: str) -> Any:
        """The value kept for ``key``, or ``None``."""
        if self._entries is None:
            self._entries = self._load()
        return self._entries.get(key)

    def put(self, key: str, value: Any) -> None:
        """Keep ``value`` for ``key`` (written when the process ends)."""
        if self._entries is None:
            self._entries = self._load()
        if not self._at_exit:
            atexit.register(self.save)
            self._at_exit = True
        self._entries[key] = self._added[key] = value

    def save(self) -> None:
        """Merge the added entries into the file now."""
        if not self._added:
            return
        merged = self._load()
        room = max(0, self.most - len(merged))
        merged.update(dict(list(self._added.items())[:room]))
        self._added = {}
        write_atomic(self.path, json.dumps(merged, separators=(",", ":")).encode())
