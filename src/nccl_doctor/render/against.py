"""The ``--against`` part of a report: the retry explanation, then what changed, by section.

One outline (:func:`outline`: a title, then headed lists) feeds the text,
Markdown and HTML renderers alike; the JSON form is the comparison's own
(:meth:`~nccl_doctor.compare.diff.Comparison.as_json`).
"""

from __future__ import annotations

from nccl_doctor.compare.diff import Change, Comparison

_HEADINGS = {
    "nccl": "NCCL init",
    "environment": "Environment",
    "versions": "Versions",
    "nodes": "Nodes and GPUs",
    "errors": "Error set",
}


def title(c: Comparison) -> str:
    """``Against good.json (healthy, nccl-doctor 0.1.0)``."""
    tool = f", nccl-doctor {c.reference_tool}" if c.reference_tool else ""
    return f"Against {c.reference} ({c.reference_verdict}{tool})"


def _item(change: Change) -> str:
    """One change; a masking switch says which run set it and what it trades."""
    if not change.masks:
        return change.phrase()
    side = "this run" if change.masked_in == "this" else "the reference"
    return f"{change.phrase()} - a workaround in {side}, not a repair: {change.masks}"


def outline(c: Comparison) -> list[tuple[str, list[str]]]:
    """Headed lists: the retry explanation first, then each section's changes, then the gaps."""
    out: list[tuple[str, list[str]]] = []
    if c.retry is not None:
        out.append((c.retry.summary, [r.text for r in c.retry.reasons]))
    if not c.changes:
        out.append(("Nothing changed in what both runs show", []))
    for section, heading in _HEADINGS.items():
        found = c.section(section)
        if found:
            out.append((heading, [_item(change) for change in found]))
    if c.not_compared:
        out.append(("Not compared", list(c.not_compared)))
    return out
