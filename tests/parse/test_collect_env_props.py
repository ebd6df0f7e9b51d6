"""Property tests: the collect_env parser never raises and cites real lines, on any input."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nccl_doctor.evidence.lines import lines_of
from nccl_doctor.facts.base import Fact
from nccl_doctor.parse.collect_env import CollectEnvParser
from tests.helpers import FORMATS, blocks

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


@st.composite
def mutated(draw: st.DrawFn) -> str:
    """A fixture with lines deleted, duplicated, cut, swapped or garbled."""
    lines = draw(st.sampled_from(FIXTURES)).splitlines()
    for _ in range(draw(st.integers(0, 8))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["del", "dup", "cut", "swap", "garble", "truncate"]))
        if op == "del":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "cut":
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "garble" and lines[i]:
            k = draw(st.integers(0, len(lines[i]) - 1))
            lines[i] = lines[i][:k] + draw(st.text(min_size=1, max_size=3)) + lines[i][k + 1 :]
        else:
            lines = lines[: i + 1]
    return "\n".join(lines)


def random_text() -> st.SearchStrategy[str]:
    """Text built from the format's own tokens and arbitrary characters."""
    return st.lists(st.sampled_from(TOKENS) | st.text(max_size=6), max_size=60).map("".join)


def check(text: str) -> None:
    """Blocks start on anchored lines; facts are Facts citing lines of ``text``."""
    parser = CollectEnvParser()
    raws = {line.number: line.raw for line in lines_of(text, "p")}
    for block in blocks(parser, text, "p"):
        assert any(a in block[0].raw for a in parser.anchors)
        for fact in parser.parse(block):
            assert isinstance(fact, Fact)
            assert fact.cite.source == "p"
            assert fact.cite.line in raws
            assert raws[fact.cite.line].startswith(fact.cite.text.rstrip("…"))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_fixtures(text: str) -> None:
    check(text)


@settings(max_examples=150, deadline=None)
@given(random_text())
def test_random_text(text: str) -> None:
    check(text)
