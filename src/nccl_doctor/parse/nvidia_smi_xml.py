"""``nvidia-smi -q -x`` XML, DTD versions up to v13 (drivers 418 to 595).

The block runs from ``<?xml`` or ``<nvidia_smi_log>`` to ``</nvidia_smi_log>``.
It is read with ElementTree's incremental parser fed line by line, so each
element knows the line it started on (for citations) and a truncated paste
still yields every element that was complete. The XML declaration and any
``<!DOCTYPE ...>`` (with its internal subset) and ``<!ENTITY`` lines are
dropped before parsing, so no entity can be declared or expanded; an
undeclared reference just ends the read there. ``<attached_gpus>`` is
reported as printed even when fewer ``<gpu>`` elements follow. Old and new
element names (``clocks_throttle_reasons`` / ``clocks_event_reasons``,
``power_readings`` / ``gpu_power_readings``, ``power_draw`` /
``average_power_draw``, Double Bit / SRAM+DRAM ECC counters) map onto the
same fields as ``-q``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET  # safe here: DOCTYPE/ENTITY lines never reach the parser
from collections.abc import Sequence

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.gpu import DriverInfo, GpuProcessTable
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._nvsmi import (
    Record,
    bus_id,
    gpu_from_record,
    integer,
    mig_from_record,
    process_from_record,
    text_value,
)
from nccl_doctor.parse._values import cite
from nccl_doctor.parse.base import BlockParser

TOOL = "nvidia-smi-xml"
_ROOT = "nvidia_smi_log"
_END = "</nvidia_smi_log>"
#: Bounded: a long run of ``<?xml`` without ``>`` would be scanned from each.
_DECL = LazyPattern(r"<\?xml[^>]{0,4096}\?>")
_DOCTYPE = LazyPattern(r"<!DOCTYPE[^>\[]{0,4096}(?:\[[^\]]{0,4096}\])?\s*>")
_CONTENT = LazyPattern(r"^[\w .:/()+%,-]{1,120}$")
_SKIP = frozenset({"processes", "accounted_processes", "mig_devices", "supported_clocks"})
_MAX_BLANKS = 3
_MAX_CONTENT = 3
_HEAD_LINES = 3
_MAX_DEPTH = 12


class _Tree:
    """What the incremental parse built: the root, and where each element started."""

    def __init__(self) -> None:
        self.root: ET.Element | None = None
        self.lines: dict[ET.Element, Line] = {}
        self.ended: set[ET.Element] = set()


def _event(tree: _Tree, item: object, line: Line) -> None:
    """Record one start/end event of the incremental parser."""
    if not isinstance(item, tuple) or len(item) != 2:
        return
    event, element = item
    if not isinstance(element, ET.Element):
        return
    if event == "start":
        tree.lines.setdefault(element, line)
        if tree.root is None:
            tree.root = element
    else:
        tree.ended.add(element)


def _read(block: Sequence[Line]) -> _Tree:
    """Parse ``block`` line by line, keeping what was complete when an error stops it."""
    tree = _Tree()
    parser: ET.XMLPullParser[ET.Element] = ET.XMLPullParser(events=("start", "end"))
    doctype_end = ""  # while inside a multi-line DOCTYPE: the text that ends it
    for line in block:
        text = line.text
        if doctype_end:
            if doctype_end not in text:
                continue
            text = text.split(doctype_end, 1)[1]
            doctype_end = ""
        if "<!ENTITY" in text:
            continue
        text = _DECL.sub("", text)
        if "<!DOCTYPE" in text:
            text = _DOCTYPE.sub("", text)
            if "<!DOCTYPE" in text:
                text, _, rest = text.partition("<!DOCTYPE")
                end = "]>" if "[" in rest else ">"
                doctype_end = "" if end in rest else end
        failed = False
        try:
            parser.feed(text + "\n")
        except (ET.ParseError, ValueError, RecursionError):
            failed = True
        try:
            for item in parser.read_events():
                _event(tree, item, line)
        except (ET.ParseError, ValueError, RecursionError):
            failed = True
        if failed:
            break
    return tree


def _leaves(
    element: ET.Element, tree: _Tree, prefix: str, record: Record, *, skip: bool, depth: int = 0
) -> None:
    """Put every leaf under ``element`` into ``record`` at its tag path."""
    if depth > _MAX_DEPTH:
        return
    for child in element:
        tag = child.tag if isinstance(child.tag, str) else ""
        if not tag or (skip and not prefix and tag in _SKIP):
            continue
        path = f"{prefix}/{tag}" if prefix else tag
        if len(child):
            _leaves(child, tree, path, record, skip=skip, depth=depth + 1)
            continue
        line = tree.lines.get(child, record.line)
        record.put(path, (child.text or "").strip(), line)


class NvidiaSmiXmlParser(BlockParser):
    """Parses ``nvidia-smi -q -x`` into the same facts as ``-q``."""

    kind = "nvidia-smi-xml"
    anchors = ("<?xml", "<nvidia_smi_log")

    def starts(self, line: Line) -> bool:
        """An XML declaration or the ``<nvidia_smi_log>`` root tag."""
        if not any(anchor in line.raw for anchor in self.anchors):
            return False  # the reader would never offer it: keep tests and reads alike
        text = line.text.lstrip()
        return text.startswith(("<?xml", "<nvidia_smi_log"))

    def accepts(self, line: Line, block: Sequence[Line]) -> bool:
        """XML lines up to ``</nvidia_smi_log>``; another document's XML ends early."""
        if not block or _END in block[-1].text:
            return False
        head = [earlier.text for earlier in block[:16] if earlier.text.strip()][:_HEAD_LINES]
        if len(head) >= _HEAD_LINES and not any(_ROOT in text for text in head):
            return False
        content = blanks = 0
        for earlier in reversed(block):
            stripped = earlier.text.strip()
            if stripped.startswith("<"):
                break
            if stripped:
                content += 1
            else:
                blanks += 1
        text = line.text.strip()
        if not text:
            return blanks < _MAX_BLANKS
        if text.startswith("<"):
            return True
        return content < _MAX_CONTENT and bool(_CONTENT.match(text))

    def parse(self, block: Sequence[Line]) -> list[Fact]:
        """A :class:`DriverInfo`, then per ``<gpu>`` its GPU, MIG device and process facts."""
        if not block:
            return []
        tree = _read(block)
        root = tree.root
        if root is None or root.tag != _ROOT:
            return []
        facts: list[Fact] = []
        top = Record(tree.lines.get(root, block[0]))
        for child in root:
            if isinstance(child.tag, str) and not len(child):
                top.put(child.tag, (child.text or "").strip(), tree.lines.get(child, top.line))
        found = top.get(("driver_version", "attached_gpus", "cuda_version"))
        if found is not None:
            line = found[1]

            def value(key: str) -> str | None:
                item = top.get((key,))
                return text_value(item[0]) if item else None

            facts.append(
                DriverInfo(
                    cite=cite(line),
                    rank=line.rank,
                    host=line.host,
                    tool=TOOL,
                    driver_version=value("driver_version"),
                    cuda_version=value("cuda_version"),
                    attached_gpus=integer(value("attached_gpus")),
                    timestamp=value("timestamp"),
                    nvml_version=value("nvml_version"),
                )
            )
        for element in root.findall("gpu"):
            facts.extend(self._gpu(element, tree, block[0]))
        return facts

    @staticmethod
    def _gpu(element: ET.Element, tree: _Tree, first: Line) -> list[Fact]:
        line = tree.lines.get(element, first)
        record = Record(line)
        _leaves(element, tree, "", record, skip=True)
        card = gpu_from_record(record, TOOL, bus_id(element.get("id")), line.rank, line.host)
        facts: list[Fact] = [card]
        migs = element.find("mig_devices")
        for node in migs.iter("mig_device") if migs is not None else ():
            mig_record = Record(tree.lines.get(node, line))
            _leaves(node, tree, "", mig_record, skip=False)
            mig = mig_from_record(
                mig_record, TOOL, card, mig_record.line.rank, mig_record.line.host
            )
            if mig is not None:
                facts.append(mig)
        processes = element.find("processes")
        if processes is None:
            return facts
        procs = []
        for node in processes.iter("process_info"):
            proc_record = Record(tree.lines.get(node, line))
            _leaves(node, tree, "", proc_record, skip=False)
            pid = proc_record.get(("pid",))
            if pid is not None:
                proc_record.line = pid[1]
            proc = process_from_record(
                proc_record, TOOL, card, proc_record.line.rank, proc_record.line.host
            )
            if proc is not None:
                procs.append(proc)
        complete = processes in tree.ended
        table_line = tree.lines.get(processes, line)
        facts.append(
            GpuProcessTable(
                cite=cite(table_line),
                rank=table_line.rank,
                host=table_line.host,
                tool=TOOL,
                rows=len(procs),
                none_found=complete and not procs,
                truncated=not complete,
                gpu_bus_id=card.bus_id,
            )
        )
        facts.extend(procs)
        return facts
