"""Value readers shared by the InfiniBand parsers: states, rates, GUIDs, port builders."""

from __future__ import annotations

import re
from typing import Any

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.net import IbPort
from nccl_doctor.parse._blocktext import na, to_float, to_int
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._values import cite

#: IB port states by number (``/sys/class/infiniband/*/ports/*/state``).
STATES = {0: "NOP", 1: "DOWN", 2: "INIT", 3: "ARMED", 4: "ACTIVE", 5: "ACTIVE_DEFER"}
_STATE_NAMES = {
    "NOP": "NOP",
    "DOWN": "DOWN",
    "INIT": "INIT",
    "INITIALIZING": "INIT",
    "INITIALIZE": "INIT",
    "ARMED": "ARMED",
    "ACTIVE": "ACTIVE",
    "ACTIVE_DEFER": "ACTIVE_DEFER",
}
#: Physical port states by number, named as ibstat names them.
PHYS_STATES = {
    1: "Sleep",
    2: "Polling",
    3: "Disabled",
    4: "PortConfigurationTraining",
    5: "LinkUp",
    6: "LinkErrorRecovery",
    7: "PhyTest",
}
_PHYS_NAMES = {re.sub(r"[^a-z]", "", v.lower()): v for v in PHYS_STATES.values()}
_PHYS_NAMES["portconfigurationtrainning"] = "PortConfigurationTraining"  # ibv_devinfo's spelling

_CODED = LazyPattern(r"^(?P<code>\d{1,2})\s*:\s*(?P<name>.*)$")
_PAREN_CODE = LazyPattern(r"^(?P<name>.*)\((?P<code>\d{1,4})\)\s*$")
_SYSFS_RATE = LazyPattern(
    r"^(?P<rate>\d+(?:\.\d+)?)\s+Gb/sec\b(?:\s*\((?P<width>\d+X)(?:\s*(?P<speed>[A-Za-z][\w]*))?\)?)?"
)
_GUID_HEX = LazyPattern(r"^0x(?P<hex>[0-9a-fA-F]{1,16})$")
_GUID_GROUPS = LazyPattern(r"^[0-9a-fA-F]{4}(?::[0-9a-fA-F]{4}){3}$")
_GID = LazyPattern(r"^[0-9a-fA-F]{4}(?::[0-9a-fA-F]{4}){7}$")
_WIDTH = LazyPattern(r"^(?P<lanes>\d{1,2})X\b")
_LANE_SPEED = LazyPattern(r"^(?P<gbits_s>\d+(?:\.\d+)?)\s*Gbps\b")
_MT = LazyPattern(r"^MT(?P<id>\d{3,6})\b")


def state(value: str) -> tuple[str | None, int | None]:
    """(name, code) of a port state as ibstatus (``4: ACTIVE``), ibstat or ibv_devinfo prints it."""
    text = value.strip()
    code: int | None = None
    if (m := _CODED.match(text)) or (m := _PAREN_CODE.match(text)):
        code, text = to_int(m["code"]), m["name"].strip()
    if code is not None and code in STATES:
        return STATES[code], code
    key = text.upper().removeprefix("PORT_")
    return _STATE_NAMES.get(key), code


def phys_state(value: str) -> tuple[str | None, int | None]:
    """(name, code) of a physical port state (``5: LinkUp``, ``LinkUp``, ``LINK_UP (5)``)."""
    text = value.strip()
    code: int | None = None
    if (m := _CODED.match(text)) or (m := _PAREN_CODE.match(text)):
        code, text = to_int(m["code"]), m["name"].strip()
    if code is not None and code in PHYS_STATES:
        return PHYS_STATES[code], code
    return _PHYS_NAMES.get(re.sub(r"[^a-z]", "", text.lower())), code


def sysfs_rate(value: str) -> dict[str, Any]:
    """Rate fields of ``100 Gb/sec (4X EDR)``; no rate when the number lacks its unit."""
    text = value.strip()
    m = _SYSFS_RATE.match(text)
    if m is None:
        return {"rate_text": na(text)}
    return {
        "rate_gbits_s": to_float(m["rate"]),
        "rate_text": text,
        "link_width": m["width"],
        "link_speed": m["speed"],
    }


def guid(value: str) -> str | None:
    """A GUID as ``0x`` + 16 lowercase hex digits (``0x..`` or ``abcd:ef01:..`` input)."""
    text = value.strip()
    if m := _GUID_HEX.match(text):
        return "0x" + m["hex"].lower().rjust(16, "0")
    if _GUID_GROUPS.match(text):
        return "0x" + text.replace(":", "").lower()
    return None


def gid(value: str) -> str | None:
    """A 128-bit GID as printed (``fe80:0000:...``), else ``None``."""
    text = value.strip()
    return text.lower() if _GID.match(text) else None


def vendor_part(ca_type: str | None) -> int | None:
    """The device id of an ``MT4129`` CA type."""
    m = _MT.match(ca_type or "")
    return int(m["id"]) if m else None


def leading_int(value: str) -> int | None:
    """The integer that starts ``value`` (``4096 (5)`` -> 4096)."""
    m = re.match(r"\s*(0x[0-9a-fA-F]+|\d+)\b", value)
    return to_int(m[1]) if m else None


def verbs_rate(width: str | None, speed: str | None) -> float | None:
    """The rate of ibv_devinfo -v's ``active_width: 4X (2)`` by ``active_speed: 25.0 Gbps``."""
    w = _WIDTH.match(width or "")
    s = _LANE_SPEED.match(speed or "")
    if not w or not s:
        return None
    lane = to_float(s["gbits_s"])
    return None if lane is None else int(w["lanes"]) * lane


class PortBuilder:
    """Collects one port's fields, then builds the :class:`IbPort` citing its best line."""

    def __init__(self, tool: str, device: dict[str, Any], header: Line | None) -> None:
        self.fields: dict[str, Any] = {"tool": tool, "device": None, "port": None, **device}
        self.header = header
        self.state_line: Line | None = None

    def build(self, fallback: Line) -> IbPort:
        """The port fact; cites the state line, else the port header, else ``fallback``."""
        line = self.state_line or self.header or fallback
        return IbPort(cite=cite(line), rank=line.rank, host=line.host, **self.fields)


def split_key(text: str) -> tuple[str, str] | None:
    """``key: value`` of one output line (key lower-cased and stripped)."""
    key, colon, value = text.partition(":")
    if not colon or not key.strip():
        return None
    return key.strip().lower(), value.strip()
