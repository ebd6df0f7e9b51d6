"""The terminal report, rendered with rich, at the width it is given (80 by default).

Paragraphs are wrapped here with hanging indents so continuation lines stay
under their item; evidence lines are cut to the width rather than wrapped,
except with ``verbosity=1`` (every line, whole, wrapped). ``verbosity=-1``
gives the verdict and one line per finding. Evidence text is never
interpreted as markup: everything from the input is added as plain ``Text``.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Callable

from rich.console import Console
from rich.text import Text

from nccl_doctor import GENERATOR
from nccl_doctor.findings import Finding
from nccl_doctor.redact import scrub
from nccl_doctor.render.against import outline, title
from nccl_doctor.report import NOTICES_HEADING, Report

_SEVERITY_STYLE = {"critical": "bold red", "warning": "yellow", "info": "cyan"}
_VERDICT_STYLE = {
    "failed": "bold red",
    "degraded": "bold yellow",
    "healthy": "bold green",
    "inconclusive": "bold magenta",
    "incomplete": "bold magenta",
}
MAX_EVIDENCE = 6
_KIND_STYLE = {"workaround": "yellow"}


class _Out:
    """A Text under construction that knows the width it wraps to."""

    def __init__(self, width: int, clean: Callable[[str], str], *, whole: bool = False) -> None:
        self.text = Text()
        self.width = width
        self.clean = clean
        self.whole = whole  # evidence lines whole (wrapped), not cut

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
        """One evidence line, cut to the width (or whole, wrapped under itself)."""
        name = self.clean(source).rsplit("/", 1)[-1]
        where = f"{' ' * indent}{name}:{line}  "
        body = " ".join(self.clean(text).split())
        room = max(self.width - 1 - len(where), 20)
        if self.whole and len(body) > room:
            lines = textwrap.wrap(body, width=room, break_long_words=True, break_on_hyphens=False)
            body = ("\n" + " " * len(where)).join(lines)
        elif len(body) > room:
            body = body[: room - 1] + "…"
        self.text.append(where, style="dim")
        self.text.append(body + "\n")


def _folded(out: _Out, kids: tuple[Finding, ...]) -> None:
    out.add("   Also explained by this:\n", "bold")
    for kid in kids:
        out.para(f"{kid.id}: {kid.summary}", 5, "- ")
        for cite in kid.evidence if out.whole else kid.evidence[:2]:
            out.cite_line(cite.source, cite.line, cite.text, 7)


def _finding(out: _Out, n: int, finding: Finding) -> None:
    sev = finding.severity.value
    out.add(f"\n{n}. ", "bold")
    out.add(sev.upper(), _SEVERITY_STYLE[sev])
    out.add(f"  {finding.id}", "bold")
    tags = ["root cause"] if finding.root_cause else [f"follows {d}" for d in finding.defers_to]
    tags.append(f"{finding.confidence.value} confidence")
    out.add(f"  ({', '.join(tags)})\n", "dim")
    out.para(finding.title, 3, style="bold")
    out.para(finding.summary, 3)
    for line in finding.detail:
        out.para(line, 3, "- ")
    if finding.fix:
        out.add("   Fix:\n", "bold")
        for i, step in enumerate(finding.steps, 1):
            lead = f"{i}. "
            out.para(f"[{step.kind.value}] {step.text}", 5, lead, _KIND_STYLE.get(step.kind.value))
            if step.masks:
                out.para(f"masks the cause: {step.masks}", 5 + len(lead), style="dim")
    if finding.evidence:
        out.add("   Evidence:\n", "bold")
        shown = len(finding.evidence) if out.whole else MAX_EVIDENCE
        for cite in finding.evidence[:shown]:
            out.cite_line(cite.source, cite.line, cite.text, 5)
        if len(finding.evidence) > shown:
            out.add(f"     ... and {len(finding.evidence) - MAX_EVIDENCE} more lines\n", "dim")


def _hypotheses(out: _Out, report: Report) -> None:
    """The ranked differential: what no rule could decide, and the check that would."""
    if not report.hypotheses:
        return
    out.add("\n")
    out.para(f"{report.hypotheses_heading}:", 0, style="bold")
    for n, h in enumerate(report.hypotheses, 1):
        out.add(f"{n}. ", "bold")
        out.add(f"{h.id}", "bold")
        out.add(f"  ({h.probability:.0%})\n", "dim")
        out.para("for: " + "; ".join(h.for_), 3)
        if h.against:
            out.para("against: " + "; ".join(h.against), 3)
        if h.check:
            out.para(f"check: {h.check} - {h.tells}", 3)


def _notices(out: _Out, report: Report) -> None:
    """The lines that read like errors and are notices, each with why."""
    if not report.notices_shown:
        return
    out.add("\n")
    out.para(NOTICES_HEADING + ":", 0, style="bold")
    for notice in report.notices_shown:
        times = f" ({notice.count} lines)" if notice.count > 1 else ""
        out.cite_line(notice.cite.source, notice.cite.line, notice.cite.text, 3)
        out.para(f"{notice.why}{times}", 5, style="dim")


def _against(out: _Out, report: Report) -> None:
    """What changed against the reference run, the retry explanation first."""
    if report.against is None:
        return
    out.add("\n")
    out.para(title(report.against) + ":", 0, style="bold")
    for n, (heading, items) in enumerate(outline(report.against)):
        retry = n == 0 and report.against.retry is not None
        out.para(heading + (":" if items else ""), 0, style="bold" if retry else None)
        for i, item in enumerate(items, 1):
            out.para(item, 3, f"{i}. " if retry else "- ")


def _coverage(out: _Out, report: Report) -> None:
    cov = report.coverage
    if cov.evidence:
        kinds: dict[str, int] = {}
        for item in cov.evidence:
            kinds[item.kind] = kinds.get(item.kind, 0) + 1
        out.add("\nRead: ", "bold")
        out.para(", ".join(f"{k} ({v})" if v > 1 else k for k, v in kinds.items()), 0)
    if cov.unchecked:
        out.add("Not checked:\n", "bold")
        for gap in cov.unchecked:
            out.para(gap, 3, "- ")
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


def _cut(line: str, room: int) -> str:
    """``line`` whole where it fits ``room`` characters, else cut to them with an ellipsis."""
    return line if len(line) <= room else line[: room - 1] + "…"


def _brief(out: _Out, report: Report) -> None:
    """One line per finding: severity, id, title (``--quiet``)."""
    for finding in report.findings:
        sev = finding.severity.value
        out.add(f"{sev.upper():9}", _SEVERITY_STYLE[sev])
        line = f"{finding.id}  {out.clean(finding.title)}"
        line += "  (root cause)" if finding.root_cause else ""
        room = out.width - 1 - 9
        out.add(_cut(line, room) + "\n")
    retry = report.against.retry if report.against is not None else None
    if retry is not None and retry.reasons:  # --against: the one line that answers "why"
        line = f"{'retry':9}{out.clean(retry.reasons[0].text)}"
        out.add(_cut(line, out.width - 1) + "\n")
    for notice in report.notices_shown:
        out.add(f"{'notice':9}", "dim")
        line = f"{notice.signature}  {out.clean(notice.cite.text.strip())}"
        out.add(_cut(line, out.width - 1 - 9) + "\n")
    # a failure is never without a cause: where no finding names one, the ranked differential
    for h in () if report.explained else report.hypotheses:
        out.add(f"{'possible':9}", "dim")
        out.add(
            f"{h.id}  ({h.probability:.0%}) check: {out.clean(h.check)}"[: out.width - 10] + "\n"
        )


def report_text(
    report: Report,
    *,
    width: int = 80,
    color: bool = False,
    clean: Callable[[str], str] = scrub,
    verbosity: int = 0,
) -> str:
    """The report as terminal text (ANSI colours when ``color``).

    ``verbosity``: -1 the verdict and one line per finding, 0 the report, 1
    the report with every evidence line whole.
    """
    out = _Out(width, clean, whole=verbosity > 0)
    verdict = report.verdict.value
    out.add(f"{GENERATOR}: ", "bold")
    out.add(verdict.upper(), _VERDICT_STYLE[verdict])
    roots = sum(1 for f in report.findings if f.root_cause)
    out.add(f"  ({len(report.findings)} findings, {roots} root cause{'s' if roots != 1 else ''})\n")
    if verbosity < 0:
        _brief(out, report)
        return _rendered(out, width, color)
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
    _notices(out, report)
    _hypotheses(out, report)
    _against(out, report)
    _coverage(out, report)
    return _rendered(out, width, color)


def _rendered(out: _Out, width: int, color: bool) -> str:
    """The text with ANSI styles when ``color``; the caller decided, not the environment."""
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width + 40,
        color_system="standard" if color else None,
        force_terminal=color,
        no_color=False,
        highlight=False,
        soft_wrap=True,
    )
    console.print(out.text, end="")
    return buffer.getvalue()
