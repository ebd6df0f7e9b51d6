"""The ``dcgm`` kind in JSON: ``dcgmi diag -j`` and ``dcgmi health -c -j``, read as a whole file.

dcgmi writes one object (jsoncpp's styled output; dcgmi/Diag.cpp ``HelperJsonBuildOutput``,
keys from nvvs's NvvsJsonStrings.h). Under ``DCGM Diagnostic`` (DCGM 4; ``DCGM GPU
Diagnostic`` in DCGM 2-3) a ``test_categories`` list holds ``{category, tests}``; a test has
its ``name`` and ``results``, one per entity it ran on, and from DCGM 4 a ``test_summary``
with the test's own result and every message. A result has its ``status`` (``Pass``,
``Fail``, ``Warn``, ``Skip``), its entity (DCGM 4: ``entity_group`` ``GPU`` and
``entity_id``; before: ``gpu_id``) and ``warnings``, each ``{warning, error_id, ...}``
(DCGM 3's level-one tests put the text under ``warnings`` inside each entry). Each message
becomes a :class:`~nccl_doctor.facts.gpu.DcgmReport` as a table row's does, cited at the line
of the file that holds it (found for all in one pass); a summary's message that a result
already carried is not counted twice.

``dcgmi health -c -j`` goes through dcgmi's generic output tree (dcgmi/DcgmiOutput.cpp
``DcgmiOutputJson``; dcgmi/Health.cpp ``GenerateOutputFromResponse``, the same in DCGM 3.3 and
4.6): ``header`` holds ``Health Monitor Report``, ``body`` ``Overall Health`` and one node per
entity group (``GPU``, ``Switch``, ``ConnectX``...) whose ``children`` are the entities with an
incident, by id; under each, ``Errors`` has one node per health system (``Memory system``,
``PCIe system``, ``NVLINK system``...; the critical Xids and NVSwitch errors under ``Internal
error``) with the worst result as its ``value`` and its messages, joined with ", " and cut
into pieces of at most 54 characters at words, as ``overflow``. Each system's pieces joined
again make one report, as the table's rows do; the overall verdict is kept as a note, so a
healthy check (no entity) is read as one.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._values import json_document
from nccl_doctor.parse.base import FileParser
from nccl_doctor.parse.dcgm import (
    ENTITY_GROUPS,
    OVERALL,
    dcgm_report,
    overall_report,
    with_xids,
)

KIND = "dcgm"
#: A diagnostic's JSON is a few hundred KiB at most; larger files are not read.
MAX_BYTES = 16 << 20
_ROOTS = ("DCGM Diagnostic", "DCGM GPU Diagnostic")
#: ``dcgmi health -j``'s header, and its body's keys: jsoncpp sorts them, so the document opens
#: with the body and the body with an entity group (dcgm_fields.cpp's names) or the overall health
_HEALTH = "Health Monitor Report"
_HEALTH_HEAD = LazyPattern(
    rb'\{\s{0,200}"body"\s{0,20}:\s{0,200}\{\s{0,200}"(?P<key>[A-Za-z_ ]{1,20})"\s{0,20}:'
)
#: Items read of any one list (categories, tests, results, warnings).
_MAX_ITEMS = 4096
#: A message's line as jsoncpp writes it: ``"warning" : "..."`` (DCGM 3: ``"warnings"``), or a
#: piece of one in an ``overflow`` list: a string alone on its line
_WARNING_LINE = LazyPattern(r'(?:"warnings?" : )?(?P<s>".*"),?')


def _items(value: object) -> Iterator[Mapping[str, Any]]:
    items = value if isinstance(value, list) else []
    return (i for i in itertools.islice(items, _MAX_ITEMS) if isinstance(i, Mapping))


def _text(value: object) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _entity(result: Mapping[str, Any]) -> str | None:
    """``GPU2`` (DCGM 4's entity group and id, or DCGM 3's gpu id), else ``None``."""
    group = _text(result.get("entity_group")) or ("GPU" if "gpu_id" in result else None)
    ident = result.get("entity_id", result.get("gpu_id"))
    if group is None or isinstance(ident, bool) or not isinstance(ident, int | str):
        return None
    ident = str(ident).strip()
    return f"{group}{ident}" if ident.isdigit() else None


def _messages(result: Mapping[str, Any]) -> Iterator[str]:
    for warning in _items(result.get("warnings")):
        text = _text(warning.get("warning")) or _text(warning.get("warnings"))
        if text is not None:
            yield text


class DcgmJsonParser(FileParser):
    """Reads one ``dcgmi diag -j`` or ``dcgmi health -c -j`` output into one report per
    message."""

    kind: ClassVar[str] = KIND
    max_bytes: ClassVar[int] = MAX_BYTES

    @classmethod
    def sniff(cls, head: bytes) -> bool:
        """A JSON object whose first key is the diagnostic's, or the health report's body
        (jsoncpp sorts the keys)."""
        start = head.lstrip()[:200]
        if not start.startswith(b"{"):
            return False
        return any(f'"{r}"'.encode() in start for r in _ROOTS) or _opens_health(start)

    def parse(self, data: bytes, source: str, rank: int | None) -> tuple[list[Fact], list[str]]:
        """Facts of one diagnostic or health check, and coverage notes. Never raises."""
        what = "dcgmi health JSON" if _opens_health(data[:4096].lstrip()) else "dcgmi diag JSON"
        value, text, why = json_document(data, what, MAX_BYTES)
        if why is not None:
            return [], [why]
        lines = _message_lines(text)
        if _is_health(value):
            return with_xids(_health(value["body"], source, lines)), []
        root = next((value[r] for r in _ROOTS if isinstance(value, Mapping) and r in value), None)
        if not isinstance(root, Mapping):
            return [], [
                "dcgmi JSON: neither a diagnostic (diag -j) nor a health report (health -j)"
            ]
        facts: list[Fact] = []
        for category in _items(root.get("test_categories")):
            for test in _items(category.get("tests")):
                facts.extend(_test(test, source, lines))
        return with_xids(facts), []


def _test(test: Mapping[str, Any], source: str, lines: Mapping[str, int]) -> list[Fact]:
    name = _text(test.get("name"))
    out: list[Fact] = []
    told: set[str] = set()
    summary = test.get("test_summary")
    results = [(r, False) for r in _items(test.get("results"))]
    if isinstance(summary, Mapping):
        results.append((summary, True))  # last: the messages the results carried are told
    for result, is_summary in results:
        status, entity = _text(result.get("status")), _entity(result)
        head = " ".join(p for p in (name, "on " + entity if entity else None, status) if p)
        for message in _messages(result):
            if is_summary and message in told:
                continue
            told.add(message)
            report = dcgm_report(
                Cite.of(source, lines.get(message, 1), f"dcgmi diag: {head}: {message}"),
                message,
                source="diag",
                test=name,
                entity=entity,
                result=status,
                kind="Warning",
            )
            out.append(report)
    return out


def _opens_health(start: bytes) -> bool:
    """Whether a document's first bytes open a health report: its body, first keyed by an
    entity group or the overall verdict."""
    m = _HEALTH_HEAD.match(start[:200])
    return m is not None and m["key"].decode() in {OVERALL, *ENTITY_GROUPS}


def _is_health(value: object) -> bool:
    if not isinstance(value, Mapping) or not isinstance(value.get("body"), Mapping):
        return False
    header = value.get("header")
    return (isinstance(header, list) and _HEALTH in header) or OVERALL in value["body"]


def _children(node: object) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """A tree node's children, by name (a bounded number)."""
    kids = node.get("children") if isinstance(node, Mapping) else None
    if not isinstance(kids, Mapping):
        return iter(())
    return (
        (str(k), v) for k, v in itertools.islice(kids.items(), _MAX_ITEMS) if isinstance(v, Mapping)
    )


