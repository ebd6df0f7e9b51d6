"""What nccl-doctor wrote itself: known by content, never read as evidence.

A report saved next to the logs it was made from (``diagnose DIR -o
DIR/report.html``) quotes evidence lines and fix texts; read again as
evidence it would cite itself and find causes in its own advice. Reports are
known by the heading every renderer writes with :data:`nccl_doctor.GENERATOR`
at the very start of the file, in whatever format, and by nothing else: a
file's name is never trusted.

Within a stream, what nccl-doctor printed among the job's lines is a stretch
of its own (:class:`Stretch`): a text or Markdown report pasted or ``tee``-d
into a log, from its heading to its last line, and what ``run`` and ``probe``
print on the terminal (``run``'s ``nccl-doctor run:`` lines, a pre-mortem's
positions and its report; ``probe``'s progress, its summary and its report),
and a ``check --gate`` verdict a batch script printed before its job. Each is
known by its first line and followed by the grammar its renderer writes; the
first line that grammar cannot hold is the job's again, and read.

Of a ``run`` folder's bookkeeping, the parts that record the job stay
evidence: ``MANIFEST.json`` (how the job ended; read by the ``run-manifest``
parser), ``environment.txt`` (the environment the job started with), the node
snapshots' ``host.json`` and ``env.txt``. What only describes the wrapper's
own work is skipped: ``command.txt`` beside a run manifest (the command is in
the manifest too), a capture's ``MANIFEST.json`` (the list of reads made), and
the run's own ``MANIFEST.json`` while the job runs (no exit to record yet).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from nccl_doctor import GENERATOR
from nccl_doctor.parse.run_manifest import RunManifestParser

#: How many leading bytes are looked at.
HEAD_BYTES = 8192
#: The verdict words of a report heading (``nccl_doctor.report.Verdict``).
VERDICTS = ("healthy", "degraded", "failed", "inconclusive", "incomplete")
#: The statuses of a node verdict (``check --gate``; ``nccl_doctor.gate.verdict``).
GATE_STATUSES = ("PASS", "INFO", "WARNING", "CRITICAL", "UNKNOWN")
#: The first line of a run folder's MANIFEST.json.
RUN_MANIFEST_HEAD = RunManifestParser.anchors[0].encode()
#: The line of a run folder's MANIFEST.json while the job runs (one key per line).
_RUNNING = b'\n "status": "running"'
#: The run wrapper's record of the command, beside its MANIFEST.json.
RUN_COMMAND_NAME = "command.txt"

_G = re.escape(GENERATOR)
_WORDS = "|".join(VERDICTS)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_HEADS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("text", re.compile(rf"{_G}: (?:{_WORDS.upper()})  \(\d+ findings?, \d+ root causes?\)")),
    ("markdown", re.compile(rf"## {_G}: \*\*(?:{_WORDS})\*\*\s*$", re.MULTILINE)),
    ("explain", re.compile(r"^[a-z]+(?:\.[a-z0-9_]+)+ — .* \(default severity: [a-z]+\)\s*$")),
    ("rules", re.compile(r"^[a-z]+(?:\.[a-z0-9_]+)+ +(?:critical|warning|info) +\S")),
    (
        "gate verdict",
        re.compile(rf"^node \S+: (?:{'|'.join(GATE_STATUSES)}) - gate (?:passes|blocks)"),
    ),
    ("gate plan", re.compile(r"^\d+ node\(s\), \d+ to exclude \(fail-on (?:critical|warning)")),
    (
        "history",
        re.compile(
            r"^(?:ID +WHEN \(UTC\) +KIND +JOB +VERDICT |no recorded run matches \(history: "
            rf"|run \d+: (?:diagnose|check|probe|run), (?:{_WORDS})\b)"
        ),
    ),
    ("nodes", re.compile(r"^(?:Nodes, suspects first \(|no recorded run \(history: )")),
    ("parse", re.compile(r"^\S[^\n]*:\d+-\d+  [\w.-]+  \d+ facts?(?: \(|$)")),
)
_HTML_START = re.compile(r"<!DOCTYPE html>", re.IGNORECASE)
_HTML_MARK = re.compile(
    rf'<meta name="generator" content="{_G}[ "]|<title>{_G}: (?:{_WORDS})\b', re.IGNORECASE
)
_JSON_REPORT = re.compile(rf'"tool":\s*\{{\s*"name":\s*"{_G}"')
_JSON_PARSED = re.compile(r'\{"sections": \[(?:\]|\{"kind": ")')
#: ``gate plan --format json`` and the like: a document whose kind is one of nccl-doctor's.
_JSON_KIND = re.compile(rf'\{{\s*"kind":\s*"{_G}\.([\w-]+)"')
#: ``history`` and ``nodes`` with ``--format json``: the fleet history's path first.
_JSON_FLEET = re.compile(r'\{\s*"history":\s*"[^"\n]*",\s*"(runs|window)":')
_CAPTURE_MANIFEST = re.compile(
    r'\{\s*"failed":\s*\[[^\]]*\],\s*"files":\s*\[[^\]]*\],\s*"hostname"'
)


def report_format(head: bytes) -> str | None:
    """The format of the nccl-doctor report ``head`` starts, or ``None`` when it is none.

    Only the start counts: the first line of a text or Markdown report, of
    ``explain``, ``rules``, ``parse``, ``history``, ``nodes``, ``check --gate
    --format text`` or ``gate plan`` output, the opening of a JSON report or of
    the JSON of ``parse``, ``history``, ``nodes`` or ``gate plan``, the head of an
    HTML page. ``probe``'s JSON is evidence (its measurements), not a report.
    """
    text = head[:HEAD_BYTES].decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    if text.startswith("{"):
        if _JSON_REPORT.search(text, 0, 400):
            return "json"
        if found := _JSON_KIND.match(text):
            return f"{found.group(1)} json"
        if found := _JSON_FLEET.match(text):
            return "history json" if found.group(1) == "runs" else "nodes json"
        return "parse json" if _JSON_PARSED.match(text) else None
    if _HTML_START.match(text):
        return "html" if _HTML_MARK.search(text) else None
    first = _ANSI.sub("", text.split("\n", 1)[0])
    for name, pattern in _HEADS:
        if pattern.match(first):
            return name
    return None


def is_capture_manifest(head: bytes) -> bool:
    """Whether ``head`` opens the MANIFEST.json of a capture bundle (the list of its reads)."""
    return bool(_CAPTURE_MANIFEST.match(head[:HEAD_BYTES].decode("utf-8", "replace")))


def is_running_manifest(head: bytes) -> bool:
    """Whether ``head`` opens the MANIFEST.json of a run whose job still runs: it records
    nothing yet (the exit it adds comes when the job ends)."""
    return head.startswith(RUN_MANIFEST_HEAD) and _RUNNING in head[:HEAD_BYTES]


#: How every note of what was skipped as nccl-doctor's own output ends.
NOT_EVIDENCE = "not evidence: skipped"
#: What to give instead, when nothing but nccl-doctor's own output was given.
GIVE_EVIDENCE = (
    "give what nccl-doctor read, not what it wrote: the job's logs, the run folder of `run`, "
    "probe's result saved with `probe -o RESULT.json`"
)


def is_own_note(message: str) -> bool:
    """Whether a coverage note says a file or lines were skipped as nccl-doctor's own output."""
    return message.endswith(NOT_EVIDENCE) and GENERATOR in message


