"""Property tests: the nvlink parser never raises and cites real lines, on any input."""

from __future__ import annotations

from hypothesis import given

from nccl_doctor.parse.nvlink import NvlinkParser
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
    for p in sorted((FORMATS / "nvlink").glob("*.txt"))
] + [
    (
        "GPU 0: NVIDIA A100 (UUID: GPU-3fb142e7-7102)\n"
        "NVML: Unable to retrieve NVLink information as all links are inActive\n"
    ),
    (
        "GPU 1: Tesla V100 (UUID: GPU-d9eeee97-c180)\n\t Link 0: Replay Errors: 148\n"
        "\t Link 0: CRC Errors: 65535\n\n\t Link 1: <inactive>\n"
    ),
]
TOKENS = [
    "GPU 0: ",
    "NVIDIA H100",
    " (UUID: ",
    "GPU-34bf77d1-c686",
    ")",
    "\t Link ",
    "Link 0: ",
    "         ",
    "26.562 GB/s",
    "<inactive>",
    "Replay Errors: ",
    "NVML: Unable to retrieve NVLink information as all links are inActive",
    "...",
    "nvidia-smi nvlink -s",
    "\n",
    ":",
    "7",
]


@MUTATED_SETTINGS
@given(mutated(FIXTURES))
def test_mutated_fixtures(text: str) -> None:
    check_blocks(NvlinkParser(), text)


@RANDOM_SETTINGS
@given(random_text(TOKENS))
def test_random_text(text: str) -> None:
    check_blocks(NvlinkParser(), text)
