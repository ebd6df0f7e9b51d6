"""InfiniBand/RoCE ports down, disabled or trained below the rate of their peers.

What it means
-------------
An RDMA port (``mlx5_N`` port 1) is not ``ACTIVE`` (``state: DOWN``/``INIT``,
``phys state: Disabled``/``Polling``), or it is active at a fraction of the
rate its sibling ports run at. A port that is physically ``LinkUp`` but
logically ``DOWN``/``INIT`` has no LID from a subnet manager.

Why it matters
--------------
NCCL only uses the network between nodes. On a job that spans nodes over
IB/RoCE, the rails whose ports are down are skipped (fewer rails, or rails
that differ between nodes) and a port NCCL was told to use (NCCL_IB_HCA)
that is down leaves it no RDMA path at all. On a single-node job the ports
do not carry NCCL traffic: down ports there are information, not a cause.

Evidence
--------
``ibstatus``/``ibstat``/``ibv_devinfo``/``ibdev2netdev -v`` port states and
rates; NCCL's ``NET/IB : Using [0]mlx5_0:1/IB`` list and NCCL_IB_HCA say which
ports the job selected; the node count (NCCL ``nNodes``, hostnames,
``--nnodes``, ``mp.spawn``) decides whether the ports matter. A port seen down
beside NCCL's completion errors of sends the peer never acknowledged (status 12 or
13) on a job across nodes is the link going down under it, more surely with the mlx5
driver's kernel line of its cable unplugged or its link down; that kernel line (or the RDMA
core's ``mlx5_4: Port: 1 Link DOWN`` of kernels from 6.10) beside those completion errors
is the same with no port listing at all. A filtered ``ibstat`` listing (CA headers and
``Rate:`` lines only) gives each CA's rate, and a parallel shell's ``host:`` before
each line (``pdsh -w gn[11-12] ibstat``) its host. With no port listing, NCCL's own
``NET/IB : Using`` lists from two hosts, one naming fewer devices, all among the others',
say that host lost those rails (a warning: the job runs at its narrowest node's pace).

Fix
---
Check the cable/transceiver and the switch port of each down port
(``ibstat``, ``mlxlink -d mlx5_N``), enable a disabled port, and make sure a
subnet manager (``opensm`` or the switch's) runs for InfiniBand fabrics.
Point NCCL_IB_HCA at ports that are ``ACTIVE`` on every node. Compare
``ibstat`` across all nodes: every node should show the same rails up.
"""

from __future__ import annotations

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.nccl import NcclIbDevice, NcclNet, NcclTransport, NcclWarn
from nccl_doctor.facts.net import IbPort, NetDevMap
from nccl_doctor.facts.settings import env_values
from nccl_doctor.facts.span import span_of
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.rules.base import Rule, first_distinct
from nccl_doctor.rules.net._common import (
    hca_list,
    name_matches,
    plural,
)
from nccl_doctor.signs.net import LINK_FLAPPED, SETUP_HANG

RULE = Rule(
    id="net.ib_link",
    title="InfiniBand/RoCE ports down or degraded",
    severity=Severity.CRITICAL,
    explains=("net.ib_transport", "app.hang", "launch.rank_crash"),
)

_UP_STATES = {"ACTIVE", "ACTIVE_DEFER"}
_BAD_PHYS = {"Disabled", "Polling", "Sleep", "LinkErrorRecovery", "PhyTest"}


def _is_down(port: IbPort) -> bool:
    if port.state is not None:
        return port.state not in _UP_STATES
    return port.phys_state in _BAD_PHYS


def _label(port: IbPort) -> str:
    name = port.device or "a port"
    if port.port is not None:
        name += f" port {port.port}"
    parts = [p for p in (port.state, port.phys_state) if p]
    layer = f", {port.link_layer}" if port.link_layer else ""
    return f"{name} ({'/'.join(parts) or 'down'}{layer})"


def _selected(facts: Facts) -> dict[str, Cite]:
    """Devices the job selected (NCCL's NET/IB list, NET/IB device lines), with the line."""
    names: dict[str, Cite] = {}
    for net in facts.of(NcclNet):
        for dev, _, _ in net.ib_devices:
            names.setdefault(dev, net.cite)
    for ib in facts.of(NcclIbDevice):
        if ib.name:
            names.setdefault(ib.name, ib.cite)
    return names


