"""Secrets never leave, no text commands a terminal; what is shared also hides who and where.

:class:`LineGate` is the one gate every line of evidence passes as it enters
the reader (and every source name): control characters and terminal escape
sequences are stripped (:func:`strip_controls`) and secrets are replaced by
``[REDACTED]`` (:func:`redact`), so no output format can forget. The
renderers clean again (:func:`scrub`), in depth. :class:`Pseudonyms`
additionally replaces host names, IP addresses and user names with stable
pseudonyms (``host-1``, ``10.0.0.1``, ``user-1``), the same throughout one
report, for output meant to be pasted into a public issue; its :meth:`key`
maps them back, for the sharer only.

Redaction is cheap on lines that cannot hold a secret: a line is only
searched when its lower-cased text holds one of a few trigger substrings
(``key``, ``token``, ``pass``, ``://``, a known token prefix...), or could
be a line of a key's body (a long run of base64 without a space).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from typing import Any

REDACTED = "[REDACTED]"

# -- names whose value is a secret ------------------------------------------
_NAME_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")
#: The last word of a name that holds a secret (``HF_TOKEN``, ``DB_PASS``, ``client_secret``).
_SECRET_WORDS = frozenset(
    {
        "token",
        "secret",
        "password",
        "passwd",
        "pwd",
        "pass",
        "passphrase",
        "passcode",
        "credential",
        "credentials",
        "apikey",
        "signature",
        "privatekey",
        "secretkey",
        "accesskey",
        "accountkey",
        "authkey",
    }
)


#: Words that are secret names in ``NAME=value`` but too common in prose before a colon
#: on their own ("the error signature: ...", "$PWD:/workspace").
_WEAK_WORDS = frozenset({"signature", "pass", "pwd", "passcode", "credential", "credentials"})


def secret_name(name: str, *, colon: bool = False) -> bool:
    """Whether a variable, option or field called ``name`` holds a secret.

    Its last word (split at ``_ - .`` and camel case) says so: ``*_TOKEN``,
    ``*_SECRET``, ``*PASSWORD``, ``DB_PASS``, ``*_PASSPHRASE``, ``*_KEY`` and
    ``*Key`` (``WANDB_API_KEY``, ``AccountKey``; a bare ``key`` or ``PKEY`` is
    not), GCP's ``private_key_id``; and any name with ``cookie`` in it.
    ``max_tokens`` or ``token_file`` are not secrets. ``colon``: the name
    comes before a ``:`` (prose-like), where a lone weak word does not count.
    """
    words = [w.lower() for w in _NAME_WORDS.findall(name)]
    if not words:
        return False
    if any("cookie" in w for w in words):
        return True
    last = words[-1]
    if last in _SECRET_WORDS:
        if len(words) > 1:
            return True
        return last != "pwd" and (last not in _WEAK_WORDS or not colon)  # $PWD is a folder
    if last == "key":
        return len(words) >= 2
    return last == "id" and words[-3:-1] == ["private", "key"]


# -- secrets in text -----------------------------------------------------------
#: GitLab's token kinds: ``glpat-...``, ``gldt-...``...
_GITLAB_KINDS = ("pat", "dt", "rt", "ptt", "cbt", "imt", "agent", "oas", "ft", "soat")
#: Lower-cased substrings one of which every redactable text holds (the cheap test).
TRIGGERS = (
    "key",
    "token",
    "secret",
    "pass",
    "pwd",
    "credential",
    "cookie",
    "sig=",
    "signature",
    "auth",
    "://",
    "-----begin",
    "akia",
    "asia",
    # GitHub's and GitLab's token prefixes, not bare "gh"/"gl" (in "high", "global", "glog")
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "hf_",
    "sk-",
    "sk_",
    "rk_",
    "xox",
    "eyj",
    *(f"gl{kind}-" for kind in _GITLAB_KINDS),
    "aiza",
    "ya29.",
    "npm_",
    "pypi-",
)
_KEY_NAME = r"[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?"
#: A private key: to its END line (within 20,000 characters), else to the end of the line.
_PEM = re.compile(
    rf"-----BEGIN {_KEY_NAME}-----(?:.{{0,20000}}?-----END {_KEY_NAME}-----|[^\n]*)", re.DOTALL
)
#: A line of a key's body on its own: a long run of base64 with upper, lower case and digits.
_BLOB = re.compile(r"(?m)^[^\S\n]*(?P<blob>[A-Za-z0-9+/]{40,}={0,2})[^\S\n]*$")
_SUBSTITUTIONS: tuple[tuple[re.Pattern[str], str], ...] = (
    (_PEM, REDACTED),
    # URL credentials: scheme://user:password@host, the user possibly empty (redis://:pw@host);
    # a scheme is at most 32 characters: an unbounded one rescans every dotted word, O(n^2)
    (
        re.compile(r"(?P<pre>\b[a-zA-Z][\w+.-]{0,31}://[^/\s:@]*):[^@\s/]+@"),
        rf"\g<pre>:{REDACTED}@",
    ),
    # Cookie headers: every cookie in them
    (
        re.compile(
            r"(?i)(?P<pre>\b(?:set-)?cookie[\"']?\s*:\s*[\"']?)(?!\[REDACTED\])[^\s\"'][^\"'\n]*"
        ),
        rf"\g<pre>{REDACTED}",
    ),
    (
        re.compile(
            r"(?i)\b(?P<pre>bearer|token|basic|api-?key)\s+(?!\[REDACTED\])[A-Za-z0-9._~+/-]{12,}=*"
        ),
        rf"\g<pre> {REDACTED}",
    ),
    # Azure shared access signatures: ...?sv=...&sig=...
    (re.compile(r"(?P<pre>[?&;]sig=)(?!\[REDACTED\])[^&\s\"'<>;]+"), rf"\g<pre>{REDACTED}"),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), REDACTED),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b|\bgithub_pat_[A-Za-z0-9_]{20,}\b"), REDACTED),
    (
        re.compile(rf"\bgl(?:{'|'.join(_GITLAB_KINDS)})-[A-Za-z0-9_-]{{20,}}"),
        REDACTED,
    ),
    (re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"), REDACTED),
    (re.compile(r"\b(?:sk|rk)-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}\b"), REDACTED),
    (re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}\b"), REDACTED),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b"), REDACTED),
    (
        re.compile(r"(?<![\w-])eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b"),
        REDACTED,
    ),
    (re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"), REDACTED),
    (re.compile(r"\bya29\.[0-9A-Za-z_-]{20,}"), REDACTED),
    (re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), REDACTED),
    (re.compile(r"\bpypi-[A-Za-z0-9_-]{50,}"), REDACTED),
)
#: ``NAME=value``, ``NAME: value``, ``"name": "value"`` (env dumps, configs, JSON, URLs).
_KEYED = re.compile(
    r"(?<![\w.-])-*(?P<name>[A-Za-z_][\w.-]*)[\"']?[^\S\n]*(?P<sep>=|:(?!//))[^\S\n]*[\"']?"
)  # a name starts a run of name characters (else every start rescans the run: quadratic)
#: ``--password x``, ``--api-key 'x'`` on a command line.
_FLAG = re.compile(r"(?<![\w-])--(?P<name>[A-Za-z][\w-]*)(?P<sep>[^\S\n]+[\"']?)(?=[^\s\"'<>-])")
#: A secret value: up to a blank, quote, tag, separator or escape.
_VALUE = re.compile(r"[^\s\"'<>,;\\`]+")
#: Values that are no credential: a hex constant (the driver's ``startToken = 0x3``).
_NOT_SECRET = re.compile(r"0x[0-9a-fA-F]{1,16}")


#: An Authorization header, whatever the scheme (Bearer, Basic, ApiKey, AWS4-HMAC-SHA256...):
#: the scheme, if any, then the credentials.
_AUTHORIZATION = re.compile(
    r"(?i)(?P<pre>\b(?:proxy-)?authorization[\"']?[^\S\n]*[:=][^\S\n]*[\"']?)"
    r"(?P<first>[^\s\"'<>,]+)(?:(?P<gap>[^\S\n]+)(?P<second>[^\s\"'<>,]+))?"
)


def _authorization(m: re.Match[str]) -> str:
    first, second = m["first"], m["second"]
    if second is not None and re.fullmatch(r"[A-Za-z][\w-]*", first) and first != REDACTED:
        return f"{m['pre']}{first}{m['gap']}{REDACTED}"  # a scheme, then its credentials
    rest = f"{m['gap']}{second}" if second is not None else ""
    return f"{m['pre']}{REDACTED}{rest}"


def _named(text: str) -> str:
    """Values of secret names (:func:`secret_name`) replaced, as options and as assignments."""
    out: list[str] = []
    pos = 0
    for pattern in (_FLAG, _KEYED):
        for m in pattern.finditer(text):
            colon = m["sep"] == ":"
            if m.start() < pos or not secret_name(m["name"], colon=colon):
                continue
            value = _VALUE.match(text, m.end())
            if value is None or value[0].startswith(REDACTED) or _NOT_SECRET.fullmatch(value[0]):
                continue
            if colon and len(value[0]) < 3:
                continue  # "token: 12" in prose is not a credential
            out.append(text[pos : m.end()])
            out.append(REDACTED)
            pos = value.end()
        out.append(text[pos:])
        text, out, pos = "".join(out), [], 0
    return text


def _blob(m: re.Match[str]) -> str:
    """A key's body line is base64 with upper and lower case and digits; a hash is not."""
    blob = m["blob"]
    mixed = [any(test(c) for c in blob) for test in (str.isupper, str.islower, str.isdigit)]
    return REDACTED if all(mixed) else m[0]


