"""The reference of ``diagnose --against REF``: a JSON report file, or a run of the history store.

``REF`` is a file written by ``nccl-doctor diagnose --format json`` (or
``check``/``probe``/``run`` in JSON), or ``last-good`` (the last good run of
the same nodes in the history store), or a run id of the store (digits). A
reference that cannot be used is a one-line :class:`~nccl_doctor.errors.UsageError`
saying why: no such file, not JSON, not an nccl-doctor report, a report of a
schema this version does not read, a report without a fingerprint.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from nccl_doctor import GENERATOR, __version__
from nccl_doctor.compare.diff import compare
from nccl_doctor.compare.retry import explain
from nccl_doctor.errors import UsageError
from nccl_doctor.redact import scrub
from nccl_doctor.report import SCHEMA_VERSION, Report

#: The largest reference report read, in bytes (a report is kilobytes; this bounds memory).
MAX_REPORT_BYTES = 64 << 20
_HINT = "give a report written by `nccl-doctor diagnose EVIDENCE --format json -o FILE`"


@dataclass(frozen=True, slots=True)
class Reference:
    """A reference report and how to name it (``good.json``, ``run 42``, ``last good run 42``)."""

    label: str
    report: Mapping[str, Any]


def _check(report: object, name: str) -> Mapping[str, Any]:
    """``report`` if it is an nccl-doctor report this version can compare, else the error."""
    tool = report.get("tool") if isinstance(report, Mapping) else None
    if not isinstance(report, Mapping) or not isinstance(tool, Mapping) or "verdict" not in report:
        raise UsageError(f"{name} is not an nccl-doctor JSON report", _HINT)
    if tool.get("name") != GENERATOR:
        raise UsageError(f"{name} is a report of {tool.get('name')!r}, not of {GENERATOR}", _HINT)
    version = report.get("schema_version")
    written = tool.get("version", "?")
    if version != SCHEMA_VERSION:
        raise UsageError(
            f"{name} is a report of schema_version {version} (nccl-doctor {written}); this "
            f"nccl-doctor {__version__} reads schema_version {SCHEMA_VERSION}",
            "diagnose the reference's evidence again with this version, and compare with that",
        )
    if not isinstance(report.get("fingerprint"), Mapping):
        raise UsageError(
            f"{name} has no fingerprint: nccl-doctor {written} wrote it before reports carried one",
            "diagnose the reference's evidence again with this version, and compare with that",
        )
    return report


def load_report(path: str) -> Reference:
    """A JSON report file as a reference (every way it can be unusable is a UsageError)."""
    file = Path(path)
    try:
        size = file.stat().st_size
        if not file.is_file():
            raise UsageError(f"{path} is not a file", _HINT)
        if size > MAX_REPORT_BYTES:
            raise UsageError(f"{path} is {size >> 20} MiB: too big for a report", _HINT)
        data = file.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}", _HINT) from exc
    try:
        report = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"{path} is not JSON ({exc.__class__.__name__})", _HINT) from exc
    return Reference(path, _check(report, path))


def _from_store(ref: str, hosts: Sequence[str], job: str | None, db: str | None) -> Reference:
    """``last-good`` or a run id, from the history store (``db``, else its default)."""
    from nccl_doctor.fleet.db import FleetError  # noqa: PLC0415 -- only a stored reference
    from nccl_doctor.fleet.store import open_store  # noqa: PLC0415

    with open_store(db, create=False) as store:
        if ref == "last-good":
            run = store.last_good(job=job, nodes=tuple(hosts))
            if run is None:
                raise UsageError(
                    "no good run of these nodes is recorded"
                    + (f" ({', '.join(hosts[:4])})" if hosts else ""),
                    "record runs with --record, or give a JSON report file",
                )
            label = f"last good run {run.id}"
        else:
            try:
                run = store.get(int(ref))
            except FleetError as exc:
                raise UsageError(
                    f"no run {ref} in the history store", "see `nccl-doctor history`"
                ) from exc
            label = f"run {ref}"
        return Reference(label, _check(run.report, label))


def in_store(ref: str) -> bool:
    """Whether ``REF`` names a run of the history store (``last-good``, a run id) not a file."""
    text = ref.strip()
    return text == "last-good" or (text.isascii() and text.isdigit() and not Path(text).exists())


def resolve(
    ref: str, *, hosts: Sequence[str] = (), job: str | None = None, db: str | None = None
) -> Reference:
    """The reference ``REF`` names: ``last-good``, a run id (digits), or a JSON report file."""
    return _from_store(ref.strip(), hosts, job, db) if in_store(ref) else load_report(ref)


def nodes_of(report: Report) -> tuple[str, ...]:
    """The hosts a run ran on, as its fingerprint names them (no launcher's ``localhost``)."""
    return report.fingerprint.hosts if report.fingerprint is not None else report.hosts


def summary(report: Report) -> dict[str, Any]:
    """What a comparison reads of a report, in the JSON report's shape (redacted alike)."""
    return {
        "verdict": report.verdict.value,
        "findings": [{"id": f.id, "severity": f.severity.value} for f in report.findings],
        "hypotheses": [{"id": h.id, "probability": h.probability} for h in report.hypotheses],
        "fingerprint": report.fingerprint.as_json(scrub) if report.fingerprint else {},
    }


def compared(report: Report, reference: Reference) -> Report:
    """``report`` with what changed against ``reference`` (its ``against`` part)."""
    this = summary(report)
    comparison = compare(this, reference.report, label=reference.label)
    retry = explain(comparison, this, reference.report)
    if retry is not None:
        comparison = replace(comparison, retry=retry)
    return replace(report, against=comparison)
