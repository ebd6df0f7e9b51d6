"""IB/RoCE set up wrongly: memlock, GID index, HCA selection, mixed link layers, stack versions.

What it means
-------------
The RDMA hardware is up but NCCL cannot use it as configured: memory
registration fails for lack of locked memory (``ibv_reg_mr`` ``Cannot
allocate memory``), a queue pair cannot be connected (``ibv_modify_qp``
``Invalid argument``: usually a wrong NCCL_IB_GID_INDEX on RoCE;
``Connection timed out``: NICs of different rails that cannot reach each
other), IB and RoCE ports were mixed in one connection, NCCL_IB_HCA names no
device that exists, the nodes disagree on the transport (IB usable on one,
not on another), or the user-space RDMA stack (HPC-X with its UCX/SHARP
NCCL plugin) was built for a newer MLNX OFED than the one installed.

Why it matters
--------------
Connections between nodes fail at setup (``ncclSystemError``), the job
hangs in its first collective, or NCCL silently falls back to TCP sockets.

Evidence
--------
NCCL WARN ``Call to ibv_reg_mr failed`` (on EFA, NCCL's libfabric plugin's
``Couldn't register memory region with regattr. RC: -12, ERROR: Cannot
allocate memory``), or ``ulimit -a``'s ``max locked memory (kbytes, -l) 64``
beside a system error of a job across nodes over InfiniBand; ``Call to ibv_modify_qp failed with
22 Invalid argument ... local GID index 3``, ``Attempted to connect
incompatible devices``; sends timing out (completion status 12) on RoCE from the
first transfer with NCCL_IB_GID_INDEX left unset (not hours in, nor sends to a peer
whose worker died first of its own error); NCCL_IB_HCA against the devices ``ibstat`` or NCCL's
``NET/IB : Using`` list show, with ``NET/IB : No device found``;
HPC-X and MLNX OFED versions side by side; NCCL 2.30's ``Detected mixed
local Net device counts across ranks (min 4, max 8)`` (the nodes see
different numbers of network devices); nodes that chose different
transports (``Using network IB`` or a plugin's ``Using network AWS Libfabric`` on one,
``Using network Socket`` on another,
or NCCL's ``socketFinalizeAccept: wrong type 3 != 4``, from 2.30 the INFO
line ``wrong socket type (peer 3 != expected 4 ...), discarding peer
connection``: a Socket-transport handshake reached an IB-transport
listener).

Fix
---
Raise the locked-memory limit to unlimited (``ulimit -l unlimited``,
``/etc/security/limits.conf``, ``LimitMEMLOCK=infinity``, ``docker run
--ulimit memlock=-1``); unset NCCL_IB_GID_INDEX (or set it to the RoCE v2
index ``show_gids`` gives); set NCCL_IB_HCA to devices that exist and share a
link layer; use the HPC-X release built for the installed OFED.
"""

from __future__ import annotations

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.failures import failures_of
from nccl_doctor.facts.job import collectives_completed
from nccl_doctor.facts.nccl import NcclEvent, NcclIbDevice, NcclNet, NcclWarn
from nccl_doctor.facts.net import IbPort, NetDevMap
from nccl_doctor.facts.run import NcclErrorReport
from nccl_doctor.facts.settings import env_values
from nccl_doctor.facts.span import span_of
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.rules.base import Rule, first_distinct
from nccl_doctor.rules.net._common import (
    REGISTERS,
    died_first,
    failure_cites,
    hca_list,
    name_matches,
)
from nccl_doctor.signs.common import HANG_WORDS, RAN_A_WHILE
from nccl_doctor.signs.net import (
    HPCX_VERSION,
    IB_GID_INDEX,
    IB_INCOMPATIBLE,
    IB_RETRY_EXCEEDED,
    MEMLOCK_SHOWN,
    NET_COUNTS_DIFFER,
    NET_TYPES_DIFFER,
    OFED_VERSION,
    ROCE,
)

