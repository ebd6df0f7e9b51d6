"""Ranks cannot reach each other or the store: refused, timed out, no route, unresolvable.

What it means
-------------
A TCP connection that the job needs could not be made: NCCL's bootstrap or
socket transport connecting to another rank (``Connect to 10.0.0.2<41235>
failed : Connection refused``, ``socketStartConnect: exceeded retries``), or
a rank connecting to the c10d TCPStore at MASTER_ADDR:MASTER_PORT (``The
client socket has timed out after 900000ms while trying to connect to
(node0, 29500)``), or the name did not resolve (``Name or service not
known``).

Why it matters
--------------
Without these connections no communicator or store exists: init fails or
hangs until a timeout. The usual reasons are a firewall or security group
between the nodes, a wrong MASTER_ADDR/port, a hostname that only resolves
on some hosts, or NCCL picking an address on a network the peer cannot
route to.

Evidence
--------
NCCL WARN lines of a failed ``connect`` (errno 111/110/113/101), ``exceeded
retries``/``exceeded timeouts``, ``error encountered when getting address
info``; c10d client socket errors and timeouts; an unexplained
``unhandled system error`` at init of a job that spans nodes. On AWS EFA,
NCCL's libfabric plugin (aws-ofi-nccl) quoting EFA error 15 ``Unreachable
remote - never received a response`` for a transfer (libfabric's own help:
security group rules that do not allow all traffic between the instances,
or instances in different subnets).

Fix
---
From the failing host, test the path: ``ping <peer>``, ``nc -zv <addr>
<port>`` to the store port and to NCCL's ports. Open the ports between nodes
(or the whole subnet) in the firewall/security group, set MASTER_ADDR to an
address every node can reach (an IP if DNS differs), and pin
NCCL_SOCKET_IFNAME to the interface of that network on every node.
"""

from __future__ import annotations

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.failures import store_served_after
from nccl_doctor.facts.nccl import NcclWarn
from nccl_doctor.facts.net import loopback, unspecified
from nccl_doctor.facts.run import C10dSocketError, NcclErrorReport
from nccl_doctor.facts.signs import Sign
from nccl_doctor.facts.span import span_of
from nccl_doctor.facts.store import Facts, Hit
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.rules.base import Rule, first_distinct
from nccl_doctor.rules.launch._common import store_retries
from nccl_doctor.rules.net._common import (
    crashed,
    failure_cites,
    init_completed,
)
from nccl_doctor.rules.net._efa import efa_completions
from nccl_doctor.signs.net import (
    CONNECT_FAILED,
    CONNECT_RETRIES,
    CONNECTION_ERROR,
    LINK_LOCAL_PEER,
    LOOPBACK_PEER,
    NAME_RESOLUTION,
    NET_IB,
    OTHER_CAUSE,
)

RULE = Rule(
    id="net.unreachable",
    title="Ranks cannot reach each other or the store",
    severity=Severity.CRITICAL,
    explains=("launch.rendezvous", "launch.rank_crash", "app.hang", "nccl.internal"),
)

#: refused, timed out, host/network unreachable, connection aborted
_NET_ERRNOS = {111, 110, 113, 101, 103}
#: Why a connect attempt gets no answer at all.
_DROPPED_BY = "(a firewall, a route, or an address the hosts cannot reach)"


def _local(address: str | None) -> bool:
    """Whether a peer's address is the host itself or no host (loopback, ``0.0.0.0``): no
    path between hosts was tried."""
    return address is not None and (loopback(address) or unspecified(address))


_FIX = [
    (
        "From the failing host, test the path: ping <peer>; nc -zv <address> <port> "
        "(the store port, MASTER_PORT, and NCCL's bootstrap port)."
    ),
    (
        "Open the ports between the nodes in the firewall / security group (or allow the "
        "whole cluster subnet), and check that MASTER_ADDR is an address every node can reach."
    ),
    (
        "Pin NCCL_SOCKET_IFNAME (and GLOO_SOCKET_IFNAME) to the interface of the network the "
        "nodes share, on every node, and rerun with NCCL_DEBUG=INFO."
    ),
]