#: What a stretch of nccl-doctor's own output in a stream starts with: a report heading,
#: a ``run`` line, a ``probe`` progress or summary line, a ``check --gate`` verdict or its
#: stderr line, its one-line error with a hint (see :func:`stretch_at`).
STRETCH_OPENERS = (GENERATOR, f"## {GENERATOR}: ", "probe", "node ", "gate: ", "error: ")
#: The words the reader's scan looks for so that a large log's stretch is seen.
STRETCH_ANCHORS = (
    f"{GENERATOR}: ",
    f"{GENERATOR} run: ",
    "probe: ",
    "probe quick on ",
    "probe full on ",
    " - gate passes (exit ",
    " - gate blocks (exit ",
    "gate: ",
    " (hint: ",
)
#: The most lines one stretch holds: past it, the rest is read as the job's.
STRETCH_MAX_LINES = 5000

_RUN_LINE = f"{GENERATOR} run: "
_HEAD = dict(_HEADS)
_TEXT_HEAD = _HEAD["text"]
_MD_HEAD = _HEAD["markdown"]
_GATE_HEAD = _HEAD["gate verdict"]
#: A report's heading within a stream, and the grammar (:class:`Stretch`) that reads it.
_REPORT_HEADS = ((_TEXT_HEAD, "text"), (_MD_HEAD, "md"))
#: The lines of a pre-mortem ``run`` prints after its ``nccl-doctor run:`` line, before the
#: report (:func:`nccl_doctor.run.watch.capture`).
_PREMORTEM = (
    "where each rank is (",
    "=> ",
    "diagnosis of the run folder so far:",
    "capture failed (",
    "diagnosis failed (",
    "report failed (",
)
#: ``probe``'s progress lines (:mod:`nccl_doctor.render.probe_progress`, its CLI's own) and
#: the first line of its summary; the summary's other lines are indented.
_PROBE_LINE = re.compile(
    r"probe: (?:\S+ \(\d+ steps?\)$|FAILED \S|rich is not installed;|workers stuck in )"
)
_PROBE_SUMMARY = re.compile(r"probe [a-z]+ on [^\n]*: (?:OK|PROBLEMS) - \d+ steps?, ")
#: ``check --gate``'s text: the node's verdict (the whole-file head, :data:`_HEADS`), and the
#: one line it prints on stderr for a log (:func:`nccl_doctor.gate.cli.summary`).
_GATE_SAY = re.compile(rf"gate: \S+ (?:{'|'.join(GATE_STATUSES)}), exit \d")
#: Text report lines at the margin: a finding, a ranked cause, a one-line (``--quiet``) row.
_TEXT_ITEM = re.compile(
    r"\d+\. (?:CRITICAL|WARNING|INFO)  \S|\d+\. [a-z]+(?:\.[a-z0-9_]+)+  \(\d+%\)$"
    r"|(?:CRITICAL|WARNING  |INFO     |retry    |notice   |possible ) ?\S"
)
#: The text report's headings that a narrow terminal may wrap onto the margin.
_TEXT_HEADINGS = ("Other possible causes of ", "Possible causes of ", "Not failures: ")
_TEXT_COVERAGE = ("Not checked:", "Missing:", "Next:", "note: ")
#: A wrapped line of the text report's ``Read:`` list: evidence kinds, each with its count
#: (which the wrap may have put at the start of the line).
_KINDS = re.compile(r"(?:\(\d+\)|[\w.-]+(?: \(\d+\))?)(?:, [\w.-]+(?: \(\d+\))?)*,?$")
#: Markdown report lines, by how they start (a finding's summary is free: see _md).
_MD_LINE = re.compile(r"#|\||- |  |<details>|</details>|\*|\d+\. |Read: ")
_MD_CONFIDENCE = re.compile(r"\*(?:critical|warning|info), (?:high|medium|low) confidence\*")
_MD_FENCE = re.compile(r"(`{3,}|~{3,})")
#: nccl-doctor's one-line error (``cli.main``): ``error: MESSAGE (hint: HINT)``, the hint
#: inline at the end, as no library of the stack writes it.
_ERROR_LINE = re.compile(r"^(?=[^\n]*\)$)error: [^\n]+ \(hint: ")  # (linear: one end test)


