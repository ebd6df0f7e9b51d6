"""RDMA port tools: ``ibstatus``, ``ibstat``, ``ibv_devinfo`` and ``ibdev2netdev``.

The first three yield :class:`~nccl_doctor.facts.net.IbPort` (one per port,
fields normalised across tools); ``ibdev2netdev`` yields
:class:`~nccl_doctor.facts.net.NetDevMap`. Fragments are common (pastes cut
inside a device): ``ibv_devinfo`` may start inside a port block, giving a
port whose device is unknown, and any block may stop mid-port.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.net import NetDevMap
from nccl_doctor.parse import _ib_common as ib
from nccl_doctor.parse._blocktext import na, peel_host, to_float, to_int, trailing_blanks
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._values import cite
from nccl_doctor.parse.base import BlockParser

_MAX_BLANKS = 2

# -- ibstatus -------------------------------------------------------------------

_IBSTATUS_HEAD = LazyPattern(r"^\s*Infiniband device '(?P<dev>[^']*)'(?: port (?P<port>\d{1,3}))?")
_IBSTATUS_KEYS = frozenset(
    {"default gid", "base lid", "sm lid", "state", "phys state", "rate", "link_layer"}
)


class IbstatusParser(BlockParser):
    """Parses ``ibstatus`` (sysfs port status, one paragraph per port)."""

    kind = "ibstatus"
    anchors = ("Infiniband device '",)

    def starts(self, line: Line) -> bool:
        """An ``Infiniband device 'mlx5_0' port 1 status:`` line."""
        return _IBSTATUS_HEAD.match(line.text) is not None

    def accepts(self, line: Line, block: Sequence[Line]) -> bool:
        """Port headers, their ``key: value`` lines and blank separators."""
        if not line.text.strip():
            return trailing_blanks(block) < _MAX_BLANKS
        if _IBSTATUS_HEAD.match(line.text):
            return True
        kv = ib.split_key(line.text)
        return kv is not None and kv[0] in _IBSTATUS_KEYS

    def parse(self, block: Sequence[Line]) -> list[Fact]:
        """One :class:`IbPort` per port paragraph."""
        facts: list[Fact] = []
        port: ib.PortBuilder | None = None
        for line in block:
            if m := _IBSTATUS_HEAD.match(line.text):
                if port is not None:
                    facts.append(port.build(line))
                port = ib.PortBuilder("ibstatus", {"device": m["dev"] or None}, line)
                port.fields["port"] = to_int(m["port"])
                continue
            kv = ib.split_key(line.text)
            if port is None or kv is None:
                continue
            key, value = kv
            f = port.fields
            if key == "default gid":
                f["default_gid"] = ib.gid(value)
            elif key == "base lid":
                f["base_lid"] = to_int(value)
            elif key == "sm lid":
                f["sm_lid"] = to_int(value)
            elif key == "state":
                f["state"], f["state_code"] = ib.state(value)
                port.state_line = line
            elif key == "phys state":
                f["phys_state"], f["phys_state_code"] = ib.phys_state(value)
            elif key == "rate":
                f.update(ib.sysfs_rate(value))
            elif key == "link_layer":
                f["link_layer"] = na(value)
        if port is not None:
            facts.append(port.build(block[-1]))
        return facts


# -- ibstat ---------------------------------------------------------------------

_IBSTAT_HEAD = LazyPattern(r"^\s*(?:CA|Switch|Router):? '(?P<dev>[^']*)'")
_IBSTAT_PORT = LazyPattern(r"^\s*Port (?P<port>\d{1,3}):\s*$")
_IBSTAT_RATE = LazyPattern(r"^(?P<rate>\d+(?:\.\d+)?)(?:\s*\((?P<speed>\w+)\))?$")
_IBSTAT_KEYS = frozenset(
    {
        "ca type",
        "switch type",
        "router type",
        "number of ports",
        "firmware version",
        "hardware version",
        "node guid",
        "system image guid",
        "state",
        "physical state",
        "rate",
        "base lid",
        "lmc",
        "sm lid",
        "capability mask",
        "port guid",
        "link layer",
    }
)
#: The keys of a port's own section (below its "Port n:" line).
_IBSTAT_PORT_KEYS = frozenset(
    {"state", "physical state", "rate", "base lid", "lmc", "sm lid", "port guid", "link layer"}
)
_IBSTAT_DEVICE_KEYS = {
    "firmware version": "firmware_version",
    "hardware version": "hardware_version",
}


def _ibstat_own(text: str) -> bool:
    """Whether ``text`` is a line of ibstat's: a CA header, a ``Port n:``, a known key."""
    if _IBSTAT_HEAD.match(text) or _IBSTAT_PORT.match(text):
        return True
    kv = ib.split_key(text)
    return kv is not None and kv[0] in _IBSTAT_KEYS


