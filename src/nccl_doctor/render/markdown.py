"""Markdown to paste into a GitHub issue: compact, collapsible, redacted, pseudonymised."""

from __future__ import annotations

from collections.abc import Callable

from nccl_doctor import GENERATOR
from nccl_doctor.findings import Finding, FixStep
from nccl_doctor.render.against import outline, title
from nccl_doctor.report import NOTICES_HEADING, Report

MAX_EVIDENCE = 8


def _plain(text: str) -> str:
    """Text safe inside a Markdown line (no HTML, links, images, table or emphasis surprises)."""
    return (
        text.replace("\\", "\\\\")
        .replace("[", "\\[")
        .replace("]", "\\]")
        .replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("|", "\\|")
        .replace("*", "\\*")
        .replace("_", "\\_")
    )


def _code(text: str, *, cell: bool = False) -> str:
    """``text`` as one code span, shown literally whatever backticks it holds.

    ``cell``: inside a table row, where GitHub splits cells at every ``|``, code
    spans too, unless escaped (``\\|``, shown as ``|``): ``lsmod | grep nvidia_uvm``
    broke the differential's table into seven columns.
    """
    ticks = "`"
    while ticks in text:
        ticks += "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    body = text.replace("|", "\\|") if cell else text
    return f"{ticks}{pad}{body}{pad}{ticks}"