def _health(body: Mapping[str, Any], source: str, lines: Mapping[str, int]) -> list[Fact]:
    """One report per entity and health system that has incidents: its pieces joined again."""
    out: list[Fact] = []
    overall = body.get(OVERALL)  # first, as the table prints it
    if isinstance(overall, Mapping) and (result := _text(overall.get("value"))):
        where = Cite.of(source, lines.get(OVERALL, 1), f"{OVERALL}: {result}")
        out.append(overall_report(where, result, "health"))
    for group, node in itertools.islice(body.items(), _MAX_ITEMS):
        if group == OVERALL:
            continue
        for ident, entity in _children(node):
            errors = dict(_children(entity)).get("Errors")
            for system, incidents in _children(errors):
                pieces = [
                    t
                    for p in itertools.islice(_list(incidents.get("overflow")), _MAX_ITEMS)
                    if (t := _text(p)) is not None
                ]
                if not pieces:
                    continue
                message, result = " ".join(pieces), _text(incidents.get("value"))
                head = " ".join(p for p in (f"{group}{ident}", system, result) if p)
                out.append(
                    dcgm_report(
                        Cite.of(
                            source, lines.get(pieces[0], 1), f"dcgmi health: {head}: {message}"
                        ),
                        message,
                        source="health",
                        test=system,
                        entity=f"{group}{ident}",
                        result=result,
                        kind="health",
                    )
                )
    return out


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def _message_lines(text: str) -> dict[str, int]:
    """The first line of each message the document holds (jsoncpp writes each key, and each
    item of a list, on a line of its own), found in one pass: a message is cited there, the
    others at line 1."""
    out: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith(f'"{OVERALL}"'):  # the health report's verdict, as a key
            out.setdefault(OVERALL, number)
        elif '"' in line and (m := _WARNING_LINE.fullmatch(line.strip())):
            try:
                message = json.loads(m["s"])
            except (ValueError, RecursionError):
                continue
            if isinstance(message, str) and message.strip():
                out.setdefault(message.strip(), number)
    return out
