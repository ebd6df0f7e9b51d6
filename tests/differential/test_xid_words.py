"""An Xid retold in a sentence ("a single Xid 62 just before the hang", "dmesg showed Xid 79")
opens the GPU-fault class before how the job then ended (a kill, a timeout); the Xid table
names the fault. A denied Xid, or one the table reads as information only, opens none."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import diagnose_text

_ENDED = "After the job was killed, a new job on that node hung at the first allreduce."


@pytest.mark.parametrize(
    ("said", "cause"),
    [
        ("The only kernel message is a single Xid 62 for GPU 6 before the hang. ", "gpu.xid"),
        ("dmesg showed Xid 79 for the GPU at 0000:3b:00 when it stopped. ", "gpu.lost"),
        ("We also saw Xid 94 on GPU 2 that night. ", "gpu.ecc"),
    ],
)
def test_an_xid_said_names_the_fault(tmp_path: Path, said: str, cause: str) -> None:
    report = diagnose_text(tmp_path, said + _ENDED + "\n")
    # (a GPU or firmware Xid of gpu.xid's own, named beside the hang, is its finding; the
    # others rank first among the hypotheses)
    assert report.top(1) == [cause]
    assert report.hypotheses[0].symptom == "the driver logged a GPU fault (Xid)"


@pytest.mark.parametrize(
    "said",
    [
        "dmesg shows no Xid 79 at all. ",
        "The only kernel line is an Xid 154 (a recovery action, information only). ",
    ],
)
def test_a_denied_or_informational_xid_opens_no_fault(tmp_path: Path, said: str) -> None:
    report = diagnose_text(tmp_path, said + _ENDED + "\n")
    assert all(h.symptom != "the driver logged a GPU fault (Xid)" for h in report.hypotheses)