def redact(text: str) -> str:
    """``text`` with secrets replaced by ``[REDACTED]``."""
    if not _triggered(text.lower()):
        return _untriggered(text)
    for pattern, replacement in _SUBSTITUTIONS:
        text = pattern.sub(replacement, text)
    text = _AUTHORIZATION.sub(_authorization, text)
    text = _named(text)
    return _BLOB.sub(_blob, text) if _may_be_blob(text) else text


def _untriggered(text: str) -> str:
    """:func:`redact` of a text that holds none of the :data:`TRIGGERS`: a key's body alone."""
    return _BLOB.sub(_blob, text) if _may_be_blob(text) else text


def _triggered(folded: str) -> bool:
    """Whether lower-cased text holds a trigger (a loop of ``in``: the fastest test here)."""
    for trigger in TRIGGERS:  # noqa: SIM110 -- this loop is ~2x faster than any(genexpr)
        if trigger in folded:
            return True
    return False


def _may_be_blob(text: str) -> bool:
    """Whether text could hold a line of a key's body: long, and a line without blanks."""
    return len(text) >= 40 and ("\n" in text or " " not in text.strip())


def redact_env(name: str, value: str) -> str:
    """One ``NAME=value`` line: the whole value hidden when the name says secret."""
    if secret_name(name):
        return f"{strip_controls(name, newlines=False)}={REDACTED}"
    return strip_controls(redact(f"{name}={value}"), newlines=False)


