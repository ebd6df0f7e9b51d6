"""Property tests: the nvidia-smi table parser never raises and cites real lines, on any input."""

from __future__ import annotations

from hypothesis import given

from nccl_doctor.parse.nvidia_smi import NvidiaSmiParser
from tests.helpers import FORMATS
from tests.parse.mutations import (
    MUTATED_SETTINGS,
    RANDOM_SETTINGS,
    check_blocks,
    mutated,
    random_text,
)

FIXTURES = [
    p.read_bytes().decode("utf-8", errors="replace")
    for p in sorted((FORMATS / "nvidia-smi").glob("*.txt"))
] + [
    (FORMATS.parents[2] / "examples" / "h200-cuda-999" / "nvidia-smi.txt")
    .read_bytes()
    .decode("utf-8", errors="replace"),
    "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 535.183\n",
    "Unable to determine the device handle for GPU1: 0000:34:00.0: Unknown Error\n",
]
TOKENS = [
    "+-----------------------------------------------------------------------------+\n",
    "| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2 |\n",
    "|   0  NVIDIA A100-SXM...  On   | 00000000:07:00.0 Off |                    0 |\n",
    "| N/A   32C    P0    61W / 400W |      0MiB / 81920MiB |      0%      Default |\n",
    "|                               |                      |             Disabled |\n",
    "| Processes:",
    "|    0   N/A  N/A   1234    C   python   1234MiB |\n",
    "|  1    3   0   0  |  14366MiB / 19968MiB | 28      0 |  2   0    1    0    0 |\n",
    "| MIG devices:",
    "No running processes found",
    "ERR!",
    "N/A",
    "|",
    "+",
    "MiB",
    " / ",
    "\n",
    "Off |",
    "No devices were found",
    "NVIDIA-SMI has failed",
]


@MUTATED_SETTINGS
@given(mutated(FIXTURES))
def test_mutated_fixtures(text: str) -> None:
    check_blocks(NvidiaSmiParser(), text, whole=True)


@RANDOM_SETTINGS
@given(random_text(TOKENS))
def test_random_text(text: str) -> None:
    check_blocks(NvidiaSmiParser(), text, whole=True)
