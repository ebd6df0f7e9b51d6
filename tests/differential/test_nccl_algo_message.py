"""NCCL's 'No algorithm/protocol available' (src/enqueue.cc): an internal error when no
NCCL_ALGO/NCCL_PROTO is set, and the setting's fault when one is (the message then names it)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_text

_WARN = (
    "gpu-a:3101:3190 [0] enqueue.cc:2063 (topoGetAlgoInfo) NCCL WARN No algorithm/protocol "
    "available for function AllGather with datatype ncclBfloat16."
)


def test_the_bare_message_is_an_internal_error(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _WARN + "\n")
    assert not report.findings
    lead = report.hypotheses[0]
    assert lead.symptom.startswith("NCCL reported an internal error")
    assert lead.id == "nccl.internal"


def test_the_message_naming_nccl_algo_blames_the_setting(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _WARN + " NCCL_ALGO was set to NVLS.\n")
    found = report.findings[0]
    assert found.id == "nccl.env"
    assert found.summary.startswith("NCCL_ALGO=NVLS leaves NCCL no algorithm for AllGather")
