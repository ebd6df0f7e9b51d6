"""What the NCCL rules read from text: signs of signs/nccl.py and the facts-layer helpers."""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.last_error import last_error_lines
from nccl_doctor.facts.software import PythonPackage
from nccl_doctor.facts.store import Facts
from nccl_doctor.facts.text import TextLine
from nccl_doctor.pipeline import diagnose_paths, facts_of
from nccl_doctor.rules.nccl._common import nccl_packages
from nccl_doctor.signs.nccl import NEW_GPUS


def _lines(*texts: str) -> Facts:
    return Facts(TextLine(cite=Cite.of("t", i + 1, t), text=t) for i, t in enumerate(texts))


def test_a_line_naming_b200_and_gb200_shows_both_generations() -> None:
    facts = _lines("compared B200 and GB200 nodes")
    assert [g for g, s in NEW_GPUS.items() if facts.saw(s)] == ["GB200", "B200"]
    assert [g for g, s in NEW_GPUS.items() if _lines("an H100 box").saw(s)] == []


@pytest.mark.parametrize(
    ("name", "nccl"),
    [
        ("nvidia-nccl-cu12", True),
        ("NVIDIA-NCCL-CU11", True),
        ("nvidia-nccl", True),
        ("nccl", True),
        ("libnccl2", True),
        ("libnccl", True),
        ("nvidia-nccl-cu", False),
        ("nvidia-nccl-cu12x", False),
        ("libnccl22", False),
        ("libnccl-dev", False),
        ("nccl2", False),
        ("torch", False),
    ],
)
def test_nccl_packages_by_name(name: str, nccl: bool) -> None:
    row = PythonPackage(cite=Cite("env", 1, name), manager="pip", name=name, version="2.18.1")
    assert (nccl_packages(Facts([row])) == [row]) is nccl


def test_the_line_after_last_error_without_its_prefixes(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    log.write_text(
        "[rank0]: Traceback (most recent call last):\n"
        "[rank0]: Last error:\n"
        "[rank0]: Attribute busid of node nic not found\n"
        "(pid=41) Last error:\n"
        "(pid=41) ERROR 04-07 10:00:01 pynccl.py:45] Cuda failure 'out of memory'\n"
        "Last error:\n"
        "\n",
        encoding="utf-8",
    )
    facts = facts_of(read_paths([str(log)]))
    assert last_error_lines(facts) == [
        "Attribute busid of node nic not found",
        "Cuda failure 'out of memory'",
    ]


_GDB = (
    'Thread 1 "python" received signal SIGBUS, Bus error.\n'
    "0x00007fffd3a1c2b4 in {fn} () from /usr/lib/x86_64-linux-gnu/libnccl.so.2\n"
    "(gdb) bt\n"
)


@pytest.mark.parametrize(
    ("fn", "fires"),
    [
        ("ncclShmOpen(char*, unsigned long, void**, void**, int)", True),
        ("ncclTopoGetSystem", False),
    ],
)
def test_a_bus_error_in_nccls_shared_memory_set_up_is_the_segment(
    tmp_path: Path, fn: str, fires: bool
) -> None:
    """gdb stops in ncclShmOpen on SIGBUS: the segment /dev/shm could not back. The same signal
    in another NCCL function says nothing of shared memory."""
    log = tmp_path / "gdb.txt"
    log.write_text(_GDB.format(fn=fn), encoding="utf-8")
    found = {f.id: f for f in diagnose_paths([str(log)]).findings}
    assert ("nccl.shm" in found) is fires
    if fires:
        shm = found["nccl.shm"]
        assert shm.summary.startswith("A process died of SIGSEGV/SIGBUS inside NCCL's shared-")
        assert (shm.confidence.value, [c.line for c in shm.evidence]) == ("high", [2])
