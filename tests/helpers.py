"""Small helpers to run one parser over text without the reader, to watch the reader, and to
diagnose a small report written to a file."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from nccl_doctor.differential.cues import CUES
from nccl_doctor.evidence import source
from nccl_doctor.evidence.lines import Line, lines_of
from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.base import Fact
from nccl_doctor.parse.base import BlockParser, StreamParser
from nccl_doctor.pipeline import diagnose_paths, facts_of

if TYPE_CHECKING:
    import pytest

    from nccl_doctor.facts.store import Facts
    from nccl_doctor.report import Report

T = TypeVar("T", bound=Fact)

FIXTURES = Path(__file__).parent / "fixtures"
FORMATS = FIXTURES / "formats"


def fixture_text(relative: str) -> str:
    """A fixture under tests/fixtures/formats, decoded as the reader does."""
    return (FORMATS / relative).read_bytes().decode("utf-8", errors="replace")


def blocks(parser: BlockParser, text: str, source: str = "<text>") -> list[list[Line]]:
    """The blocks ``parser`` finds in ``text``, each as its list of lines."""
    found: list[list[Line]] = []
    lines = lines_of(text, source)
    i = 0
    while i < len(lines):
        if not parser.starts(lines[i]):
            i += 1
            continue
        block = [lines[i]]
        i += 1
        while i < len(lines) and len(block) < parser.max_lines and parser.accepts(lines[i], block):
            block.append(lines[i])
            i += 1
        found.append(block[: parser.trim(block)])
    return found


def parse_blocks(parser: BlockParser, text: str, source: str = "<text>") -> list[Fact]:
    """All facts of all blocks ``parser`` finds in ``text``."""
    return [fact for block in blocks(parser, text, source) for fact in parser.parse(block)]


def parse_stream(parser: StreamParser, text: str, source: str = "<text>") -> list[Fact]:
    """Feed every line of ``text`` to ``parser`` (anchors honoured) and collect its facts."""
    facts: list[Fact] = []
    for line in lines_of(text, source):
        anchors = parser.anchors + parser.info_anchors
        if parser.open or any(anchor in line.raw for anchor in anchors):
            parser.feed(line)
        facts.extend(parser.take())
    facts.extend(parser.finish())
    return facts


def of_type(facts: list[Fact], cls: type[T]) -> list[T]:
    """The facts of one class, in order."""
    return [fact for fact in facts if isinstance(fact, cls)]


def decoded_lines(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The numbers of the lines the reader decodes from now on (filled as it reads)."""
    seen: list[int] = []
    line = source.SourceReader._line

    def counted(
        self: source.SourceReader, number: int, data: bytes, mask: int, scanned: bool = False
    ) -> None:
        seen.append(number)
        line(self, number, data, mask, scanned)

    monkeypatch.setattr(source.SourceReader, "_line", counted)
    return seen


def facts_text(tmp_path: Path, text: str) -> Facts:
    """The facts read from ``text`` written as one report file (no rule run)."""
    path = tmp_path / "report.txt"
    path.write_text(text)
    return facts_of(read_paths([str(path)]))


def diagnose_text(tmp_path: Path, text: str) -> Report:
    """The whole pipeline on ``text`` written as one report file."""
    path = tmp_path / "report.txt"
    path.write_text(text)
    return diagnose_paths([str(path)])


def critical_ids(report: Report) -> list[str]:
    """The ids of the report's critical findings, in order."""
    return [f.id for f in report.findings if f.severity.value == "critical"]


def cue_says(name: str, text: str) -> bool:
    """Whether one line ``text`` says the differential's cue ``name``: its words, and none of
    the words beside which it does not count."""
    cue = CUES[name]
    match = cue.pattern.search(text)
    return match is not None and cue.says(text, match)


def ranked_without_critical(tmp_path: Path, text: str) -> list[str]:
    """The hypotheses' ids for ``text``, most likely first, where nothing in it is critical
    (a cause left to the differential: words, or what a table reads)."""
    report = diagnose_text(tmp_path, text)
    assert critical_ids(report) == []
    return [h.id for h in report.hypotheses]


def child_failed(
    rank: int,
    exitcode: int,
    traceback: str = "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
    *,
    host: str = "trainbox",
    script: str = "train.py",
) -> str:
    """torchrun's ChildFailedError summary naming one root-cause worker, as torch 2.x prints it."""
    return (
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
        "============================================================\n"
        f"{script} FAILED\n"
        "------------------------------------------------------------\n"
        "Root Cause (first observed failure):\n"
        "[0]:\n"
        "  time      : 2024-03-02_10:14:07\n"
        f"  host      : {host}\n"
        f"  rank      : {rank} (local_rank: {rank})\n"
        f"  exitcode  : {exitcode} (pid: 20113)\n"
        "  error_file: <N/A>\n"
        f"  traceback : {traceback}\n"
        "============================================================\n"
    )


def battery(path: Path) -> list[tuple[str, str]]:
    """The rows of a words battery (``tests/fixtures/words/*.tsv``): what each sentence should
    give, and the sentence (``#`` lines are its header)."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            expected, sentence = line.split("\t")
            rows.append((expected, sentence))
    return rows


def ranked(tmp_path: Path, rows: list[tuple[str, str]]) -> tuple[int, int, list[str]]:
    """How many of a battery's sentences give their expected id first, how many among the
    first three, and the ones that do not (each with what it gave)."""
    first, three, lost = 0, 0, []
    for expected, sentence in rows:
        top = diagnose_text(tmp_path, sentence).top(3)
        first += bool(top) and top[0] == expected
        three += expected in top
        if expected not in top:
            lost.append(f"{expected}: {sentence[:70]} -> {top}")
    return first, three, lost
