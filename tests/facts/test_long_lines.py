"""A paragraph pasted as one line is read whole: past the 400 characters a citation shows, in
pieces cut at sentence ends, up to PARAGRAPH_MAX characters."""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.base import CITE_TEXT_MAX, PARAGRAPH_MAX, pieces
from nccl_doctor.pipeline import diagnose_paths, facts_of

#: A reporter's first sentences, about 450 characters, before what matters.
STORY = (
    "I've been testing multi-machine DDP training in numerous attempts to get my nodes "
    "connected, and I followed the documentation of the platform's distributed training "
    "configuration section to pass the first host as the master address, which finally made "
    "the connection work for the rendezvous and the store, and the ranks all joined the "
    "group as they should, with every environment variable the launcher expects set on each "
    "of the two nodes the same way, as the guide describes it step by step, "
)
WARN = (
    "only to end up with the main error `misc/socket.cc:484 NCCL WARN socketStartConnect: "
    "Connect to 169.254.255.18<42219> failed : Software caused connection abort`. Any idea?"
)


def test_the_rest_of_a_long_line_comes_in_pieces_a_citation_holds() -> None:
    line = STORY + WARN
    assert len(STORY) > CITE_TEXT_MAX
    rest = pieces(line)
    assert rest
    assert all(len(p) < CITE_TEXT_MAX for p in rest)
    assert any("socketStartConnect: Connect to 169.254.255.18<42219> failed" in p for p in rest)
    assert pieces(WARN) == ()  # a line a citation holds whole has no rest


def test_a_line_of_any_length_is_read_to_paragraph_max_only() -> None:
    rest = pieces("word " * 20_000)
    assert sum(len(p) for p in rest) <= PARAGRAPH_MAX
    assert len(rest) <= PARAGRAPH_MAX // (CITE_TEXT_MAX // 4)


def test_a_message_past_the_citation_is_still_read(tmp_path: Path) -> None:
    """The whole pipeline: the quoted WARN past the first 400 characters gives the symptom
    (before, the report was empty)."""
    path = tmp_path / "evidence.txt"
    path.write_text("Title: How to run multi-machine DDP training?\n\n" + STORY + WARN + "\n")
    report = diagnose_paths([str(path)])
    assert report.hypotheses
    assert report.hypotheses[0].symptom.startswith("NCCL reported a system error")
    assert "net.unreachable" in report.top(3)


def test_a_sentence_past_the_citation_is_prose_the_cues_read(tmp_path: Path) -> None:
    path = tmp_path / "evidence.txt"
    said = "It works fine with NCCL_P2P_DISABLE=1 set."
    path.write_text(STORY + said + "\n")
    facts = facts_of(read_paths([str(path)]))
    prose = [s.text for s in facts.lines if s.prose]
    assert any(said in p for p in prose)
    assert len([s for s in facts.lines if s.cite.line == 1]) == 2