RULE = Rule(
    id="net.ib_config",
    title="IB/RoCE configured wrongly",
    severity=Severity.CRITICAL,
    explains=(
        "app.hang",
        "launch.rank_crash",
        "nccl.internal",
        "host.resources",
        "net.ib_transport",
    ),
)

#: The MLNX OFED release line each HPC-X release was built and tested with.
_HPCX_OFED = {
    "2.7": "5.1",
    "2.8": "5.2",
    "2.9": "5.3",
    "2.10": "5.4",
    "2.11": "5.5",
    "2.12": "5.6",
    "2.13": "5.7",
    "2.14": "5.8",
    "2.15": "23.04",
    "2.16": "23.07",
    "2.17": "23.10",
    "2.18": "24.01",
    "2.19": "24.04",
    "2.20": "24.07",
    "2.21": "24.10",
    "2.22": "25.01",
    "2.23": "25.04",
}
_MEMLOCK_FIX = [
    (
        "Raise the locked-memory limit for the job to unlimited: ulimit -l unlimited, "
        "'* - memlock unlimited' in /etc/security/limits.conf, LimitMEMLOCK=infinity for "
        "systemd/slurmd, or docker run --ulimit memlock=-1."
    ),
    "Rerun and check that `ulimit -l` prints unlimited inside the job's environment.",
]


def _key(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split("."))


def _verbs(facts: Facts) -> list[Finding]:
    found: list[Finding] = []
    regs = [w for w in facts.of(NcclWarn) if (w.call or "").startswith((*REGISTERS, "ibv_create"))]
    nomem = [w for w in regs if w.errno == 12]
    if nomem:
        w = nomem[0]
        found.append(
            RULE.finding(
                summary=f"{w.call} failed with 'Cannot allocate memory'"
                + (f" on {w.host}" if w.host else "")
                + ": the NIC could not pin NCCL's buffers, which almost always means the "
                "locked-memory limit (ulimit -l) is too low for the job.",
                fix=_MEMLOCK_FIX,
                evidence=first_distinct([x.cite for x in nomem], 3),
                hosts=[x.host for x in nomem if x.host],
                ranks=[x.rank for x in nomem if x.rank is not None],
            )
        )
    qp = [w for w in facts.of(NcclWarn) if w.call == "ibv_modify_qp"]
    if qp:
        w = qp[0]
        gid = env_values(facts, "NCCL_IB_GID_INDEX")
        gid_m = next(iter(facts.seen_on(IB_GID_INDEX, [w])), None)
        if w.errno == 22:
            why = (
                "an invalid queue-pair attribute, in most cases the wrong GID index "
                + (
                    f"(NCCL_IB_GID_INDEX={gid[0][0]})"
                    if gid
                    else f"(GID index {gid_m.match['index']})"
                    if gid_m
                    else ""
                )
            ).strip()
            fix = [
                (
                    "Unset NCCL_IB_GID_INDEX (NCCL >= 2.21 detects it) or set it to the RoCE v2 "
                    "index that `show_gids` lists for the port, on every node."
                )
            ]
        elif w.errno == 110:
            why = (
                "the remote port never answered: NICs on different rails that cannot "
                "reach each other"
            )
            fix = [
                (
                    "Rerun with NCCL_CROSS_NIC=0 to keep traffic on one rail, and check the rail "
                    "cabling and routing between the nodes."
                )
            ]
        else:
            why = w.os_error or "an error setting up the queue pair"
            fix = ["Check the GID table (show_gids) and NCCL_IB_GID_INDEX on both nodes."]
        found.append(
            RULE.finding(
                summary="NCCL could not connect an IB queue pair: ibv_modify_qp failed"
                + (f" with {w.errno} {w.os_error}" if w.errno else "")
                + (f" on {w.host}" if w.host else "")
                + f"; {why}.",
                fix=[
                    *fix,
                    (
                        "Rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET and compare the "
                        "`NET/IB: IbDev ... GID` lines of both sides."
                    ),
                ],
                evidence=first_distinct([x.cite for x in qp] + [c for _, c in gid], 3),
                hosts=[x.host for x in qp if x.host],
                ranks=[x.rank for x in qp if x.rank is not None],
            )
        )
    mixed = facts.seen(IB_INCOMPATIBLE, prose=False)
    if mixed:
        found.append(
            RULE.finding(
                summary=f"NCCL refused to connect IB devices of different kinds: "
                f"{mixed[0].cite.text.strip()[:200]!r}.",
                fix=[
                    (
                        "Set NCCL_IB_HCA to NICs of one link layer (all InfiniBand or all "
                        "RoCE) that exist on every node."
                    )
                ],
                evidence=first_distinct([h.cite for h in mixed], 3),
            )
        )
    return found


