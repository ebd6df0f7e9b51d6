"""Property tests: the topo parser never raises and cites real lines, on any input."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nccl_doctor.evidence.lines import lines_of
from nccl_doctor.facts.base import Fact
from nccl_doctor.parse.topo import TopoParser
from tests.helpers import FORMATS, blocks

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
    parser = TopoParser()
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