def _uses_ib(facts: Facts) -> Cite | None:
    for net in facts.of(NcclNet):
        if net.role == "selected" and (net.net or "").upper().startswith("IB"):
            return net.cite
        if net.role == "ib" and net.ib_devices:
            return net.cite
    for t in facts.of(NcclTransport):
        if t.kind == "NET" and "IB" in t.transport.upper():
            return t.cite
    return None


def _worded(rate: str | None) -> bool:
    """Whether a rate as printed names its unit or width (``100 Gb/sec (4X EDR)``), not a bare
    number (ibstat's ``Rate: 200``)."""
    return bool(rate) and not (rate or "").replace(".", "", 1).isdigit()


def _degraded(ports: list[IbPort], rated: list[IbPort]) -> list[IbPort]:
    """Active ports at half or less of the best rate among active ports of the same layer; the
    ports of a listing filtered to rates (``rated``: no state, no layer shown) count with the
    one layer the others show, where they show one (a port cut before its layer line does
    not)."""
    out: list[IbPort] = []
    known = {p.link_layer for p in ports if p.link_layer}
    adopted = next(iter(known)) if len(known) == 1 else None
    shown = {id(p): p.link_layer for p in ports}
    shown |= {id(p): p.link_layer or adopted for p in rated}
    ports = [*ports, *rated]
    for layer in set(shown.values()):
        same = [p for p in ports if shown[id(p)] == layer and p.rate_gbits_s]
        if len(same) < 2:
            continue
        best = max(p.rate_gbits_s or 0.0 for p in same)
        out.extend(p for p in same if (p.rate_gbits_s or 0.0) * 2 <= best)
    return out


def _link_lost(facts: Facts) -> tuple[list[NcclWarn], list[Cite]]:
    """NCCL's sends a peer never acknowledged (completion status 12/13), and the kernel's lines
    that a port's cable or link went down (the mlx5 driver's, the RDMA core's)."""
    lost = [w for w in facts.of(NcclWarn) if w.ib_status in (12, 13)]
    return lost, [h.cite for h in facts.seen(LINK_FLAPPED, prose=False)]


def _flapped(facts: Facts) -> list[Finding]:
    """No port listing, but the kernel says a port's link went down (the mlx5 driver's or the
    RDMA core's line) and NCCL's sends went unacknowledged (status 12/13): the link went down
    under the job, the RDMA errors follow it."""
    lost, flaps = _link_lost(facts)
    if not flaps or not lost:
        return []
    return [
        RULE.finding(
            summary=f"The kernel saw an RDMA port's link go down ({flaps[0].text.strip()[:120]!r}"
            f"{f', {len(flaps)} times' if len(flaps) > 1 else ''}) and NCCL's sends to a peer "
            f"went unacknowledged (completion status {lost[0].ib_status}): the link went down "
            "under the job.",
            fix=[
                (
                    "Check that port's cable, transceiver and switch port (mlxlink -d <hca> "
                    "shows its error counters and flaps; the switch's log its side)"
                ),
                (
                    "Drain the node until the link holds, or leave the port out "
                    "(NCCL_IB_HCA=^<hca>) and rerun nccl-tests between the hosts"
                ),
            ],
            evidence=[flaps[0], lost[0].cite, *flaps[1:2]],
            severity=Severity.CRITICAL,
            confidence=Confidence.HIGH,
        )
    ]


