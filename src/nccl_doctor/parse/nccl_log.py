"""The ``nccl-log`` kind: the lines NCCL itself prints (``NCCL_DEBUG=INFO``/``WARN``).

The reader has already removed the ``host:pid:tid [dev] `` prefix (and launcher
prefixes), so ``line.text`` starts at ``NCCL INFO ...``, ``file.cc:123 NCCL WARN
...`` or at the bare banner ``NCCL version 2.4.7+cuda10.0``. A prefix the
reader did not recognise is read here when it sits right before the marker.
Text that merely mentions NCCL (a PyTorch message quoting ``NCCL version
2.26.2``) is not this kind's and is not consumed.

Per-line facts are emitted at once, except two kinds that are folded: the
thousands of channel lines (``... via P2P/IPC``) become one
:class:`NcclTransport` per (process, rank, transport) at :meth:`finish`, and
the ``file.cc:123 -> 6`` lines of one thread become one
:class:`NcclErrorChain` when the thread prints something else, reaches its
top (``[Proxy Thread]``), or the source ends. Lines that repeat per
communicator (network selection, GDR, environment, plugins) are emitted once
per process.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import ClassVar

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.nccl import NcclErrorChain, NcclTransport, NcclVersion
from nccl_doctor.parse import _nccl_info as info
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._nccl_common import RESULT_NAMES, Who, to_int
from nccl_doctor.parse._nccl_warn import warn_fact
from nccl_doctor.parse._values import cite
from nccl_doctor.parse.base import StreamParser

# A host name starts where its run of name characters starts (the lookbehind): started
# anywhere inside, a long run without ``:pid:tid`` would be rescanned from every position.
_PREFIX_AT_END = LazyPattern(
    r"(?:(?<![\w.-])(?P<host>[\w.-]+):(?P<pid>\d{1,9}):(?P<tid>\d{1,9}) )?\[(?P<dev>\d{1,4})\] $"
)
_PREFIX = LazyPattern(
    r"(?<![\w.-])(?P<host>[\w.-]+):(?P<pid>\d{1,9}):(?P<tid>\d{1,9}) \[(?P<dev>\d{1,4})\] "
)
_BANNER = LazyPattern(r"NCCL version (?P<v>\S+)")
_VERSION = LazyPattern(
    r"(?P<maj>\d{1,3})\.(?P<min>\d{1,3})\.(?P<pat>\d{1,4})(?P<suf>[^+\s]*)(?:\+cuda(?P<cuda>[\d.]+))?"
)
_CHANNEL = LazyPattern(
    r"(?:Channel|Ring|CollNet) \d{1,3}(?:/\d{1,3})? : (?P<a>\d{1,7})(?:\[[^\]]*\])?"
    r"(?: -> (?P<b>\d{1,7})(?:\[[^\]]*\])?)?(?: \[(?P<dir>send|receive)\])?"
    r" via (?P<t>\S(?:.*\S)?)\s*$"
)
_NET_DEV = LazyPattern(r"(?P<dev>\d{1,4})(?:\((?P<proxy>\d{1,7})\))?")
_FRAME = LazyPattern(
    r"(?P<file>[^\s:]+\.\w{1,4}):(?P<line>\d{1,7}) -> (?P<code>-?\d{1,4})"
    r"(?: \((?P<err>[^)]*)\))?(?: \[(?P<thread>[^\]]+)\])?\s*$"
)

#: most frames kept per chain, most peers kept per transport, most keys tracked
_MAX_FRAMES = 64
_MAX_PEERS = 256
_MAX_KEYS = 200_000
#: a chain takes the WARN of its thread if it starts within this many lines
_WARN_REACH = 200

_Key = tuple[str | None, int | None, int | None]


@dataclass(slots=True)
class _Chain:
    """A chain of ``-> N`` frames being collected for one thread."""

    line: Line
    who: Who
    frames: list[tuple[str, int, int]] = field(default_factory=list)
    thread: str | None = None
    os_error: str | None = None
    warn_message: str | None = None
    warn_file: str | None = None
    truncated: bool = False
    in_abort: bool = False


@dataclass(slots=True)
class _Fold:
    """A transport being folded over its channel lines."""

    fact: NcclTransport
    peers: set[int] = field(default_factory=set)
    truncated: bool = False
    lines: int = 0


class NcclLogParser(StreamParser):
    """Reads NCCL's own log lines: versions, init, network, transports, WARNs, error chains."""

    kind: ClassVar[str] = "nccl-log"
    anchors: ClassVar[tuple[str, ...]] = (
        "NCCL version ",  # not torch's "NCCL version: 2.21.5" (its option lists)
        "NCCL WARN",
        "Invalid value",
        "P2P is disabled",
        "retrying",
        ".cc:",
        ".h:",
        ".c:",
    )
    #: per-rank and per-channel lines: thousands in an INFO log of many ranks
    info_anchors: ClassVar[tuple[str, ...]] = (
        "nranks ",
        "nNodes",
        " coll channels",
        "NET/",
        "Bootstrap",
        "Using network",
        "set by environment to",
        "_HCA set to",
        "GPU Direct RDMA",
        "/Plugin",
        "NET plugin",
        "GIN plugin",
        "RMA plugin",
        " via P2P/",
        " via SHM/",
        " via direct shared memory",
        " via COLLNET/",
        "cudaDriverVersion",
        "Connected all",
        "NVLS",
        "Loading topology file",
        "maxSharedMem",
        "sharing GPU with bus",
        "wrong socket type",
        "local Net devices (max",
        " - Abort START",
        " - Abort COMPLETE",
    )
    #: a communicator's init line: the rank, its CUDA device, bus id and comm id (what the
    #: duplicate-GPU and host-identity rules need of every process)
    floor_anchors: ClassVar[tuple[str, ...]] = ("cudaDev",)

    def __init__(self) -> None:
        super().__init__()
        self._seen: set[tuple[str | None, int | None, str]] = set()
        self._folds: dict[tuple[str | None, int | None, int, str, str | None], _Fold] = {}
        self._chains: dict[_Key, _Chain] = {}
        self._last_warn: dict[_Key, tuple[int, str, str | None]] = {}
        #: per process, its communicators between ``- Abort START`` and ``- Abort COMPLETE``
        self._aborting: dict[tuple[str | None, int | None], int] = {}

    # -- the line --------------------------------------------------------
    def feed(self, line: Line) -> bool:
        """Consume one NCCL line (``True``), or leave a line that is not NCCL's (``False``)."""
        text = line.text
        found = _marker(text)
        if found is None:
            return self._banner(line, text)
        start, end, level, file, fline = found
        host, pid, device = line.host, line.pid, line.device
        tid: int | None = None
        if start > 0:
            pre = _PREFIX_AT_END.search(text, 0, start)
            if pre is None or pre.end() != start:
                if text[:start].strip():
                    return self._banner(line, text)
            else:
                host = host or pre["host"]
                pid = pid if pid is not None else to_int(pre["pid"])
                device = device if device is not None else to_int(pre["dev"])
                tid = to_int(pre["tid"])
        if level in ("TRACE", "CALL"):
            return True
        body = text[end:].rstrip()
        if level == "INFO" and " via " in body and (ch := _CHANNEL.match(body)):
            self._channel(line, ch, host, pid, device)
            return True
        who = Who(cite(line), line.rank, host, pid, device, tid)
        if level == "WARN":
            self._warn(line, who, file, fline, body)
            return True
        frame = _FRAME.match(body) if " -> " in body else None
        if frame is not None or self._chains:
            key = self._key(line, who)
            if frame is not None:
                self._frame(line, who, key, frame)
                return True
            self._close(key)
        self._info(who, body)
        return True

    def finish(self) -> list[Fact]:
        """Emit the open error chains and the folded transports."""
        for key in sorted(self._chains, key=lambda k: self._chains[k].line.number):
            self._close(key)
        for fold in sorted(self._folds.values(), key=lambda f: f.fact.cite.line):
            self.emit(_folded(fold))
        self._folds.clear()
        self._last_warn.clear()
        return self.take()

    # -- lines without the INFO/WARN marker ------------------------------
    def _banner(self, line: Line, text: str) -> bool:
        """The bare ``NCCL version 2.x.y+cudaX`` line; anything else is not NCCL's."""
        m = _BANNER.fullmatch(text.strip())
        if m is None or not m["v"][:1].isdigit():
            return False
        who = Who(cite(line), line.rank, line.host, line.pid, line.device)
        fact = _version(who, m["v"], banner=True)
        if fact is not None:
            self._emit_once(who, f"banner {m['v']}", fact)
        return True

    # -- WARN and error chains -------------------------------------------
    def _key(self, line: Line, who: Who) -> _Key:
        tid = who.tid
        if tid is None and (p := _PREFIX.search(line.raw)):
            tid = to_int(p["tid"])
        return (who.host, who.pid, tid)

    def _warn(
        self, line: Line, who: Who, file: str | None, source_line: int | None, body: str
    ) -> None:
        key = self._key(line, who)
        self._close(key)
        fact = warn_fact(body, replace(who, tid=key[2]), file=file, source_line=source_line)
        self.emit(fact)
        where = f"{file}:{source_line}" if file and source_line is not None else file
        if key not in self._last_warn and len(self._last_warn) >= _MAX_KEYS:
            self._last_warn.clear()
        self._last_warn[key] = (line.number, fact.message, where)

    def _frame(self, line: Line, who: Who, key: _Key, m: re.Match[str]) -> None:
        frame = (m["file"], int(m["line"]), int(m["code"]))
        chain = self._chains.get(key)
        if chain is not None and any(f[:2] == frame[:2] for f in chain.frames):
            self._close(key)
            chain = None
        if chain is None:
            if len(self._chains) >= _MAX_KEYS:
                for old in list(self._chains):
                    self._close(old)
            chain = _Chain(line, replace(who, tid=key[2]))
            chain.in_abort = self._aborting.get((who.host, who.pid), 0) > 0
            warn = self._last_warn.pop(key, None)
            if warn is not None and 0 <= line.number - warn[0] <= _WARN_REACH:
                chain.warn_message, chain.warn_file = warn[1], warn[2]
            self._chains[key] = chain
        if len(chain.frames) < _MAX_FRAMES:
            chain.frames.append(frame)
        else:
            chain.truncated = True
        chain.os_error = chain.os_error or (m["err"] or None)
        if m["thread"]:
            chain.thread = m["thread"]
            self._close(key)

    def _close(self, key: _Key) -> None:
        """Emit the chain open for ``key``, if any."""
        chain = self._chains.pop(key, None)
        if chain is None or not chain.frames:
            return
        code = chain.frames[-1][2]
        w = chain.who
        self.emit(
            NcclErrorChain(
                cite=w.cite,
                rank=w.rank,
                host=w.host,
                pid=w.pid,
                device=w.device,
                tid=w.tid,
                frames=tuple(chain.frames),
                result_code=code,
                result_name=RESULT_NAMES.get(code),
                thread=chain.thread,
                os_error=chain.os_error,
                warn_message=chain.warn_message,
                warn_file=chain.warn_file,
                truncated=chain.truncated,
                in_abort=chain.in_abort,
            )
        )

    # -- channel lines ---------------------------------------------------
    def _channel(
        self, line: Line, m: re.Match[str], host: str | None, pid: int | None, device: int | None
    ) -> None:
        b_text, direction = m["b"], m["dir"]
        a = int(m["a"])
        b = int(b_text) if b_text is not None else None
        local, peer = (b, a) if direction == "receive" and b is not None else (a, b)
        transport = m["t"]
        key = (host, pid, local, transport, direction)
        fold = self._folds.get(key)
        if fold is None:
            if len(self._folds) >= _MAX_KEYS:
                return
            who = Who(cite(line), line.rank, host, pid, device)
            fold = _Fold(_transport(who, transport, local, direction))
            self._folds[key] = fold
        fold.lines += 1
        if peer is not None and peer not in fold.peers:
            if len(fold.peers) < _MAX_PEERS:
                fold.peers.add(peer)
            else:
                fold.truncated = True

    # -- other INFO lines --------------------------------------------------
    def _info(self, who: Who, body: str) -> None:
        if body.endswith(("- Abort START", "- Abort COMPLETE")) and body.startswith("comm "):
            # ncclCommAbort's bracket (init.cc, START from 2.28): its threads unwind inside
            self._abort(who, started=body.endswith("START"))
        if body.startswith("NCCL version "):
            version = _version(who, body[13:].strip(), banner=False)
            if version is not None:
                self._emit_once(who, body, version)
            return
        facts, once = info.parse_info(who, body)
        for fact in facts:
            if once:
                self._emit_once(who, body, fact)
            else:
                self.emit(fact)

    def _abort(self, who: Who, *, started: bool) -> None:
        key = (who.host, who.pid)
        count = self._aborting.get(key, 0) + (1 if started else -1)
        if count > 0:
            if key not in self._aborting and len(self._aborting) >= _MAX_KEYS:
                self._aborting.clear()
            self._aborting[key] = count
        else:
            self._aborting.pop(key, None)

    # -- bookkeeping -------------------------------------------------------
    def _emit_once(self, who: Who, what: str, fact: Fact) -> None:
        """Emit ``fact`` unless this process already printed the same line."""
        key = (who.host, who.pid, what)
        if key in self._seen:
            return
        if len(self._seen) >= _MAX_KEYS:
            self._seen.clear()
        self._seen.add(key)
        self.emit(fact)