def _ibstat_line(line: Line) -> Line:
    """``line`` as ibstat printed it: a parallel shell's ``host:`` before it (``pdsh -w
    gn[11-12] ibstat``) peeled off where what follows is ibstat's own."""
    if _ibstat_own(line.text):
        return line
    peeled = peel_host(line)
    return peeled if peeled is not None and _ibstat_own(peeled.text) else line


class IbstatParser(BlockParser):
    """Parses ``ibstat`` (umad CA and port attributes), each line perhaps behind a parallel
    shell's ``host:`` (the port then that host's)."""

    kind = "ibstat"
    anchors = ("CA '", "CA: '")

    def starts(self, line: Line) -> bool:
        """A ``CA 'mlx5_0'`` header (``CA: 'mlx5_0'`` when one port was asked for)."""
        return _IBSTAT_HEAD.match(_ibstat_line(line).text) is not None

    def accepts(self, line: Line, block: Sequence[Line]) -> bool:
        """CA headers, ``Port n:`` lines and the known ``key: value`` lines."""
        if not line.text.strip():
            return trailing_blanks(block) < _MAX_BLANKS
        return _ibstat_own(_ibstat_line(line).text)

    def parse(self, block: Sequence[Line]) -> list[Fact]:
        """One :class:`IbPort` per ``Port n:`` section, carrying its CA's attributes."""
        facts: list[Fact] = []
        device: dict[str, Any] = {}
        port: ib.PortBuilder | None = None
        for line in map(_ibstat_line, block):
            text = line.text
            if m := _IBSTAT_HEAD.match(text):
                if port is not None:
                    facts.append(port.build(line))
                port, device = None, {"device": m["dev"] or None}
                continue
            if m := _IBSTAT_PORT.match(text):
                if port is not None:
                    facts.append(port.build(line))
                port = ib.PortBuilder("ibstat", device, line)
                port.fields["port"] = to_int(m["port"])
                continue
            kv = ib.split_key(text)
            if kv is None:
                continue
            key, value = kv
            if port is None and key in _IBSTAT_PORT_KEYS and device.get("device"):
                # a grep-filtered listing ("ibstat | grep -e \"CA '\" -e Rate") keeps the CA
                # header and the port's lines, not its "Port n:": the port of that CA, unnumbered
                port = ib.PortBuilder("ibstat", device, line)
            if port is None:
                _ibstat_device(device, key, value)
                continue
            f = port.fields
            if key == "state":
                f["state"], f["state_code"] = ib.state(value)
                port.state_line = line
            elif key == "physical state":
                f["phys_state"], f["phys_state_code"] = ib.phys_state(value)
            elif key == "rate" and (r := _IBSTAT_RATE.match(value)):
                f["rate_gbits_s"], f["rate_text"], f["link_speed"] = (
                    to_float(r["rate"]),
                    value,
                    r["speed"],
                )
            elif key == "base lid":
                f["base_lid"] = to_int(value)
            elif key == "sm lid":
                f["sm_lid"] = to_int(value)
            elif key == "lmc":
                f["lmc"] = to_int(value)
            elif key == "capability mask":
                f["capability_mask"] = value if to_int(value) is not None else None
            elif key == "port guid":
                f["port_guid"] = ib.guid(value)
            elif key == "link layer":
                f["link_layer"] = na(value)
        if port is not None:
            facts.append(port.build(block[-1]))
        return facts