def _mixed_layers(facts: Facts) -> list[Finding]:
    """NCCL's own device list on a host mixes InfiniBand and RoCE ports (``NET/IB : Using
    [0]mlx5_0:1/IB ... [4]mlx5_4:1/RoCE``: NCCL_IB_HCA by prefix, or unset, took a storage
    NIC beside the IB rails) in a job across nodes that failed or stalls: a rank's channel
    over one kind of port meets its peer's port of the other, which no fabric joins."""
    lists = [
        n
        for n in facts.of(NcclNet)
        if n.role == "ib" and {(ll or "").lower() for _, _, ll in n.ib_devices} >= {"ib", "roce"}
    ]
    if not lists or span_of(facts).multi is not True:
        return []
    if not (failures_of(facts) or facts.told(HANG_WORDS)):
        return []
    net = lists[0]
    roce = [d for d, _, ll in net.ib_devices if (ll or "").lower() == "roce"]
    ib = [d for d, _, ll in net.ib_devices if (ll or "").lower() == "ib"]
    where = f" on {net.host}" if net.host else ""
    return [
        RULE.finding(
            summary=f"NCCL's device list{where} mixes InfiniBand ports ({', '.join(ib[:4])}) "
            f"with RoCE ports ({', '.join(roce[:4])}) in a job across nodes: a channel over "
            "one kind meets the peer's port of the other, which no fabric joins",
            fix=[
                (
                    f"Name the IB ports exactly on every node (NCCL_IB_HCA=={','.join(ib[:8])}; "
                    "the leading '=' matches whole names) or leave the RoCE ones out "
                    f"(NCCL_IB_HCA=^{','.join(roce[:4])})"
                ),
                (
                    "Rerun with NCCL_DEBUG=INFO: every node's 'NET/IB : Using' line must list "
                    "ports of one link layer"
                ),
            ],
            evidence=[net.cite],
            confidence=Confidence.MEDIUM,
            hosts=[net.host] if net.host else [],
        )
    ]


def _known_devices(facts: Facts) -> tuple[set[str], list[Cite]]:
    names: set[str] = set()
    cites: list[Cite] = []
    for port in facts.of(IbPort):
        if port.device:
            names.add(port.device)
            cites.append(port.cite)
    for m in facts.of(NetDevMap):
        names.add(m.device)
        cites.append(m.cite)
    for ib in facts.of(NcclIbDevice):
        if ib.name:
            names.add(ib.name)
    return names, cites


