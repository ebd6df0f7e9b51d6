"""The terminal report, rendered with rich; readable in 80 columns.

Paragraphs are wrapped here with hanging indents so continuation lines stay
under their item; evidence lines are cut to the width rather than wrapped.
Evidence text is never interpreted as markup: everything from the input is
added as plain ``Text``.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Callable

from rich.console import Console
from rich.text import Text

from nccl_doctor import GENERATOR
from nccl_doctor.findings import Finding
from nccl_doctor.redact import redact
from nccl_doctor.report import Report

_SEVERITY_STYLE = {"critical": "bold red", "warning": "yellow", "info": "cyan"}
_VERDICT_STYLE = {
    "failed": "bold red",
    "degraded": "bold yellow",
    "healthy": "bold green",
    "inconclusive": "bold magenta",
}
MAX_EVIDENCE = 6


class _Out:
    """A Text under construction that knows the width it wraps to."""

    def __init__(self, width: int, clean: Callable[[str], str]) -> None:
        self.text = Text()
        self.width = width
        self.clean = clean

    def add(self, text: str, style: str | None = None) -> None:
        self.text.append(text, style=style)

    def para(self, text: str, indent: int, lead: str = "", style: str | None = None) -> None:
        """A wrapped paragraph: ``lead`` on the first line, continuation under the text."""
        first = " " * indent + lead
        wrapped = textwrap.fill(
            self.clean(text),
            width=self.width - 1,
            initial_indent=first,
            subsequent_indent=" " * len(first),
            break_long_words=True,
            break_on_hyphens=False,
        )
        self.text.append(wrapped + "\n", style=style)

    def cite_line(self, source: str, line: int, text: str, indent: int) -> None:
        """One evidence line, cut to the width."""
        name = self.clean(source).rsplit("/", 1)[-1]
        where = f"{' ' * indent}{name}:{line}  "
        body = " ".join(self.clean(text).split())
        room = max(self.width - 1 - len(where), 20)
        if len(body) > room:
            body = body[: room - 1] + "…"
        self.text.append(where, style="dim")
        self.text.append(body + "\n")


def _folded(out: _Out, kids: tuple[Finding, ...]) -> None:
    out.add("   Also explained by this:\n", "bold")
    for kid in kids:
        out.para(f"{kid.id}: {kid.summary}", 5, "- ")
        for cite in kid.evidence[:2]:
            out.cite_line(cite.source, cite.line, cite.text, 7)


def _finding(out: _Out, n: int, finding: Finding) -> None:
    sev = finding.severity.value
    out.add(f"\n{n}. ", "bold")
    out.add(sev.upper(), _SEVERITY_STYLE[sev])
    out.add(f"  {finding.id}", "bold")
    tags = ["root cause"] if finding.root_cause else []
    tags.append(f"{finding.confidence.value} confidence")
    out.add(f"  ({', '.join(tags)})\n", "dim")
    out.para(finding.title, 3, style="bold")
    out.para(finding.summary, 3)
    for line in finding.detail:
        out.para(line, 3, "- ")
    if finding.fix:
        out.add("   Fix:\n", "bold")
        for i, step in enumerate(finding.fix, 1):
            out.para(step, 5, f"{i}. ")
    if finding.evidence:
        out.add("   Evidence:\n", "bold")
        for cite in finding.evidence[:MAX_EVIDENCE]:
            out.cite_line(cite.source, cite.line, cite.text, 5)
        if len(finding.evidence) > MAX_EVIDENCE:
            out.add(f"     ... and {len(finding.evidence) - MAX_EVIDENCE} more lines\n", "dim")


def _coverage(out: _Out, report: Report) -> None:
    cov = report.coverage
    if cov.evidence:
        kinds: dict[str, int] = {}
        for item in cov.evidence:
            kinds[item.kind] = kinds.get(item.kind, 0) + 1
        out.add("\nRead: ", "bold")
        out.para(", ".join(f"{k} ({v})" if v > 1 else k for k, v in kinds.items()), 0)
    if cov.missing:
        out.add("Missing:\n", "bold")
        for gap in cov.missing:
            out.para(gap, 3, "- ")
    if cov.next_steps:
        out.add("Next:\n", "bold")
        for step in cov.next_steps:
            out.para(step, 3, "- ")
    for note in cov.notes:
        out.para(note, 0, "note: ", style="dim")


def report_text(
    report: Report, *, width: int = 80, color: bool = False, clean: Callable[[str], str] = redact
) -> str:
    """The report as terminal text (ANSI colours when ``color``)."""
    out = _Out(width, clean)
    verdict = report.verdict.value
    out.add(f"{GENERATOR}: ", "bold")
    out.add(verdict.upper(), _VERDICT_STYLE[verdict])
    roots = sum(1 for f in report.findings if f.root_cause)
    out.add(f"  ({len(report.findings)} findings, {roots} root cause{'s' if roots != 1 else ''})\n")
    first = report.first_failure
    if first is not None:
        who = f"rank {first.rank}" if first.rank is not None else "unattributed rank"
        if first.host:
            who += f" on {clean(first.host)}"
        when = f" at {first.time}" if first.time else ""
        out.add("\nFirst failure: ", "bold")
        out.add(f"{who}{when} ({clean(first.cite.source)}:{first.cite.line})\n")
        out.para(first.message, 3)
    folded = dict(report.folded)
    for n, finding in enumerate(report.findings, 1):
        _finding(out, n, finding)
        if finding.id in folded:
            _folded(out, folded[finding.id])
    _coverage(out, report)
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width + 40,
        color_system="standard" if color else None,
        force_terminal=color,
        highlight=False,
        soft_wrap=True,
    )
    console.print(out.text, end="")
    return buffer.getvalue()