class _Own(NamedTuple):
    """A line of a command's console: the test that knows it, the state it leaves the stretch
    in (what may follow: :data:`_FOLLOWS`), and whether it can be a stretch's first line."""

    test: Callable[[str], object]
    state: str
    opens: bool = True


#: Each command's own lines on the terminal: ``run``'s (:class:`nccl_doctor.run.watch.Watch`),
#: a pre-mortem's positions (:func:`nccl_doctor.run.watch.capture`) after its line; ``probe``'s
#: progress and summary; ``check --gate``'s verdict (:func:`nccl_doctor.gate.render.verdict_text`)
#: and its stderr line.
_CONSOLES: dict[str, tuple[_Own, ...]] = {
    "run": (
        _Own(lambda text: text.startswith(_RUN_LINE), "line"),
        _Own(lambda text: text.startswith(_PREMORTEM), "positions", opens=False),
    ),
    "probe": (_Own(_PROBE_LINE.match, "line"), _Own(_PROBE_SUMMARY.match, "table")),
    "gate": (_Own(_GATE_HEAD.match, "checks"), _Own(_GATE_SAY.match, "checks")),
}
#: What may follow a console's line, by the state it left: a pre-mortem's positions
#: (indented), probe's summary table (indented, a blank), the gate's checks (the node's repair,
#: a blank, a line per check, indented, with its evidence).
_FOLLOWS: dict[str, Callable[[str], bool]] = {
    "positions": lambda text: text.startswith("  "),
    "table": lambda text: not text.strip() or text.startswith("  "),
    "checks": lambda text: not text.strip() or text.startswith(("  ", "repair: ")),
}
_WHAT = {
    "run": "run's progress",
    "probe": "probe's progress",
    "gate": "check --gate's verdict",
    "error": "its error message",
    "text": "text report",
    "md": "Markdown report",
}