def redact_data(data: Any) -> Any:
    """JSON-like ``data`` (dicts, lists, strings) with every secret redacted, for files we write.

    A string under a secret key (:func:`secret_name`) is hidden whole; every
    other string is :func:`scrub`-bed.
    """
    if isinstance(data, str):
        return scrub(data)
    if isinstance(data, dict):
        return {
            key: (
                REDACTED
                if isinstance(key, str) and secret_name(key) and isinstance(value, str) and value
                else redact_data(value)
            )
            for key, value in data.items()
        }
    if isinstance(data, (list, tuple)):
        return [redact_data(item) for item in data]
    return data


# -- control characters ----------------------------------------------------------
#: Terminal escape sequences: CSI (colours, cursor, clear screen), OSC (title,
#: clipboard, hyperlinks), DCS/SOS/PM/APC strings, two-byte escapes; 7- and 8-bit.
_ESCAPES = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"
    r"|\x1b[ -/]*[0-~]?"
)
#: What is left to remove: C0 and C1 controls (but tab, and newline where kept), and the
#: invisible format characters (Unicode's Cf, Zl, Zp: bidi overrides and isolates,
#: zero-width spaces and joiners, the BOM, tag characters).
_FORMAT = (
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u2028-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
)
_INVISIBLE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_FORMAT}]")
_INVISIBLE_NL = re.compile(f"[\x00-\x08\x0a-\x1f\x7f-\x9f{_FORMAT}]")


