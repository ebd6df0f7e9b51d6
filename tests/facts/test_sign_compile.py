"""A sign is compiled only when a line may show it; whether it compiles is known when declared."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nccl_doctor.cache import JsonCache
from nccl_doctor.facts import literals
from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.signs import _REGISTRY, Sign, SignError, sign
from nccl_doctor.facts.store import Facts
from nccl_doctor.facts.text import TextLine


@pytest.fixture
def kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> JsonCache:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    found = JsonCache("patterns-test")
    monkeypatch.setattr(literals, "_kept", lambda: found)
    return found


def _declared(sign_id: str, pattern: str) -> Sign:
    try:
        return sign(sign_id, pattern, "a test sign")
    finally:
        _REGISTRY.pop(sign_id, None)


def _facts(*texts: str) -> Facts:
    return Facts(TextLine(cite=Cite.of("t.log", n, t), text=t) for n, t in enumerate(texts, 1))


def test_a_sign_absent_from_the_lines_is_never_compiled(kept: JsonCache) -> None:
    facts = _facts("NCCL WARN Cuda failure 'out of memory'", "step 10 loss 1.5")
    absent = Sign("test.absent", r"segmentation fault \(core dumped\)", "absent")
    present = Sign("test.present", r"cuda failure '(?P<what>[^']+)'", "present")
    kept.save()
    absent_later = Sign("test.absent", absent.pattern, "the next run: known, not compiled")
    assert absent_later._regex is None
    assert facts.seen(absent_later) == ()
    assert absent_later._regex is None  # no line holds its words: never compiled
    (hit,) = facts.seen(present)
    assert hit.cite.line == 1
    assert hit.match["what"] == "out of memory"


def test_a_known_pattern_is_not_compiled_when_declared(kept: JsonCache) -> None:
    first = _declared("test.first", r"ib_mlx5 .{0,40}port (?P<port>\d+) down")
    assert first._regex is not None  # not known yet: compiled to check it
    kept.save()
    second = _declared("test.second", first.pattern)
    assert second._regex is None
    assert second.regex.search("ib_mlx5 dev: port 2 down")["port"] == "2"


def test_a_broken_pattern_is_refused_and_never_kept(kept: JsonCache) -> None:
    for _ in range(2):
        with pytest.raises(SignError, match=r"sign test\.broken"):
            _declared("test.broken", "(?<=a+)b")  # parses, but look-behind must be fixed-width
        kept.save()
        assert not literals.known("(?<=a+)b", re.IGNORECASE)


def test_required_words_are_read_once_and_kept_for_the_next_run(
    kept: JsonCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The signature catalogue indexes a thousand patterns by their words each run: read from
    the syntax tree once, then from the cache (a pattern that does not compile, each time)."""
    pattern = r"(?:Cuda|CUDA) failure \d+ '(?P<what>[^']+)'"
    broken = "(?<=a+)b failure"  # parses (it has words), but does not compile
    literals.required_words.cache_clear()
    first = literals.required_words(pattern), literals.required_words(broken)
    assert first == (((" failure ",), ("uda",)), (("b failure",),))
    kept.save()
    reads: list[str] = []
    read = literals._required_words

    def counted(p: str, flags: int) -> tuple[literals.Clause, ...] | None:
        reads.append(p)
        return read(p, flags)

    monkeypatch.setattr(literals, "_required_words", counted)
    literals.required_words.cache_clear()  # the next run
    assert (literals.required_words(pattern), literals.required_words(broken)) == first
    assert reads == [broken]
    literals.required_words.cache_clear()
