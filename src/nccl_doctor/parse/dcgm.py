"""The ``dcgm`` kind: ``dcgmi diag`` and ``dcgmi health -c`` tables.

Both print a box of ``| name | value |`` rows (DCGM 2.x-4.x, dcgmi/Diag.cpp and
dcgmi/Health.cpp). A message longer than its column goes on in rows whose
name column is blank, cut differently by each command:

* ``dcgmi diag`` cuts every 45 characters, wherever that falls (``... per m``,
  ``inute for GPU 0``): the parts are joined as they are, a part that ended in
  a space keeping it (:data:`_DIAG_CUT`). A test's row says its result
  (``Pass``, ``Fail``, ``Warn``, ``Skip``) and, per GPU, ``GPU0: Fail``; the
  messages follow as ``Warning`` / ``Warning: GPU0`` rows (``Info`` rows in
  verbose output are notes).
* ``dcgmi health -c`` cuts at a word before 54 characters: the parts are
  joined with a space. A system's row (``Memory system``, ``PCIe system``...)
  says ``Warning`` or ``Failure``; its messages follow.

Each message becomes a :class:`~nccl_doctor.facts.gpu.DcgmReport` with the
result of the test (or system) and GPU it belongs to, and the catalogue's row
for its words (dcgm_errors.h's messages) with the ids that row points at. A
message reporting an Xid (``Detected XID 79 for GPU 1``) is also that
:class:`~nccl_doctor.facts.host.XidEvent`, which the Xid rules read whoever saw it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.catalogue import message_of
from nccl_doctor.facts.gpu import DcgmReport
from nccl_doctor.facts.host import XidEvent
from nccl_doctor.knowledge.signatures import by_id
from nccl_doctor.parse._blocktext import strip_ansi
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._values import cite
from nccl_doctor.parse.base import BlockParser

#: dcgmi diag's message column (DATA_INFO_TAG_LEN): every part but the last is this long.
_DIAG_CUT = 45
_RESULTS = frozenset({"Pass", "Fail", "Warn", "Skip", "Not Run", "Warning", "Failure", "Healthy"})
_ENTITY = LazyPattern(
    r"^(?P<entity>(?:GPU|NvSwitch|CPU|Link)\s?\d{1,5}): (?P<result>\w[\w ]{0,20})$"
)
_NAMED = LazyPattern(r"^(?P<kind>Warning|Info|Error)(?:: (?P<entity>\w{1,12}\d{1,5}))?$")
_HEALTH_GPU = LazyPattern(r"^-> (?P<index>\d{1,5})$")
_MAX_MESSAGE = 2000
#: the catalogue's row for DCGM_FR_XID_ERROR ("Detected XID %u for GPU %u": its captures
#: ``value`` and ``value_2`` are the Xid and the GPU)
_XID_SIGNATURE = "driver.dcgm.xid_error"


@dataclass(slots=True)
class _Row:
    """One table row: its line, name column and value column (raw, padding kept)."""

    line: Line
    name: str
    value: str


@dataclass(slots=True)
class _Message:
    head: Line
    test: str | None
    entity: str | None
    result: str | None
    kind: str
    parts: list[str] = field(default_factory=list)


def _row(line: Line) -> _Row | None:
    text = strip_ansi(line.text).rstrip()
    if not text.startswith("|") or text.count("|") < 3:
        return None
    cells = text.split("|")
    return _Row(line, cells[1].strip(), "|".join(cells[2:-1]))


def dcgm_title(text: str) -> bool:
    """Whether ``text`` is the title row of a dcgmi diag or health table."""
    return ("| Diagnostic " in text and "| Result " in text) or any(
        a in text for a in DcgmParser.anchors[1:]
    )


class DcgmParser(BlockParser):
    """Reads dcgmi's diag and health tables into one fact per reported message."""

    kind = "dcgm"
    anchors = ("| Diagnostic ", "Health Monitor Report", "| Overall Health ")

    def starts(self, line: Line) -> bool:
        """The table's title row (the border above it starts nvidia-smi's parser, which the
        title ends)."""
        return dcgm_title(line.text)

    def accepts(self, line: Line, block: Sequence[Line]) -> bool:
        """Rows and rules of the box."""
        text = strip_ansi(line.text).strip()
        return text.startswith(("|", "+"))

    def parse(self, block: Sequence[Line]) -> list[Fact]:
        """One DcgmReport per message."""
        health = any(
            "Health Monitor Report" in ln.text or "Overall Health" in ln.text for ln in block
        )
        rows = [r for ln in block if (r := _row(ln)) is not None]
        return with_xids(_health(rows) if health else _diag(rows))


