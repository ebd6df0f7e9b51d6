"""The reader's scan tells the gate which lines hold no word a secret follows.

The gate looks for its triggers (``key``, ``token``, ``://``...) in every line
it lets through; the reader's scan now finds them too, in any ASCII case, and
a line it read without one is not looked at again. What the gate lets through
must be exactly what its own test would: these tests hold the scan to it on
the lines that could tell them apart (case, a control character inside the
word, a carriage return, a non-ASCII letter that lower-cases to an ASCII one).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor import redact
from nccl_doctor.evidence import reader
from nccl_doctor.evidence.anchors import TRIGGER_BIT, scan_of
from nccl_doctor.redact import TRIGGERS

WARN = "host1:11:12 [0] NCCL WARN "
SECRETS = [
    "connect to https://user:hunter2@store.example:29500 failed",
    "TOKEN=abcdef0123456789abcdef",
    "Api-Key: sk-ABCDEFGHIJKLMNOPQRSTUVWX",
    "to\x07ken=abcdef0123456789",  # the control character goes: "token"
    "pass\rword=hunter2hunter2",  # the carriage return becomes a space
    "\u212aey=abcdef0123456789",  # the Kelvin sign lower-cases to "k": "key"
    "GHP_abcdefghijklmnopqrstuvwxyz0123456789",
    "AKIAIOSFODNN7EXAMPLE in the environment",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
    "Authorization: Bearer abcdef0123456789",
    "-----BEGIN RSA PRIVATE KEY-----",
    "npm_abcdefghijklmnopqrstuvwxyz0123456789",
    "nothing to hide here, rank 3 failed",
    "Cuda failure 'unknown error'",
    "NET/IB : Got completion from peer 10.0.0.2<48352> with error 12",
]
LINES = [WARN + s for s in SECRETS] + [WARN + t.upper() + " here" for t in TRIGGERS]


def _decoded(data: bytes) -> str:
    """A line as the reader hands it to the gate."""
    return data.decode("utf-8", "replace").removesuffix("\r").replace("\r", " ")


def test_every_line_the_scan_reads_without_a_trigger_holds_none_for_the_gate() -> None:
    data = ("\n".join(LINES) + "\n").encode()
    spans = scan_of(()).tagged_spans(data, 0, len(data))
    assert len(spans) == len(LINES)  # each holds NCCL WARN: the scan reads every one
    marked = 0
    for a, b, mask in spans:
        text = _decoded(data[a:b])
        if mask & TRIGGER_BIT:
            marked += 1
        elif text.isprintable() and text.isascii():  # what the gate then does not look at
            assert not redact._triggered(text.lower()), text
    # every trigger in capitals, and each secret but the last three (no trigger) and the two
    # the scan cannot see (a control character inside the word, the Kelvin sign for its k)
    assert marked == len(TRIGGERS) + len(SECRETS) - 5


def test_the_gate_trusts_the_scan_only_where_the_line_is_what_was_scanned() -> None:
    gate = redact.LineGate()
    for raw in (WARN + "to\x07ken=abcdef0123456789", WARN + "\u212aey=abcdef0123456789"):
        assert gate(1, raw, scanned=True) == redact.LineGate()(1, raw)
    assert redact.REDACTED in gate(1, WARN + "to\x07ken=abcdef0123456789", scanned=True)


@pytest.mark.parametrize("size", ["small", "large"])
def test_a_read_is_the_same_whether_the_gate_trusts_the_scan_or_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: str
) -> None:
    """A small log is read line by line (free text), a large one by the scan's lines."""
    body = (
        "\n".join(LINES)
        + "\nMIIEpAIBAAKCAQEA0123456789abcdefABCDEF0123456789\n-----END RSA PRIVATE KEY-----\n"
    )
    if size == "large":
        body = "node1:1:1 [0] NCCL INFO filler line\n" * 30_000 + body
    log = tmp_path / "train.log"
    log.write_text(body)
    trusted = reader.read_paths([str(log)])
    call = redact.LineGate.__call__

    def distrust(self: redact.LineGate, number: int, line: str, scanned: bool = False) -> str:
        return call(self, number, line)

    monkeypatch.setattr(redact.LineGate, "__call__", distrust)
    looked = reader.read_paths([str(log)])
    assert [repr(f) for f in trusted.facts] == [repr(f) for f in looked.facts]
    assert sum(redact.REDACTED in f.cite.text for f in trusted.facts) >= 5