def _rails_differ(facts: Facts) -> list[Finding]:
    """NCCL's own lists of the IB devices it uses, from two or more hosts of the job: a host
    that lists fewer than the others, all of its own among theirs, has lost those rails (a
    port down, a device gone): the job runs at the pace of its narrowest node."""
    per_host: dict[str, tuple[set[str], Cite]] = {}
    for net in facts.of(NcclNet):
        if net.role == "ib" and net.ib_devices and net.host and not net.truncated:
            devices = {dev for dev, _, _ in net.ib_devices}
            held = per_host.get(net.host)
            if held is None or len(devices) > len(held[0]):
                per_host[net.host] = (devices, net.cite)
    if len(per_host) < 2:
        return []
    widest = max(len(d) for d, _ in per_host.values())
    full = [(h, d, c) for h, (d, c) in per_host.items() if len(d) == widest]
    if len({frozenset(d) for _, d, _ in full}) != 1:
        return []  # (the widest hosts disagree: no one set of rails to miss)
    peer, peer_devices, peer_cite = full[0]
    narrow = [(h, d, c) for h, (d, c) in per_host.items() if d < peer_devices]
    if not narrow:
        return []
    host, devices, cite = narrow[0]
    missing = sorted(peer_devices - devices)
    return [
        RULE.finding(
            summary=f"NCCL on {host} uses {len(devices)} IB device(s), without "
            f"{', '.join(missing)}, while on {peer} it uses {len(peer_devices)}: "
            f"{plural(len(missing), 'rail')} missing on {host} (a port down or a device gone), "
            "so traffic between the nodes runs at the pace of the narrowest one",
            fix=[
                (
                    f"Check {', '.join(missing)} on {host}: ibstat (State/Physical state, Rate), "
                    "mlxlink -d <device> -p 1 for the cable and the switch port"
                ),
                "Until it is fixed, drain the node or run on nodes whose rails all are up",
            ],
            evidence=[cite, peer_cite],
            severity=Severity.WARNING,
            confidence=Confidence.MEDIUM,
            hosts=[host],
        )
    ]


