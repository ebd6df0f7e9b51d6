"""Facts.search looks for a pattern's required words first, and finds what a line search finds."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

import nccl_doctor.signs  # noqa: F401 -- imports every sign table, so registered() holds them
from nccl_doctor.differential.cues import CUES
from nccl_doctor.differential.prose import PROSE_SYMPTOMS
from nccl_doctor.facts import store
from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.literals import holds, prefiltered, required_words, shape_blind
from nccl_doctor.facts.shapes import relaxed
from nccl_doctor.facts.signs import registered
from nccl_doctor.facts.store import Facts
from nccl_doctor.facts.text import TextLine
from tests.regex_adversary import PACKAGE

CASES = Path(__file__).parents[1] / "cases"


def test_required_words_of_typical_patterns() -> None:
    words = required_words(r"Cannot allocate memory|\[Errno 12\]|\bENOMEM\b", re.IGNORECASE)
    assert words == (("cannot allocate memory", "[errno 12]", "enomem"),)
    # a sequence gives a clause per part that must match, the most selective first
    assert required_words(r"NCCL WARN[^\n]{0,120}(?:P2P|IPC|SHM)") == (
        ("nccl warn",),
        ("p2p", "ipc", "shm"),
    )
    assert required_words(r"(?:[Ww]atchdog caught|Caught) collective operation timeout") == (
        (" collective operation timeout",),
        ("atchdog caught", "caught"),
    )
    assert required_words(r"fails?\b") == (("fail",),)
    # an optional part, a short word, a bare class: nothing worth looking for
    assert required_words(r"(?:error)?\d+") is None
    assert required_words(r"a|bc") is None
    assert required_words(r"[A-Z]+_ERROR") == (("_error",),)
    # a cased non-ASCII letter can match an ASCII one under IGNORECASE: never a word
    assert required_words("\u212aernel panic", re.IGNORECASE) == (("ernel panic",),)
    # an uncased one is a word only non-ASCII lines can hold
    assert required_words("内存|out of memory") == (("内存", "out of memory"),)
    # so is a Cyrillic or Greek one, which folds to no ASCII letter: a pattern with such an
    # alternative still has words, and the ASCII lines without the others are never matched
    assert required_words("зависает|hangs", re.IGNORECASE) == (("зависает", "hangs"),)
    assert required_words("\u03c3\u03c6\u03ac\u03bb\u03bc\u03b1|error", re.IGNORECASE) == (
        ("\u03c3\u03c6\u03ac\u03bb\u03bc\u03b1", "error"),
    )
    # a word of them may hold in a non-ASCII text under case folding str.lower does not do
    # (a final sigma matches a sigma): never ruled out there; an ASCII text never holds one
    clauses = required_words("\u03c3\u03c6\u03ac\u03bb\u03bc\u03b1", re.IGNORECASE)
    assert clauses is not None
    assert holds("\u03c2\u03c6\u03ac\u03bb\u03bc\u03b1 nccl", clauses)
    assert not holds("nccl failed", clauses)


def test_prefiltered_skips_ascii_text_without_the_words() -> None:
    pattern = re.compile(r"Broken pipe|remote process exited", re.IGNORECASE)
    quick = prefiltered(pattern)
    assert quick("rank 3: BROKEN PIPE") is not None
    assert quick("rank 3: all good") is None
    assert quick("ſomething Broken pipe") is not None  # not ASCII: the pattern itself decides


def _corpus() -> list[str]:
    """Real lines of the test cases, and variants that case folding and digits could fool."""
    lines: set[str] = set()
    for path in sorted(CASES.rglob("*")):
        if path.is_file() and path.suffix in {".log", ".txt"}:
            lines.update(x for x in path.read_text(errors="replace").splitlines() if len(x) < 400)
    base = sorted(lines)
    variants = [x.upper() for x in base[::7]]
    variants += [x.swapcase() for x in base[3::11]]
    variants += [re.sub(r"\d", "7", x) for x in base[5::9]]
    variants += [x.replace("s", "ſ").replace("k", "\u212a") for x in base[1::13]]
    variants += ["Cuda failure 999 'unknown error'", "CUDA error: unknown error", "内存不足"]
    return base + variants


def _search_patterns() -> list[re.Pattern[str]]:
    """Every pattern the store searches: each sign's, and those handed to ``facts.search``."""
    found: dict[tuple[str, int], re.Pattern[str]] = {
        (s.regex.pattern, s.regex.flags): s.regex for s in registered()
    }
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "__main__.py":
            continue
        module = importlib.import_module(
            ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(
                ".__init__"
            )
        )
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in {"search", "said"}
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "facts"
                and node.args
            ):
                continue
            arg = node.args[0]
            value = arg.value if isinstance(arg, ast.Constant) else None
            if isinstance(arg, ast.Name):
                value = getattr(module, arg.id, None)
            if isinstance(value, str):
                value = re.compile(value, re.IGNORECASE)  # as Facts.search compiles it
            if isinstance(value, re.Pattern):
                found[(value.pattern, value.flags)] = value
    return list(found.values())


