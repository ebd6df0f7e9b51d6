"""Renderers: reports and parse results to text, JSON, Markdown, HTML. No rule logic here."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from nccl_doctor.redact import Pseudonyms, scrub
from nccl_doctor.report import Report

if TYPE_CHECKING:
    from nccl_doctor.facts.store import Facts
    from nccl_doctor.render.history_chart import History
    from nccl_doctor.render.html import Bandwidth

FORMATS = ("text", "json", "markdown", "html")


def pseudonyms(report: Report) -> Pseudonyms:
    """The pseudonyms of one report: its hosts (inventory too), every finding's, the reference's."""
    hosts = set(report.hosts) | set(report.inventory.hosts)
    for finding in report.findings:
        hosts.update(finding.subjects.hosts)
    if report.against is not None:
        hosts.update(report.against.hosts)
    return Pseudonyms(hosts)


def render_report(
    report: Report,
    fmt: str,
    *,
    color: bool = False,
    width: int = 80,
    facts: Facts | None = None,
    verbosity: int = 0,
    names: Pseudonyms | None = None,
    keep_names: bool = False,
    history: History | None = None,
) -> str:
    """The report in ``fmt``: secrets redacted always; Markdown and HTML also pseudonymised.

    ``facts`` feed the pictures of the HTML report (timeline, GPU memory,
    topology) and its raw evidence; without them the page has neither.
    ``width``, ``color`` and ``verbosity`` (-1 brief, 0, 1 every evidence
    line whole) shape the text format only. ``history`` (the fleet history of
    the report's nodes and GPUs, built by ``nccl_doctor.fleet.picture``) adds
    the HTML report's history picture.
    Markdown and HTML, made to be shared, replace hosts, addresses and users
    by pseudonyms (``names``, else the report's own :func:`pseudonyms`; its
    :meth:`~Pseudonyms.key` then maps them back), unless ``keep_names``.
    """
    # each format imports its renderer alone (HTML's pictures and rich are not cheap)
    if fmt == "json":
        from nccl_doctor.render.report_json import report_json  # noqa: PLC0415

        return json.dumps(report_json(report, scrub), ensure_ascii=False, indent=1) + "\n"
    if fmt not in ("markdown", "html"):
        from nccl_doctor.render.text import report_text  # noqa: PLC0415

        return report_text(report, width=width, color=color, clean=scrub, verbosity=verbosity)
    names = names if names is not None else pseudonyms(report)

    def shared(clean: Callable[[str], str]) -> str:
        if fmt == "markdown":
            from nccl_doctor.render.markdown import report_markdown  # noqa: PLC0415

            return report_markdown(report, clean)
        from nccl_doctor.render.html import report_html  # noqa: PLC0415

        bandwidth = _probe_curves(facts)
        return report_html(
            report,
            facts,
            clean,
            bandwidth=bandwidth,
            pseudonymised=not keep_names,
            history=history,
        )

    if keep_names:
        return shared(scrub)
    known = len(names.key())
    page = shared(names.apply)
    if len(names.key()) != known:
        page = shared(names.apply)  # names met part way are now hidden from the start, too
    return page


def _probe_curves(facts: Facts | None) -> Bandwidth | None:
    """Bus-bandwidth curves of a probe result in the evidence, one per collective."""
    from nccl_doctor.facts.probe import ProbeBandwidth  # noqa: PLC0415
    from nccl_doctor.render.html import Bandwidth  # noqa: PLC0415

    if facts is None:
        return None
    curves: dict[str, list[tuple[int, float]]] = {}
    expected: list[float] = []
    for bw in facts.of(ProbeBandwidth):
        if bw.size_bytes and bw.busbw_gbytes_s is not None and (bw.world or 0) > 1:
            curves.setdefault(bw.kind, []).append((bw.size_bytes, bw.busbw_gbytes_s))
            if bw.expected_gbytes_s:
                expected.append(bw.expected_gbytes_s)
    if not curves:
        return None
    return Bandwidth(
        series=[sorted(points) for points in curves.values()],
        expected_gbytes_s=max(expected) if expected else None,
        labels=list(curves),
        note="bus bandwidth by nccl-tests' formulas, from the probe result in the evidence",
    )