def _hca(facts: Facts) -> list[Finding]:
    settings = [(v, c) for v, c in env_values(facts, "NCCL_IB_HCA") if not v.startswith("^")]
    if not settings:
        return []
    value, cite = settings[0]
    wanted, _, exact = hca_list(value)
    known, known_cites = _known_devices(facts)
    no_dev = [n for n in facts.of(NcclNet) if n.role == "ib" and n.no_device]
    if known and not any(name_matches(d, wanted, exact) for d in known):
        shown = ", ".join(sorted(known)[:6])
        return [
            RULE.finding(
                summary=f"NCCL_IB_HCA={value} matches none of the RDMA devices shown ({shown})"
                + ("; NCCL found no IB device and falls back to TCP sockets" if no_dev else "")
                + ".",
                fix=[
                    (
                        f"Set NCCL_IB_HCA to devices that exist on every node (one of {shown}), "
                        "or unset it."
                    )
                ],
                evidence=first_distinct([cite, *[n.cite for n in no_dev], *known_cites], 3),
                severity=Severity.WARNING,
                confidence=Confidence.HIGH if no_dev else Confidence.MEDIUM,
            )
        ]
    if no_dev and not known and span_of(facts).multi:
        return [
            RULE.finding(
                summary=f"NCCL_IB_HCA={value} is set but NCCL reports 'NET/IB : No device found', "
                "so traffic between nodes goes over TCP sockets.",
                fix=[
                    (
                        "Check the device names with ibstat / ibv_devices on every node and set "
                        "NCCL_IB_HCA to ones that exist, or unset it."
                    )
                ],
                evidence=[cite, no_dev[0].cite],
                severity=Severity.WARNING,
            )
        ]
    return []


def _stack(facts: Facts) -> list[Finding]:
    hpcx = facts.seen(HPCX_VERSION)
    ofed = facts.seen(OFED_VERSION) if hpcx else ()
    if not hpcx or not ofed:
        return []
    h, o = hpcx[0], ofed[0]
    built = _HPCX_OFED.get(h.match["v"])
    have = o.match["v"]
    if built is None or _key(have) >= _key(built):
        return []
    span = span_of(facts)
    return [
        RULE.finding(
            summary=f"HPC-X {h.match['v']} (its UCX, MPI and NCCL RDMA/SHARP plugin) is built for "
            f"MLNX OFED {built}, but OFED {have} is installed"
            + (f"; the job spans nodes ({span.why}) over RDMA" if span.multi else "")
            + ". A user-space RDMA stack newer than the kernel driver stack can hang or fail "
            "the first inter-node collective.",
            fix=[
                (
                    f"Use the HPC-X release built for MLNX OFED {have} (see the HPC-X "
                    "release notes' compatibility table), or upgrade OFED to the release "
                    "HPC-X expects."
                ),
                (
                    "Rerun with NCCL_DEBUG=INFO and check the `NET/Plugin` line: test with "
                    "NCCL_NET_PLUGIN=none to confirm the plugin is the problem."
                ),
            ],
            evidence=[h.cite, o.cite, *span.cites[:1]],
            severity=Severity.WARNING,
            confidence=Confidence.MEDIUM,
        )
    ]


def _roce_gid(facts: Facts) -> list[Finding]:
    """RDMA sends time out (status 12) on RoCE while NCCL_IB_GID_INDEX is left to default."""
    retries = [w for w in facts.of(NcclWarn) if w.ib_status == 12]
    cites = [w.cite for w in retries] or [
        h.cite for h in facts.seen(IB_RETRY_EXCEEDED, prose=False)
    ]
    if not cites or env_values(facts, "NCCL_IB_GID_INDEX"):
        return []
    # a GID the peer cannot route fails the first transfer, not one hours in; nor are sends
    # to a peer whose worker died first of its own error (it was gone, not unroutable)
    if collectives_completed(facts) is not None or facts.told(RAN_A_WHILE):
        return []
    if died_first(facts) is not None:
        return []
    roce = [p.cite for p in facts.of(IbPort) if (p.link_layer or "").lower() == "ethernet"]
    roce += [d.cite for d in facts.of(NcclIbDevice) if (d.link_layer or "").lower() == "roce"]
    roce += [h.cite for h in facts.seen(ROCE)]
    if not roce:
        return []
    return [
        RULE.finding(
            summary="RDMA transfers time out (completion status 12, retry exceeded) on a "
            "RoCE link while NCCL_IB_GID_INDEX is not set: NCCL then uses a GID that the "
            "peer cannot route to (often the link-local or RoCE v1 entry), so every send "
            "is retried until it fails",
            fix=[
                (
                    "List the GIDs (`show_gids`, or /sys/class/infiniband/<hca>/ports/1/gids/*) "
                    "and pick the RoCE v2 entry with the host's routable IPv4 address"
                ),
                (
                    "Set NCCL_IB_GID_INDEX to that index on every node (3 on many systems), "
                    "and the same NCCL_IB_HCA"
                ),
                "Check that the switches carry RoCE lossless (PFC/ECN) on that priority",
            ],
            evidence=first_distinct([*cites[:2], *roce[:2]], 4),
            confidence=Confidence.MEDIUM,
        )
    ]


