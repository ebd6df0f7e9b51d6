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
import hashlib
import json
import os
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any


def cache_dir() -> Path:
    """Where the cached files are."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "nccl-doctor"


#: Files of one kind (``patterns-*.json``) kept: the newest few (a kind may keep more, as the
#: prefilter's scan databases do, see ``write_atomic``'s ``keep``). Each
#: new version of nccl-doctor (or of Python, or of the anchors) writes a new one.
KEEP = 4


def write_atomic(path: Path, data: bytes, keep: int = KEEP) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename (readers see all or
    nothing), then drop all but the ``keep`` newest files of its kind; a failure leaves the
    cache as it was."""
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
        _prune(path, keep)


def _prune(path: Path, keep: int) -> None:
    """Remove all but the ``keep`` newest files of ``path``'s kind (same name up to its first
    ``-``, same suffix); newest by the time each was written or last :func:`touch`-ed."""
    kind = path.name.split("-", 1)[0]
    siblings = []
    for other in path.parent.glob(f"{kind}-*{path.suffix}"):
        with contextlib.suppress(OSError):
            siblings.append((other.stat().st_mtime, other))
    for _, old in sorted(siblings, reverse=True)[keep:]:
        if old != path:
            with contextlib.suppress(OSError):
                old.unlink()


def touch(path: Path) -> None:
    """Mark a cached file as used now, so pruning keeps the files in use (a failure is none)."""
    with contextlib.suppress(OSError):
        os.utime(path)


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


#: The length of the check that begins a ``.marshal`` file: the CRC-32 of the rest, which
#: tells a cut or damaged file (a SHA-256 of the 1.7 MB of kept code cost 5 ms a start).
_DIGEST = 4


def read_marshal(path: Path) -> Any:
    """The value :func:`write_marshal` wrote to ``path``, or ``None`` (no file, or a damaged
    one: ``marshal`` is not meant to read damaged data, the check keeps it from it)."""
    import marshal  # noqa: PLC0415 -- only where a kept value is read

    try:
        data = path.read_bytes()
    except OSError:
        return None
    digest, payload = data[:_DIGEST], data[_DIGEST:]
    if digest != zlib.crc32(payload).to_bytes(_DIGEST, "big"):
        return None
    try:
        # written by write_marshal in the user's own cache folder (as writable as the user's
        # site-packages, which is on sys.path); the check rules out a damaged file
        return marshal.loads(payload)  # noqa: S302 -- see above
    except (ValueError, EOFError, TypeError):
        return None


def write_marshal(path: Path, value: Any) -> None:
    """Keep ``value`` (made of what ``marshal`` writes: code, tuples, str...) in ``path``."""
    import marshal  # noqa: PLC0415

    payload = marshal.dumps(value)
    write_atomic(path, zlib.crc32(payload).to_bytes(_DIGEST, "big") + payload)


def kept(name: str, key: bytes, make: Callable[[], Any]) -> Any:
    """``make()``, kept between runs in ``<cache>/<name>-<hash>.marshal``: ``key`` holds all
    the value is derived from (the data and the code that reads it), hashed with Python's
    version into the file name, so a file is read only for the very same inputs. ``make``
    returns what ``marshal`` writes; when it raises, nothing is kept."""
    import sys  # noqa: PLC0415

    digest = hashlib.sha256(key + sys.version.encode()).hexdigest()[:32]
    path = cache_dir() / f"{name}-{digest}.marshal"
    found = read_marshal(path)
    if found is None:
        found = make()
        write_marshal(path, found)
    return found


#: The code kept of the methods ``dataclasses`` writes: at most this many entries (one a
#: method, ~1 KiB each; a run of ``diagnose`` uses about a thousand).
CODE_MOST = 3000


class CompiledMethods:
    """The methods ``dataclasses`` writes for nccl-doctor's classes, compiled once and kept.

    A frozen, slotted dataclass gets an ``__init__``, ``__repr__``, ``__eq__``,
    ``__hash__``, ``__setattr__`` and ``__delattr__`` written as source text
    and compiled when its class statement runs: ~1 ms a class, and ``diagnose``
    loads ~180 (most of them facts), a third of its start-up. ``dataclasses``
    compiles each text with the built-in ``exec``; :func:`keep_dataclass_code`
    puts :meth:`exec` in its place, which runs the same text's code object,
    compiled the way ``exec`` compiles it (file ``<string>``, no ``__future__``
    flag of the caller) and kept in ``<cache>/dataclasses-<python>.marshal``,
    keyed by the text itself: the class gets the very functions it got before,
    and a changed class has a new text. Only the package's own modules are
    served so; any other text is compiled as before.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._codes: dict[str, Any] | None = None
        self._used: dict[str, Any] = {}
        self._added = False
        #: texts compiled in this process (what a warm cache saves; counted by tests)
        self.compiled = 0

    def _load(self) -> dict[str, Any]:
        import types  # noqa: PLC0415 -- only where a class is made

        found = read_marshal(self.path)
        if not isinstance(found, dict):
            return {}
        return {k: v for k, v in found.items() if isinstance(k, str) and type(v) is types.CodeType}

    def code(self, text: str) -> Any:
        """The code object of ``text``: kept, or compiled now (and kept at exit)."""
        if self._codes is None:
            self._codes = self._load()
        code = self._codes.get(text)
        if code is None:
            code = self._codes[text] = _compile(text)
            self.compiled += 1
            if not self._added:
                self._added = True
                atexit.register(self.save)
        self._used[text] = code
        return code

    def exec(self, source: Any, globals: Any = None, locals: Any = None, /) -> None:  # noqa: A002
        """What ``dataclasses`` calls for ``exec``."""
        name = globals.get("__name__") if isinstance(globals, dict) else None
        if not isinstance(source, str) or not isinstance(name, str):
            builtins_exec(_compile(source) if isinstance(source, str) else source, globals, locals)
        elif name == "nccl_doctor" or name.startswith("nccl_doctor."):
            builtins_exec(self.code(source), globals, locals)
        else:
            builtins_exec(_compile(source), globals, locals)

    def save(self) -> None:
        """Merge the code compiled in this process into the file (the run's own alone when the
        file would hold more than :data:`CODE_MOST`)."""
        if not self._added:
            return
        self._added = False
        merged = self._load()
        merged.update(self._used)
        if len(merged) > CODE_MOST:
            merged = dict(self._used)
        write_marshal(self.path, merged)


def _compile(text: str) -> Any:
    """``text`` compiled as the built-in ``exec`` compiles it when ``dataclasses`` calls it."""
    return compile(text, "<string>", "exec", dont_inherit=True)


builtins_exec = exec
#: The kept methods of this process, once :func:`keep_dataclass_code` ran.
METHODS: CompiledMethods | None = None


def keep_dataclass_code() -> None:
    """Have ``dataclasses`` run kept code for nccl-doctor's classes (see :class:`CompiledMethods`).

    ``NCCL_DOCTOR_NO_CODE_CACHE=1`` leaves ``dataclasses`` as it is.
    """
    global METHODS  # noqa: PLW0603 -- one per process, made on the package's import
    import dataclasses  # noqa: PLC0415
    import sys  # noqa: PLC0415

    if METHODS is not None or os.environ.get("NCCL_DOCTOR_NO_CODE_CACHE"):
        return
    tag = hashlib.sha256(f"{sys.version}\0{sys.implementation.cache_tag}".encode()).hexdigest()
    METHODS = CompiledMethods(cache_dir() / f"dataclasses-{tag[:32]}.marshal")
    dataclasses.exec = METHODS.exec  # type: ignore[attr-defined]
