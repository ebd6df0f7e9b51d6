"""Property tests: the xid parser never raises and cites real lines, on any input."""

from __future__ import annotations

from hypothesis import given

from nccl_doctor.parse.xid import XidParser
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
    for folder in ("xid",)
    for p in sorted((FORMATS / folder).glob("*.txt"))
]
TOKENS = [
    "NVRM: ",
    "Xid (PCI:0000:3b:00): ",
    "79, ",
    "pid=12, ",
    "name=python, ",
    "Ch 00000010",
    "GPU at PCI:0000:3b:00: GPU-12345678-aaaa",
    "GPU Board Serial Number: 123",
    "The NVIDIA GPU 0000:b3:00.0",
    "fallen off the bus.",
    "API mismatch: the client has the version 1.2, but",
    "this kernel module has the version 3.4.",
    "loading NVIDIA UNIX x86_64 Kernel Module  535.1",
    "nvidia-nvswitch0: SXid (PCI:0000:07:00.0): 12028, ",
    "nvidia_peermem: Unknown symbol",
    "GPU6 ",
    "kernel: ",
    "\n",
    ": ",
    ".",
]


@MUTATED_SETTINGS
@given(mutated(FIXTURES, TOKENS))
def test_mutated_samples(text: str) -> None:
    check_stream(XidParser, text)


@RANDOM_SETTINGS
@given(random_text(TOKENS))
def test_random_text(text: str) -> None:
    check_stream(XidParser, text)