#: NCCL's socket types (src/include/socket.h) of the two network transports.
_SOCKET_TYPES = {"3": "Socket", "4": "IB"}
#: NCCL's own network transports, by the name ``Using network`` gives them.
_NET_NAMES = {"IB": "IB", "Socket": "TCP sockets"}


def _transports(facts: Facts) -> list[Finding]:
    """The nodes chose different network transports: IB on some, TCP sockets on others.

    Read from each host's ``Using network X``, or from NCCL's refusal of a handshake
    of the other transport (``socketFinalizeAccept: wrong type 3 != 4``: a rank of the
    Socket transport reached a rank listening for IB's, or the reverse).
    """
    by_host: dict[str, set[str]] = {}
    cites: dict[str, Cite] = {}
    for n in facts.of(NcclNet):
        if n.role == "selected" and n.host and n.net:
            by_host.setdefault(n.net, set()).add(n.host)
            cites.setdefault(n.net, n.cite)
    refused = facts.seen(NET_TYPES_DIFFER, prose=False)
    # (a host that printed two, one per process or per run, decides nothing)
    hosts = [h for names in by_host.values() for h in names]
    split = len(by_host) >= 2 and len(hosts) == len(set(hosts))
    if not refused and not split:
        return []
    failed = failure_cites(facts)
    if refused:
        got, want = (_SOCKET_TYPES[refused[0].match[k]] for k in ("got", "expected"))
        what = (
            f"A rank refused a connection because its peer used the {got} transport while it "
            f"listened for the {want} transport's handshake (NCCL's socket types "
            f"{refused[0].match['got']} != {refused[0].match['expected']})"
        )
    else:
        what = "NCCL chose different network transports on different nodes"
    if split:
        what += "; " + ", ".join(
            f"{_NET_NAMES.get(net, net)} on {', '.join(sorted(on)[:4])}"
            for net, on in sorted(by_host.items())
        )
    # a network plugin (AWS Libfabric, a vendor's IB plugin) on some nodes, NCCL's own
    # transport on others: the plugin did not load there
    plugin = [net for net in by_host if net not in _NET_NAMES]
    return [
        RULE.finding(
            summary=what + ": the nodes disagree on the network between them (IB or a network "
            "plugin usable or enabled on some nodes and not on others), and a connection between "
            "the two kinds cannot be made.",
            fix=[
                (
                    "Compare the nodes: ibstat / ibv_devinfo (ports Active), NCCL_IB_DISABLE, "
                    "NCCL_NET and NCCL_IB_HCA in each node's environment, and the NCCL INFO line "
                    "'Using network ...' of each."
                ),
                *(
                    [
                        (
                            f"Make the {plugin[0]} network plugin load on every node: its "
                            "libnccl-net*.so on LD_LIBRARY_PATH (or NCCL_NET_PLUGIN) in every "
                            "node's environment; 'NET/Plugin: No plugin found' marks a node "
                            "without"
                        )
                    ]
                    if split and plugin
                    else []
                ),
                (
                    "Make every node use the same transport: fix IB where it is missing (driver, "
                    "rdma-core, the device in the container), or set NCCL_IB_DISABLE=1 on every "
                    "node to use TCP sockets everywhere."
                ),
            ],
            evidence=first_distinct(
                [*(h.cite for h in refused[:1]), *cites.values(), *failed[:1]], 4
            ),
            hosts=sorted({h for hosts in by_host.values() for h in hosts}),
            severity=Severity.CRITICAL if refused or failed else Severity.WARNING,
            confidence=Confidence.HIGH,
        )
    ]


