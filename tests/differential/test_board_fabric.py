"""An NVSwitch board (HGX/DGX) is where a fabric manager can be missing, and a fabric that is
not ready fails every CUDA context with cudaErrorSystemNotReady, a message the catalogue
classifies. Beside a failure no message classifies the board weighs less for the fabric
manager (it stays among the shown causes); beside CUDA's own failure it weighs fully."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_text

_BOARD = "Our node is an HGX board with 8x H100 SXM5, driver 550.54.15, torch 2.3.\n"


def test_an_unclassified_failure_on_a_board_leads_with_the_ranks_not_the_fabric(
    tmp_path: Path,
) -> None:
    report = diagnose_text(
        tmp_path, _BOARD + "torchrun --nproc_per_node 8 train.py fails at start with an error.\n"
    )
    ids = [h.id for h in report.hypotheses]
    assert ids[:3] == ["cuda.device_visibility", "nccl.internal", "nccl.version_mismatch"]
    assert ids[3] == "gpu.fabric_manager"


def test_cudas_own_failure_on_a_board_is_the_fabric(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        _BOARD + "RuntimeError: CUDA error: system not yet initialized\n",
    )
    assert report.top(1) == ["gpu.fabric_manager"]