class Stretch:
    """One stretch of nccl-doctor's own output in a stream, read line by line.

    Made by :func:`stretch_at` on its first line; :meth:`takes` says whether each
    next line is still its own. A command's console (``run``, ``probe``, ``check
    --gate``) holds its own lines and the reports it prints; a report alone ends
    with its last line.
    ``what`` names the stretch for the coverage note.
    """

    def __init__(self, mode: str, first: int) -> None:
        self.first = self.last = first
        self.lines = 1
        self.what = _WHAT[mode]
        #: the command whose console this is ("run", "probe", "gate"), if any
        self.console = mode if mode in _CONSOLES else None
        #: the report being read ("text", "md"), if any, and where in its grammar the lines are
        self.report = mode if mode in ("text", "md") else None
        self.state = "line" if self.console else "body"
        self.fence = ""
        self.done = False

    def takes(self, text: str, number: int) -> bool:
        """Whether ``text`` (line ``number``) is still this stretch's."""
        if self.lines >= STRETCH_MAX_LINES:
            return False
        taken = False
        if self.report is not None and not self.done:
            taken = self._md(text) if self.report == "md" else self._text(text)
        if not taken and self.console is not None:
            if self.report is not None:  # the report ended; the command's own lines go on
                self.report, self.state, self.done = None, "line", False
            taken = self._console(text)
        if taken:
            self.last = number
            self.lines += 1
        return taken

    def _console(self, text: str) -> bool:
        """A command's own lines on the terminal (:data:`_CONSOLES`), and the start of a
        report it prints."""
        for head, report in _REPORT_HEADS:
            if head.match(text):
                self.report, self.state = report, "body"
                return True
        assert self.console is not None  # noqa: S101 -- only a console's lines come here
        for own in _CONSOLES[self.console]:
            if own.test(text):
                self.state = own.state
                return True
        follows = _FOLLOWS.get(self.state)
        return follows is not None and follows(text)

    def _text(self, text: str) -> bool:
        """The lines of :func:`nccl_doctor.render.text.report_text`, a heading to the coverage."""
        state, blank = self.state, not text.strip()
        if state == "heading":  # a heading wrapped onto the margin, up to its colon
            if text.endswith(":"):
                self.state = "body"
            return not blank
        if text.startswith("Read: "):
            self.state = "read"
            return True
        if state in ("read", "coverage"):
            if text.startswith(_TEXT_COVERAGE):
                self.state = "coverage"
                return True
            if state == "read" and not blank and _KINDS.match(text):
                return True  # the list of kinds read, wrapped onto the margin
            return text.startswith(" ") and not blank
        if state == "against":  # a comparison's headings are free text, up to the coverage
            return True
        if blank or text.startswith((" ", "First failure: ")) or _TEXT_ITEM.match(text):
            return True
        if text.startswith(_TEXT_COVERAGE):
            self.state = "coverage"
            return True
        if text.startswith(_TEXT_HEADINGS):
            self.state = "body" if text.endswith(":") else "heading"
            return True
        if text.startswith("Against "):
            self.state = "against"
            return True
        return False

    def _md(self, text: str) -> bool:
        """The lines of :func:`nccl_doctor.render.markdown.report_markdown`, up to its
        coverage's ``</details>``."""
        if self.fence:
            shut = text.strip()
            if shut.startswith(self.fence) and not shut.strip(self.fence[0]):
                self.fence = ""
            return True
        opened = _MD_FENCE.match(text)
        if opened:
            self.fence = opened.group(1)
            return True
        if self.state == "summary" and text.strip():
            self.state = "body"  # a finding's summary, the line after its severity: free text
            return True
        if text.startswith("<details><summary>Coverage</summary>"):
            self.state = "coverage"
            return True
        if text.strip() and not _MD_LINE.match(text):
            return False
        if self.state == "coverage" and text.startswith("</details>"):
            self.done = True
        elif _MD_CONFIDENCE.match(text):
            self.state = "summary"
        return True


def stretch_at(text: str, number: int) -> Stretch | None:
    """The stretch of nccl-doctor's own output that line ``number`` (``text``) opens, if any
    (the caller asks only of lines that start with one of :data:`STRETCH_OPENERS`)."""
    if _ERROR_LINE.match(text):
        return Stretch("error", number)  # one line: the next is read again
    for console, lines in _CONSOLES.items():
        for own in lines:
            if own.opens and own.test(text):
                stretch = Stretch(console, number)
                stretch.state = own.state
                return stretch
    for head, report in _REPORT_HEADS:
        if head.match(text):
            return Stretch(report, number)
    return None
