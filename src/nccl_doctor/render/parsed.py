"""``nccl-doctor parse`` output: what was read, section by section.

Every line read already passed the reader's gate (secrets redacted, control
characters stripped); the output is cleaned once more, in depth.
"""

from __future__ import annotations

import json
from typing import Any

from nccl_doctor.evidence.reader import ReadResult
from nccl_doctor.facts.serialize import to_jsonable
from nccl_doctor.redact import redact_data, scrub


def parsed_json(result: ReadResult) -> dict[str, Any]:
    """The JSON shape of ``parse --format json``."""
    data: dict[str, Any] = {
        "sections": [
            {
                "kind": s.kind,
                "source": s.source,
                "lines": [s.start, s.end],
                "line_count": s.line_count,
                "ranks": sorted(s.ranks),
                "hosts": sorted(s.hosts),
                "facts": [to_jsonable(f) for f in s.facts],
            }
            for s in result.sections
        ],
        "coverage": coverage_json(result),
    }
    cleaned: dict[str, Any] = redact_data(data)
    return cleaned


def coverage_json(result: ReadResult) -> dict[str, Any]:
    """Which sources were read, how much of them was recognised, and the notes."""
    return {
        "sources": [
            {
                "source": s.source,
                "bytes": s.bytes_read,
                "lines": s.lines,
                "recognised_lines": s.recognised_lines,
                "kinds": s.kinds,
            }
            for s in result.sources
        ],
        "notes": [{"source": n.source, "message": n.message} for n in result.notes],
    }


def _value(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 120 else text[:117] + "..."


def parsed_text(result: ReadResult) -> str:
    """A readable listing: one header per section, one line per fact."""
    out: list[str] = []
    for s in result.sections:
        who = []
        if s.ranks:
            who.append("ranks " + ",".join(map(str, sorted(s.ranks)[:16])))
        if s.hosts:
            who.append("hosts " + ",".join(sorted(s.hosts)[:8]))
        extra = f" ({'; '.join(who)})" if who else ""
        out.append(f"{s.source}:{s.start}-{s.end}  {s.kind}  {len(s.facts)} facts{extra}")
        for fact in s.facts:
            data = to_jsonable(fact)
            cite = data.pop("cite")
            kind = data.pop("fact")
            fields = ", ".join(
                f"{k}={_value(v)}" for k, v in data.items() if v not in (None, [], "")
            )
            out.append(f"  {kind} @{cite['line']}: {fields}")
    out.extend(
        f"read {summary.source}: {summary.lines} lines, {summary.recognised_lines} recognised"
        f" ({', '.join(summary.kinds) or 'no known kind'})"
        for summary in result.sources
    )
    out.extend(f"note: {n.source}: {n.message}" for n in result.notes)
    return "\n".join(map(scrub, out))