def strip_controls(text: str, *, newlines: bool = True) -> str:
    """``text`` without escape sequences, control or invisible format characters.

    Tabs stay (tables use them); newlines stay unless ``newlines`` is false,
    when each becomes a space. Printable text is returned as it is, at once.
    """
    if text.isprintable():
        return text
    text = _ESCAPES.sub("", text)
    if newlines:
        return _INVISIBLE.sub("", text)
    return _INVISIBLE_NL.sub("", text.replace("\n", " "))


def scrub(text: str) -> str:
    """``text`` redacted and without control characters (newlines kept): safe to show."""
    return strip_controls(redact(text))


#: A line of a private key's body, or its headers, while a BEGIN line is open.
_KEY_BODY = re.compile(
    r"^\s*$|(?:^|[\s:\]])[A-Za-z0-9+/]{16,}={0,2}\s*$|^\s*(?:Proc-Type|DEK-Info|Comment):"
)
#: A key block longer than this many lines is not a key's body.
MAX_KEY_LINES = 400


class LineGate:
    """The gate every line of one source passes as it is read (see the module docstring).

    A private key's body spans lines; after its BEGIN line, the lines that
    follow directly and look like its body are redacted whole, up to its END
    line.
    """

    def __init__(self) -> None:
        self._key_next = 0  # the number of the next line, while inside a key
        self._key_left = 0

    def __call__(self, number: int, line: str, scanned: bool = False) -> str:
        """``line`` (number ``number`` in the source) safe to keep: the one entry gate.

        ``scanned``: the reader's scan read the line's bytes and found none of the
        :data:`TRIGGERS` in them, in any ASCII case; the line as decoded (ASCII,
        printable, a carriage return at most a space) then holds none either, and is not
        looked at for them again.
        """
        if not line.isprintable():
            line = strip_controls(line, newlines=False)
            scanned = False  # what is left is not what was scanned ("to\x07ken")
        if self._key_left and number == self._key_next:
            if "-----END" in line:
                self._key_left = 0
                return REDACTED
            if _KEY_BODY.search(line):
                self._key_next, self._key_left = number + 1, self._key_left - 1
                return REDACTED
        self._key_left = 0
        if "-----BEGIN" in line and "PRIVATE KEY" in line and "-----END" not in line:
            self._key_next, self._key_left = number + 1, MAX_KEY_LINES
        if scanned and line.isascii():  # (a non-ASCII letter may lower-case to an ASCII one)
            return _untriggered(line)
        return redact(line)


def safe_line(text: str) -> str:
    """A source name or a note made safe to show: one line, no controls, no secrets."""
    return redact(strip_controls(text, newlines=False))


# -- pseudonyms -------------------------------------------------------------------
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?!\w|\.\d|\+)")
_IPV6 = re.compile(
    r"(?<![\w])(?:[0-9a-fA-F]{1,4}:){1,7}(?::|(?::[0-9a-fA-F]{1,4}){1,7}|[0-9a-fA-F]{1,4})(?![\w:])"
)
_VERSIONISH = re.compile(
    r"(?i)(?:\b(?:version|ver|v|cuda|driver|nccl|cudnn)|(?<![\s:=])==)[\s:=]*$"
)
#: User names in home and shared-filesystem paths; ``/workspace/x`` only when ``x`` is a folder.
_HOME = re.compile(
    r"(?P<pre>/(?:home|Users|users|scratch|data|mnt/home)/)(?P<user>[A-Za-z_][\w.-]*)"
    r"|(?P<pre2>/(?:workspace|lustre|gpfs|fsx|nfs)/)(?P<user2>[A-Za-z_][\w.-]*)(?=/)"
)
_PROMPT_USER = re.compile(
    r"(?<![\w.-])(?P<user>[a-z_][\w.-]*)@(?P<host>[A-Za-z][\w.-]*)(?=[:\s\]])"
)
_KEEP_USERS = frozenset({"root", "ubuntu", "user", "admin", "nobody", "runner", "jovyan"})
_KEEP_HOSTS = frozenset({"localhost", "ip6-localhost", "ip6-loopback"})
_HOST = r"[A-Za-z][A-Za-z0-9.-]*[A-Za-z0-9]|[A-Za-z]"
#: Where a name is a peer's host: c10d's ``[host]:port`` and ``(host, port)``, NCCL's
#: ``host<port>``, ``MASTER_ADDR=host``, ``--master_addr host``, and a bare ``host:port``
#: whose host looks like one (a digit, dash or dot in it) and is no source file
#: (``socket.cpp:1234``). No nested quantifier: a GPU UUID (``GPU-3a6604ce-40f3-...``) that
#: is no ``host:port`` must fail in linear time, not try every split of its digits.
_PEER = re.compile(
    rf"(?<=to |at )\[(?P<a>{_HOST})\]:\d{{1,5}}\b"
    rf"|\((?P<b>{_HOST}), ?\d{{1,5}}\)"
    rf"|(?<![\w.-])(?P<c>{_HOST})<\d{{2,5}}>"
    rf"|(?:MASTER_ADDR=|--master[_-]addr[= ])[\"']?(?P<d>{_HOST})(?![\w-])"
    rf"|(?i:rdzv[_-]endpoint)[\"']?(?:\s*[=:]\s*|\s+)[\"']?(?P<e>{_HOST})(?=:\d)"
    r"|(?<![\w./-])(?P<f>[A-Za-z](?=[A-Za-z0-9.-]*[\d.-])[A-Za-z0-9.-]*):\d{4,5}(?![\w.:])"
)
_SOURCE_FILE = re.compile(
    r"(?i)\.(?:py|pyx|c|cc|cpp|cxx|cu|cuh|h|hpp|hxx|so|rs|go|java|js|ts|txt|log|json|yaml|yml|sh)$"
)