CORPUS = _corpus()
PATTERNS = _search_patterns()


@pytest.fixture(scope="module")
def facts() -> Facts:
    return Facts(
        TextLine(cite=Cite("case", i + 1, text), text=text, fenced=True)
        for i, text in enumerate(CORPUS)
    )


def test_the_corpus_exercises_the_search(facts: Facts) -> None:
    assert len(PATTERNS) > 100
    assert sum(1 for p in PATTERNS if facts.said(p)) > 40  # many patterns have hits


@pytest.mark.parametrize("regex", PATTERNS, ids=lambda r: r.pattern[:60])
def test_search_finds_exactly_the_matching_lines(facts: Facts, regex: re.Pattern[str]) -> None:
    expected = [(i + 1, text) for i, text in enumerate(CORPUS) if regex.search(text)]
    hits = facts.search(regex)
    assert [(h.cite.line, h.cite.text) for h in hits] == expected
    assert all(h.match.group(0) == regex.search(h.cite.text).group(0) for h in hits)  # type: ignore[union-attr]


def test_a_cut_ascii_line_is_searched_by_its_words() -> None:
    """A long line is cited cut with ``…``; its words still decide, it is not always searched."""
    long_line = "[rank1]: ProcessGroupNCCL environments: " + "TORCH_NCCL_X: 1, " * 40 + "tail"
    facts = Facts(
        [
            TextLine(cite=Cite.of("a.log", 1, long_line), text=long_line),
            TextLine(cite=Cite.of("a.log", 2, "ſegfault here"), text="ſegfault here"),
        ]
    )
    assert facts.lines[0].text.endswith("…")
    # the long line is read in two lines (its citation, the rest: facts.base.pieces); of the
    # lines, only the one that is not ASCII without its ellipsis is odd
    assert [s.cite.line for s in facts.lines] == [1, 1, 2]
    assert facts._shapes.odd == (2,)
    assert [h.cite.line for h in facts.search(r"environments")] == [1]
    assert [h.cite.line for h in facts.search(r"segfault")] == [2]  # ſ folds to s
    assert facts.search(r"nothing like this") == ()


@pytest.mark.parametrize(
    ("pattern", "flags", "blind"),
    [
        (r"out of memory", re.IGNORECASE, True),
        (r"out of memory", 0, False),  # case tells lines of one shape apart
        (r"\bGPU ?#?0\b", re.IGNORECASE, True),  # a 0 in the pattern: a shape only gains
        (r"NCCL 2\.\d", re.IGNORECASE, False),  # the 2 is a 0 in the shape
        (r"[1-9]\d", re.IGNORECASE, False),
        (r"[0-9]\d{1,3}", re.IGNORECASE, True),
        (r"[^0]", re.IGNORECASE, False),
        (r"[^5]x", re.IGNORECASE, True),
        (r"(?!0)\w", re.IGNORECASE, False),  # a negative lookahead must not tell digits apart
        (r"(?!\d)\w", re.IGNORECASE, True),
        (r"(a)\1", re.IGNORECASE, False),
        (r"\Aabc", re.IGNORECASE, False),
        (r"(?-i:Abc)", re.IGNORECASE, False),
        (r"a\nb", re.IGNORECASE, False),
        (r"\S{2}[^\S5]", re.IGNORECASE, True),
    ],
)
def test_shape_blind_patterns(pattern: str, flags: int, blind: bool) -> None:
    assert shape_blind(pattern, flags) is blind


def _shape(text: str) -> str:
    return text.lower().translate(str.maketrans("123456789", "000000000"))


@pytest.mark.parametrize("regex", PATTERNS, ids=lambda r: r.pattern[:60])
def test_a_shape_blind_pattern_matches_the_shape_of_every_line_it_matches(
    regex: re.Pattern[str],
) -> None:
    """What lets ``Facts.search`` rule out a shape's lines by the shape alone."""
    if not shape_blind(regex.pattern, regex.flags):
        return
    for text in CORPUS:
        if text.isascii() and regex.search(text):
            assert regex.search(_shape(text)), text


class _Counting:
    """A pattern whose searches are counted (``calls``: the texts searched)."""

    def __init__(self, pattern: str, flags: int) -> None:
        self.pattern, self.flags = pattern, flags
        self.calls: list[str] = []

    def search(self, text: str) -> re.Match[str] | None:
        self.calls.append(text)
        return re.search(self.pattern, text, self.flags)


