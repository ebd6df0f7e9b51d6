"""The prefilter: every implementation finds exactly the lines that hold an anchor."""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nccl_doctor.evidence.prefilter import (
    HyperscanPrefilter,
    Prefilter,
    Re2Prefilter,
    RePrefilter,
    available,
    literals,
    make_prefilter,
)

FORMATS = Path(__file__).resolve().parent.parent / "fixtures" / "formats"
KINDS = available()
IDS = [kind.name for kind in KINDS]


def reference(anchors: Sequence[str], buf: bytes) -> list[tuple[int, int]]:
    """The spans by definition: split on ``\\n``, keep lines with ``anchor in line``."""
    words = [a.encode("utf-8", "surrogatepass") for a in anchors]
    parts = buf.split(b"\n")
    if buf.endswith(b"\n") or not buf:
        parts.pop()
    spans, pos = [], 0
    for part in parts:
        if any(w in part for w in words):
            spans.append((pos, pos + len(part)))
        pos += len(part) + 1
    return spans


def lines_of(buf: bytes, spans: Sequence[tuple[int, int]]) -> list[bytes]:
    return [buf[start:end] for start, end in spans]


def test_re_is_always_available() -> None:
    assert RePrefilter in KINDS
    assert KINDS[-1] is RePrefilter


def test_make_prefilter_picks_hyperscan_when_importable() -> None:
    pytest.importorskip("hyperscan")
    assert isinstance(make_prefilter(["NCCL WARN"]), HyperscanPrefilter)
    assert KINDS[0] is HyperscanPrefilter


def test_make_prefilter_falls_back_without_hyperscan(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "hyperscan", None)  # makes `import hyperscan` fail
    chosen = make_prefilter(["NCCL WARN"])
    assert not isinstance(chosen, HyperscanPrefilter)
    assert chosen.line_spans(b"a\nx NCCL WARN y\n") == [(2, 15)]
    monkeypatch.setitem(sys.modules, "re2", None)
    assert type(make_prefilter(["NCCL WARN"])) is RePrefilter


def test_re2_is_next_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("re2")
    monkeypatch.setitem(sys.modules, "hyperscan", None)
    assert isinstance(make_prefilter(["x"]), Re2Prefilter)


def test_literals_drop_redundant_anchors() -> None:
    words, empty = literals(["NCCL WARN", "WARN", "DistBackendError", "Error", "a\nb", "WARN"])
    assert words == (b"Error", b"WARN")
    assert not empty
    assert literals(["", "x"]) == ((b"x",), True)
    assert literals(["é"]) == (("é".encode(),), False)


CASES: list[tuple[str, list[str], bytes, list[bytes]]] = [
    ("start of buffer", ["NCCL WARN"], b"NCCL WARN x\nb\n", [b"NCCL WARN x"]),
    ("end, no newline", ["NCCL WARN"], b"a\nb NCCL WARN", [b"b NCCL WARN"]),
    # Vectorscan 5.4 misses this end-of-data match of `(?:::|or)[^\n]*$`: keep it covered
    ("end of a long buffer", ["or", "::"], b"NCCLNCCLNCCLNCCLor", [b"NCCLNCCLNCCLNCCLor"]),
    ("whole buffer is the anchor", ["WARN"], b"WARN", [b"WARN"]),
    ("end with newline", ["WARN"], b"a\nWARN\n", [b"WARN"]),
    ("no match", ["WARN"], b"a\nb\nWARM\n", []),
    ("empty buffer", ["WARN"], b"", []),
    ("only newlines", ["WARN"], b"\n\n\n", []),
    ("empty lines around", ["WARN"], b"\n\nWARN\n\n", [b"WARN"]),
    ("many per line, once", ["WARN", "Error", "NCCL"], b"NCCL WARN Error WARN\nx\n", [
        b"NCCL WARN Error WARN"
    ]),
    ("overlapping anchors", ["NCCL WARN", "WARN x", "CL W"], b"a NCCL WARN x\n", [
        b"a NCCL WARN x"
    ]),
    ("anchor spans lines: no", ["WARN x"], b"WARN\nx\n", []),
    ("spaces in anchor", ["Init COMPLETE"], b"- Init  COMPLETE\n- Init COMPLETE\n", [
        b"- Init COMPLETE"
    ]),
    ("case-sensitive", ["Error"], b"error\nERROR\nError\n", [b"Error"]),
    ("adjacent matching lines", ["x"], b"x\nx\nax\n\nx", [b"x", b"x", b"ax", b"x"]),
    ("regex metacharacters", ["a.b", "(c)", "[d]", "e*", "f|g", "^h", "i$", "\\j", "k?", "{2}"],
     b"axb\na.b\n(c)\nc\n[d]\nd\ne*\nee\nf|g\nf\n^h\nh\ni$\ni\n\\j\nk?\n{2}\n", [
        b"a.b", b"(c)", b"[d]", b"e*", b"f|g", b"^h", b"i$", b"\\j", b"k?", b"{2}"
    ]),
    ("CRLF lines", ["WARN"], b"a\r\nWARN\r\nb\r\n", [b"WARN\r"]),
    ("carriage return is not a line end", ["a b"], b"a\rb\na b\r\n", [b"a b\r"]),
    ("non-ASCII anchor", ["é"], "café\ncafe\n".encode(), ["café".encode()]),
    ("invalid UTF-8 around", ["WARN"], b"\xff\xfe WARN \xc3(\n\x80\n", [b"\xff\xfe WARN \xc3("]),
    ("NUL bytes", ["a\x00b"], b"a\x00b\nab\n\x00\n", [b"a\x00b"]),
    ("no anchors", [], b"a\nb\n", []),
    ("only a newline anchor", ["\n"], b"a\n\nb\n", []),
    ("empty anchor: every line", ["", "x"], b"a\n\nb", [b"a", b"", b"b"]),
    ("very long line", ["needle"], b"x" * 100_000 + b"needle" + b"y" * 100_000 + b"\nz\n", [
        b"x" * 100_000 + b"needle" + b"y" * 100_000
    ]),
]  # fmt: skip


