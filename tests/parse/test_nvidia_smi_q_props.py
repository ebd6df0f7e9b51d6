"""Property tests: the nvidia-smi -q parser never raises and cites real lines, on any input."""

from __future__ import annotations

from hypothesis import given

from nccl_doctor.parse.nvidia_smi_q import NvidiaSmiQParser
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
    for p in sorted((FORMATS / "nvidia-smi-q").glob("*.txt"))
]
TOKENS = [
    "==============NVSMI LOG==============\n",
    "Timestamp                                 : Mon Apr  2 19:47:58 2018\n",
    "Driver Version                            : 535.129.03\n",
    "Attached GPUs                             : 8\n",
    "GPU 00000000:18:00.0\n",
    "GPU 0000:01:00.0\n",
    "    Processes\n",
    "        Process ID                        : 1234\n",
    "            Type                          : C\n",
    "    MIG Devices\n",
    "        MIG Device\n",
    "            Index                         : 0\n",
    "    FB Memory Usage\n",
    "        Used                              : 4 MiB\n",
    "    ECC Errors\n",
    "        Volatile\n",
    "            DRAM Uncorrectable            : 3\n",
    "    Clocks Event Reasons\n",
    "        HW Slowdown                       : Active\n",
    "Unknown Error",
    "[...]",
    "    ",
    "\t",
    " : ",
    "\n",
]


@MUTATED_SETTINGS
@given(mutated(FIXTURES))
def test_mutated_fixtures(text: str) -> None:
    check_blocks(NvidiaSmiQParser(), text, whole=True)


@RANDOM_SETTINGS
@given(random_text(TOKENS))
def test_random_text(text: str) -> None:
    check_blocks(NvidiaSmiQParser(), text, whole=True)