def _nccl(facts: Facts) -> list[NcclWarn]:
    warns = [w for w in facts.of(NcclWarn) if w.ib_status is None and not _local(w.peer)]
    said = {id(w) for w in facts.showing(CONNECT_RETRIES, warns)}
    said |= {id(w) for w in facts.showing(NAME_RESOLUTION, warns)}
    return [w for w in warns if (w.call == "connect" and w.errno in _NET_ERRNOS) or id(w) in said]


def _store(facts: Facts) -> tuple[list[C10dSocketError], list[C10dSocketError]]:
    """(hard failures: timeouts and resolve errors, retried connect errors).

    A resolve error alone is c10d's warning that one address family (IPv6 or
    IPv4) has no address for the host (``[W socket.cpp] The IPv6 network
    addresses of (...) cannot be retrieved``): the client goes on with the
    other family, and only fails when it reaches no address at all (a
    ``connect``/``connect_timeout`` error). It counts only beside such a failure.
    """
    hard, soft = [], []
    # a client that retried until the store answered (NCCL's communicator then finished its
    # init through it) did not fail: c10d warns on every refused attempt while the master starts
    errors = [
        e
        for e in facts.of(C10dSocketError)
        if e.role == "client" and not store_served_after(facts, e.cite)
    ]
    reached = any(e.action != "resolve" for e in errors)
    for e in errors:
        if e.action == "connect_timeout" or (e.action == "resolve" and reached):
            hard.append(e)
        elif e.action == "connect" and e.errno in _NET_ERRNOS:
            soft.append(e)
    return hard, soft


def _quote_other_cause(facts: Facts, reports: list[NcclErrorReport]) -> bool:
    """Whether a report's ``Last error:`` lines (NCCL's last WARN) name another cause."""
    quoted = {
        (r.cite.source, r.cite.line, Cite.of(r.cite.source, r.cite.line, x.rstrip()).text)
        for r in reports
        for x in r.last_error
    }
    return any(
        (h.cite.source, h.cite.line, h.said.text) in quoted
        for h in facts.seen_on(OTHER_CAUSE, reports)
    )


def _not_ib(facts: Facts, sign: Sign) -> list[Hit]:
    """Machine lines showing ``sign`` that are not NCCL's IB transport's (not TCP errors), nor
    a connection to a peer's loopback or link-local address: on one host that peer was not
    listening, across hosts it advertised the wrong address (``net.socket_interface``); no
    firewall is between."""
    hits = facts.seen(sign, prose=False)
    if not hits:
        return []
    apart = facts.lines_of(NET_IB) | facts.lines_of(LOOPBACK_PEER) | facts.lines_of(LINK_LOCAL_PEER)
    return [h for h in hits if h.said not in apart]


def _where(addr: str | None, port: int | None) -> str:
    if not addr:
        return "the store"
    return f"{addr}:{port}" if port else addr


def _inferred(facts: Facts) -> list[Finding]:
    """ncclSystemError at init of a multi-node job, with nothing else to explain it."""
    reports = [r for r in facts.of(NcclErrorReport) if r.reports("ncclSystemError")]
    if not reports or init_completed(facts):
        return []
    if facts.showing(OTHER_CAUSE, facts.of(NcclWarn)):
        return []
    if _quote_other_cause(facts, reports):
        return []
    span = span_of(facts)
    if span.multi is not True:
        return []
    rep = reports[0]
    return [
        RULE.finding(
            summary=f"NCCL failed with {rep.reason or 'ncclSystemError'!r} (a failed system call) "
            f"while setting up a job that spans nodes ({span.why}), and no NCCL warning names "
            "another cause; at init this is most often a socket connect between the nodes "
            "that failed (firewall, unreachable address, wrong interface). The other node's "
            "NCCL_DEBUG=INFO log would show the failed connect.",
            fix=[
                (
                    "Rerun with NCCL_DEBUG=INFO on every node and look for `Connect to <ip><port> "
                    "failed` or `no socket interface found` on the node that failed."
                ),
                *_FIX,
            ],
            evidence=first_distinct([rep.cite, *span.cites], 3),
            severity=Severity.WARNING,
            confidence=Confidence.MEDIUM if span.machine else Confidence.LOW,
            ranks=[r.rank for r in reports if r.rank is not None],
        )
    ]


