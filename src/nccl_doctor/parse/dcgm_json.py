"""The ``dcgm`` kind in JSON: ``dcgmi diag -j``, read as a whole file.

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
from nccl_doctor.parse.dcgm import dcgm_report, with_xids

KIND = "dcgm"
#: A diagnostic's JSON is a few hundred KiB at most; larger files are not read.
MAX_BYTES = 16 << 20
_ROOTS = ("DCGM Diagnostic", "DCGM GPU Diagnostic")
#: Items read of any one list (categories, tests, results, warnings).
_MAX_ITEMS = 4096
#: A message's line as jsoncpp writes it: ``"warning" : "..."`` (DCGM 3: ``"warnings"``)
_WARNING_LINE = LazyPattern(r'"warnings?" : (?P<s>".*"),?')


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
    """Reads one ``dcgmi diag -j`` output into one report per message."""

    kind: ClassVar[str] = KIND
    max_bytes: ClassVar[int] = MAX_BYTES

    @classmethod
    def sniff(cls, head: bytes) -> bool:
        """A JSON object whose first key is the diagnostic's (jsoncpp sorts the keys)."""
        start = head.lstrip()[:200]
        return start.startswith(b"{") and any(f'"{r}"'.encode() in start for r in _ROOTS)

    def parse(self, data: bytes, source: str, rank: int | None) -> tuple[list[Fact], list[str]]:
        """Facts of one diagnostic, and coverage notes. Never raises."""
        value, text, why = json_document(data, "dcgmi diag JSON", MAX_BYTES)
        if why is not None:
            return [], [why]
        root = next((value[r] for r in _ROOTS if isinstance(value, Mapping) and r in value), None)
        if not isinstance(root, Mapping):
            return [], ["dcgmi diag JSON: no diagnostic object"]
        lines = _message_lines(text)
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


def _message_lines(text: str) -> dict[str, int]:
    """The first line of each message the document holds (jsoncpp writes each key on a line
    of its own), found in one pass: a message is cited there, the others at line 1."""
    out: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if '"warning' in line and (m := _WARNING_LINE.fullmatch(line.strip())):
            try:
                message = json.loads(m["s"])
            except (ValueError, RecursionError):
                continue
            if isinstance(message, str) and message.strip():
                out.setdefault(message.strip(), number)
    return out