def check(facts: Facts) -> list[Finding]:
    ports = [p for p in facts.of(IbPort) if p.state is not None or p.phys_state is not None]
    ports += [  # ibdev2netdev -v port states, when no port tool spoke for that device
        IbPort(cite=m.cite, tool="ibdev2netdev", device=m.device, port=m.port, state=m.port_state)
        for m in facts.of(NetDevMap)
        if m.port_state and not any(p.device == m.device for p in ports)
    ]
    down = [p for p in ports if _is_down(p)]
    active = [p for p in ports if not _is_down(p)]
    # a listing filtered to rates (ibstat | grep -e "CA '" -e Rate) shows no state: its ports
    # count for the rates, each device once (the one with a state wins)
    rated = [
        p
        for p in facts.of(IbPort)
        if p.state is None
        and p.phys_state is None
        and p.rate_gbits_s
        and not any(q.device == p.device and q.host == p.host for q in ports)
    ]
    slow = _degraded(active, rated)
    if not down and not slow:
        return _flapped(facts) or _rails_differ(facts)
    span = span_of(facts)
    selected = _selected(facts)
    for value, cite in env_values(facts, "NCCL_IB_HCA"):
        wanted, excluded, exact = hca_list(value)
        if excluded:
            continue
        for p in ports:
            if p.device and name_matches(p.device, wanted, exact):
                selected.setdefault(p.device, cite)
    chosen_down = [p for p in down if p.device in selected]
    uses_ib = _uses_ib(facts)
    no_sm = [p for p in down if p.phys_state == "LinkUp"]

    parts: list[str] = []
    if down:
        shown = ", ".join(_label(p) for p in down[:6]) + (" ..." if len(down) > 6 else "")
        parts.append(f"{plural(len(down), 'RDMA port')} not active: {shown}")
        if active:
            parts.append(f"{len(active)} active")
    if slow:
        # (the host too, where the listing covers several: pdsh -w gn[11-12] ibstat)
        hosts = len({p.host for p in (*ports, *rated) if p.host}) > 1
        shown = ", ".join(
            f"{p.device}{f' on {p.host}' if hosts and p.host else ''} at "
            f"{p.rate_text if _worded(p.rate_text) else f'{p.rate_gbits_s:g} Gb/s'}"
            for p in slow[:4]
        )
        parts.append(f"active below the rate of their peers: {shown}")
    what = "; ".join(parts)
    if no_sm:
        what += (
            f" ({plural(len(no_sm), 'port')} physically LinkUp but logically down: "
            "no subnet manager has brought them up)"
        )
    evidence: list[Cite | IbPort] = [*down[:4], *slow[:2]]
    fix = [
        (
            "Check the cable, transceiver and switch port of each down port "
            "(ibstat; mlxlink -d <device> -p 1), and re-enable disabled ports."
        ),
        (
            "For InfiniBand, make sure a subnet manager runs (sminfo; start opensm "
            "or enable the switch's SM) so the ports reach ACTIVE."
        ),
        (
            "Point NCCL_IB_HCA at ports that are ACTIVE on every node, and compare "
            "ibstat across all nodes: each should show the same rails up."
        ),
    ]
    ports_machine = Confidence.HIGH if span.machine else Confidence.MEDIUM

    if span.multi is False:
        return [
            RULE.finding(
                summary=f"{what}. The job runs on a single node ({span.why}); NCCL does not "
                "use the network inside one node, so these ports are context, not the cause.",
                fix=[
                    (
                        "Nothing to do for this single-node job; fix the ports before "
                        "running across nodes (ibstat, mlxlink, subnet manager)."
                    )
                ],
                evidence=[*evidence, *span.cites[:1]],
                severity=Severity.INFO,
                confidence=ports_machine,
                cause=False,
            )
        ]
    if chosen_down:
        names = ", ".join(sorted({p.device or "?" for p in chosen_down}))
        return [
            RULE.finding(
                summary=f"{what}. The job selected {names} (NCCL's IB list or NCCL_IB_HCA), "
                "and NCCL skips ports that are not ACTIVE: it has no RDMA path there and fails "
                "or falls back to TCP sockets" + (f"; {span.why}" if span.multi else "") + ".",
                fix=fix,
                evidence=[
                    *chosen_down[:4],
                    *first_distinct([selected[p.device] for p in chosen_down if p.device], 2),
                    *[n.cite for n in facts.of(NcclNet) if n.no_device][:1],
                    *span.cites[:1],
                ],
                severity=Severity.CRITICAL,
                confidence=Confidence.HIGH,
            )
        ]
    if span.multi and uses_ib is not None and down and not active:
        return [
            RULE.finding(
                summary=f"{what}. Every RDMA port shown is down while the job spans nodes "
                f"({span.why}) and NCCL uses IB/RoCE between them.",
                fix=fix,
                evidence=[*evidence, uses_ib, *span.cites[:1]],
                severity=Severity.CRITICAL,
                confidence=ports_machine,
            )
        ]
    # RDMA sends the peer never acknowledged (completion status 12/13) beside a port seen
    # down: the link went away under the job (a flap, the kernel's cable events say so)
    lost, flaps = _link_lost(facts)
    if span.multi and down and lost:
        flapped = "; the kernel saw its cable unplugged or its link go down" if flaps else ""
        return [
            RULE.finding(
                summary=f"{what}, and NCCL's sends to a peer went unacknowledged (completion "
                f"status {lost[0].ib_status}) while the job spans nodes ({span.why}): the link "
                f"went down under the job{flapped}.",
                fix=fix,
                evidence=[*down[:2], lost[0].cite, *flaps[:1], *span.cites[:1]],
                severity=Severity.CRITICAL,
                confidence=Confidence.HIGH if flaps else Confidence.MEDIUM,
            )
        ]
    if span.multi:
        tail = (
            "NCCL skips inactive ports, so the job has fewer rails, or rails that differ "
            "between nodes"
            if down
            else "NCCL spreads traffic over the rails, so the slow ones throttle the job"
        )
        return [
            RULE.finding(
                summary=f"{what}. The job spans nodes ({span.why}); {tail}.",
                fix=fix,
                evidence=[*evidence, *span.cites[:1]],
                severity=Severity.WARNING,
                confidence=ports_machine,
            )
        ]
    partial = bool(active)
    stuck = facts.seen(SETUP_HANG)
    if partial and stuck:
        # a hang at connection set-up with some ports down: a rank given a down port
        # waits for a connection that never comes
        return [
            RULE.finding(
                summary=f"{what}, and the job hangs setting up connections: a rank whose NIC "
                "is the down one waits forever; the active ports alone would work",
                fix=[
                    "Bring the down ports up (cable, switch port, `ibportstate`/`mlxlink`), or",
                    (
                        "Select only the active devices: NCCL_IB_HCA=<active devices> (or the "
                        "library's NIC list), so no rank is given a down port"
                    ),
                    *fix[:1],
                ],
                evidence=[*evidence, stuck[0].cite],
                severity=Severity.WARNING,
                confidence=Confidence.MEDIUM,
            )
        ]
    return [
        RULE.finding(
            summary=f"{what}. The evidence does not show whether the job spans nodes; "
            "the ports matter only for traffic between nodes"
            + (" and NCCL uses only the active ones" if partial else "")
            + ".",
            fix=fix,
            evidence=evidence,
            severity=Severity.INFO if partial else Severity.WARNING,
            confidence=Confidence.MEDIUM,
            cause=not partial,
        )
    ]