_EFA_FIX = [
    (
        "Allow all inbound and outbound traffic between the instances: a rule in their "
        "security group whose source and destination is the security group itself (EFA "
        "needs all protocols, not only TCP)."
    ),
    (
        "Keep the instances in one subnet (and placement group); test the EFA path between two "
        "of them with fi_pingpong -p efa (from libfabric's fabtests) before the job."
    ),
    "Check whether a peer process exited first: its own log then holds the cause.",
]


def _efa(facts: Facts) -> list[Finding]:
    """Transfers NCCL's libfabric plugin could not deliver: the EFA device never reached
    the peer."""
    never = efa_completions(facts).unreachable
    if not never:
        return []
    hosts = sorted({w.host for w in never if w.host})
    return [
        RULE.finding(
            summary=f"EFA could not reach the peer: {never[0].prov_error!r}"
            + (f" from {', '.join(hosts[:4])}" if hosts else "")
            + (f"; {len(never)} such transfers" if len(never) > 1 else "")
            + ". The instances cannot exchange EFA traffic: security group rules that do not "
            "allow all traffic between them, or different subnets (or the peer is gone).",
            fix=_EFA_FIX,
            evidence=first_distinct([w.cite for w in never], 4),
            ranks=[w.rank for w in never if w.rank is not None],
            hosts=hosts,
        )
    ]


