"""Secrets never leave; what is shared also hides who and where.

:func:`redact` removes tokens, keys and passwords from any text; every
output format applies it. :class:`Pseudonyms` additionally replaces host
names, IP addresses and user names with stable pseudonyms (``host-1``,
``10.0.0.1``, ``user-1``), the same throughout one report, for output meant
to be pasted into a public issue.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

REDACTED = "[REDACTED]"

_SECRET_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)",
            re.DOTALL,
        ),
        REDACTED,
    ),
    # URL credentials: scheme://user:password@host. The scheme's run of characters is
    # checked once from its start (lookbehind, lookahead), not rescanned from every letter.
    (
        re.compile(
            r"(?P<pre>(?<![\w+.-])(?=[\w+.-]*://[^/\s:@]+:[^@\s/]+@)[\w+.-]*?"
            r"\b[a-zA-Z][\w+.-]*://[^/\s:@]+):[^@\s/]+@"
        ),
        rf"\g<pre>:{REDACTED}@",
    ),
    (
        re.compile(r"(?i)\b(?P<pre>bearer|token|basic)\s+[A-Za-z0-9._~+/-]{12,}=*"),
        rf"\g<pre> {REDACTED}",
    ),
    # NAME=value / NAME: value where the name says it is secret (env dumps, configs, CLI flags)
    (
        re.compile(
            r"(?i)(?<![\w.-])(?P<lead>[.-]*)(?P<pre>\b[\w.-]*(?:token|secret|passw(?:or)?d|pwd"
            r"|api[_-]?key|access[_-]?key"
            r"|private[_-]?key|auth[_-]?key|credentials?)[\"']?\s*[=:]\s*[\"']?)"
            r"(?!\[REDACTED\])[^\s\"',;]{3,}"
        ),
        rf"\g<lead>\g<pre>{REDACTED}",
    ),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), REDACTED),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b|\bgithub_pat_[A-Za-z0-9_]{20,}\b"), REDACTED),
    (re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"), REDACTED),
    (re.compile(r"\bsk-(?:proj-)?[A-Za-z0-9_-]{20,}\b"), REDACTED),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b"), REDACTED),
    # a JWT: its run of characters is checked once from its start (lookbehind, lookahead);
    # ``lead`` is the part of the run before ``eyJ``, kept as it is
    (
        re.compile(
            r"(?<![A-Za-z0-9_-])(?=[A-Za-z0-9_-]*\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b)"
            r"(?P<lead>[A-Za-z0-9_-]*?)\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b"
        ),
        rf"\g<lead>{REDACTED}",
    ),
)


def redact(text: str) -> str:
    """``text`` with secrets replaced by ``[REDACTED]``."""
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.]|\+)")
_IPV6 = re.compile(
    r"(?<![\w])(?:[0-9a-fA-F]{1,4}:){1,7}(?::|(?::[0-9a-fA-F]{1,4}){1,7}|[0-9a-fA-F]{1,4})(?![\w:])"
)
_VERSIONISH = re.compile(r"(?i)(?:version|ver|v|(?<![\s:=])==|cuda|driver|nccl|cudnn)[\s:=]*$")
_HOME = re.compile(
    r"(?P<pre>/(?:home|Users|users|scratch|data|mnt/home)/)(?P<user>[A-Za-z_][\w.-]*)"
)
#: user@host: the run of name characters is checked once from its start (lookbehind,
#: lookahead); ``lead`` is the part of the run before the user name, kept as it is.
_PROMPT_USER = re.compile(
    r"(?<![\w.-])(?=[\w.-]*@[A-Za-z][\w.-]*[:\s\]])(?P<lead>[\w.-]*?)"
    r"(?P<user>\b[a-z_][\w.-]*)@(?P<host>[A-Za-z][\w.-]*)(?=[:\s\]])"
)
_KEEP_USERS = frozenset({"root", "ubuntu", "user", "admin", "nobody", "runner", "jovyan"})


class Pseudonyms:
    """Stable pseudonyms for hosts, addresses and users within one report."""

    def __init__(self, hosts: Iterable[str] = ()) -> None:
        self._hosts: dict[str, str] = {}
        self._ips: dict[str, str] = {}
        self._users: dict[str, str] = {}
        for host in sorted(set(hosts)):
            self.host(host)

    def host(self, name: str) -> str:
        """The pseudonym of a host name (``host-N``)."""
        if name.startswith("host-") or not name:
            return name
        return self._hosts.setdefault(name, f"host-{len(self._hosts) + 1}")

    def _ip(self, address: str) -> str:
        try:
            parsed = ipaddress.ip_address(address.split("%", maxsplit=1)[0])
        except ValueError:
            return address
        if parsed.is_loopback or parsed.is_unspecified:
            return address
        n = len(self._ips) + 1
        fake = f"10.0.{n // 250}.{n % 250 + 1}" if parsed.version == 4 else f"fd00::{n:x}"
        return self._ips.setdefault(str(parsed), fake)

    def _user(self, name: str) -> str:
        if name in _KEEP_USERS:
            return name
        return self._users.setdefault(name, f"user-{len(self._users) + 1}")

    def apply(self, text: str) -> str:
        """``text`` redacted, with hosts, addresses and users pseudonymised."""
        text = redact(text)
        text = _PROMPT_USER.sub(
            lambda m: f"{m['lead']}{self._user(m['user'])}@{self.host(m['host'])}", text
        )
        text = _HOME.sub(lambda m: m["pre"] + self._user(m["user"]), text)
        for name in sorted(self._hosts, key=len, reverse=True):
            if name in text:
                text = re.sub(rf"(?<![\w-]){re.escape(name)}(?![\w-])", self._hosts[name], text)

        def ipv4(m: re.Match[str]) -> str:
            if _VERSIONISH.search(text[max(0, m.start() - 12) : m.start()]):
                return m[0]
            return self._ip(m[0])

        text = _IPV4.sub(ipv4, text)
        return _IPV6.sub(
            lambda m: self._ip(m[0]) if "::" in m[0] or m[0].count(":") >= 5 else m[0], text
        )
