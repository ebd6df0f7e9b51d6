"""Property tests: the topo parser never raises and cites real lines, on any input."""

from __future__ import annotations

from hypothesis import given

from nccl_doctor.parse.topo import TopoParser
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
    for p in [
        *sorted((FORMATS / "topo").glob("*.txt")),
        FORMATS / "ibstatus/roce-100g-edr-after-topo-legend.txt",
        FORMATS / "collect_env/vllm-info-tail-gpu-topology-h100-16nic.txt",
    ]
]
TOKENS = [
    "GPU0",
    "GPU1",
    "NIC0",
    " X ",
    "NV12",
    "SYS",
    "PIX",
    "\t",
    "  ",
    "CPU Affinity",
    "N/A",
    "NUMA Affinity",
    "GPU NUMA ID",
    "0-63",
    "Legend:",
    "NIC Legend:",
    "  NIC0: mlx5_0",
    "= Connection traversing",
    "nvidia-smi topo -m",
    "\x1b[4m",
    "\x1b[0m",
    "\n",
    ":",
    "0",
]


@MUTATED_SETTINGS
@given(mutated(FIXTURES))
def test_mutated_fixtures(text: str) -> None:
    check_blocks(TopoParser(), text)


@RANDOM_SETTINGS
@given(random_text(TOKENS))
def test_random_text(text: str) -> None:
    check_blocks(TopoParser(), text)