@pytest.mark.parametrize("kind", KINDS, ids=IDS)
@pytest.mark.parametrize(("anchors", "buf", "expected"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_cases(
    kind: type[Prefilter], anchors: list[str], buf: bytes, expected: list[bytes]
) -> None:
    spans = kind(anchors).line_spans(buf)
    assert lines_of(buf, spans) == expected
    assert spans == reference(anchors, buf)


@pytest.mark.parametrize("kind", KINDS, ids=IDS)
def test_reusable_and_pure(kind: type[Prefilter]) -> None:
    prefilter = kind(["NCCL WARN", "Traceback (most recent call last)"])
    buf = b"x\nTraceback (most recent call last):\ny NCCL WARN z\n"
    first = prefilter.line_spans(buf)
    assert prefilter.line_spans(buf) == first == [(2, 36), (37, 50)]
    assert prefilter.line_spans(b"nothing\n") == []
    assert prefilter.anchors == ("NCCL WARN", "Traceback (most recent call last)")


@pytest.mark.parametrize("kind", KINDS, ids=IDS)
def test_threads_share_one_prefilter(kind: type[Prefilter]) -> None:
    prefilter = kind(["WARN"])
    buf = b"a WARN\nb\n" * 5_000
    expected = reference(["WARN"], buf)
    results: list[list[tuple[int, int]]] = []

    def work() -> None:
        results.extend(prefilter.line_spans(buf) for _ in range(3))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 12
    assert all(r == expected for r in results)


FIXTURE_ANCHORS = (
    "NCCL WARN", "NCCL INFO", "Traceback (most recent call last)", "Watchdog caught",
    "NVRM: Xid", "Error", "error:", "NCCL_", "exitcode", "SIGTERM", "CUDA out of memory",
    "NVIDIA-SMI", "Driver Version", "CA '", "hca_id", "PyTorch version", "# nccl-tests",
    "GPU0", "Rate:", "State:", "```", " -> ", "é", "\u2502",
)  # fmt: skip


def test_fixtures_agree_with_the_definition() -> None:
    """All kinds agree on the real tool outputs (every fixture, concatenated and one by one)."""
    files = sorted(p for p in FORMATS.rglob("*") if p.is_file())
    assert len(files) > 20
    whole = b"".join(p.read_bytes() for p in files)
    for kind in KINDS:
        prefilter = kind(FIXTURE_ANCHORS)
        assert prefilter.line_spans(whole) == reference(FIXTURE_ANCHORS, whole), kind.name
        for path in files:
            data = path.read_bytes()
            assert prefilter.line_spans(data) == reference(FIXTURE_ANCHORS, data), path


def test_fixture_specific_lines() -> None:
    data = FORMATS / "nccl-log" / "h100-multihost-ib-warn-error4-vendor81-interleaved.txt"
    buf = data.read_bytes()
    for kind in KINDS:
        found = lines_of(buf, kind(["NCCL WARN"]).line_spans(buf))
        assert len(found) == 2
        assert all(b"transport/net_ib.cc:1295 NCCL WARN NET/IB" in line for line in found)
        chain = lines_of(buf, kind([" -> 6"]).line_spans(buf))
        assert [line.rsplit(b" ", 3)[-3:] for line in chain[:1]] == [[b"transport/net.cc:1008",
                                                                      b"->", b"6"]]  # fmt: skip
        assert len(chain) == 6


# -- properties ----------------------------------------------------------------------

FRAGMENTS = [
    b"NCCL", b" ", b"WARN", b"INFO", b"\n", b"\n", b"Err", b"or", b"e", b":", b"x",
    b"\r", b"\xff", "é".encode(), b"\xc3", b"\x00", b"(", b".", b"*", b"\\",
]  # fmt: skip
ANCHOR_WORDS = ["NCCL WARN", "WARN", "Error", "or", "e", "N", "é", " ", "r:", "CL W", "x x",
                "(.", "\\", "*", "\x00", "\n", "", "WARN\n", "INFO x"]  # fmt: skip

buffers = st.lists(st.sampled_from(FRAGMENTS), max_size=80).map(b"".join) | st.binary(max_size=200)
anchor_lists = st.lists(
    st.sampled_from(ANCHOR_WORDS) | st.text(alphabet="NCLWARIFOEro: é\n(.*\\x", max_size=6),
    max_size=8,
)


@settings(max_examples=300, deadline=None)
@given(anchors=anchor_lists, buf=buffers)
def test_all_kinds_match_the_definition(anchors: list[str], buf: bytes) -> None:
    expected = reference(anchors, buf)
    for kind in KINDS:
        assert kind(anchors).line_spans(buf) == expected, kind.name
    assert make_prefilter(anchors).line_spans(buf) == expected


@settings(max_examples=100, deadline=None)
@given(anchors=anchor_lists, parts=st.lists(buffers, min_size=1, max_size=6))
def test_spans_are_ordered_lines(anchors: list[str], parts: list[bytes]) -> None:
    buf = b"\n".join(parts)
    for kind in KINDS:
        spans = kind(anchors).line_spans(buf)
        starts = [s for s, _ in spans]
        assert starts == sorted(set(starts))
        for start, end in spans:
            assert 0 <= start <= end <= len(buf)
            assert start == 0 or buf[start - 1 : start] == b"\n"
            assert end == len(buf) or buf[end : end + 1] == b"\n"
            assert b"\n" not in buf[start:end]


# -- groups: which anchors' group each line holds ----------------------------------


def reference_tagged(groups: Sequence[Sequence[str]], buf: bytes) -> list[tuple[int, int, int]]:
    """The tagged spans by definition: each line with an anchor, and the bits of its groups."""
    out = []
    for start, end in reference([a for g in groups for a in g], buf):
        line = buf[start:end]
        mask = sum(
            1 << bit
            for bit, group in enumerate(groups)
            if any(a.encode("utf-8", "surrogatepass") in line for a in group if "\n" not in a)
        )
        out.append((start, end, mask))
    return out


@pytest.mark.parametrize("kind", KINDS, ids=IDS)
def test_tagged_spans_say_which_groups_a_line_holds(kind: type[Prefilter]) -> None:
    groups = [["NCCL WARN", "NCCL version "], ["Traceback (most recent call last)"], ["WARN"]]
    buf = (
        b"x NCCL WARN y\n"  # groups 0 and 2 (WARN is in NCCL WARN)
        b"nothing\n"
        b"NCCL version 2.21.5 Traceback (most recent call last)\n"  # 0 and 1
        b"torch NCCL version: 2.21.5\n"  # none: the colon is not the space of the anchor
        b"WARN"  # group 2, no newline at the end
    )
    prefilter = kind((), groups=groups)
    assert prefilter.anchors == ("NCCL WARN", "NCCL version ", "Traceback (most recent call last)",
                                 "WARN")  # fmt: skip
    assert prefilter.tagged_spans(buf, 0, len(buf)) == [(0, 13, 0b101), (22, 75, 0b011),
                                                        (103, 107, 0b100)]  # fmt: skip
    # a window of whole lines: offsets stay those of the buffer
    assert prefilter.tagged_spans(buf, 14, 103) == [(22, 75, 0b011)]


@settings(max_examples=200, deadline=None)
@given(
    groups=st.lists(anchor_lists, min_size=1, max_size=4),
    buf=buffers,
)
def test_tagged_spans_match_the_definition(groups: list[list[str]], buf: bytes) -> None:
    expected = reference_tagged(groups, buf)
    for kind in KINDS:
        prefilter = kind((), groups=groups)
        assert prefilter.tagged_spans(buf, 0, len(buf)) == expected, kind.name
        assert prefilter.line_spans(buf) == [(s, e) for s, e, _ in expected], kind.name


@settings(max_examples=200, deadline=None)
@given(
    groups=st.lists(anchor_lists, min_size=1, max_size=4),
    buf=buffers,
)
def test_groups_in_is_the_groups_of_the_tagged_spans(groups: list[list[str]], buf: bytes) -> None:
    """Whether a buffer holds each group's anchors, as the tagged spans say (Hyperscan stops
    its scan at the line that completes the set)."""
    expected = 0
    for _, _, mask in reference_tagged(groups, buf):
        expected |= mask
    for kind in KINDS:
        prefilter = kind((), groups=groups)
        assert prefilter.groups_in(buf, 0, len(buf)) == expected, kind.name


@pytest.mark.parametrize("kind", KINDS, ids=IDS)
def test_groups_in_a_window(kind: type[Prefilter]) -> None:
    groups = [["NCCL WARN"], ["Traceback"], ["absent"]]
    buf = b"a NCCL WARN b\nTraceback\nNCCL WARN\nabsent"
    prefilter = kind((), groups=groups)
    assert prefilter.groups_in(buf, 0, len(buf)) == 0b111
    assert prefilter.groups_in(buf, 14, 34) == 0b011  # "Traceback\nNCCL WARN\n"
    assert prefilter.groups_in(buf, 24, 34) == 0b001


def reference_caseless(
    groups: list[list[str]], caseless: set[int], buf: bytes
) -> list[tuple[int, int, int]]:
    """:func:`reference_tagged` with the ``caseless`` groups found in any ASCII case."""
    parts = buf.split(b"\n")
    if buf.endswith(b"\n") or not buf:
        parts.pop()
    out, pos = [], 0
    for part in parts:
        mask = 0
        for bit, group in enumerate(groups):
            text = part.lower() if bit in caseless else part
            words = [a.encode("utf-8", "surrogatepass") for a in group]
            if any(w in text for w in words):
                mask |= 1 << bit
        if mask:
            out.append((pos, pos + len(part), mask))
        pos += len(part) + 1
    return out


@pytest.mark.parametrize("kind", KINDS, ids=IDS)
def test_a_caseless_group_finds_its_words_in_any_ascii_case(kind: type[Prefilter]) -> None:
    groups = [["NCCL WARN"], ["key", "://"]]
    buf = (
        b"x NCCL WARN y\n"  # group 0
        b"API_KEY=1\n"  # group 1, in capitals
        b"NCCL WARN see HTTPS://host\n"  # both
        b"nccl warn kEy\n"  # group 1 only: group 0 is not caseless
        b"\xe2\x84\xaaey\n"  # the Kelvin sign is no ASCII k
        b"KeY"  # group 1, no newline at the end
    )
    prefilter = kind((), groups=groups, caseless={1})
    expected = [(0, 13, 0b01), (14, 23, 0b10), (24, 50, 0b11), (51, 64, 0b10), (71, 74, 0b10)]
    assert prefilter.tagged_spans(buf, 0, len(buf)) == expected
    assert expected == reference_caseless(groups, {1}, buf)
    with pytest.raises(ValueError, match="lower case"):
        kind((), groups=[["Key"]], caseless={0})


@settings(max_examples=200, deadline=None)
@given(groups=st.lists(anchor_lists, min_size=2, max_size=4), buf=buffers)
def test_caseless_tagged_spans_match_the_definition(groups: list[list[str]], buf: bytes) -> None:
    groups[-1] = [a.lower() for a in groups[-1]]
    expected = reference_caseless(groups, {len(groups) - 1}, buf)
    for kind in KINDS:
        prefilter = kind((), groups=groups, caseless={len(groups) - 1})
        assert prefilter.tagged_spans(buf, 0, len(buf)) == expected, kind.name