def _device_counts(facts: Facts) -> list[Finding]:
    """NCCL 2.30 refused a communicator whose nodes see different numbers of network devices
    (src/init.cc: every rank's count is gathered at init; rank 0 names the ranks with fewer,
    then fails with ncclSystemError unless NCCL_IGNORE_NET_MISMATCH=1)."""
    refused = facts.seen(NET_COUNTS_DIFFER, prose=False)
    if not refused:
        return []
    hit = refused[0]
    kind, least, most = hit.match["kind"], hit.match["least"], hit.match["most"]
    fewer = [e for e in facts.of(NcclEvent) if e.event == "net-count"]
    ranks = sorted({int(dict(e.detail)["rank"]) for e in fewer})
    named = ""
    if ranks:
        shown = ", ".join(str(r) for r in ranks[:8]) + (" ..." if len(ranks) > 8 else "")
        named = f" (ranks {shown} see fewer)"
    return [
        RULE.finding(
            summary=f"NCCL refused the communicator: its nodes see different numbers of {kind} "
            f"devices, {least} on some and {most} on others{named}. A port down or an adapter "
            "missing on some nodes, NCCL_IB_HCA set differently, or other hardware.",
            fix=[
                (
                    "On the nodes of the ranks named, compare ibstat / ibv_devinfo (every port "
                    "Active, the same adapters as on the other nodes) and the NCCL_IB_HCA each "
                    "node's environment gives."
                ),
                (
                    "Bring the missing port or adapter up, or give every node the same "
                    "NCCL_IB_HCA; NCCL_IGNORE_NET_MISMATCH=1 lets init continue on unequal "
                    "nodes, slower."
                ),
            ],
            evidence=first_distinct([hit.cite, *(e.cite for e in fewer)], 3),
            severity=Severity.CRITICAL,
            confidence=Confidence.HIGH,
        )
    ]


#: Locked memory below this (KiB) cannot hold NCCL's registered IB buffers (NCCL asks for an
#: unlimited limit; Docker's default is 64).
_MEMLOCK_KIB = 1 << 20


def _memlock_shown(facts: Facts) -> list[Finding]:
    """ulimit -a shows a small locked-memory limit where a job across nodes with IB ports
    failed in NCCL with a system error: the NIC cannot pin NCCL's buffers."""
    small = [
        h
        for h in facts.seen(MEMLOCK_SHOWN, prose=False)
        if h.match["kb"] != "unlimited" and int(h.match["kb"]) < _MEMLOCK_KIB
    ]
    if not small or span_of(facts).multi is not True:
        return []
    ib_used = any((p.link_layer or "").lower() == "infiniband" for p in facts.of(IbPort)) or any(
        n.role == "ib" and n.ib_devices for n in facts.of(NcclNet)
    )
    system = [r for r in facts.of(NcclErrorReport) if r.result_name == "ncclSystemError"]
    if not ib_used or not (system or facts.of(NcclWarn)):
        return []
    kb = small[0].match["kb"]
    return [
        RULE.finding(
            summary=f"The job's locked-memory limit is {kb} KiB (ulimit -a) while it runs across "
            "nodes over InfiniBand and NCCL failed with a system error: the NIC pins NCCL's "
            "buffers in locked memory, and that limit cannot hold them (a container started "
            "without --ulimit memlock=-1 keeps Docker's 64 KiB).",
            fix=_MEMLOCK_FIX,
            evidence=first_distinct([small[0].cite, *(r.cite for r in system[:1])], 3),
            confidence=Confidence.MEDIUM,
        )
    ]


def check(facts: Facts) -> list[Finding]:
    return (
        _verbs(facts)
        or _memlock_shown(facts)
        or _transports(facts)
        or _mixed_layers(facts)
        or _device_counts(facts)
        or _hca(facts)
        or _stack(facts)
        or _roce_gid(facts)
    )