def _ibstat_device(device: dict[str, Any], key: str, value: str) -> None:
    """Record one CA-level ``key: value`` of ibstat into ``device``."""
    if key in ("ca type", "switch type", "router type"):
        device["ca_type"] = na(value)
        device["vendor_part_id"] = ib.vendor_part(value.strip())
    elif key == "number of ports":
        device["num_ports"] = to_int(value)
    elif key in _IBSTAT_DEVICE_KEYS:
        device[_IBSTAT_DEVICE_KEYS[key]] = na(value)
    elif key == "node guid":
        device["node_guid"] = ib.guid(value)
    elif key == "system image guid":
        device["sys_image_guid"] = ib.guid(value)


# -- ibv_devinfo ----------------------------------------------------------------

_HCA = LazyPattern(r"^\s*hca_id:\s*(?P<dev>\S+)")
_VERBS_PORT = LazyPattern(r"^\s*port:\s*(?P<port>\d{1,3})\s*$")
_VERBS_PORT_KEYS = frozenset(
    {"state", "max_mtu", "active_mtu", "sm_lid", "port_lid", "port_lmc", "link_layer"}
)
#: (the four states the anchors name: a block starts only where the prefilter would hand it)
_VERBS_FRAGMENT = LazyPattern(r"^\s+(?:state:\s+PORT_(?:ACTIVE|DOWN|INIT|ARMED)\b|max_mtu:)")


class IbvDevinfoParser(BlockParser):
    """Parses ``ibv_devinfo`` (and ``-v``), including fragments that start inside a port."""

    kind = "ibv_devinfo"
    anchors = ("hca_id:", "max_mtu:", "PORT_ACTIVE", "PORT_DOWN", "PORT_INIT", "PORT_ARMED")

    def starts(self, line: Line) -> bool:
        """An ``hca_id:`` line, or a port's ``state:``/``max_mtu:`` line."""
        return bool(_HCA.match(line.text) or _VERBS_FRAGMENT.match(line.text))

    def accepts(self, line: Line, block: Sequence[Line]) -> bool:
        """``hca_id:`` lines, indented lines and blank separators."""
        if not line.text.strip():
            return trailing_blanks(block) < _MAX_BLANKS
        return bool(_HCA.match(line.text) or line.text[:1].isspace())

    def parse(self, block: Sequence[Line]) -> list[Fact]:
        """One :class:`IbPort` per ``port:`` section (and one for a leading orphan port)."""
        facts: list[Fact] = []
        device: dict[str, Any] = {}
        port: ib.PortBuilder | None = None
        verbose: dict[str, str] = {}

        def close(at: Line) -> None:
            if port is not None:
                rate = ib.verbs_rate(verbose.get("active_width"), verbose.get("active_speed"))
                if rate is not None:
                    port.fields["rate_gbits_s"] = rate
                facts.append(port.build(at))

        for line in block:
            if m := _HCA.match(line.text):
                close(line)
                port, device, verbose = None, {"device": m["dev"]}, {}
                continue
            if m := _VERBS_PORT.match(line.text):
                close(line)
                port, verbose = ib.PortBuilder("ibv_devinfo", device, line), {}
                port.fields["port"] = to_int(m["port"])
                continue
            kv = ib.split_key(line.text)
            if kv is None:
                continue
            key, value = kv
            if _verbs_device(device, key, value):
                continue
            if port is None and key in _VERBS_PORT_KEYS:
                # a fragment's first port: pasted from inside a port section, or filtered
                # (`ibv_devinfo | grep -E "hca_id|state|link_layer"` keeps no port: line)
                port = ib.PortBuilder("ibv_devinfo", device, None)
            if port is not None and _verbs_port(port, verbose, key, value):
                port.state_line = line if key == "state" else port.state_line
        close(block[-1])
        return facts


def _verbs_device(device: dict[str, Any], key: str, value: str) -> bool:
    """Record a device-level ibv_devinfo field; ``False`` when ``key`` is not one."""
    if key == "transport":
        device["transport"] = na(re.sub(r"(?<!\s)\s*\(\d+\)\s*$", "", value))
    elif key == "fw_ver":
        device["firmware_version"] = na(value)
    elif key == "node_guid":
        device["node_guid"] = ib.guid(value)
    elif key == "sys_image_guid":
        device["sys_image_guid"] = ib.guid(value)
    elif key == "vendor_part_id":
        device["vendor_part_id"] = to_int(value)
    elif key == "hw_ver":
        device["hardware_version"] = na(value)
    elif key == "board_id":
        device["board_id"] = na(value)
    elif key == "phys_port_cnt":
        device["num_ports"] = to_int(value)
    else:
        return key == "vendor_id"
    return True


