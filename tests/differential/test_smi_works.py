"""nvidia-smi works where CUDA does not start: what that rules out.

NVML (nvidia-smi) opens the control and GPU device nodes through a library that must match
the loaded kernel module; a driver/library mismatch or a GPU off the bus stops it too. The
CUDA runtime needs one thing more: the unified-memory module and its node, /dev/nvidia-uvm
(a container started without it, a module not loaded). So the reporter's "nvidia-smi works"
beside a CUDA that cannot start weighs the UVM module up and the mismatch and the lost GPU
down; an account of before ("worked until I updated") says nothing of now. Every diagnosis
case runs the whole pipeline.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import cue_says, ranked_without_critical


@pytest.mark.parametrize(
    "said",
    [
        'In the container, "nvidia-smi,nvcc -V" worked.',
        "- nvidia-smi ok",
        "nvidia-smi works fine and shows both GPUs.",
        "`nvidia-smi` shows all 8 GPUs",
        "nvidia-smi 显示正常, nvidia-smi output is normal",
    ],
)
def test_smi_said_to_work(said: str) -> None:
    assert cue_says("smi_works", said)


@pytest.mark.parametrize(
    "said",
    [
        "nvidia-smi worked until I updated the driver.",
        "Initially nvidia-smi worked, now it fails.",
        "nvidia-smi doesn't work anymore",
        "Failed to initialize NVML: Driver/library version mismatch when I run nvidia-smi",
        "nvidia-smi shows the GPU utilization is always 100%",
    ],
)
def test_smi_not_said_to_work_now(said: str) -> None:
    assert not cue_says("smi_works", said)


_NO_CUDA = (
    "Inside a docker container torch.cuda.is_available() returns False.\n"
    ">>> import torch\n"
    ">>> torch.cuda.is_available()\n"
    "False\n"
)


def test_smi_working_points_past_nvml_to_the_uvm_node(tmp_path: Path) -> None:
    bare = ranked_without_critical(tmp_path, _NO_CUDA)
    works = ranked_without_critical(
        tmp_path, _NO_CUDA + "nvidia-smi works fine in the container.\n"
    )
    assert "driver.uvm" not in bare[:4]
    assert "driver.version_mismatch" in bare[:4]
    assert "driver.uvm" in works[:3]
    assert "driver.version_mismatch" not in works[:4]


def test_smi_that_worked_before_an_update_changes_nothing(tmp_path: Path) -> None:
    before = _NO_CUDA + "nvidia-smi worked until I updated the driver yesterday.\n"
    assert ranked_without_critical(tmp_path, before) == ranked_without_critical(tmp_path, _NO_CUDA)
