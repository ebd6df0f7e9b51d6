"""Property tests: the nccl-tests parser never raises and cites real lines, on any input."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nccl_doctor.evidence.lines import lines_of
from nccl_doctor.facts.base import Fact
from nccl_doctor.parse.nccl_tests import NcclTestsParser
from tests.helpers import FORMATS, blocks
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
    raws = {line.number: line.raw for line in lines_of(text, "p")}
    parser = NcclTestsParser()
    for block in blocks(parser, text, "p"):
        assert any(a in block[0].raw for a in parser.anchors)
        assert 1 <= parser.trim(block) <= len(block)
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