def _diag(rows: list[_Row]) -> list[Fact]:
    out: list[Fact] = []
    test: str | None = None
    results: dict[str | None, str] = {}
    current: _Message | None = None

    def close() -> None:
        nonlocal current
        if current is not None:
            out.append(_report("diag", current, "".join(current.parts).strip()))
        current = None

    for row in rows:
        value = row.value.removeprefix(" ")
        if row.name.startswith("---") or not (row.name or value.strip()):
            continue
        if not row.name:
            # an entity's result row (GPU3: Pass) ends the message before it
            if m := _ENTITY.match(value.strip()):
                close()
                results[m["entity"].replace(" ", "")] = m["result"].strip()
            elif current is not None:
                current.parts.append(value[:_DIAG_CUT].ljust(_DIAG_CUT))
            continue
        close()
        named = _NAMED.match(row.name)
        if named is not None:
            entity = named["entity"]
            current = _Message(
                row.line, test, entity, results.get(entity, results.get(None)), named["kind"]
            )
            current.parts.append(value[:_DIAG_CUT].ljust(_DIAG_CUT))
            continue
        test = row.name
        results = {None: value.strip().split(" - ")[0]}
    close()
    return out


def _health(rows: list[_Row]) -> list[Fact]:
    out: list[Fact] = []
    group = "GPU"  # the entity group the rows below belong to (a row of its name opens it)
    gpu: str | None = None
    system: str | None = None
    result: str | None = None
    current: _Message | None = None

    def close() -> None:
        nonlocal current
        if current is not None:
            out.append(_report("health", current, " ".join(current.parts)))
        current = None

    for row in rows:
        value = row.value.strip()
        name = row.name
        if name and (m := _HEALTH_GPU.match(name)):
            close()
            gpu, system, result = f"{group}{m['index']}", None, value or None
            continue
        if name.startswith("-> "):
            close()
            system, result = name[3:], value or None
            continue
        if name:
            close()
            if name in ENTITY_GROUPS and not value:
                group, gpu, system = name, None, None
            if name == OVERALL and value:
                out.append(overall_report(cite(row.line), value, "health"))
            continue
        if value and system is not None and value not in _RESULTS:
            if current is None:
                current = _Message(row.line, system, gpu, result, "health")
            current.parts.append(value)
    close()
    return out


#: DCGM's entity groups (dcgmlib/src/dcgm_fields.cpp DcgmFieldsGetEntityGroupString): the health
#: report's rows (and JSON keys) under which each group's entities with incidents are listed
ENTITY_GROUPS = frozenset(
    {"GPU", "vGPU", "Switch", "GPU_I", "GPU_CI", "LINK", "CPU", "CPU_CORE", "ConnectX", "None"}
)
#: The health check's verdict over every entity and system (``Healthy``, ``Warning``, ``Failure``)
OVERALL = "Overall Health"


def overall_report(where: Cite, result: str, source: str) -> DcgmReport:
    """DCGM's verdict over the whole check, as a note (its failures are the systems' reports):
    a healthy check is evidence that the GPUs passed it."""
    return DcgmReport(
        signature=None,
        points_at=(),
        cite=where,
        source=source,
        test=OVERALL,
        entity=None,
        result=result,
        kind="Info",
        message=f"{OVERALL}: {result}",
    )


def _xid(report: DcgmReport) -> XidEvent | None:
    """The Xid a DCGM message reports (``Detected XID 79 for GPU 1``: DCGM_FR_XID_ERROR, which
    DCGM raises from the driver's Xid event), as the Xid it is."""
    if report.signature != _XID_SIGNATURE:
        return None
    m = by_id()[_XID_SIGNATURE].compiled().search(report.message)
    if m is None:
        return None
    return XidEvent(
        cite=report.cite,
        xid=int(m["value"]),
        gpu_label=f"GPU{m['value_2']}",
        message=f"reported by DCGM ({report.source})",
        detail=report.message,
    )


def _report(source: str, msg: _Message, text: str) -> DcgmReport:
    return dcgm_report(
        cite(msg.head),
        text,
        source=source,
        test=msg.test,
        entity=msg.entity,
        result=msg.result,
        kind=msg.kind,
    )


def dcgm_report(
    where: Cite,
    text: str,
    *,
    source: str,
    test: str | None,
    entity: str | None,
    result: str | None,
    kind: str,
) -> DcgmReport:
    """One DCGM message as a report, with the catalogue's row for its words (the tables'
    rows, ``dcgmi diag -j``'s warnings and ``dcgmi health -c -j``'s messages alike)."""
    sig = message_of(text[:_MAX_MESSAGE])
    return DcgmReport(
        signature=sig.id if sig is not None else None,
        points_at=sig.hint_ids if sig is not None else (),
        cite=where,
        source=source,
        test=test,
        entity=entity,
        result=result,
        kind=kind,
        message=text[:_MAX_MESSAGE],
    )


def with_xids(reports: Sequence[Fact]) -> list[Fact]:
    """``reports`` and, after them, the Xid each one that reports an Xid is."""
    xids = [x for r in reports if isinstance(r, DcgmReport) and (x := _xid(r)) is not None]
    return [*reports, *xids]
