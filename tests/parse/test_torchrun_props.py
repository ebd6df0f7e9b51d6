"""Property tests: the torchrun parser never raises and cites real lines, on any input."""

from __future__ import annotations

from hypothesis import given

from nccl_doctor.parse.torchrun import TorchrunParser
from tests.helpers import FORMATS
from tests.parse.mutations import (
    MUTATED_SETTINGS,
    RANDOM_SETTINGS,
    check_stream,
    mutated,
    random_text,
)

FIXTURES = [
    p.read_bytes().decode("utf-8", errors="replace")
    for folder in ("torchrun",)
    for p in sorted((FORMATS / folder).glob("*.txt"))
]
EXAMPLE = FORMATS.parents[2] / "examples" / "h200-cuda-999" / "train.log"
FIXTURES.append(EXAMPLE.read_bytes().decode("utf-8", errors="replace"))
FIXTURES.append(
    "=====\nt.py FAILED\n-----\nRoot Cause (first observed failure):\n[0]:\n  time      : 2024\n"
    "  rank      : 3 (local_rank: 1)\n  exitcode  : -6 (pid: 9)\n  traceback : Traceback (most "
    'recent call last):\n    File "a.py", line 1, in f\n  RuntimeError: NCCL error: internal '
    "error, NCCL version 2.1\n  Last error:\n  x\n=====\n"
)
FIXTURES.append(
    "[I ProcessGroupNCCL.cpp:672] [Rank 0] ProcessGroupNCCL initialized with following options:\n"
    "NCCL_ASYNC_ERROR_HANDLING: 1\nTIMEOUT(ms): 1800000\n"
)
TOKENS = [
    "[E ProcessGroupNCCL.cpp:737] ",
    "[Rank 1] ",
    "[PG ID 0 PG GUID 0(default_pg) Rank 3] ",
    "Watchdog caught collective operation timeout: ",
    "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, ",
    "Timeout(ms)=600000)",
    " ran for 600012 milliseconds before timing out.",
    "last enqueued NCCL work: ",
    "-1",
    "failed (exitcode: -9) local_rank: 3 (pid: 1) of binary: ",
    "Sending process 12 closing signal SIGTERM",
    " FAILED",
    "[0]:",
    "  exitcode  : ",
    "  traceback : ",
    "=====",
    "NCCL error in: a.cpp:1, ",
    "ncclSystemError: ",
    "Last error:",
    "ProcessGroupNCCL initialization options: ",
    "size: 4, ",
    "CUDA out of memory. ",
    "Tried to allocate 2.00 GiB",
    "server socket has failed to bind to [::]:29500 (errno: 98 - x)",
    "\n",
    ": ",
    ", ",
    "9",
]


@MUTATED_SETTINGS
@given(mutated(FIXTURES, TOKENS))
def test_mutated_samples(text: str) -> None:
    check_stream(TorchrunParser, text)


@RANDOM_SETTINGS
@given(random_text(TOKENS))
def test_random_text(text: str) -> None:
    check_stream(TorchrunParser, text)
