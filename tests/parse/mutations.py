"""Shared pieces of the parsers' property tests: mutated fixtures, random text, checks.

Each ``test_*_props.py`` keeps its own fixtures, tokens and parser-specific
properties, and takes from here the strategies that garble its fixtures and
the checks every parser must pass on any input: no exception, and every fact
is a :class:`Fact` whose cite names a real line of the text it was read from.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from nccl_doctor.evidence.lines import Line, lines_of
from nccl_doctor.facts.base import Fact
from nccl_doctor.parse.base import BlockParser, StreamParser
from tests.helpers import blocks, parse_stream

#: The source name every property test gives its text.
SOURCE = "p"

#: Settings of the tests on mutated fixtures, and on random text.
MUTATED_SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
RANDOM_SETTINGS = settings(max_examples=150, deadline=None)

_OPS = ["del", "dup", "cut", "swap", "garble", "truncate"]


@st.composite
def mutated(
    draw: st.DrawFn,
    fixtures: Sequence[str],
    tokens: Sequence[str] | None = None,
    sep: str = "\n",
) -> str:
    """A fixture with lines deleted, duplicated, cut, swapped, garbled or truncated.

    With ``tokens``, lines made of a token and arbitrary characters are also
    inserted. The lines are joined with ``sep``.
    """
    ops = [*_OPS, "insert"] if tokens is not None else _OPS
    lines = draw(st.sampled_from(fixtures)).splitlines()
    for _ in range(draw(st.integers(0, 8))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(ops))
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
        elif op == "insert" and tokens is not None:
            lines.insert(i, draw(st.sampled_from(tokens)) + draw(st.text(max_size=8)))
        else:
            lines = lines[: i + 1]
    return sep.join(lines)


def random_text(tokens: Sequence[str]) -> st.SearchStrategy[str]:
    """Text built from the format's own tokens and arbitrary characters."""
    return st.lists(st.sampled_from(tokens) | st.text(max_size=6), max_size=60).map("".join)


def raws_of(text: str) -> dict[int, str]:
    """Each line of ``text`` as read, by its line number."""
    return {line.number: line.raw for line in lines_of(text, SOURCE)}


def check_facts(facts: Iterable[object], raws: dict[int, str]) -> None:
    """Every one of ``facts`` is a Fact citing a line of ``raws``, as that line begins."""
    for fact in facts:
        assert isinstance(fact, Fact)
        assert fact.cite.source == SOURCE
        assert fact.cite.line in raws
        assert raws[fact.cite.line].startswith(fact.cite.text.rstrip("…"))


def check_blocks(
    parser: BlockParser,
    text: str,
    *,
    whole: bool = False,
    per_block: Callable[[list[Line]], None] | None = None,
) -> None:
    """Blocks start on anchored lines; facts are Facts citing lines of ``text``.

    With ``whole``, ``parse()`` must also survive all lines of ``text`` as one
    block (a line run that is not a block it would have built). ``per_block``
    checks more of each block found.
    """
    lines = lines_of(text, SOURCE)
    raws = {line.number: line.raw for line in lines}
    for block in blocks(parser, text, SOURCE):
        assert any(a in block[0].raw for a in parser.anchors)
        if per_block is not None:
            per_block(block)
        check_facts(parser.parse(block), raws)
    if whole:
        check_facts(parser.parse(lines), raws)


def check_stream(make: Callable[[], StreamParser], text: str) -> None:
    """Facts are Facts citing lines of ``text``; every line fed or only anchored ones agree."""
    raws = raws_of(text)
    facts = parse_stream(make(), text, SOURCE)
    check_facts(facts, raws)
    every = make()
    all_fed: list[Fact] = []
    for line in lines_of(text, SOURCE):
        every.feed(line)
        all_fed.extend(every.take())
    all_fed.extend(every.finish())
    assert all_fed == facts