def test_a_search_matches_each_shape_once_not_each_line() -> None:
    """Four thousand ranks' lines of one shape cost one match of a shape-blind pattern."""
    texts = [
        f"[rank{r}]:host{r % 7}:{4000 + r}:{r} [0] NCCL INFO Bootstrap : Using eth0"
        for r in range(4000)
    ]
    facts = Facts(TextLine(cite=Cite("a.log", i + 1, t), text=t) for i, t in enumerate(texts))
    counting = _Counting(r"\bWSL\b|\bbootstrap\b.{0,9}\bwsl", re.IGNORECASE)
    calls = counting.calls
    assert shape_blind(counting.pattern, counting.flags)
    assert facts.search(counting) == ()  # type: ignore[arg-type]
    assert 0 < len(calls) <= 4  # one per shape: the rank's number has 1 to 4 digits


#: The corpus with two more copies that differ in digits only: three lines a shape, so the
#: store matches relaxed patterns on the shapes whatever their words
TRIPLED = CORPUS + [re.sub(r"\d", "7", x) for x in CORPUS] + [re.sub(r"\d", "3", x) for x in CORPUS]


@pytest.fixture
def relaxing(monkeypatch: pytest.MonkeyPatch) -> Facts:
    """A store that matches the relaxed pattern on the shapes first, however few their lines."""
    monkeypatch.setattr(store, "RELAX_LINES", 0)
    return Facts(
        TextLine(cite=Cite("case", i + 1, text), text=text, fenced=True)
        for i, text in enumerate(TRIPLED)
    )


@pytest.mark.parametrize("regex", PATTERNS, ids=lambda r: r.pattern[:60])
def test_search_through_relaxed_shapes_finds_exactly_the_matching_lines(
    relaxing: Facts, regex: re.Pattern[str]
) -> None:
    assert 2 * len(relaxing._shapes.starts) <= len(relaxing.lines)
    expected = [(i + 1, text) for i, text in enumerate(TRIPLED) if regex.search(text)]
    hits = relaxing.search(regex)
    assert [(h.cite.line, h.cite.text) for h in hits] == expected
    assert all(h.match.group(0) == regex.search(h.cite.text).group(0) for h in hits)  # type: ignore[union-attr]


@pytest.mark.parametrize("regex", PATTERNS, ids=lambda r: r.pattern[:60])
def test_a_relaxed_pattern_matches_the_shape_of_every_line_the_pattern_matches(
    regex: re.Pattern[str],
) -> None:
    loose = relaxed(regex.pattern, regex.flags)
    if loose is None:
        return
    for text in CORPUS:
        variants = (text, text.upper(), re.sub(r"[0-9]", "5", text), text.replace(" ", "\n"))
        for line in variants:
            if line.isascii() and regex.search(line):
                assert loose.search(_shape(line).replace("\n", " ")), line


@pytest.mark.parametrize(
    ("pattern", "flags", "line", "shape_matches"),
    [
        (r"NCCL 2\.\d", 0, "NCCL 2.21.5", True),  # the 2 and the case: told apart by the shape
        (r"NCCL 2\.\d", 0, "NCCL 7.1", True),  # 7 and 2 are one shape
        (r"NCCL 2\.\d", 0, "NCCL v2.1", False),
        (r"[^5]x(?!9)", 0, "5x9", True),  # a negated class, a negative lookahead: any
        (r"^rank 3$", re.MULTILINE, "x\nrank 3\ny", True),  # newlines are spaces in a shape
        (r"(?-i:Abc)\d", re.IGNORECASE, "ABC4", True),
        (r"\A(?:-H|--host)\s", 0, "x\n-H node1", True),  # shapes are searched joined by newlines
        (r"a[1-3\n]b", 0, "A0B", True),
        (r"a[1-3\n]b", 0, "A B", True),
        (r"a[1-3\n]b", 0, "A:B", False),
        (r"(?=(?P<v>[1-3]+))(?P=v)x", 0, "22X", True),  # the group again, relaxed
        (r"(?=(?P<v>[1-3]+))(?P=v)x", 0, "44X", True),
        (r"(?=(?P<v>[1-3]+))(?P=v)x", 0, "abX", False),
    ],
)
def test_relaxed_patterns(pattern: str, flags: int, line: str, shape_matches: bool) -> None:
    loose = relaxed(pattern, flags)
    assert loose is not None
    assert bool(loose.search(_shape(line).replace("\n", " "))) is shape_matches


@pytest.mark.parametrize("pattern", [r"(a)?(?(1)b|c)", r"(?>a+)b", r"a++b", r"[a-", r"(?!(a))\1"])
def test_what_is_not_relaxed(pattern: str) -> None:
    assert relaxed(pattern) is None


