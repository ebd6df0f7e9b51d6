"""Property tests: the nccl-tests parser never raises and cites real lines, on any input."""

from __future__ import annotations

from hypothesis import given

from nccl_doctor.evidence.lines import Line
from nccl_doctor.parse.nccl_tests import NcclTestsParser
from tests.helpers import FORMATS
from tests.parse.mutations import (
    MUTATED_SETTINGS,
    RANDOM_SETTINGS,
    check_blocks,
    mutated,
    random_text,
)
from tests.parse.test_nccl_tests import FAILED, NEWEST, OLD_ERROR_COLUMN, PER_ITERATION

FIXTURES = [
    p.read_bytes().decode("utf-8", errors="replace")
    for p in sorted((FORMATS / "nccl-tests").glob("*.txt"))
] + [NEWEST, OLD_ERROR_COLUMN, FAILED, PER_ITERATION]
TOKENS = [
    "# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: ",
    "agg iters: 1 validation: 1 graph: 0",
    "# Using devices",
    "#  Rank  0 Group  0 Pid 1234 on host device  0 [0000:1c:00] NVIDIA H100",
    "#   Rank  1 Pid  28330 on   host device  1 [0x41] NVIDIA RTX A6000",
    "#                                    out-of-place                       in-place",
    "#       size         count      type   redop    root     time   algbw   busbw #wrong",
    "#        (B)    (elements)",
    "     1048576        262144     float     sum      -1",
    "    25.11   41.76   73.08       0",
    "    N/A",
    "  0e+00",
    "  1e+06",
    "# Out of bounds values : 0 OK",
    "# Avg bus bandwidth    : 12.5",
    " FAILED",
    "host: Test NCCL failure common.cu:959 '",
    " .. host pid 1: Test failure common.cu:1007",
    "# error: ",
    "mpirun -np 8 ./all_reduce_perf -b 8 -e 128M -f 2 -g 1",
    "# nccl-tests version 2.17.6 nccl-headers=22807 nccl-library=22807",
    "# Collective test starting: all_reduce_perf",
    "h:1:2 [0] NCCL INFO Using network IB",
    "NCCL version 2.26.6+cuda12.8",
    "#",
    "\n",
    "\n",
    " ",
    "  ",
    "-",
    ".",
]


def check(text: str) -> None:
    """Blocks start on anchored lines and trim within themselves; facts cite lines of ``text``."""
    parser = NcclTestsParser()

    def trims_within(block: list[Line]) -> None:
        assert 1 <= parser.trim(block) <= len(block)

    check_blocks(parser, text, per_block=trims_within)


@MUTATED_SETTINGS
@given(mutated(FIXTURES))
def test_mutated_fixtures(text: str) -> None:
    check(text)


@RANDOM_SETTINGS
@given(random_text(TOKENS))
def test_random_text(text: str) -> None:
    check(text)