def _folded(fold: _Fold) -> NcclTransport:
    """The transport of ``fold`` with its peers and line count."""
    return replace(
        fold.fact,
        peer_ranks=tuple(sorted(fold.peers)),
        peers_truncated=fold.truncated,
        lines=fold.lines,
    )


_LEVELS = ("INFO", "WARN", "TRACE", "CALL")


def _marker(text: str) -> tuple[int, int, str, str | None, int | None] | None:
    """Where NCCL's ``[file:line ]NCCL LEVEL `` marker is in ``text``.

    Returns (start of the marker, start of the message, level, file, line) or
    ``None``; ``file``/``line`` are the source position a WARN carries.
    """
    i = text.find("NCCL ")
    while i >= 0:
        for level in _LEVELS:
            end = i + 5 + len(level)
            if text.startswith(level, i + 5) and (end == len(text) or text[end] == " "):
                start, file, fline = i, None, None
                if i > 1 and text[i - 1] == " ":
                    token = text[: i - 1].rsplit(" ", 1)[-1]
                    f, sep, n = token.rpartition(":")
                    if sep and f and ":" not in f and n.isascii() and n.isdigit() and len(n) < 8:
                        start, file, fline = i - 1 - len(token), f, int(n)
                return start, min(end + 1, len(text)), level, file, fline
        i = text.find("NCCL ", i + 1)
    return None