def check(facts: Facts) -> list[Finding]:
    if efa := _efa(facts):
        return efa
    warns = _nccl(facts)
    hard, soft = _store(facts)
    failed = failure_cites(facts)
    quoted = [  # NCCL's connect WARN quoted in torch's "Last error:" lines
        h
        for h in facts.seen(CONNECT_FAILED, prose=False)
        if not _local(h.match["peer"])
        and not any(h.cite.line == w.cite.line and h.cite.source == w.cite.source for w in warns)
    ]
    if quoted and not warns:
        h = quoted[0]
        return [
            RULE.finding(
                summary=f"NCCL could not connect to {h.match['peer']} ({h.match['err']})"
                + (f" on rank {h.rank}" if h.rank is not None else "")
                + ". The bootstrap/socket connection between ranks failed.",
                fix=_FIX,
                evidence=first_distinct([q.cite for q in quoted], 4),
                ranks=[q.rank for q in quoted if q.rank is not None],
            )
        ]
    if warns:
        w = warns[0]
        err = w.os_error or w.message
        peers = sorted({x.peer for x in warns if x.peer})
        hosts = sorted({x.host for x in warns if x.host})
        return [
            RULE.finding(
                summary=f"NCCL could not connect to "
                f"{', '.join(peers[:3]) if peers else 'a peer'} ({err}"
                + (f", errno {w.errno}" if w.errno else "")
                + f"){' from ' + ', '.join(hosts[:4]) if hosts else ''}"
                + (f"; {len(warns)} such warnings" if len(warns) > 1 else "")
                + ". The bootstrap/socket connection between ranks failed.",
                fix=_FIX,
                evidence=first_distinct([x.cite for x in warns], 4),
                ranks=[x.rank for x in warns if x.rank is not None],
                hosts=hosts,
            )
        ]
    retries = store_retries(facts)
    # a client of a job across nodes that dials its own loopback for the store was given the
    # wrong MASTER_ADDR (127.0.0.1 on a node that does not host the store): no network path
    # failed, the launch named none (the rendezvous rule's finding)
    if span_of(facts).multi is True:
        hard = [e for e in hard if e.action == "resolve" or not _local(e.address)]
    # a client refused until it gave up reached the host: nothing listened there (the
    # rendezvous rule's finding), no packet was lost
    if hard and not (retries.refused and all(e.action == "connect_timeout" for e in hard)):
        e = hard[0]
        what = (
            f"could not resolve {e.address} ({e.error_text or 'gai error'})"
            if e.action == "resolve"
            else f"timed out after {(e.timeout_ms or 0) // 1000} s connecting to "
            f"{_where(e.address, e.port)}"
        )
        how = ""
        if retries.unanswered:
            n = len(retries.unanswered)
            how = (
                f"; {n} of its attempts timed out with no answer at all "
                f"({retries.unanswered[0].match['addr']}): the packets are dropped on the way "
                + _DROPPED_BY
            )
        return [
            RULE.finding(
                summary=f"The c10d store client {what}; the rank never reached the store "
                f"at MASTER_ADDR:MASTER_PORT{how}.",
                fix=_FIX,
                evidence=first_distinct(
                    [x.cite for x in hard]
                    + [h.cite for h in retries.unanswered[:1]]
                    + [x.cite for x in soft],
                    4,
                ),
                ranks=[x.rank for x in hard if x.rank is not None],
                hosts=[x.host for x in hard if x.host],
            )
        ]
    remote = [e for e in soft if not _local(e.address)]
    if remote or (soft and failed and not init_completed(facts)):
        e = (remote or soft)[0]
        serious = bool(failed) and not init_completed(facts) and not crashed(facts)
        return [
            RULE.finding(
                summary=f"The c10d store client failed to connect to {_where(e.address, e.port)} "
                f"({e.error_text or 'errno ' + str(e.errno)}), {len(soft)} time(s)"
                + (
                    "; the job then failed"
                    if serious
                    else "; c10d retries these, so they "
                    "matter only if the connection never succeeds"
                )
                + ".",
                fix=_FIX,
                evidence=first_distinct([x.cite for x in soft] + failed[:1], 4),
                severity=Severity.CRITICAL if serious else Severity.WARNING,
                confidence=Confidence.MEDIUM,
                ranks=[x.rank for x in soft if x.rank is not None],
            )
        ]
    unanswered = [h for h in retries.unanswered if not store_served_after(facts, h.cite)]
    if unanswered:
        return [
            RULE.finding(
                summary=f"The c10d store client's attempts to reach "
                f"{unanswered[0].match['addr']} timed out with no answer ({len(unanswered)} "
                "time(s)); it retries until its connect timeout, so this matters if the job "
                f"waits here: packets to the master are dropped {_DROPPED_BY}.",
                fix=_FIX,
                evidence=first_distinct([h.cite for h in unanswered], 3),
                severity=Severity.WARNING,
                confidence=Confidence.MEDIUM,
                ranks=[h.rank for h in unanswered if h.rank is not None],
            )
        ]
    # c10d's warning that one address family has no address is no failed look-up: it goes on
    # with the next family ("The IPv6 network addresses of (h, p) cannot be retrieved (gai
    # error: -2 - Name or service not known)" on every host with IPv4 only)
    routine = {
        (e.cite.source, e.cite.line)
        for e in facts.of(C10dSocketError)
        if e.action == "resolve" and not e.resolver_failed
    }
    unresolved = [
        h for h in _not_ib(facts, NAME_RESOLUTION) if (h.cite.source, h.cite.line) not in routine
    ]
    texts = unresolved or _not_ib(facts, CONNECTION_ERROR)
    if texts and failed and not init_completed(facts) and not crashed(facts):
        h = texts[0]
        cites: list[Cite] = [t.cite for t in texts]
        return [
            RULE.finding(
                summary=f"A network connection of the job failed: {h.match.group(0)!r}"
                + (f" (rank {h.rank})" if h.rank is not None else "")
                + ", and the job did not start.",
                fix=_FIX,
                evidence=first_distinct(cites + failed[:1], 4),
                confidence=Confidence.MEDIUM,
                ranks=[t.rank for t in texts if t.rank is not None],
            )
        ]
    return _inferred(facts)