def _verbs_port(port: ib.PortBuilder, verbose: dict[str, str], key: str, value: str) -> bool:
    """Record a port-level ibv_devinfo field; ``False`` when ``key`` is not one."""
    f = port.fields
    if key == "state":
        f["state"], f["state_code"] = ib.state(value)
    elif key == "phys_state":
        f["phys_state"], f["phys_state_code"] = ib.phys_state(value)
    elif key == "max_mtu":
        f["max_mtu"] = ib.leading_int(value)
    elif key == "active_mtu":
        f["active_mtu"] = ib.leading_int(value)
    elif key == "sm_lid":
        f["sm_lid"] = to_int(value)
    elif key == "port_lid":
        f["base_lid"] = to_int(value)
    elif key == "port_lmc":
        f["lmc"] = to_int(value)
    elif key == "link_layer":
        f["link_layer"] = na(value)
    elif key == "port_cap_flags":
        f["capability_mask"] = value if to_int(value) is not None else None
    elif key in ("active_width", "active_speed"):
        verbose[key] = value
        if key == "active_width":
            f["link_width"] = value.split(maxsplit=1)[0] if value.strip() else None
    else:
        return False
    return True


# -- ibdev2netdev ---------------------------------------------------------------

_NETDEV_PLAIN = LazyPattern(
    r"^\s*(?P<dev>[\w.-]+)\s+port\s+(?P<port>\d{1,3})\s+(?:==>|<===>)\s+(?P<netdev>\S+)"
    r"(?:\s+\((?P<link>[^)]*)\))?"
)
_NETDEV_VERBOSE = LazyPattern(
    r"^\s*(?:(?P<pci>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+)?"
    r"(?P<dev>[\w.-]+)\s+\((?P<ca>[^)\s-]*)\s*-(?P<part>[^)]{0,300})\)(?P<desc>.*)\s"  # na() strips
    r"fw\s+(?P<fw>\S+)\s+port\s+(?P<port>\d{1,3})\s+\((?P<state>[^)]*)\)\s+==>\s+(?P<netdev>\S+)"
    r"(?:\s+\((?P<link>[^)]*)\))?"
)


def _carrier(text: str | None) -> bool | None:
    """``(Up)`` -> True, ``(Down)`` -> False, anything else -> None."""
    value = (text or "").strip().lower()
    return True if value == "up" else (False if value == "down" else None)


class Ibdev2netdevParser(BlockParser):
    """Parses ``ibdev2netdev`` (plain, ``-v`` and the old ``<===>`` form)."""

    kind = "ibdev2netdev"
    anchors = (" ==> ", " <===> ")

    def starts(self, line: Line) -> bool:
        """A mapping row."""
        return bool(_NETDEV_VERBOSE.match(line.text) or _NETDEV_PLAIN.match(line.text))

    def accepts(self, line: Line, block: Sequence[Line]) -> bool:
        """More mapping rows."""
        return self.starts(line)

    def parse(self, block: Sequence[Line]) -> list[Fact]:
        """One :class:`NetDevMap` per row."""
        facts: list[Fact] = []
        for line in block:
            at, rank, host = cite(line), line.rank, line.host
            if m := _NETDEV_VERBOSE.match(line.text):
                state = ib.state(m["state"])[0]
                facts.append(
                    NetDevMap(
                        device=m["dev"],
                        port=to_int(m["port"]),
                        netdev=na(m["netdev"]),
                        netdev_up=_carrier(m["link"]),
                        pci_address=m["pci"],
                        ca_type=na(m["ca"]),
                        part_number=na(m["part"]),
                        description=na(m["desc"]),
                        firmware_version=na(m["fw"]),
                        port_state=state,
                        cite=at,
                        rank=rank,
                        host=host,
                    )
                )
            elif m := _NETDEV_PLAIN.match(line.text):
                facts.append(
                    NetDevMap(
                        device=m["dev"],
                        port=to_int(m["port"]),
                        netdev=na(m["netdev"]),
                        netdev_up=_carrier(m["link"]),
                        cite=at,
                        rank=rank,
                        host=host,
                    )
                )
        return facts
