"""Property tests: the traceback parser never raises and cites real lines, on any input."""

from __future__ import annotations

from hypothesis import given

from nccl_doctor.parse.traceback import TracebackParser
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
    "[rank0]:Traceback (most recent call last):\n[rank1]:Traceback (most recent call last):\n"
    '[rank0]:  File "a.py", line 1, in f\n[rank0]:    g()\n[rank1]:  File "b.py", line 2\n'
    "[rank0]:RuntimeError: CUDA error: x\n[rank1]:KeyboardInterrupt\n[rank0]:\n"
    "During handling of the above exception, another exception occurred:\n"
)
FIXTURES.append(
    "terminate called after throwing an instance of 'c10::Error'\n  what():  NCCL error: x\n"
    "Exception raised from f at a.cpp:1 (most recent call first):\nframe #0: x\n"
)
TOKENS = [
    "Traceback (most recent call last):",
    '  File "a.py", line 3, in f',
    "    x = 1",
    "    ^^^^",
    "RuntimeError: ",
    "torch.distributed.DistBackendError: ",
    "NCCL error in: a.cpp:1, ",
    "Last error:",
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
    "terminate called after throwing an instance of 'x'",
    "  what():  ",
    "Exception raised from ",
    "CUDA error: ",
    "Assertion `x` failed.",
    "[rank1]:",
    "ChildFailedError: ",
    "\n",
    ": ",
    "  ",
]


@MUTATED_SETTINGS
@given(mutated(FIXTURES, TOKENS))
def test_mutated_samples(text: str) -> None:
    check_stream(TracebackParser, text)


@RANDOM_SETTINGS
@given(random_text(TOKENS))
def test_random_text(text: str) -> None:
    check_stream(TracebackParser, text)
