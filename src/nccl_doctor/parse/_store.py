"""c10d store and socket messages: bind/listen/connect failures and rendezvous timeouts."""

from __future__ import annotations

import re

from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.run import C10dSocketError, RendezvousTimeout
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._nccl_common import errno_of
from nccl_doctor.parse._runtext import Ctx, clip, error_fact, to_float, to_int
from nccl_doctor.parse._values import cite

_SERVER = LazyPattern(
    r"server socket has failed to (?P<act>bind|listen) (?:to|on) (?!any local)(?P<addr>\S+?)"
    r"(?: \(errno: (?P<errno>\d{1,5}) - (?P<etext>[^)]{0,80})\))?[.]?(?:\s|$)"
)
_UV = LazyPattern(
    r"port: (?P<port>\d{1,5}), useIpv6: \w+, code: (?P<code>-?\d{1,5}), name: (?P<name>\w+)"
    r"(?:, message: (?P<msg>[^.\n]*))?"
)
_CLIENT = LazyPattern(
    r"client socket (?:has failed to connect to|cannot be initialized to connect to) "
    r"(?:\[(?P<h>[^\]]{0,255})\]:(?P<p>\d{1,5})|any network address of \((?P<h2>[^,]{0,255}), "
    r"(?P<p2>\d{1,5})\))(?: \(errno: (?P<errno>\d{1,5}) - (?P<etext>[^)]{0,80})\))?"
)
_CLIENT_TMO = LazyPattern(
    r"client socket has timed out after (?P<n>\d{1,12})(?P<u>ms|s) while trying to connect to "
    r"\((?P<h>[^,]{0,255}), (?P<p>\d{1,5})\)"
)
_RESOLVE = LazyPattern(
    r"network addresses of \((?P<h>[^,]{0,255}), (?P<p>\d{1,5})\) cannot be retrieved"
    r" \(gai error: (?P<errno>-?\d{1,5}) - (?P<etext>[^)]{0,80})\)"
)
_ERR_NAME = LazyPattern(r"name: (E[A-Z]{2,20})\b")
_IN_USE = LazyPattern(r"\bEADDRINUSE\b|\b[Aa]ddress already in use\b")
_CLIENTS = LazyPattern(
    r"Timed out after (?P<s>\d{1,9}) seconds waiting for clients\. (?P<j>\d{1,7})/(?P<e>\d{1,7})"
)
#: The barrier's timeout ("... store based barrier on rank: 0, for key: k (world_size=...") and
#: its every-10-seconds notice while it waits ("Waiting in store based barrier to initialize
#: process group for rank: 2, key: k (world_size=8, worker_count=7, ...)" in torch 1.x; 2.x
#: says how long first, with no space before "rank": "... for 10.01 secondsrank: 2, key: k
#: (world_size=8, num_workers_joined=7, timeout=0:30:00 error=...)").
_BARRIER = LazyPattern(
    r"store based barrier (?:on rank:? (?P<r>\d{1,7}), for key: |to initialize process group "
    r"for (?:(?P<w>\d{1,9}(?:\.\d{1,9})?) ?seconds ?)?rank: (?P<r2>\d{1,7}), key: )"
    r"(?P<key>[^\s(]{1,200}) "
    r"\(world_size=(?P<e>\d{1,7}), (?:worker_count|num_workers_joined)=(?P<j>\d{1,7}), "
    r"timeout=(?P<t>[\d:.]{1,20})"
)
_KEY_WAIT = LazyPattern(
    r"(?:Timeout waiting for key: (?P<k1>\S{1,300}) after (?P<ms1>\d{1,12}) ?ms"
    r"|[Ww]ait timeout after (?P<ms2>\d{1,12}) ?ms, keys: (?P<k2>\S{1,300}))"
)


#: Substrings one of which a line holds when :func:`store_facts` can find anything in it.
KEYWORDS: tuple[str, ...] = (
    "socket ",
    "network addresses of",
    "waiting for clients",
    "store based barrier",
    "Timeout waiting for key",
    "ait timeout after",
    "Address already in use",
    "EADDRINUSE",
)


def store_facts(ctx: Ctx, text: str, out: list[Fact]) -> None:
    """Socket errors and store/rendezvous timeouts of one line, appended to ``out``."""
    _socket(ctx, text, out)
    _store(ctx, text, out)


def _split_address(addr: str | None) -> tuple[str | None, int | None]:
    if not addr or "UNKNOWN" in addr:
        return None, None
    host, _, port = addr.rpartition(":")
    if not host:
        return addr.strip("[]"), None
    return host.strip("[]"), to_int(port)


