"""Facts of RDMA NICs: InfiniBand/RoCE ports and their Linux network devices.

``ibstatus``, ``ibstat`` and ``ibv_devinfo`` all yield :class:`IbPort`, with
``None`` where a tool does not print a field; ``tool`` says which one spoke.
Names are normalised across tools: ``state`` is the IB spec name (``DOWN``,
``INIT``, ``ARMED``, ``ACTIVE``, ``ACTIVE_DEFER``), ``phys_state`` the ibstat
name (``Sleep``, ``Polling``, ``Disabled``, ``PortConfigurationTraining``,
``LinkUp``, ``LinkErrorRecovery``, ``PhyTest``), GUIDs ``0x`` + 16 hex digits.
:func:`virtual_interface` tells a host-local network device from one that
reaches other hosts; :func:`link_local` an address only its own link reaches, :func:`loopback`
one that names the host itself.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from nccl_doctor.facts.base import Fact


@dataclass(frozen=True, slots=True, kw_only=True)
class IbPort(Fact):
    """One port of an RDMA device (cites its state line, else its port header).

    ``rate_gbits_s`` is the link rate in Gb/s (``100`` for 4X EDR), ``rate_text``
    the rate as printed; ``link_width``/``link_speed`` split it (``4X``,
    ``EDR``). ``base_lid`` 65535 (0xffff) means no LID was assigned.
    ``state_code``/``phys_state_code`` are set only where the tool prints the
    number. ``device`` and ``port`` are ``None`` for a fragment that starts
    inside a port block.
    """

    tool: str
    device: str | None
    port: int | None
    state: str | None = None
    state_code: int | None = None
    phys_state: str | None = None
    phys_state_code: int | None = None
    rate_gbits_s: float | None = None
    rate_text: str | None = None
    link_width: str | None = None
    link_speed: str | None = None
    link_layer: str | None = None
    base_lid: int | None = None
    sm_lid: int | None = None
    lmc: int | None = None
    port_guid: str | None = None
    default_gid: str | None = None
    node_guid: str | None = None
    sys_image_guid: str | None = None
    ca_type: str | None = None
    vendor_part_id: int | None = None
    firmware_version: str | None = None
    hardware_version: str | None = None
    board_id: str | None = None
    transport: str | None = None
    capability_mask: str | None = None
    active_mtu: int | None = None
    max_mtu: int | None = None
    num_ports: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NetDevMap(Fact):
    """One ``ibdev2netdev`` row: an RDMA port and the network device behind it.

    ``netdev_up`` is the netdev's carrier (``(Up)``/``(Down)``), ``None`` when
    not printed. The ``-v`` form adds ``pci_address``, ``ca_type`` (``MT4123``),
    ``part_number``, ``description``, ``firmware_version`` and ``port_state``
    (the RDMA port state, ``ACTIVE``/``DOWN``...).
    """

    device: str
    port: int | None
    netdev: str | None
    netdev_up: bool | None
    pci_address: str | None = None
    ca_type: str | None = None
    part_number: str | None = None
    description: str | None = None
    firmware_version: str | None = None
    port_state: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class IbPortCounters(Fact):
    """The error counters of one RDMA port as a live capture read them from sysfs.

    ``counters`` are (name, value) pairs with the sysfs file names:
    ``symbol_error``, ``link_downed``, ``port_rcv_errors``... from
    ``ports/N/counters/`` and mlx5's ``hw_counters/`` (``local_ack_timeout_err``,
    ``packet_seq_err``...); a counter the HCA does not have is absent. The
    values count since the driver loaded (or the counters were cleared): only
    a difference between two reads says what happened in between.
    """

    device: str
    port: int
    counters: tuple[tuple[str, int], ...]


#: Loopback, container and VM bridges, virtual pairs: devices whose addresses
#: other hosts cannot reach.
_VIRTUAL = re.compile(r"(?:lo|docker\d*|virbr\d*|veth\w*|br-[0-9a-f]+|cni\d*|vmnet\d*|lxcbr\d*)")


def virtual_interface(name: str) -> bool:
    """Whether the network device ``name`` is loopback or a virtual bridge (``lo``, ``docker0``)."""
    return _VIRTUAL.fullmatch(name) is not None


def link_local(address: str) -> bool:
    """Whether an address as NCCL prints it (``169.254.1.2<42219>``, ``[fe80::1%eth0]:29500``,
    ``fe80::1%ib0<0>``) is link-local: only its own link reaches it, so no other host can use
    it as a peer's address."""
    return any(ip is not None and ip.is_link_local for ip in map(_ip, _hosts(address)))


def loopback(address: str) -> bool:
    """Whether an address, as printed (``127.0.0.1``, ``127.0.1.1<41234>``, ``[::1]:29500``,
    ``localhost``), names the host itself: dialled on one host, it reaches that host, never
    another."""
    return any(
        h.lower() in ("localhost", "localhost.localdomain") or (ip is not None and ip.is_loopback)
        for h, ip in ((h, _ip(h)) for h in _hosts(address))
    )


def unspecified(address: str) -> bool:
    """Whether an address, as printed, is the unspecified one (``0.0.0.0``, ``::``): a
    listener's "every interface", no peer's address."""
    return any(ip is not None and ip.is_unspecified for ip in map(_ip, _hosts(address)))


def _hosts(address: str) -> tuple[str, str]:
    """The host of an address as printed: with NCCL's ``<port>`` and quotes dropped, then also
    without a ``:port`` (a bare IPv6 address ends in digits of its own, so both are tried)."""
    text = re.sub(r"<[^<>]*>$", "", address.strip("`'\".,;"))
    return text, re.sub(r"\]?:\d+$", "", text)


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None
