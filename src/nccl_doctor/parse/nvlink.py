"""``nvidia-smi nvlink -s`` / ``--status`` (and the ``-e`` error counters).

The output is a ``GPU n: NAME (UUID: ...)`` header per GPU followed by
indented ``Link n: 26.562 GB/s`` or ``Link n: <inactive>`` lines (TAB+space
or nine spaces), or by NVML's ``Unable to retrieve NVLink information as all
links are inActive``. Users elide GPUs with ``...``/``......`` lines, which are
skipped; the command line and prompt may come first. A command line that names one GPU
(``-i 5``) gives the links that follow it with no header that GPU; one piped through ``grep``
for ``inactive`` shows only the inactive links, so a link numbered below one it shows and
left out is up (``Link 1: <inactive>`` and ``Link 4: <inactive>`` alone: links 0, 2 and 3 run).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.topology import NvLink, NvLinkAllInactive, NvLinkErrorCount
from nccl_doctor.parse._blocktext import strip_ansi, to_float, to_int, trailing_blanks
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._values import cite
from nccl_doctor.parse.base import BlockParser

#: The command as the last thing on its line (but for a filter it is piped through), so prose
#: that only mentions it starts nothing.
_COMMAND = LazyPattern(
    r"nvidia-smi\s+nvlink(?P<options>(?:\s+-{1,2}[\w-]+(?:[ =]\d+)?)*)"
    r"(?P<filter>(?:\s*\|\s*(?:e?grep|head|tail|sort|less|more)\b[^|\n]{0,80})*)[\"'`]?\s*$"
)
#: The one GPU a command line asks for (``-i 5``, ``--id=5``).
_ONE_GPU = LazyPattern(r"(?:^|\s)(?:-i|--id)[ =](?P<index>\d{1,4})\b")
_GPU = LazyPattern(r"^\s*GPU (?P<index>\d{1,4}): (?P<rest>.*)$")
_LINK = LazyPattern(r"^\s*Link (?P<link>\d{1,4}):(?P<rest>.*)$")
_LINKS = LazyPattern(r"^\s*Links? \d")
_SPEED = LazyPattern(r"^(?P<speed>\d+(?:\.\d+)?) GB/s$")
_COUNTER = LazyPattern(
    r"^(?P<name>[A-Za-z][\w ./-]*?(?:Errors?|BER|events?|discards?)):\s*(?P<value>.*)$",
    re.IGNORECASE,
)
_ALL_INACTIVE = LazyPattern(r"Unable to retrieve NVLink information", re.IGNORECASE)
_ELISION = LazyPattern(r"^\s*(?:\.{2,}|…+|\[\.\.\.\])\s*$")
_UUID = LazyPattern(r"^(?:GPU|MIG)-[0-9a-fA-F-]{8,}$")
_MAX_BLANKS = 2


def _name_uuid(rest: str) -> tuple[str | None, str | None]:
    """The GPU name and UUID of a header's ``NAME (UUID: GPU-...)`` (UUID ``None`` if redacted)."""
    at = rest.find("(UUID:")
    name = (rest[:at] if at >= 0 else rest).strip() or None
    uuid = rest[at + 6 :].strip().rstrip(")").strip() if at >= 0 else ""
    return name, uuid if _UUID.match(uuid) else None


class NvlinkParser(BlockParser):
    """Parses ``nvidia-smi nvlink`` status and error-counter output into NVLink facts."""

    kind = "nvlink"
    anchors = ("nvidia-smi nvlink", "(UUID: ", "Link 0:")

    def starts(self, line: Line) -> bool:
        """The command line, a GPU header with a UUID, or a bare ``Link 0:`` line."""
        text = strip_ansi(line.text)
        if _COMMAND.search(text):
            return True
        if "(UUID: " in text and _GPU.match(text):
            return True
        link = _LINK.match(text)
        return link is not None and link["link"] == "0"

    def accepts(self, line: Line, block: Sequence[Line]) -> bool:
        """GPU headers, link lines, NVML notes, elisions and a few blank lines."""
        text = strip_ansi(line.text)
        if not text.strip():
            return trailing_blanks(block) < _MAX_BLANKS
        if _COMMAND.search(text):
            return False
        return bool(
            _GPU.match(text)
            or _LINKS.match(text)
            or _ALL_INACTIVE.search(text)
            or _ELISION.match(text)
        )

    def parse(self, block: Sequence[Line]) -> list[Fact]:
        """One fact per link line and per all-inactive GPU."""
        facts: list[Fact] = []
        index: int | None = None
        name: str | None = None
        uuid: str | None = None
        grepped: Line | None = None  # the command line of a grep for inactive links
        for line in block:
            text = strip_ansi(line.text)
            if command := _COMMAND.search(text):
                one = _ONE_GPU.search(command["options"])
                index = int(one["index"]) if one else None
                if "inactive" in command["filter"].lower() and "-v" not in command["filter"]:
                    grepped = line
                continue
            if gpu := _GPU.match(text):
                index, name, uuid = int(gpu["index"]), *_name_uuid(gpu["rest"])
                continue
            if _ELISION.match(text):
                index = name = uuid = None  # what follows may belong to another GPU
                continue
            at, rank, host = cite(line), line.rank, line.host
            if _ALL_INACTIVE.search(text):
                facts.append(
                    NvLinkAllInactive(
                        gpu_index=index, gpu_name=name, uuid=uuid, cite=at, rank=rank, host=host
                    )
                )
                continue
            link = _LINK.match(text)
            if link is None:
                continue
            number, rest = int(link["link"]), link["rest"].strip()
            if counter := _COUNTER.match(rest):
                value = counter["value"].strip()
                facts.append(
                    NvLinkErrorCount(
                        gpu_index=index,
                        gpu_name=name,
                        uuid=uuid,
                        link=number,
                        counter=counter["name"].strip(),
                        count=to_int(value),
                        value_text=value,
                        cite=at,
                        rank=rank,
                        host=host,
                    )
                )
                continue
            if ":" in rest:
                continue  # throughput, capabilities, remote ends: not link states
            speed = _SPEED.match(rest)
            active = True if speed else (False if rest.lower() == "<inactive>" else None)
            facts.append(
                NvLink(
                    gpu_index=index,
                    gpu_name=name,
                    uuid=uuid,
                    link=number,
                    active=active,
                    speed_gbytes_s=to_float(speed["speed"]) if speed else None,
                    state_text=rest,
                    cite=at,
                    rank=rank,
                    host=host,
                )
            )
        return facts + _left_out(facts, grepped) if grepped is not None else facts


def _left_out(facts: list[Fact], command: Line) -> list[Fact]:
    """The links a grep for inactive ones left out below the highest it shows, of each GPU:
    nvidia-smi lists a GPU's links from 0 up, so those are not inactive."""
    shown: dict[tuple[int | None, str | None, str | None], set[int]] = {}
    for fact in facts:
        if isinstance(fact, NvLink) and fact.active is False:
            shown.setdefault((fact.gpu_index, fact.gpu_name, fact.uuid), set()).add(fact.link)
    at = cite(command)
    return [
        NvLink(
            gpu_index=index,
            gpu_name=name,
            uuid=uuid,
            link=number,
            active=True,
            speed_gbytes_s=None,
            state_text="not inactive (left out by the grep)",
            cite=at,
            rank=command.rank,
            host=command.host,
        )
        for (index, name, uuid), numbers in shown.items()
        for number in range(max(numbers))
        if number not in numbers
    ]
