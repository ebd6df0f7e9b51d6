"""The report as one self-contained HTML file: to open, attach or archive.

The verdict and the root cause fill the first screen; findings follow with
their fixes and evidence, then pictures where the facts support them (the
failure timeline, GPU memory by process, the topology matrix, bandwidth
curves), coverage, and the raw evidence folded away. No script, no font, no
link leaves the file: charts are SVG drawn here, the page forbids scripts by
its Content-Security-Policy, and every string from the evidence is cleaned
(``clean``: redaction and pseudonymisation, as for Markdown) and escaped.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from nccl_doctor import GENERATOR, __version__
from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Finding, FixStep
from nccl_doctor.render.against import outline, title
from nccl_doctor.render.history_chart import History, history_svg
from nccl_doctor.render.memory_chart import memory_svg
from nccl_doctor.render.pictures import timeline_svg, topology_html
from nccl_doctor.render.svg import Series, bandwidth_svg, esc
from nccl_doctor.report import NOTICES_HEADING, Report

Clean = Callable[[str], str]
MAX_EVIDENCE = 8
MAX_RAW_LINES = 20_000

CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
    "form-action 'none'"
)
CSS = """
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;
color:#1f2328;background:#fff}main{max-width:1200px;margin:0 auto;padding:0 24px 40px}
header.top{padding:14px 24px 12px;border-bottom:1px solid #d0d7de;background:#f6f8fa}
header.top>div{max-width:1200px;margin:0 auto}.verdict{display:inline-block;padding:2px 10px;
border-radius:6px;font-weight:700;text-transform:uppercase;letter-spacing:.04em;color:#fff}
.v-failed{background:#cf222e}.v-degraded{background:#bf8700}.v-healthy{background:#1a7f37}
.v-inconclusive,.v-incomplete{background:#8250df}.meta{color:#57606a;margin-left:8px}
.root{margin:10px 0 6px;padding:10px 14px;border-left:5px solid #cf222e;background:#fff;
border-radius:4px}.root h1{font-size:20px;margin:2px 0 4px}.root .label{font-size:12px;
color:#57606a;text-transform:uppercase;letter-spacing:.05em}.root p{margin:4px 0}
.r-degraded .root{border-color:#bf8700}.r-healthy .root{border-color:#1a7f37}
.r-inconclusive .root,.r-incomplete .root{border-color:#8250df}.first{margin:6px 0}
.glance{border-collapse:collapse;margin-top:6px;font-size:13px}
.glance td{padding:1px 10px 1px 0;vertical-align:top}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
pre{white-space:pre-wrap;word-break:break-all;background:#f6f8fa;padding:8px;border-radius:4px;
margin:4px 0}h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
.sev{display:inline-block;min-width:64px;text-align:center;border-radius:4px;padding:0 6px;
font-size:12px;font-weight:600;color:#fff}.sev-critical{background:#cf222e}
.sev-warning{background:#bf8700}.sev-info{background:#0969da}
article.finding{border:1px solid #d0d7de;border-radius:6px;padding:10px 14px;margin:10px 0}
article.finding h3{margin:0 0 4px;font-size:15px}.tag{font-size:12px;color:#57606a}
table.ev{border-collapse:collapse;width:100%;table-layout:fixed}
table.ev td{padding:1px 6px;vertical-align:top;border-top:1px solid #eaeef2;word-break:break-all}
table.ev td.where{width:30%;color:#57606a}.folded{margin:8px 0 0 14px;padding-left:10px;
border-left:3px solid #d0d7de}table.topo{border-collapse:collapse;font-size:12px}
table.topo td,table.topo th{border:1px solid #d0d7de;padding:2px 6px;text-align:center}
ul.legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:4px 16px;font-size:12px}
.swatch{display:inline-block;min-width:38px;text-align:center;border-radius:3px}
.note{color:#57606a;font-size:13px}details>summary{cursor:pointer}
.raw pre{max-height:480px;overflow:auto}footer{color:#57606a;font-size:12px;margin-top:30px}
.kind{display:inline-block;min-width:74px;font-size:11px;text-transform:uppercase;color:#57606a}
.k-workaround{color:#9a6700;font-weight:700}.masks{color:#57606a;font-size:12.5px}
"""


@dataclass(frozen=True, slots=True)
class Bandwidth:
    """Bandwidth curves to draw: (size_bytes, busbw_gbytes_s) series against an expected GB/s."""

    series: Sequence[Series]
    expected_gbytes_s: float | None
    labels: Sequence[str] = ()
    note: str = ""
    sources: Sequence[str] = field(default_factory=tuple)


def _inline(text: str) -> str:
    """Prose with `code spans` shown as code; everything escaped."""
    parts = text.split("`")
    if len(parts) % 2 == 0:
        return esc(text)
    return "".join(f"<code>{esc(p)}</code>" if i % 2 and p else esc(p) for i, p in enumerate(parts))


def _evidence(cites: Sequence[Cite], clean: Clean) -> str:
    def rows(chunk: Sequence[Cite]) -> str:
        return "".join(
            f'<tr><td class="where mono">{esc(clean(c.source))}:{c.line}</td>'
            f'<td class="mono">{esc(clean(c.text).strip())}</td></tr>'
            for c in chunk
        )

    if not cites:
        return ""
    out = f'<table class="ev">{rows(cites[:MAX_EVIDENCE])}</table>'
    if len(cites) > MAX_EVIDENCE:
        more = len(cites) - MAX_EVIDENCE
        out += (
            f"<details><summary>{more} more evidence lines</summary>"
            f'<table class="ev">{rows(cites[MAX_EVIDENCE:])}</table></details>'
        )
    return out


def _step(step: FixStep, clean: Clean) -> str:
    """One fix step with its kind; a workaround says what it masks."""
    kind = step.kind.value
    masks = f'<div class="masks">masks the cause: {esc(step.masks)}</div>' if step.masks else ""
    return (
        f'<li data-kind="{kind}"><span class="kind k-{kind}">{kind}</span> '
        f"{_inline(clean(step.text))}{masks}</li>"
    )


def _finding(n: int, f: Finding, kids: tuple[Finding, ...], clean: Clean) -> str:
    sev = f.severity.value
    tag = " · <strong>root cause</strong>" if f.root_cause else ""
    out = [
        f'<article class="finding" id="finding-{n}" data-id="{esc(f.id)}" data-severity="{sev}">',
        (
            f'<h3><span class="sev sev-{sev}">{sev}</span> <code>{esc(f.id)}</code> — '
            f"{_inline(clean(f.title))}</h3>"
        ),
        f'<div class="tag">{esc(f.confidence.value)} confidence{tag}</div>',
        f'<p class="summary">{_inline(clean(f.summary))}</p>',
    ]
    if f.detail:
        out.append("<ul>" + "".join(f"<li>{_inline(clean(d))}</li>" for d in f.detail) + "</ul>")
    if f.fix:
        steps = "".join(_step(step, clean) for step in f.steps)
        out.append(f'<div><strong>Fix</strong><ol class="fix">{steps}</ol></div>')
    if f.evidence:
        out.append(f"<div><strong>Evidence</strong>{_evidence(f.evidence, clean)}</div>")
    if kids:
        out.append('<div class="folded"><strong>Also explained by this</strong>')
        out.append(f" ({len(kids)}, the cascade)")
        out.extend(
            f'<div class="kid" data-id="{esc(kid.id)}"><p><code>{esc(kid.id)}</code> — '
            f"{_inline(clean(kid.summary))}</p>{_evidence(kid.evidence[:3], clean)}</div>"
            for kid in kids
        )
        out.append("</div>")
    out.append("</article>")
    return "".join(out)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _header(report: Report, clean: Clean) -> str:
    verdict = report.verdict.value
    roots = [f for f in report.findings if f.root_cause]
    top = roots[0] if roots else (report.findings[0] if report.findings else None)
    out = [
        f'<header class="top r-{verdict}" id="top"><div>',
        f'<span class="verdict v-{verdict}" id="verdict">{esc(verdict)}</span>',
        (
            f'<span class="meta">nccl-doctor · {_count(len(report.findings), "finding")}, '
            f"{_count(len(roots), 'root cause')}</span>"
        ),
    ]
    if top is not None:
        label = "Root cause" if top.root_cause else "Top finding"
        fix = f"<p><strong>First step:</strong> {_inline(clean(top.fix[0]))}</p>" if top.fix else ""
        out.append(
            f'<section class="root" id="root-cause" data-id="{esc(top.id)}">'
            f'<div class="label">{label}</div><h1><code>{esc(top.id)}</code> — '
            f"{_inline(clean(top.title))}</h1><p>{_inline(clean(top.summary))}</p>{fix}</section>"
        )
    else:
        out.append(
            '<section class="root" id="root-cause"><h1>No finding</h1>'
            "<p>Nothing wrong was found in the evidence read; Coverage says what was not read.</p>"
            "</section>"
        )
    first = report.first_failure
    if first is not None:
        who = f"rank {first.rank}" if first.rank is not None else "an unattributed rank"
        if first.host:
            who += f" on {clean(first.host)}"
        when = f" at {first.time}" if first.time else ""
        out.append(
            '<p class="first" id="first-failure"><strong>First failure:</strong> '
            f"{esc(who)}{esc(when)} "
            f'(<span class="mono">{esc(clean(first.cite.source))}:{first.cite.line}</span>): '
            f"<code>{esc(clean(first.message)[:300])}</code></p>"
        )
    if len(report.findings) > 1:
        rows = "".join(
            f'<tr><td><span class="sev sev-{f.severity.value}">{f.severity.value}</span></td>'
            f'<td><a href="#finding-{n}"><code>{esc(f.id)}</code></a></td>'
            f"<td>{_inline(clean(f.title))}{' · root cause' if f.root_cause else ''}</td></tr>"
            for n, f in enumerate(report.findings, 1)
        )
        out.append(f'<table class="glance">{rows}</table>')
    out.append("</div></header>")
    return "".join(out)


def _hypotheses(report: Report, clean: Clean) -> str:
    """The ranked differential as a table (nothing when a finding was decisive)."""
    if not report.hypotheses:
        return ""
    rows = "".join(
        f"<tr><td>{n}</td><td><code>{esc(h.id)}</code></td><td>{h.probability:.0%}</td>"
        f"<td>{esc(clean('; '.join(h.for_)))}</td><td>{esc(clean('; '.join(h.against)))}</td>"
        f"<td><code>{esc(clean(h.check))}</code> {esc(clean(h.tells))}</td></tr>"
        for n, h in enumerate(report.hypotheses, 1)
    )
    return (
        f'<section id="hypotheses"><h2>{esc(report.hypotheses_heading)}</h2><table>'
        "<tr><th>#</th><th>id</th><th>likelihood</th><th>for</th>"
        f"<th>against</th><th>next check</th></tr>{rows}</table></section>"
    )


def _notices(report: Report, clean: Clean) -> str:
    """The lines that read like errors and are notices, each with why."""
    if not report.notices_shown:
        return ""
    rows = "".join(
        f'<tr><td class="where mono">{esc(clean(n.cite.source))}:{n.cite.line}</td>'
        f'<td class="mono">{esc(clean(n.cite.text).strip())}</td>'
        f"<td>{esc(clean(n.why))}{f' ({n.count} lines)' if n.count > 1 else ''}</td></tr>"
        for n in report.notices_shown
    )
    return (
        f'<section id="notices"><h2>{esc(NOTICES_HEADING)}</h2>'
        f'<table class="ev">{rows}</table></section>'
    )


def _against(report: Report, clean: Clean) -> str:
    """What changed against the reference run (``--against``), the retry explanation first."""
    if report.against is None:
        return ""
    out = [f'<section id="against"><h2>{esc(clean(title(report.against)))}</h2>']
    for n, (heading, items) in enumerate(outline(report.against)):
        retry = n == 0 and report.against.retry is not None
        tag, cls = ("ol", ' class="retry"') if retry else ("ul", "")
        out.append(f"<p><strong>{_inline(clean(heading))}</strong></p>")
        if items:
            out.append(f"<{tag}{cls}>")
            out.extend(f"<li>{_inline(clean(item))}</li>" for item in items)
            out.append(f"</{tag}>")
    out.append("</section>")
    return "".join(out)


def _coverage(report: Report, clean: Clean) -> str:
    cov = report.coverage
    out = ['<section id="coverage"><h2>Coverage</h2>']
    if cov.evidence:
        kinds = sorted({e.kind for e in cov.evidence})
        out.append("<p>Read: " + ", ".join(f"<code>{esc(k)}</code>" for k in kinds) + "</p>")
    if cov.unchecked:
        out.append("<p><strong>Not checked</strong></p><ul>")
        out.extend(f"<li>{_inline(clean(u))}</li>" for u in cov.unchecked)
        out.append("</ul>")
    if cov.missing:
        out.append("<p><strong>Missing</strong></p><ul>")
        out.extend(f"<li>{_inline(clean(m))}</li>" for m in cov.missing)
        out.append("</ul>")
    if cov.next_steps:
        out.append("<p><strong>Collect next</strong></p><ol>")
        out.extend(f"<li>{_inline(clean(s))}</li>" for s in cov.next_steps)
        out.append("</ol>")
    out.extend(f'<p class="note">{_inline(clean(n))}</p>' for n in cov.notes)
    out.append("</section>")
    return "".join(out)


def _raw(facts: Facts, clean: Clean) -> str:
    by_source: dict[str, dict[int, str]] = defaultdict(dict)
    for n, said in enumerate(facts.lines):
        if n >= MAX_RAW_LINES:
            break
        by_source[said.cite.source].setdefault(said.cite.line, said.cite.text)
    if not by_source:
        return ""
    out = [
        '<section id="raw" class="raw"><h2>Raw evidence</h2><details id="raw-evidence">',
        "<summary>Lines the facts were read from, by source (folded)</summary>",
    ]
    for source, lines in by_source.items():
        width = len(str(max(lines)))
        body = "\n".join(f"{n:>{width}}  {esc(clean(t))}" for n, t in sorted(lines.items()))
        out.append(
            f'<details><summary class="mono">{esc(clean(source))} ({len(lines)} lines)</summary>'
            f"<pre>{body}</pre></details>"
        )
    if len(facts.lines) > MAX_RAW_LINES:
        out.append(f'<p class="note">The first {MAX_RAW_LINES} lines are shown.</p>')
    out.append("</details></section>")
    return "".join(out)


def _picture(anchor: str, title: str, body: str | None, note: str = "") -> str:
    if body is None:
        return ""
    extra = f'<p class="note">{esc(note)}</p>' if note else ""
    return f'<section id="{anchor}" class="picture"><h2>{esc(title)}</h2>{extra}{body}</section>'


def report_html(
    report: Report,
    facts: Facts | None,
    clean: Clean,
    *,
    bandwidth: Bandwidth | None = None,
    pseudonymised: bool = True,
    history: History | None = None,
) -> str:
    """The whole page; without ``facts`` it has no pictures and no raw evidence.

    ``pseudonymised`` says, in the footer, whether ``clean`` hid the names;
    ``history`` (the fleet history of the report's nodes and GPUs) adds its picture.
    """
    roots = [f.id for f in report.findings if f.root_cause]
    title = f"{GENERATOR}: {report.verdict.value}" + (f" — {roots[0]}" if roots else "")
    folded = dict(report.folded)
    body = [_header(report, clean), "<main>"]
    if facts is not None:
        body.append(
            _picture(
                "timeline",
                "Failure timeline",
                timeline_svg(report, facts, clean),
                "Each mark is a failure line; hover for its text and source:line.",
            )
        )
    body.append('<section id="findings"><h2>Findings</h2>')
    if not report.findings:
        body.append('<p class="note">No finding.</p>')
    body.extend(
        _finding(n, f, folded.get(f.id, ()), clean) for n, f in enumerate(report.findings, 1)
    )
    body.append("</section>")
    body.append(_notices(report, clean))
    body.append(_hypotheses(report, clean))
    if facts is not None:
        body.append(_picture("memory", "GPU memory by process", memory_svg(facts, clean)))
        body.append(_picture("topology", "GPU/NIC topology", topology_html(facts, clean)))
    if bandwidth is not None:
        chart = bandwidth_svg(
            bandwidth.series, bandwidth.expected_gbytes_s, labels=bandwidth.labels
        )
        body.append(_picture("bandwidth", "Bus bandwidth", chart, bandwidth.note))
    body.append(_against(report, clean))
    if history is not None:
        note = "Each square is a recorded run of that node or GPU"
        note += f" ({clean(history.source)})." if history.source else "."
        body.append(_picture("history", "Node and GPU history", history_svg(history, clean), note))
    body.append(_coverage(report, clean))
    if facts is not None:
        body.append(_raw(facts, clean))
    names = (
        "hosts, addresses and users pseudonymised"
        if pseudonymised
        else "real host names, addresses and users kept"
    )
    body.append(
        f"<footer>nccl-doctor {esc(__version__)} · one self-contained file: no scripts, "
        f"no network · secrets redacted, {names}</footer></main>"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="generator" content="{esc(GENERATOR)} {esc(__version__)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(CSP)}">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
        + "".join(body)
        + "</body></html>\n"
    )
