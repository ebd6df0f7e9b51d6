"""Markdown to paste into a GitHub issue: compact, collapsible, redacted, pseudonymised."""

from __future__ import annotations

from collections.abc import Callable

from nccl_doctor import GENERATOR
from nccl_doctor.findings import Finding
from nccl_doctor.report import Report

MAX_EVIDENCE = 8


def _plain(text: str) -> str:
    """Text safe inside a Markdown line (no HTML, no table/emphasis surprises)."""
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("|", "\\|")
        .replace("*", "\\*")
        .replace("_", "\\_")
    )


def _inline(text: str) -> str:
    """A line of prose: `code spans` stay code (shown literally), the rest is escaped."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: no code spans at all
        return _plain(text.replace("`", "'"))
    out = []
    for i, part in enumerate(parts):
        out.append(f"`{part}`" if i % 2 and part else _plain(part))
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
        out.extend(f"{i}. {_inline(clean(step))}" for i, step in enumerate(f.fix, 1))
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


def _folded(kids: tuple[Finding, ...], clean: Callable[[str], str]) -> list[str]:
    out = ["**Also explained by this** (the cascade):", ""]
    out.extend(f"- `{kid.id}`: {_inline(clean(kid.summary))}" for kid in kids)
    out.append("")
    return out


def _summary(findings: tuple[Finding, ...], clean: Callable[[str], str]) -> list[str]:
    """A table of every finding, for a reader who stops at the top."""
    out = ["| # | Severity | Finding | |", "|---|---|---|---|"]
    out.extend(
        f"| {n} | {f.severity.value} | `{f.id}` {_inline(clean(f.title))} |"
        f" {'root cause' if f.root_cause else ''} |"
        for n, f in enumerate(findings, 1)
    )
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
            f"**First failure:** {who} (`{_inline(clean(first.cite.source))}:{first.cite.line}`)"
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
    cov = report.coverage
    if cov.missing or cov.next_steps or cov.evidence:
        out.append("<details><summary>Coverage</summary>")
        out.append("")
        if cov.evidence:
            kinds = sorted({e.kind for e in cov.evidence})
            out.append("Read: " + ", ".join(f"`{k}`" for k in kinds))
            out.append("")
        out.extend(f"- missing: {_inline(m)}" for m in cov.missing)
        out.extend(f"- next: {_inline(s)}" for s in cov.next_steps)
        out.extend(f"- note: {_inline(clean(n))}" for n in cov.notes)
        out.append("")
        out.append("</details>")
    return "\n".join(out).rstrip() + "\n"