def _socket(ctx: Ctx, text: str, out: list[Fact]) -> None:
    line, rank, _, _ = ctx
    found: C10dSocketError | None = None
    name_m = _ERR_NAME.search(text) if "name: E" in text else None
    error_name = name_m.group(1) if name_m else None
    # (the wordings torchrun's anchors offer: "The server socket has failed to bind ...")
    if "fail" in text and ("server socket has" in text or "server socket cannot" in text):
        listen = "failed to listen on any local network address" in text
        m = _SERVER.search(text)
        uv = _UV.search(text)
        address, port = _split_address(m["addr"]) if m else (None, None)
        errno = to_int(m["errno"]) if m else None
        if uv is not None:
            port = port if port is not None else to_int(uv["port"])
            code = to_int(uv["code"])
            errno = errno if errno is not None else (abs(code) if code is not None else None)
        etext = m["etext"] if m and m["etext"] else (uv["msg"] if uv else None)
        if errno is None and etext is None and _IN_USE.search(text):
            # the bind's error named apart from the uv fields ("... local network address,
            # port 29500, code -98, EADDRINUSE"): the address was in use
            errno, error_name = 98, error_name or "EADDRINUSE"
        found = C10dSocketError(
            cite=cite(line),
            rank=rank,
            host=line.host,
            role="server",
            action="listen" if listen or (m and m["act"] == "listen") else "bind",
            address=address,
            port=port,
            # (a message that names the error only in words: its number read from them)
            errno=errno if errno is not None else errno_of(etext),
            error_text=etext,
            error_name=error_name,
            message=clip(text),
        )
    elif "client socket" in text:
        if m := _CLIENT_TMO.search(text):
            n = to_int(m["n"])
            ms = None if n is None else (n if m["u"] == "ms" else n * 1000)
            found = C10dSocketError(
                cite=cite(line),
                rank=rank,
                host=line.host,
                role="client",
                action="connect_timeout",
                address=m["h"],
                port=to_int(m["p"]),
                timeout_ms=ms,
                error_name=error_name,
                message=clip(text),
            )
        elif m := _best(_CLIENT, text):
            found = C10dSocketError(
                cite=cite(line),
                rank=rank,
                host=line.host,
                role="client",
                action="connect",
                address=m["h"] if m["h"] is not None else m["h2"],
                port=to_int(m["p"] if m["p"] is not None else m["p2"]),
                errno=to_int(m["errno"]),
                error_text=m["etext"],
                error_name=error_name,
                message=clip(text),
            )
    elif "network addresses of" in text and (m := _RESOLVE.search(text)):
        found = C10dSocketError(
            cite=cite(line),
            rank=rank,
            host=line.host,
            role="client",
            action="resolve",
            address=m["h"],
            port=to_int(m["p"]),
            errno=to_int(m["errno"]),
            error_text=m["etext"],
            message=clip(text),
        )
    if found is not None:
        out.append(found)
    elif "Address already in use" in text or "EADDRINUSE" in text:
        out.append(error_fact(ctx, "address_in_use", text, None))


def _best(rx: LazyPattern[str], text: str) -> re.Match[str] | None:
    """The first match that printed an errno, else the first match."""
    first: re.Match[str] | None = None
    for i, m in enumerate(rx.finditer(text)):
        if m["errno"] is not None:
            return m
        first = first or m
        if i >= 8:
            break
    return first


def _store(ctx: Ctx, text: str, out: list[Fact]) -> None:
    line, rank, _, _ = ctx
    if "waiting for clients" in text and (m := _CLIENTS.search(text)):
        out.append(
            RendezvousTimeout(
                cite=cite(line),
                rank=rank,
                host=line.host,
                kind="clients",
                waited_s=to_float(m["s"]),
                joined=to_int(m["j"]),
                expected=to_int(m["e"]),
                message=clip(text[m.start() :]),
            )
        )
    if "store based barrier" in text and (m := _BARRIER.search(text)):
        out.append(
            RendezvousTimeout(
                cite=cite(line),
                rank=rank if rank is not None else to_int(m["r"] or m["r2"]),
                host=line.host,
                kind="store_barrier",
                # (the waiting notice's timeout is the limit; torch 2.x says how long it waited)
                waited_s=_hms(m["t"]) if m["r2"] is None else to_float(m["w"]),
                joined=to_int(m["j"]),
                expected=to_int(m["e"]),
                key=m["key"],
                message=clip(text[m.start() :]),
            )
        )
    if ("Timeout waiting for key" in text or "ait timeout after" in text) and (
        m := _KEY_WAIT.search(text)
    ):
        ms = to_int(m["ms1"] if m["ms1"] is not None else m["ms2"])
        out.append(
            RendezvousTimeout(
                cite=cite(line),
                rank=rank,
                host=line.host,
                kind="store_key",
                waited_s=None if ms is None else ms / 1000,
                key=m["k1"] if m["k1"] is not None else m["k2"],
                message=clip(text[m.start() :]),
            )
        )


def _hms(text: str | None) -> float | None:
    """``0:30:00`` (a Python timedelta) as seconds."""
    if not text:
        return None
    parts = text.split(":")
    if len(parts) != 3:
        return to_float(text)
    h, m, s = to_int(parts[0]), to_int(parts[1]), to_float(parts[2])
    if h is None or m is None or s is None:
        return None
    return h * 3600 + m * 60 + s
