"""Turn what the user named (files, folders, archives, ``-``) into byte streams.

Kinds are never taken from names; this module only opens things. It knows
archives by their magic bytes (tar, gzip, bzip2, xz, zip; read by
:mod:`~nccl_doctor.evidence.archives` under a budget), walks folders in name
order without recursion and to a bounded depth (asking the kernel for the
next files while one is read, :mod:`~nccl_doctor.evidence.readahead`), opens
only regular files (and ``-``, stdin), follows a symbolic link in a folder
only to a file within that folder, skips what nccl-doctor wrote itself
(:mod:`~nccl_doctor.evidence.own_output`), and turns every problem (missing
path, dangling link, FIFO, no permission, truncated archive, binary file, a
spent budget) into a coverage note instead of an exception.
"""

from __future__ import annotations

import io
import os
import re
import stat
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from nccl_doctor.evidence import archives, readahead, tar
from nccl_doctor.evidence.archives import Budget, Limits
from nccl_doctor.evidence.own_output import (
    NOT_EVIDENCE,
    RUN_COMMAND_NAME,
    RUN_MANIFEST_HEAD,
    is_capture_manifest,
    is_running_manifest,
    report_format,
)
from nccl_doctor.facts.messages import TORCHRUN_LOG_FILE
from nccl_doctor.parse import file_parser
from nccl_doctor.parse.flight_recorder import KIND as FLIGHT_RECORDER

#: Files that describe a folder of evidence rather than hold it (an incident's
#: SOURCE note quotes the error it documents). Skipped when a folder is walked,
#: read when named on their own.
PROVENANCE_NAMES = frozenset({"SOURCE.md", "SOURCES.md", "README.md"})

#: How many leading bytes decide "binary" (a NUL byte among them).
SNIFF_BYTES = 8192

