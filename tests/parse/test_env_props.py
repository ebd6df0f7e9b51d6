"""Property tests: the env parser never raises and cites real lines, on any input."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nccl_doctor.evidence.lines import lines_of
from nccl_doctor.facts.base import Fact
from nccl_doctor.parse.env import EnvParser
from tests.helpers import FORMATS, parse_stream

FIXTURES = [
    p.read_bytes().decode("utf-8", errors="replace")
    for folder in ("nccl-tests",)
    for p in sorted((FORMATS / folder).glob("*.txt"))
]
FIXTURES.append(
    "NCCL_DEBUG=INFO\nexport NCCL_IB_HCA=mlx5_0\nuser@h:~$ CUDA_VISIBLE_DEVICES=0 python t.py\n"
    'os.environ["MASTER_ADDR"] = "x"\n- name: NCCL_SOCKET_IFNAME\n  value: eth0\n'
    "mpirun -x NCCL_DEBUG=WARN ./a\nsetenv NCCL_P2P_LEVEL NVL\nENV NCCL_VERSION 2.1\n"
)
TOKENS = [
    "NCCL_DEBUG=",
    "INFO",
    "export ",
    "declare -x ",
    "$ ",
    "user@host:~$ ",
    " python t.py",
    'os.environ["NCCL_X"] = ',
    '"1"',
    "- name: NCCL_Y",
    "value: ",
    "-x ",
    "--export=ALL,",
    "setenv ",
    "ENV ",
    "'",
    '"',
    "\n",
    "=",
    " ",
]


@st.composite
def mutated(draw: st.DrawFn) -> str:
    """A sample with lines deleted, duplicated, cut, swapped or garbled."""
    lines = draw(st.sampled_from(FIXTURES)).splitlines()
    for _ in range(draw(st.integers(0, 8))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["del", "dup", "cut", "swap", "garble", "truncate", "insert"]))
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
        elif op == "insert":
            lines.insert(i, draw(st.sampled_from(TOKENS)) + draw(st.text(max_size=8)))
        else:
            lines = lines[: i + 1]
    return "\\n".join(lines)


def random_text() -> st.SearchStrategy[str]:
    """Text built from the format's own tokens and arbitrary characters."""
    return st.lists(st.sampled_from(TOKENS) | st.text(max_size=6), max_size=60).map("".join)


def check(text: str) -> None:
    """Facts are Facts citing lines of ``text``; every line fed or only anchored ones agree."""
    raws = {line.number: line.raw for line in lines_of(text, "p")}
    facts = parse_stream(EnvParser(), text, "p")
    for fact in facts:
        assert isinstance(fact, Fact)
        assert fact.cite.source == "p"
        assert fact.cite.line in raws
        assert raws[fact.cite.line].startswith(fact.cite.text.rstrip("…"))
    every = EnvParser()
    all_fed: list[Fact] = []
    for line in lines_of(text, "p"):
        every.feed(line)
        all_fed.extend(every.take())
    all_fed.extend(every.finish())
    assert all_fed == facts


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_samples(text: str) -> None:
    check(text)


@settings(max_examples=150, deadline=None)
@given(random_text())
def test_random_text(text: str) -> None:
    check(text)
