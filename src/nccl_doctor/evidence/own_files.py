"""What nccl-doctor wrote itself: known by content, never read as evidence.

A report saved next to the logs it was made from (``diagnose DIR -o
DIR/report.html``) quotes evidence lines and fix texts; read again as
evidence it would cite itself and find causes in its own advice. Reports are
known by the heading every renderer writes with :data:`nccl_doctor.GENERATOR`
at the very start of the file, in whatever format, and by nothing else: a
file's name is never trusted, and a log that merely quotes a report further
down is still read.

Of a ``run`` folder's bookkeeping, the parts that record the job stay
evidence: ``MANIFEST.json`` (how the job ended; read by the ``run-manifest``
parser), ``environment.txt`` (the environment the job started with), the node
snapshots' ``host.json`` and ``env.txt``. What only describes the wrapper's
own work is skipped: ``command.txt`` beside a run manifest (the command is in
the manifest too), a capture's ``MANIFEST.json`` (the list of reads made), and
the run's own ``MANIFEST.json`` while the job runs (no exit to record yet).
"""

from __future__ import annotations

import re

from nccl_doctor import GENERATOR
from nccl_doctor.parse.run_manifest import RunManifestParser

#: How many leading bytes are looked at.
HEAD_BYTES = 8192
#: The verdict words of a report heading (``nccl_doctor.report.Verdict``).
VERDICTS = ("healthy", "degraded", "failed", "inconclusive", "incomplete")
#: The first line of a run folder's MANIFEST.json.
RUN_MANIFEST_HEAD = RunManifestParser.anchors[0].encode()
#: The line of a run folder's MANIFEST.json while the job runs (one key per line).
_RUNNING = b'\n "status": "running"'
#: The run wrapper's record of the command, beside its MANIFEST.json.
RUN_COMMAND_NAME = "command.txt"

_G = re.escape(GENERATOR)
_WORDS = "|".join(VERDICTS)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_HEADS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("text", re.compile(rf"{_G}: (?:{_WORDS.upper()})  \(\d+ findings?, \d+ root causes?\)")),
    ("markdown", re.compile(rf"## {_G}: \*\*(?:{_WORDS})\*\*\s*$", re.MULTILINE)),
    ("explain", re.compile(r"^[a-z]+(?:\.[a-z0-9_]+)+ — .* \(default severity: [a-z]+\)\s*$")),
    ("rules", re.compile(r"^[a-z]+(?:\.[a-z0-9_]+)+ +(?:critical|warning|info) +\S")),
)
_HTML_START = re.compile(r"<!DOCTYPE html>", re.IGNORECASE)
_HTML_MARK = re.compile(
    rf'<meta name="generator" content="{_G}[ "]|<title>{_G}: (?:{_WORDS})\b', re.IGNORECASE
)
_JSON_REPORT = re.compile(rf'"tool":\s*\{{\s*"name":\s*"{_G}"')
_JSON_PARSED = re.compile(r'\{"sections": \[(?:\]|\{"kind": ")')
_CAPTURE_MANIFEST = re.compile(
    r'\{\s*"failed":\s*\[[^\]]*\],\s*"files":\s*\[[^\]]*\],\s*"hostname"'
)


def report_format(head: bytes) -> str | None:
    """The format of the nccl-doctor report ``head`` starts, or ``None`` when it is none.

    Only the start counts: the first line of a text, Markdown, ``explain`` or
    ``rules`` output, the opening of a JSON report or ``parse --format json``
    output, the head of an HTML page.
    """
    text = head[:HEAD_BYTES].decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    if text.startswith("{"):
        if _JSON_REPORT.search(text, 0, 400):
            return "json"
        return "parse json" if _JSON_PARSED.match(text) else None
    if _HTML_START.match(text):
        return "html" if _HTML_MARK.search(text) else None
    first = _ANSI.sub("", text.split("\n", 1)[0])
    for name, pattern in _HEADS:
        if pattern.match(first):
            return name
    return None


def is_capture_manifest(head: bytes) -> bool:
    """Whether ``head`` opens the MANIFEST.json of a capture bundle (the list of its reads)."""
    return bool(_CAPTURE_MANIFEST.match(head[:HEAD_BYTES].decode("utf-8", "replace")))


def is_running_manifest(head: bytes) -> bool:
    """Whether ``head`` opens the MANIFEST.json of a run whose job still runs: it records
    nothing yet (the exit it adds comes when the job ends)."""
    return head.startswith(RUN_MANIFEST_HEAD) and _RUNNING in head[:HEAD_BYTES]