def _version(who: Who, text: str, *, banner: bool) -> NcclVersion | None:
    """A :class:`NcclVersion` of ``2.18.1+cuda12.1``, else ``None``."""
    m = _VERSION.match(text)
    if m is None:
        return None
    cuda = m["cuda"].rstrip(".") if m["cuda"] else None
    return NcclVersion(
        cite=who.cite,
        rank=who.rank,
        host=who.host,
        pid=who.pid,
        device=who.device,
        version_text=text,
        version=f"{int(m['maj'])}.{int(m['min'])}.{int(m['pat'])}",
        major=int(m["maj"]),
        minor=int(m["min"]),
        patch=int(m["pat"]),
        suffix=m["suf"] or None,
        cuda_version=cuda or None,
        banner=banner,
    )


def _transport(who: Who, transport: str, local: int, direction: str | None) -> NcclTransport:
    """The first-seen :class:`NcclTransport` of one channel line."""
    parts = transport.split("/")
    kind = parts[0].strip() or transport
    if kind == "direct shared memory":
        kind = "SHM"
    net: str | None = None
    net_dev: int | None = None
    proxy: int | None = None
    if kind in ("NET", "COLLNET") and len(parts) > 1:
        net = parts[1] or None
        if len(parts) > 2 and (d := _NET_DEV.match(parts[2])):
            net_dev, proxy = to_int(d["dev"]), to_int(d["proxy"])
    return NcclTransport(
        cite=who.cite,
        rank=who.rank,
        host=who.host,
        pid=who.pid,
        device=who.device,
        comm_rank=local,
        transport=transport,
        kind=kind,
        direction=direction,
        net=net,
        net_dev=net_dev,
        proxy_rank=proxy,
        gdr="GDRDMA" in transport,
    )
