"""MIG named beside a multi-GPU failure of any kind: NCCL does not connect MIG instances, and a
process enumerates one instance at most. MIG ruled out, or nvidia-smi's column, is not that."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import diagnose_text


@pytest.mark.parametrize(
    "said",
    [
        "Trying to use NCCL with MIG instances on an A100: DDP training fails with an error.\n",
        (
            "Title: tensor parallelism fails when using MIG instances\n"
            "ValueError: invalid literal for int() with base 10: "
            "'MIG-2e782cfd-36f2-55ff-a7d5-c6734444be2b'\n"
        ),
    ],
)
def test_mig_in_use_leads(tmp_path: Path, said: str) -> None:
    assert diagnose_text(tmp_path, said).top(1) == ["gpu.mig"]


@pytest.mark.parametrize(
    "said",
    [
        "GPUs: 2 x A100-80GB, not MIG parted. DDP training fails with an error.\n",
        "MIG is disabled on every GPU, and DDP training on 4 GPUs fails with an error.\n",
    ],
)
def test_mig_ruled_out_does_not(tmp_path: Path, said: str) -> None:
    assert "gpu.mig" not in diagnose_text(tmp_path, said).top(3)
