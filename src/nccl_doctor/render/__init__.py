"""Renderers: reports and parse results to text, JSON, Markdown. No rule logic here."""

from __future__ import annotations

import json

from nccl_doctor.redact import Pseudonyms, redact
from nccl_doctor.report import Report

FORMATS = ("text", "json", "markdown")


def render_report(report: Report, fmt: str, *, color: bool = False, width: int = 80) -> str:
    """The report in ``fmt``: secrets redacted always; Markdown also pseudonymised."""
    from nccl_doctor.render.markdown import report_markdown  # noqa: PLC0415 -- lazy per format
    from nccl_doctor.render.report_json import report_json  # noqa: PLC0415
    from nccl_doctor.render.text import report_text  # noqa: PLC0415

    if fmt == "json":
        return json.dumps(report_json(report, redact), ensure_ascii=False, indent=1) + "\n"
    if fmt == "markdown":
        hosts = set(report.hosts)
        for finding in report.findings:
            hosts.update(finding.subjects.hosts)
        return report_markdown(report, Pseudonyms(hosts).apply)
    return report_text(report, width=width, color=color, clean=redact)