def _inline(text: str, *, cell: bool = False) -> str:
    """A line of prose: `code spans` stay code (shown literally), the rest is escaped
    (``cell``: in a table row, see :func:`_code`)."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: no code spans at all
        return _plain(text.replace("`", "'"))
    out = []
    for i, part in enumerate(parts):
        out.append(_code(part, cell=cell) if i % 2 and part else _plain(part))
    return "".join(out)


def _fence(lines: list[str]) -> list[str]:
    body = "\n".join(lines)
    ticks = "```"
    while ticks in body:
        ticks += "`"
    return [ticks + "text", body, ticks]


def _finding(n: int, f: Finding, clean: Callable[[str], str]) -> list[str]:
    tag = " · **root cause**" if f.root_cause else ""
    out = [
        f"### {n}. `{f.id}` — {_inline(clean(f.title))}",
        f"*{f.severity.value}, {f.confidence.value} confidence*{tag}",
        "",
        _inline(clean(f.summary)),
        "",
    ]
    out.extend(f"- {_inline(clean(d))}" for d in f.detail)
    if f.detail:
        out.append("")
    if f.fix:
        out.append("**Fix**")
        out.append("")
        out.extend(_step(i, step, clean) for i, step in enumerate(f.steps, 1))
        out.append("")
    if f.evidence:
        out.append(f"<details><summary>Evidence ({len(f.evidence)} lines)</summary>")
        out.append("")
        shown = [
            f"{clean(c.source)}:{c.line}: {clean(c.text).strip()}"
            for c in f.evidence[:MAX_EVIDENCE]
        ]
        if len(f.evidence) > MAX_EVIDENCE:
            shown.append(f"... and {len(f.evidence) - MAX_EVIDENCE} more")
        out.extend(_fence(shown))
        out.append("")
        out.append("</details>")
        out.append("")
    return out


def _step(n: int, step: FixStep, clean: Callable[[str], str]) -> str:
    """One fix step with its kind; a workaround says what it masks."""
    kind = step.kind.value
    tag = f"**{kind}**" if step.masks else f"*{kind}*"
    line = f"{n}. {tag} — {_inline(clean(step.text))}"
    return line + (f" *(masks the cause: {_plain(step.masks)})*" if step.masks else "")


def _folded(kids: tuple[Finding, ...], clean: Callable[[str], str]) -> list[str]:
    out = ["**Also explained by this** (the cascade):", ""]
    out.extend(f"- `{kid.id}`: {_inline(clean(kid.summary))}" for kid in kids)
    out.append("")
    return out


def _summary(findings: tuple[Finding, ...], clean: Callable[[str], str]) -> list[str]:
    """A table of every finding, for a reader who stops at the top."""
    out = ["| # | Severity | Finding | |", "|---|---|---|---|"]
    out.extend(
        f"| {n} | {f.severity.value} | `{f.id}` {_inline(clean(f.title), cell=True)} |"
        f" {'root cause' if f.root_cause else ''} |"
        for n, f in enumerate(findings, 1)
    )
    out.append("")
    return out


def _against(report: Report, clean: Callable[[str], str]) -> list[str]:
    """What changed against the reference run (``--against``), the retry explanation first."""
    assert report.against is not None  # noqa: S101 -- the caller checked
    out = [f"### {_inline(clean(title(report.against)))}", ""]
    for n, (heading, items) in enumerate(outline(report.against)):
        retry = n == 0 and report.against.retry is not None
        out.append(f"**{_inline(clean(heading))}**" + (":" if items else ""))
        out.append("")
        lead = "1." if retry else "-"
        out.extend(f"{lead} {_inline(clean(item))}" for item in items)
        if items:
            out.append("")
    return out


def report_markdown(report: Report, clean: Callable[[str], str]) -> str:
    """The report as GitHub-flavoured Markdown; ``clean`` redacts and pseudonymises."""
    out = [f"## {GENERATOR}: **{report.verdict.value}**", ""]
    first = report.first_failure
    if first is not None:
        who = f"rank {first.rank}" if first.rank is not None else "an unattributed rank"
        if first.host:
            who += f" on {_inline(clean(first.host))}"
        out.append(
            f"**First failure:** {who} ({_code(f'{clean(first.cite.source)}:{first.cite.line}')})"
        )
        out.append("")
        out.extend(_fence([clean(first.message)]))
        out.append("")
    if len(report.findings) > 1:
        out.extend(_summary(report.findings, clean))
    folded = dict(report.folded)
    for n, finding in enumerate(report.findings, 1):
        out.extend(_finding(n, finding, clean))
        if finding.id in folded:
            out.extend(_folded(folded[finding.id], clean))
    if report.notices_shown:
        out.append(f"### {_plain(NOTICES_HEADING)}")
        out.append("")
        for notice in report.notices_shown:
            where = _code(f"{clean(notice.cite.source)}:{notice.cite.line}")
            times = f" ({notice.count} lines)" if notice.count > 1 else ""
            out.append(f"- {where} {_code(clean(notice.cite.text.strip()))}  ")
            out.append(f"  {_plain(clean(notice.why))}{times}")
        out.append("")
    if report.hypotheses:
        out.append(f"### {_inline(report.hypotheses_heading)}")
        out.append("")
        out.append("| # | id | likelihood | for | against | next check |")
        out.append("|---|---|---|---|---|---|")
        out.extend(
            f"| {n} | `{h.id}` | {h.probability:.0%} |"
            f" {_inline(clean('; '.join(h.for_)), cell=True)} |"
            f" {_inline(clean('; '.join(h.against)), cell=True)} |"
            f" {_code(clean(h.check), cell=True) if h.check else ''}"
            f" {_inline(clean(h.tells), cell=True)} |"
            for n, h in enumerate(report.hypotheses, 1)
        )
        out.append("")
    if report.against is not None:
        out.extend(_against(report, clean))
    cov = report.coverage
    if cov.missing or cov.next_steps or cov.evidence or cov.unchecked:
        out.append("<details><summary>Coverage</summary>")
        out.append("")
        if cov.evidence:
            kinds = sorted({e.kind for e in cov.evidence})
            out.append("Read: " + ", ".join(f"`{k}`" for k in kinds))
            out.append("")
        out.extend(f"- not checked: {_inline(clean(u))}" for u in cov.unchecked)
        out.extend(f"- missing: {_inline(clean(m))}" for m in cov.missing)
        out.extend(f"- next: {_inline(clean(s))}" for s in cov.next_steps)
        out.extend(f"- note: {_inline(clean(n))}" for n in cov.notes)
        out.append("")
        out.append("</details>")
    return "\n".join(out).rstrip() + "\n"