_RANK_IN_NAME = re.compile(r"(?:^|[/_.-])rank[_-]?(?P<rank>\d+)(?:[/_.-]|$)", re.IGNORECASE)
_COMPRESSED_SUFFIX = re.compile(r"\.(gz|bz2|xz)$")
#: torch's own analyzer (flight_recorder/components/loader.py) takes the rank of a dump from
#: the trailing digits of its name (``<prefix><rank>``); a ``.json``/``.pkl`` suffix is allowed.
_DUMP_RANK = re.compile(r"(?P<rank>\d{1,9})(?:\.(?:json|pkl|pickle))?$")
_SPECIAL = {
    stat.S_IFIFO: "a named pipe (FIFO)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}


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
    #: a whole-file kind read without the line reader (``flight-recorder``, the JSON of
    #: ``ncclras``), else ``None``
    file_kind: str | None = None


def rank_from_name(name: str) -> int | None:
    """The rank a per-rank log file's path names, if any.

    torchrun ``--log-dir`` writes ``.../attempt_0/<local_rank>/stdout.log``;
    many scripts write ``rank3.log`` or ``train_rank_3.txt``.
    """
    if m := TORCHRUN_LOG_FILE.search(name):
        return int(m["rank"])
    if m := _RANK_IN_NAME.search(_base(name)):
        return int(m["rank"])
    return None


def dump_rank(name: str) -> int | None:
    """The rank of a flight-recorder dump: named as a log's, else its name's trailing digits."""
    found = rank_from_name(name)
    if found is None and (m := _DUMP_RANK.search(_base(name))):
        found = int(m["rank"])
    return found


def _base(name: str) -> str:
    """``Path(name).name`` (the last part), without making a path for the common case."""
    base = os.path.basename(name)  # noqa: PTH119 -- no Path made per file of a folder
    return base if base not in ("", ".", "..") else Path(name).name


def _is_binary(head: bytes) -> bool:
    return b"\x00" in head[:SNIFF_BYTES]


def _not_regular(mode: int) -> str | None:
    """What a file of ``mode`` is when it is not a regular file (reading it could block)."""
    if stat.S_ISREG(mode):
        return None
    return _SPECIAL.get(stat.S_IFMT(mode), "not a regular file")


def _split(name: str) -> tuple[str, str]:
    """A path or archive member name as (folder, base): ``a.tgz:run/x`` -> ``a.tgz:run``, ``x``."""
    cut = max(name.rfind("/"), name.rfind(":"))
    return (name[:cut] if cut >= 0 else ""), name[cut + 1 :]


def _plain(entry: os.DirEntry[str]) -> bool:
    """Whether a folder's entry is a plain file the walk reads, by the listing's type (no
    system call, no note): not a link, a folder, or notes about the evidence."""
    try:
        return entry.name not in PROVENANCE_NAMES and entry.is_file(follow_symlinks=False)
    except OSError:
        return False


class _Listing:
    """A folder's entries in name order, one at a time; the files after the one taken can be
    named ahead of it (see :mod:`.readahead`)."""

    def __init__(self, entries: list[os.DirEntry[str]]) -> None:
        self._entries = entries
        self._next = 0
        self._named = 0  # the entries before this index were named ahead already

    def __iter__(self) -> _Listing:
        return self

    def __next__(self) -> os.DirEntry[str]:
        if self._next >= len(self._entries):
            raise StopIteration
        self._next += 1
        return self._entries[self._next - 1]

    def coming(self, ahead: int) -> Iterator[str]:
        """The paths of the plain files among the next ``ahead`` entries not named before (the
        type is the listing's: no system call, no note; a link or a folder is left out)."""
        stop = min(self._next + ahead, len(self._entries))
        for entry in self._entries[max(self._next, self._named) : stop]:
            if _plain(entry):
                yield entry.path
        self._named = max(self._named, stop)

    def plain_rest(self) -> list[str]:
        """The paths of the entries after the one taken, up to the first that is not a plain file
        (a folder's files would come between): the files the walk opens next, in order."""
        rest = []
        for entry in self._entries[self._next :]:
            if not _plain(entry):
                break
            rest.append(entry.path)
        return rest


class Intake:
    """Opens the user's paths one stream at a time, collecting notes."""

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits if limits is not None else Limits()
        self.notes: list[Note] = []
        self.opened = 0
        self._run_folders: set[str] = set()
        #: where the paths opened after the current one come from (see :meth:`coming`)
        self._coming: _Listing | Sequence[str] = ()

    def note(self, source: str, message: str) -> None:
        """Record a coverage note."""
        self.notes.append(Note(source, message))

    def coming(self) -> list[str]:
        """The paths of the files opened after the current one, in order, as far as that is
        known without opening them: the rest of its folder's plain files, or of the paths
        named (up to ``-``). Each may still turn out to be something else (an archive, a
        folder, gone): its own :meth:`streams` then tells."""
        if isinstance(self._coming, _Listing):
            return self._coming.plain_rest()
        rest = list(self._coming)
        return rest[: rest.index("-")] if "-" in rest else rest

    def streams(self, paths: Sequence[str]) -> Iterator[Opened]:
        """Every readable stream under ``paths``; each is valid until the next is asked for."""
        for at, path in enumerate(paths):
            # the next files named, each asked for once (see :mod:`.readahead`)
            first = at + 1 if at == 0 else at + readahead.FILES
            for coming in paths[first : at + 1 + readahead.FILES]:
                if coming != "-":
                    readahead.hint(coming, named=True)
            budget = Budget(self.limits, "<stdin>" if path == "-" else path, self.note)
            if path == "-":
                stdin = archives.counted(sys.stdin.buffer, budget)
                yield from self._from_stream("<stdin>", stdin, None, budget, 0)
            else:
                self._coming = paths[at + 1 :]
                yield from self._from_path(path, budget)
            budget.finish()

    # -- the file system ---------------------------------------------------------
    def _from_path(self, name: str, budget: Budget) -> Iterator[Opened]:
        path = Path(name)
        try:
            mode = path.stat().st_mode
        except FileNotFoundError:
            dangling = path.is_symlink()
            self.note(
                name, "dangling symbolic link: skipped" if dangling else "no such file or folder"
            )
            return
        except (OSError, RuntimeError) as exc:
            self.note(name, f"cannot read: {getattr(exc, 'strerror', None) or exc}")
            return
        if stat.S_ISDIR(mode):
            yield from self._folder(path, budget)
        else:
            yield from self._file(path, name, budget)

    def _file(self, path: Path | str, name: str, budget: Budget) -> Iterator[Opened]:
        """A regular file; anything else (a FIFO would block forever) is a note."""
        try:
            kind = _not_regular(os.stat(path).st_mode)  # noqa: PTH116 -- as _base
            if kind is None:
                fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError as exc:
            self.note(name, f"cannot open: {exc.strerror or exc}")
            return
        if kind is not None:
            self.note(name, f"{kind}, not a regular file: skipped (a pipe can be given as -)")
            return
        with io.FileIO(fd, "rb") as raw:
            st = os.fstat(fd)
            kind = _not_regular(st.st_mode)  # it may have been swapped since
            if kind is not None:
                self.note(name, f"{kind}, not a regular file: skipped (a pipe can be given as -)")
                return
            os.set_blocking(fd, True)
            stream = archives.counted(raw, budget)
            yield from self._from_stream(name, stream, st.st_size, budget, 0)

    def _folder(self, root: Path, budget: Budget) -> Iterator[Opened]:
        """The files under ``root`` in name order: iterative, bounded depth, links kept inside."""
        try:
            inside = root.resolve(strict=True)
        except (OSError, RuntimeError) as exc:
            self.note(str(root), f"cannot list folder: {getattr(exc, 'strerror', None) or exc}")
            return
        files = too_deep = 0
        noted = len(self.notes)
        stack = [self._listing(str(root))]
        while stack:
            entries = stack[-1]
            entry = next(entries, None)
            if entry is None:
                stack.pop()
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                is_link = entry.is_symlink()
            except OSError as exc:
                self.note(entry.path, f"cannot read: {exc.strerror or exc}")
                continue
            if is_dir:
                if len(stack) > self.limits.folder_depth:
                    too_deep += 1
                else:
                    stack.append(self._listing(entry.path))
                continue
            files += 1
            if is_link and (why := self._link_outside(entry.path, inside)):
                self.note(entry.path, why)
            elif entry.name in PROVENANCE_NAMES:
                self.note(entry.path, "notes about the evidence, not evidence: skipped")
            else:
                for coming in entries.coming(readahead.FILES):
                    readahead.hint(coming)
                self._coming = entries
                yield from self._file(entry.path, entry.path, budget)
        if too_deep:
            self.note(
                str(root),
                f"{too_deep} folder(s) nested more than {self.limits.folder_depth} levels deep: "
                "not read",
            )
        elif not files and len(self.notes) == noted:
            self.note(str(root), "folder holds no files")

    def _listing(self, folder: str) -> _Listing:
        try:
            with os.scandir(folder) as found:
                entries = sorted(found, key=lambda e: e.name)
        except OSError as exc:
            self.note(folder, f"cannot list folder: {exc.strerror or exc}")
            return _Listing([])
        return _Listing(entries)

    @staticmethod
    def _link_outside(link: str, inside: Path) -> str | None:
        """Why a symbolic link in a folder is not followed, or ``None`` when it may be."""
        try:
            target = Path(link).resolve(strict=True)
        except (OSError, RuntimeError):
            return "dangling symbolic link: skipped"
        if not target.is_relative_to(inside):
            return f"symbolic link to {target}, outside the folder given: not followed"
        if target.is_dir():
            return "symbolic link to a folder: not followed"
        return None

    # -- streams -------------------------------------------------------------------
    def _from_stream(
        self, name: str, stream: io.BufferedReader, size: int | None, budget: Budget, layer: int
    ) -> Iterator[Opened]:
        noted = len(self.notes)
        try:
            head = stream.peek(SNIFF_BYTES)[:SNIFF_BYTES]
        except OSError as exc:
            self.note(name, f"cannot read: {exc.strerror or exc}")
            return
        if not head:
            if len(self.notes) == noted and not budget.stopped:
                self.note(name, "empty")
            return
        container = archives.compression(head) or (
            "zip" if archives.is_zip(head) else "tar" if tar.is_tar(head) else None
        )
        if container is not None:
            if budget.stopped:
                self.note(name, f"not opened: the read budget of {budget.source} was spent")
            elif layer >= self.limits.layers:
                budget.too_deep += 1
            else:
                yield from self._container(name, stream, container, budget, layer)
            return
        if (why := self._own(name, head)) is not None:
            if why:  # (the wrapper's own records are skipped without a word)
                self.note(name, why)
            return
        if (whole := file_parser(head)) is not None:
            self.opened += 1
            rank = dump_rank(name) if whole.kind == FLIGHT_RECORDER else None
            yield Opened(name, stream, size, rank, whole.kind)
            return
        if _is_binary(head):
            self.note(name, "binary file (not text): skipped")
            return
        self.opened += 1
        yield Opened(name, stream, size, rank_from_name(_COMPRESSED_SUFFIX.sub("", name)))

    def _container(
        self, name: str, stream: io.BufferedReader, kind: str, budget: Budget, layer: int
    ) -> Iterator[Opened]:
        if kind in ("gz", "bz2", "xz"):
            with archives.decompressed(stream, kind, name, budget, self.note) as inner:
                yield from self._from_stream(name, inner, None, budget, layer + 1)
            return
        members = (
            archives.zip_members(stream, name, budget, self.note)
            if kind == "zip"
            else tar.tar_members(stream, name, budget, self.note)
        )
        for member_name, member, member_size in members:
            yield from self._from_stream(member_name, member, member_size, budget, layer + 1)

    def _own(self, name: str, head: bytes) -> str | None:
        """Why a file is nccl-doctor's own output and not evidence, or ``None``.

        A report said to be skipped: someone may have meant it as evidence. The
        records of a capture or a run that only repeat what is read elsewhere (the
        list of a bundle's reads, the run's copy of its command) or hold nothing yet
        (the manifest of a run whose job still runs) give ``""``:
        skipped without a note, which every report of a run folder and every
        ``check`` would otherwise carry.
        """
        found = report_format(head)
        if found is not None:
            return f"a report nccl-doctor wrote ({found}), {NOT_EVIDENCE}"
        if is_capture_manifest(head):
            return ""
        folder, base = _split(name)
        if head.startswith(RUN_MANIFEST_HEAD):
            self._run_folders.add(folder)
            if is_running_manifest(head):
                return ""
        elif base == RUN_COMMAND_NAME and folder in self._run_folders:
            return ""
        return None
