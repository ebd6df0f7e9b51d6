"""Property tests: the collect_env parser never raises and cites real lines, on any input."""

from __future__ import annotations

from hypothesis import given

from nccl_doctor.parse.collect_env import CollectEnvParser
from tests.helpers import FORMATS
from tests.parse.mutations import (
    MUTATED_SETTINGS,
    RANDOM_SETTINGS,
    check_blocks,
    mutated,
    random_text,
)

EXAMPLE = FORMATS.parents[2] / "examples" / "h200-cuda-999" / "collect_env.txt"
FIXTURES = [
    p.read_bytes().decode("utf-8", errors="replace")
    for p in [*sorted((FORMATS / "collect_env").glob("*.txt")), EXAMPLE]
]
TOKENS = [
    "Collecting environment information...",
    "PyTorch version: ",
    "2.1.0",
    "N/A",
    "True",
    "GPU models and configuration: ",
    "GPU 0: NVIDIA H100",
    "CPU:",
    "Architecture:  x86_64",
    "NUMA node0 CPU(s):",
    "Versions of relevant libraries:",
    "[pip3] ",
    "nvidia-nccl-cu12==",
    "[conda] ",
    "==============================",
    "vLLM Info",
    "GPU Topology:",
    "\tGPU0",
    "CPU Affinity",
    "NCCL_DEBUG=INFO",
    " : ",
    "\n",
    ":",
    "  ",
    "\t",
    "/usr/lib/libcudnn.so",
]


@MUTATED_SETTINGS
@given(mutated(FIXTURES))
def test_mutated_fixtures(text: str) -> None:
    check_blocks(CollectEnvParser(), text)


@RANDOM_SETTINGS
@given(random_text(TOKENS))
def test_random_text(text: str) -> None:
    check_blocks(CollectEnvParser(), text)
