"""Read the WARN/INFO format strings of NCCL's ``src/`` at each release tag of a git mirror."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from gitsrc import format_calls

# the last patch of each minor release from 2.4 on (2.24 and 2.30 included: they exist);
# threads still quote 2.4-2.17, whose messages were often worded differently
TAGS = (
    "v2.4.8-1", "v2.5.7-1", "v2.6.4-1", "v2.7.8-1", "v2.8.4-1", "v2.9.9-1", "v2.10.3-1",
    "v2.11.4-1", "v2.12.12-1", "v2.13.4-1", "v2.14.3-1", "v2.15.5-1", "v2.16.5-1", "v2.17.1-1",
    "v2.18.6-1", "v2.19.4-1", "v2.20.5-1", "v2.21.5-1", "v2.22.3-1", "v2.23.4-1",
    "v2.24.3-1", "v2.25.1-1", "v2.26.6-1", "v2.27.7-1", "v2.28.9-1", "v2.29.7-1",
    "v2.30.7-1",
)  # fmt: skip

_RESULT = re.compile(
    r"\bnccl(SystemError|InternalError|InvalidArgument|InvalidUsage|RemoteError|"
    r"UnhandledCudaError|Timeout)\b"
)


@dataclass
class Site:
    """One call site of one format at one tag."""

    path: str
    line: int
    macro: str
    flags: str
    result: str | None


@dataclass
class Message:
    """One format string and where each tag prints it."""

    text: str
    args: list[str]
    sites: dict[str, list[Site]] = field(default_factory=dict)


def _result_near(src: str, start: int, end: int) -> str | None:
    """The ncclResult_t a WARN leads to: the next two statements, else the one before it."""
    after = src[end : end + 600]
    stop = [m.end() for m in re.finditer(r";", after)][:2]
    window = after[: stop[-1]] if stop else after
    brace = window.find("}")
    if brace >= 0 and "return" not in window[:brace] and "=" not in window[:brace]:
        window = window[:brace]
    m = _RESULT.search(window)
    if m:
        return "nccl" + m.group(1)
    before = src[max(0, start - 200) : start]
    before = before[before.rfind("{") + 1 :] if "{" in before else before
    parts = before.split(";")
    m = _RESULT.search(parts[-2] if len(parts) > 1 else "")
    return "nccl" + m.group(1) if m else None


def read_tag(mirror: Path, tag: str, messages: dict[tuple[str, str], Message]) -> None:
    """Add every WARN/INFO/INFO_LOC format of ``src/`` at ``tag`` to ``messages``."""
    macros = ("WARN", "INFO", "INFO_LOC")
    for call in format_calls(mirror, tag, ("src",), macros, flagged=("INFO", "INFO_LOC")):
        kind = "warn" if call.macro == "WARN" else "info"
        fmt = call.format
        msg = messages.setdefault((kind, fmt.text), Message(fmt.text, fmt.args))
        start = call.src.rfind("\n", 0, call.end)
        result = _result_near(call.src, start, call.end) if kind == "warn" else None
        site = Site(call.path, call.line, call.macro, call.flags, result)
        msg.sites.setdefault(tag, []).append(site)
