"""Every regular expression of the package runs in linear time on its worst inputs.

One NCCL WARN line of 300,000 letters took minutes: a pattern like
``[\\w.:]+<\\d+>`` searched over it scans the run from every start. This test
finds every pattern of the package (``tests/regex_adversary.py`` says how) and
times it on inputs built for its shape, growing tenfold from 1 KB to 1 MB.

What is asserted is growth, which a loaded CI box does not fake: from one
size to the next (10x the text), a linear pattern takes about 10x the time,
a quadratic one 100x. A step fails when it grew more than
:data:`MAX_GROWTH` times and took longer than :data:`SLOW_S` (a linear
pattern is far faster, a quadratic one far slower). Absolute bounds are
generous and stop a runaway before the next size: 0.1 s a kilobyte below
1 MB, :data:`LIMIT_S` at 1 MB. A run that looks bad is timed again and the
better time counts, so a pause of the machine cannot make a pattern look
slow. Every input of a pattern is tried at 1 KB (a quadratic one is already a
hundred times slower there than a linear one); the slowest few climb to
100 KB, and the slowest of those to 1 MB.
"""

from __future__ import annotations

import time

import pytest

import nccl_doctor.signs  # noqa: F401 -- imports every sign table, so registered() holds them
from nccl_doctor.facts.signs import registered
from tests.regex_adversary import Found, Shape, package_patterns, shapes

SIZES = (1_000, 10_000, 100_000, 1_000_000)
#: Growth beyond this for 10x the text is not linear (quadratic is 100x).
MAX_GROWTH = 30.0
#: Growth is judged only on a step slower than this at 10 KB (0.1 s), 100 KB (1 s)
#: and 1 MB (2 s): below, a linear pattern on a loaded machine can look worse.
SLOW_S = {10_000: 0.1, 100_000: 1.0, 1_000_000: 2.0}
#: Any run longer than this at 1 MB fails, whatever its growth.
LIMIT_S = 10.0
#: Times under this are taken as this when dividing (timer resolution, noise).
FLOOR_S = 1e-4
#: How many of a pattern's inputs (the slowest at 1 KB) climb to 100 KB; the slowest
#: of them there climbs on to 1 MB.
CLIMBERS = 3

PATTERNS = package_patterns()


def _time(found: Found, text: str) -> float:
    run = found.runner()
    start = time.perf_counter()
    run(text)
    return time.perf_counter() - start


def _bound(size: int) -> float:
    """The most a pattern may take on ``size`` characters: only runaways fail it."""
    return LIMIT_S if size >= SIZES[-1] else 0.1 * size / 1000


def _climb(
    found: Found, shape: Shape, sizes: tuple[int, ...], previous: tuple[int, float] | None = None
) -> tuple[str | None, tuple[int, float] | None]:
    """Why ``shape`` shows ``found`` is not linear at ``sizes`` (or ``None``), and the last time.

    Each size runs once; a run that looks bad runs again and the better time
    counts, so a pause of the machine cannot fail a pattern.
    """
    for size in sizes:
        text = shape.build(size)
        took = _time(found, text)
        if _verdict(previous, size, took) is not None:
            took = min(took, _time(found, text))
        if why := _verdict(previous, size, took):
            return f"{why} on {shape!r}", previous
        previous = (size, took)
    return None, previous


def _verdict(previous: tuple[int, float] | None, size: int, took: float) -> str | None:
    if took > _bound(size):
        return f"{took:.2f}s on {size} chars"
    if previous is None:
        return None
    growth = took / max(previous[1], FLOOR_S)
    if size in SLOW_S and took > SLOW_S[size] and growth > MAX_GROWTH:
        return (
            f"{previous[0]} -> {size} chars: {previous[1]:.4f}s -> {took:.3f}s "
            f"({growth:.0f}x for 10x the text)"
        )
    return None


def test_the_package_patterns_are_all_found() -> None:
    """The finder sees the patterns this test exists for, in tables and functions too."""
    where = {f.where for f in PATTERNS}
    texts = {f.pattern.pattern for f in PATTERNS}
    assert len(PATTERNS) > 400
    assert "nccl_doctor.parse._nccl_warn._ADDR" in where
    assert any(w.startswith("nccl_doctor.parse._c10d._ERRORS") for w in where)  # a table
    found = {(f.pattern.pattern, f.pattern.flags) for f in PATTERNS}
    signs = {(s.regex.pattern, s.regex.flags) for s in registered()}
    assert len(signs) > 150
    assert signs <= found  # every sign the rules read (held by the rule modules that import it)
    assert r"(?P<n>\d{1,4}) (?P<t>.+)" in texts  # re.match(...) inside a function
    modes = {f.where: f.mode for f in PATTERNS}
    assert modes["nccl_doctor.evidence.lines._NCCL"] == "match"  # only ever .match()ed
    assert modes["nccl_doctor.parse._c10d._ITEM"] == "fullmatch"
    assert modes["nccl_doctor.parse._nccl_warn._ADDR"] == "search"


def test_adversarial_inputs_follow_the_pattern() -> None:
    """The inputs lead into each unbounded repeat and pump it, as the worst case needs."""
    import re

    built = {(s.lead, s.unit, s.trail) for s in shapes(re.compile(r"host=(?P<h>[\w.-]+):\d+!"))}
    assert ("host=", "a", "") in built  # the lead, then letters and no ':' to end them
    assert ("host=", ".", "\x00") in built
    assert ("", "host=a", "") in built  # every copy a fresh start
    assert ("", "a.", "\n") in built  # plain runs, whatever the pattern


@pytest.mark.parametrize("found", PATTERNS, ids=lambda f: f"{f.where}[{f.mode}]")
def test_pattern_runs_in_linear_time(found: Found) -> None:
    inputs = shapes(found.pattern)
    timed = sorted(
        ((_time(found, shape.build(SIZES[0])), i) for i, shape in enumerate(inputs)),
        reverse=True,
    )
    climbed: list[tuple[float, int, tuple[int, float] | None]] = []
    for _, i in timed[:CLIMBERS]:  # up to 100 KB
        why, last = _climb(found, inputs[i], SIZES[:-1])
        assert why is None, f"{found.pattern.pattern!r} ({found.where}) is not linear: {why}"
        climbed.append((last[1] if last else 0.0, i, last))
    _, i, last = max(climbed)  # the slowest at 100 KB goes on to 1 MB
    why, _ = _climb(found, inputs[i], SIZES[-1:], last)
    assert why is None, f"{found.pattern.pattern!r} ({found.where}) is not linear: {why}"