class Pseudonyms:
    """Stable pseudonyms for hosts, addresses and users within one report."""

    def __init__(self, hosts: Iterable[str] = ()) -> None:
        self._hosts: dict[str, str] = {}
        self._ips: dict[str, str] = {}
        self._users: dict[str, str] = {}
        self._host_pattern: re.Pattern[str] | None = None
        for host in sorted(set(hosts)):
            self.host(host)

    def host(self, name: str) -> str:
        """The pseudonym of a host name (``host-N``)."""
        if name.startswith("host-") or not name or name.lower() in _KEEP_HOSTS:
            return name
        found = self._hosts.get(name)
        if found is None:
            found = self._hosts[name] = f"host-{len(self._hosts) + 1}"
            self._host_pattern = None
        return found

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

    def key(self) -> dict[str, str]:
        """Each pseudonym and the real name it stands for: private to the sharer."""
        out = {fake: real for real, fake in self._hosts.items()}
        out.update((fake, real) for real, fake in self._ips.items())
        out.update((fake, real) for real, fake in self._users.items())
        return out

    def _learn_peers(self, text: str) -> None:
        for m in _PEER.finditer(text):
            name = next(g for g in m.groups() if g is not None)
            if _IPV4.fullmatch(name) or _SOURCE_FILE.search(name):
                continue
            self.host(name)

    def _known_hosts(self) -> re.Pattern[str]:
        if self._host_pattern is None:
            names = sorted(self._hosts, key=len, reverse=True)
            alternation = "|".join(map(re.escape, names)) or "(?!)"
            self._host_pattern = re.compile(rf"(?<![\w-])(?:{alternation})(?![\w-])")
        return self._host_pattern

    def apply(self, text: str) -> str:
        """``text`` scrubbed (:func:`scrub`), with hosts, addresses and users pseudonymised."""
        text = scrub(text)
        text = _PROMPT_USER.sub(lambda m: f"{self._user(m['user'])}@{self.host(m['host'])}", text)
        text = _HOME.sub(
            lambda m: (
                m["pre"] + self._user(m["user"]) if m["pre"] else m["pre2"] + self._user(m["user2"])
            ),
            text,
        )
        self._learn_peers(text)
        if self._hosts:
            text = self._known_hosts().sub(lambda m: self._hosts[m[0]], text)

        def ipv4(m: re.Match[str]) -> str:
            if _VERSIONISH.search(text[max(0, m.start() - 12) : m.start()]):
                return m[0]
            return self._ip(m[0])

        text = _IPV4.sub(ipv4, text)
        return _IPV6.sub(
            lambda m: self._ip(m[0]) if "::" in m[0] or m[0].count(":") >= 5 else m[0], text
        )