def test_lines_of_one_shape_cost_one_match_of_the_relaxed_pattern() -> None:
    """4,000 ranks' lines that hold a pattern's words but not its match, the pattern telling
    them apart by a digit: one search of the relaxed pattern per shape, none per line."""
    texts = [f"[rank{r}]: TORCH_NCCL_ASYNC_ERROR_HANDLING: {r % 4}" for r in range(4000)]
    texts[7] = "[rank7]: NCCL_IB_DISABLE=1"
    facts = Facts(TextLine(cite=Cite("a.log", i + 1, t), text=t) for i, t in enumerate(texts))
    counting = _Counting(r"\bNCCL_[A-Z_]{2,40}=(?P<value>[1-9])", re.IGNORECASE)
    calls = counting.calls
    assert not shape_blind(counting.pattern, counting.flags)
    hits = facts.search(counting)  # type: ignore[arg-type]
    assert [(h.cite.line, h.match["value"]) for h in hits] == [(8, "1")]
    assert calls == [texts[7]]  # the shapes of the others (no "=") ruled all their lines out


def test_a_word_with_digits_rules_out_the_lines_its_shape_only_seems_to_hold() -> None:
    """``A100`` is ``a000`` in a shape, as is the ``9a000`` of every communicator's bus id:
    the lines of such shapes are looked at for the word itself before the pattern runs."""
    texts = [
        f"host:{r}:{r} [0] NCCL INFO ncclCommInitRank comm 0x{r * 2654435761 % 2**48:012x} "
        f"rank {r} busId 9a000"
        for r in range(500)
    ]
    texts.append("GPU 0: NVIDIA A100-SXM4-80GB")
    facts = Facts(TextLine(cite=Cite("a.log", i + 1, t), text=t) for i, t in enumerate(texts))
    counting = _Counting(r"\bA100\b|\bH100\b", re.IGNORECASE)
    calls = counting.calls
    assert len(facts._shapes.starts) > 100  # the comm's hex: a shape per line
    assert [h.cite.line for h in facts.search(counting)] == [501]  # type: ignore[arg-type]
    assert calls == [texts[-1]]


@pytest.fixture(scope="module")
def said() -> Facts:
    """The corpus unfenced: a line is prose where it reads like a person's sentence."""
    return Facts(TextLine(cite=Cite("case", i + 1, t), text=t) for i, t in enumerate(CORPUS))


def _prose_patterns() -> list[re.Pattern[str]]:
    lazy = [*(cue.pattern for cue in CUES.values()), *(row.pattern for row in PROSE_SYMPTOMS)]
    return [*PATTERNS, *(p.compiled() for p in lazy)]


@pytest.mark.parametrize("regex", _prose_patterns(), ids=lambda r: r.pattern[:60])
def test_a_prose_search_finds_the_prose_hits_of_a_search(
    said: Facts, regex: re.Pattern[str]
) -> None:
    fresh = Facts(said.all)  # nothing searched yet: the prose lines alone are read
    expected = [(h.cite.line, h.match.group(0)) for h in said.search(regex) if h.prose]
    assert [(h.cite.line, h.match.group(0)) for h in fresh.prose_search(regex)] == expected
    # once every line was searched, the prose search keeps the prose hits of that search
    assert [(h.cite.line, h.match.group(0)) for h in said.prose_search(regex)] == expected


def test_the_corpus_has_prose_for_the_prose_search(said: Facts) -> None:
    assert sum(s.prose for s in said.lines) > 100
    assert sum(1 for p in _prose_patterns() if said.prose_search(p)) > 20


@pytest.fixture(scope="module")
def tripled() -> Facts:
    """The tripled corpus unfenced: three prose lines a shape."""
    return Facts(TextLine(cite=Cite("case", i + 1, t), text=t) for i, t in enumerate(TRIPLED))


@pytest.mark.parametrize("regex", _prose_patterns(), ids=lambda r: r.pattern[:60])
def test_a_prose_search_through_relaxed_shapes_finds_the_prose_hits(
    monkeypatch: pytest.MonkeyPatch, tripled: Facts, regex: re.Pattern[str]
) -> None:
    """The prose search matches relaxed patterns on the prose lines' shapes first (however
    few their lines), and finds what a search finds on the prose lines."""
    monkeypatch.setattr(store, "RELAX_LINES", 0)
    assert 2 * len(tripled._prose_shapes.starts) <= len(tripled._prose)
    found = [(h.cite.line, h.match.group(0)) for h in tripled.prose_search(regex)]
    assert found == [(h.cite.line, h.match.group(0)) for h in tripled.search(regex) if h.prose]
