"""NCCL/Gloo bootstrap picked no network interface, or one other hosts cannot reach.

What it means
-------------
NCCL's bootstrap (and its socket transport) needs one local interface to
listen on and to tell peers about. ``NCCL_SOCKET_IFNAME`` (Gloo:
``GLOO_SOCKET_IFNAME``) restricts the choice by name prefix; when nothing
matches on a host, NCCL prints ``Bootstrap : no socket interface found`` and
init fails (``ncclInternalError`` in older releases, ``ncclInvalidUsage`` in
newer ones). Without the variable NCCL may pick a loopback or virtual bridge
(``lo``, ``docker0``, ``virbr0``) whose address other hosts cannot reach.

Why it matters
--------------
No communicator can be created: every rank of the host fails at its first
collective. Interface names often differ between machines (``enp6s0`` on one,
``enp4s0`` on another), so a value that works on one host breaks another.

Evidence
--------
``Bootstrap : no socket interface found``, ``NET/Socket : No usable listening
interface found``, ``NET/IB : No IP interface found``, ``No interface found in
the same subnet``; Gloo's ``Unable to find address for``; a ``Bootstrap :
Using lo:127.0.0.1`` line on a multi-node job (or a link-local address there, or one
address two hosts both bootstrap on: a BMC's USB network, each host's container on the
default docker bridge), or a connection to a peer's
loopback address there (Gloo's ``Connection refused, remote=[127.0.1.1]``,
NCCL's ``Connect to 127.0.1.1<port> failed``: the host name resolves to
127.0.1.1 in /etc/hosts), or to a link-local one (169.254.x.x, fe80::: NCCL's
``connect to 169.254.170.23<...> returned Connection refused, retrying``);
NCCL_SOCKET_IFNAME pinned to
one name on a job whose init failed on some of its hosts; in a live capture
(``check``, ``capture``, a ``run`` snapshot), NCCL_SOCKET_IFNAME (NCCL's
syntax: comma list of prefixes, ``=`` exact, ``^`` exclude) or
GLOO_SOCKET_IFNAME (exact names) selecting none of the interfaces the host's
``/sys/class/net`` lists; the reporter saying that setting NCCL_SOCKET_IFNAME,
GLOO_SOCKET_IFNAME or TP_SOCKET_IFNAME made the job work (critical beside the
job's error: that error was the wrong interface's cascade).

Fix
---
Run ``ip -br addr`` on every host. Set NCCL_SOCKET_IFNAME (and
GLOO_SOCKET_IFNAME) to a comma-separated list of prefixes that covers the
routable interface of every host (``enp4s0,enp6s0``), exclude the wrong ones
(``^lo,docker0``), or unset it to let NCCL choose; then rerun with
``NCCL_DEBUG=INFO`` and check the ``Bootstrap : Using`` line on each host.
"""

from __future__ import annotations

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.host import EnvVar
from nccl_doctor.facts.live import NetInterface
from nccl_doctor.facts.nccl import NcclNet, NcclTestFailure, error_chains
from nccl_doctor.facts.net import link_local, loopback, virtual_interface
from nccl_doctor.facts.run import NcclErrorReport
from nccl_doctor.facts.settings import env_values
from nccl_doctor.facts.span import span_of
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.rules.base import Rule, first_distinct
from nccl_doctor.rules.net._common import (
    failure_cites,
    hca_list,
    init_completed,
    name_matches,
)
from nccl_doctor.signs.common import HANG_WORDS
from nccl_doctor.signs.net import (
    CONNECT_FAILED,
    CONNECT_RETRIES,
    INIT_ERROR,
    LINK_LOCAL_PEER,
    LOOPBACK_PEER,
    NCCL_OR_WARN,
    NO_SOCKET_INTERFACE,
    NO_SOCKET_INTERFACE_RETOLD,
    SOCKET_FAMILY,
)
from nccl_doctor.signs.settings import settings_that_worked

RULE = Rule(
    id="net.socket_interface",
    title="Bootstrap found no usable network interface",
    severity=Severity.CRITICAL,
    explains=("nccl.internal", "nccl.env", "launch.rank_crash", "net.unreachable", "app.hang"),
)

#: The ncclResult_t names of a failed bootstrap (what INIT_ERROR reads in words).
_INIT_RESULTS = frozenset({"ncclInternalError", "ncclInvalidUsage", "ncclSystemError"})
_FIX = [
    (
        "Run `ip -br addr` on every host and note the interface that carries the hosts' "
        "routable addresses."
    ),
    (
        "Set NCCL_SOCKET_IFNAME (and GLOO_SOCKET_IFNAME) to prefixes that match that interface "
        "on every host, comma-separated (e.g. enp4s0,enp6s0), or unset it to let NCCL choose."
    ),
    (
        "Rerun with NCCL_DEBUG=INFO and check that each host prints "
        "`Bootstrap : Using <iface>:<ip>` with an address the other hosts can reach."
    ),
]


def _ifname(facts: Facts) -> list[tuple[str, Cite, str]]:
    out: list[tuple[str, Cite, str]] = []
    for var in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"):
        out.extend((value, cite, var) for value, cite in env_values(facts, var))
    return out


def _retold(facts: Facts) -> list[Finding]:
    """NCCL's 'no socket interface found' in a person's words, with the interface setting the
    job runs with: the setting names an interface this host lacks."""
    hits = facts.told(NO_SOCKET_INTERFACE_RETOLD)
    settings = _ifname(facts)
    if not hits or not settings:
        return []
    value, cite, var = settings[0]
    return [
        RULE.finding(
            summary=f"The report says NCCL found no socket interface, with {var}={value}: no "
            f"interface of the host matches {value!r}, so communicator init cannot start.",
            fix=_FIX,
            evidence=[hits[0].cite, cite],
            severity=Severity.WARNING,
            confidence=Confidence.MEDIUM,
        )
    ]


def _direct(facts: Facts) -> list[Finding]:
    hits = facts.seen(NO_SOCKET_INTERFACE, prose=False)
    if not hits:
        return _retold(facts)
    settings = _ifname(facts)
    first = hits[0]
    said = first.match.group(0)
    gloo = first.match["unable"] is not None
    setting = ""
    if settings:
        value, _, var = settings[0]
        setting = f" with {var}={value}"
    elif gloo:
        setting = " (GLOO_SOCKET_IFNAME names an interface this host lacks)"
    hosts = sorted({h.said.host for h in hits if h.said.host})
    ranks = sorted({h.rank for h in hits if h.rank is not None})
    who = ""
    if ranks:
        who += f" on rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks[:8]))}"
    if hosts:
        who += f" ({', '.join(hosts[:4])})"
    return [
        RULE.finding(
            summary=f"{'Gloo' if gloo else 'NCCL'} found no usable socket "
            f"interface{setting}: {said.strip()!r}"
            f"{who}; communicator init cannot start without one.",
            fix=_FIX,
            evidence=first_distinct([h.cite for h in hits] + [c for _, c, _ in settings], 4),
            ranks=ranks,
            hosts=hosts,
        )
    ]


def _address(net: NcclNet) -> tuple[str, str]:
    """The interface a bootstrap or socket line names first, and its address without ``<port>``."""
    name, addr = net.interfaces[0]
    return name, addr.split("<", 1)[0]


def _shared(bad: list[NcclNet], nets: list[NcclNet]) -> list[NcclNet]:
    """The bootstrap lines of hosts that advertise one address between them.

    Each host must tell its peers an address that reaches it alone; two hosts that
    bootstrap on the same address (a BMC's USB network, a cloned VM's bridge) send each
    other to themselves.
    """
    hosts: dict[str, set[str]] = {}
    for net in nets:
        if net.role == "bootstrap" and net.host:
            hosts.setdefault(_address(net)[1], set()).add(net.host)
    shared = {addr for addr, names in hosts.items() if len(names) > 1}
    return [n for n in nets if n.role == "bootstrap" and _address(n)[1] in shared] or bad


def _virtual(facts: Facts) -> list[Finding]:
    span = span_of(facts)
    if span.multi is not True:
        return []
    nets = [n for n in facts.of(NcclNet) if n.role in ("bootstrap", "socket") and n.interfaces]
    bad: list[NcclNet] = []
    for net in nets:
        name, addr = _address(net)
        if virtual_interface(name) or loopback(addr) or link_local(addr):
            bad.append(net)
    bad = _shared(bad, nets)
    if not bad:
        return []
    name, addr = _address(bad[0])
    failed = failure_cites(facts)
    # NCCL's own warning of a socket that never got through (a connect refused or timed out,
    # its retries exceeded) or a hang the reporter tells of, where NCCL never finished its
    # init: the job failed on that address too
    if not failed:
        failed = [
            h.cite
            for sign in (CONNECT_RETRIES, CONNECT_FAILED)
            for h in facts.seen(sign, prose=False)
        ][:1] or [h.cite for h in facts.told(HANG_WORDS)][:1]
    hosts = sorted({n.host for n in bad if n.host})
    shared = len(hosts) > 1 and len({_address(n)[1] for n in bad if n.host}) == 1
    if shared:
        why = (
            f"hosts {', '.join(hosts[:4])} all advertise that one address, so each peer that "
            "dials it reaches itself"
        )
    elif link_local(addr):
        why = "a link-local address reaches its own link only, not the other hosts"
    else:
        why = "a loopback or virtual-bridge address is not reachable from other hosts"
        if hosts:
            why += f" (hosts {', '.join(hosts[:4])})"
    return [
        RULE.finding(
            summary=f"NCCL bootstraps on {name} ({addr}) while the job spans nodes ({span.why}); "
            f"{why}.",
            fix=_FIX,
            evidence=first_distinct([n.cite for n in bad] + span.cites + failed[:1], 4),
            hosts=hosts,
            severity=Severity.CRITICAL
            if failed and not init_completed(facts)
            else Severity.WARNING,
            confidence=Confidence.HIGH if shared else Confidence.MEDIUM,
        )
    ]


def _unroutable_peer(facts: Facts) -> list[Finding]:
    """A connection to a peer's loopback or link-local address in a job that spans nodes.

    Gloo and NCCL's bootstrap advertise the address the host's own name resolves
    to (or the interface they picked): with ``127.0.1.1 <hostname>`` in
    /etc/hosts (Ubuntu's default) or ``lo`` chosen, every rank tells the others
    to dial 127.x, and on another host that is the caller itself. A link-local
    address (169.254.x.x, fe80::: a cloud's metadata or pod-identity link, an
    IPv6 address without its scope) is reachable on its own link only; NCCL's
    socket transport dials every interface it listed, retrying each.
    """
    span = span_of(facts)
    if span.multi is not True:
        return []
    loopback = facts.seen(LOOPBACK_PEER, prose=False)
    hits = loopback or facts.seen(LINK_LOCAL_PEER, prose=False)
    if not hits:
        return []
    first = hits[0]
    failed = failure_cites(facts)
    if loopback:
        summary = (
            f"A rank tried to connect to its peer at {first.match['addr']}, a loopback "
            f"address, while the job spans nodes ({span.why}): the peer advertised 127.x (its "
            "host name resolves to the loopback address in /etc/hosts, or the loopback "
            "interface was picked), and on another host that address is the caller itself."
        )
        check = (
            "Run `getent hosts $(hostname)` on every node: a 127.x answer is the cause; "
            "map the host name to the node's routable address in /etc/hosts (or DNS)."
        )
    else:
        summary = (
            f"A rank dialled its peer at {first.match['addr']}, a link-local address, while "
            f"the job spans nodes ({span.why}): only its own link reaches it, so the peer "
            "advertised an interface the hosts do not share (a cloud's metadata or "
            "pod-identity link, an IPv6 address without its scope)."
        )
        check = (
            "Run `ip -br addr` on every node and exclude the interface holding the 169.254.x.x "
            "or fe80:: address from NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME (`^name`), "
            "or name the shared interface."
        )
    return [
        RULE.finding(
            summary=summary,
            fix=[check, *_FIX[1:]],
            evidence=first_distinct([h.cite for h in hits] + span.cites + failed[:1], 4),
            ranks=sorted({h.rank for h in hits if h.rank is not None}),
            severity=Severity.CRITICAL if failed or not init_completed(facts) else Severity.WARNING,
            confidence=Confidence.HIGH if span.machine else Confidence.MEDIUM,
        )
    ]


def _pinned(facts: Facts) -> list[Finding]:
    """NCCL_SOCKET_IFNAME pinned to names, a multi-host job, init failed on some host."""
    settings = [s for s in _ifname(facts) if s[2] == "NCCL_SOCKET_IFNAME"]
    settings = [s for s in settings if not s[0].startswith("^")]
    if not settings:
        return []
    span = span_of(facts)
    if span.multi is not True or not span.machine:
        return []
    tests = [t for t in facts.of(NcclTestFailure) if t.message]
    errors: list[tuple[Cite, str | None, str]] = [
        (test.cite, test.host, (test.message or "").strip(" /"))
        for test in facts.showing(INIT_ERROR, tests)
    ]
    reports = facts.of(NcclErrorReport)
    named = _init_reasons(facts, reports) if reports else set()
    for rep in reports:
        if rep.result_name in _INIT_RESULTS or (rep.cite.source, rep.cite.line) in named:
            text = " ".join(x for x in (rep.reason, rep.result_name) if x)
            errors.append((rep.cite, rep.host, rep.reason or text))
    if not errors or init_completed(facts) or _failed_past_bootstrap(facts):
        return []
    value, cite, _ = settings[0]
    wanted, _, exact = hca_list(value)
    failed_hosts = sorted({h for _, h, _ in errors if h})
    for net in facts.of(NcclNet):  # the failing host found a matching interface: not this
        if (
            net.role == "bootstrap"
            and net.host in failed_hosts
            and any(name_matches(n, wanted, exact) for n, _ in net.interfaces)
        ):
            return []
    others = [h for h in span.hosts if h not in failed_hosts]
    where = f" on {', '.join(failed_hosts)}" if failed_hosts else ""
    contrast = f" (not on {', '.join(others[:3])})" if failed_hosts and others else ""
    return [
        RULE.finding(
            summary=f"NCCL_SOCKET_IFNAME={value} pins NCCL's bootstrap to "
            f"{'that name' if len(wanted) == 1 else 'those names'} while the job spans nodes "
            f"({span.why}), and NCCL init failed{where}{contrast} with {errors[0][2]!r}: the "
            "error NCCL returns when no interface of a host matches NCCL_SOCKET_IFNAME "
            "('Bootstrap : no socket interface found'). Interface names often differ "
            "between hosts.",
            fix=[
                (
                    f"Run `ip -br addr` on {', '.join(failed_hosts) or 'every host'} and "
                    f"check that an interface starting with {', '.join(wanted)} exists there."
                ),
                *_FIX[1:],
            ],
            evidence=first_distinct([cite, errors[0][0], *span.cites], 4),
            hosts=failed_hosts,
            confidence=Confidence.MEDIUM,
        )
    ]


#: The files of NCCL's bootstrap and socket code: an error chain that starts elsewhere
#: (graph/connect.cc, transport/p2p.cc) failed after the ranks had found each other.
_BOOTSTRAP_FILES = ("bootstrap.cc", "socket.cc", "socket.h", "proxy.cc", "net_socket.cc")


def _failed_past_bootstrap(facts: Facts) -> bool:
    """Whether every ``-> N`` chain NCCL printed starts outside its bootstrap and socket code:
    the interface let the ranks meet, and the failure came later (a graph, a transport)."""
    chains = [c for c in error_chains(facts) if c.frames]
    return bool(chains) and all(not c.frames[0][0].endswith(_BOOTSTRAP_FILES) for c in chains)


def _init_reasons(facts: Facts, reports: tuple[NcclErrorReport, ...]) -> set[tuple[str, int]]:
    """Where the reports are whose reason is an init error (INIT_ERROR on their own message).

    The report's message (``NCCL error in: ..., <reason>, NCCL version ...``) is
    a line of its own; the ``Last error:`` lines cited with it are NCCL's words.
    """
    said = {(h.cite.source, h.cite.line, h.said.text) for h in facts.seen_on(INIT_ERROR, reports)}
    return {
        (r.cite.source, r.cite.line)
        for r in reports
        if r.reason
        and (r.cite.source, r.cite.line, Cite.of(r.cite.source, r.cite.line, r.message).text)
        in said
    }


def _family(facts: Facts) -> list[Finding]:
    hits = list(facts.seen(SOCKET_FAMILY))
    if hits:
        nccl = facts.lines_of(NCCL_OR_WARN)
        hits = [h for h in hits if h.said in nccl]
    if not hits:
        return []
    return [
        RULE.finding(
            summary="NCCL could not create its bootstrap socket: 'Address family not "
            "supported by protocol' means the interface it picked has an address family "
            "(usually IPv6) the host does not support, so no interface is usable",
            fix=[
                (
                    "Pin an IPv4 interface: NCCL_SOCKET_IFNAME=<iface> (see `ip -br addr`), or "
                    "NCCL_SOCKET_FAMILY=AF_INET"
                ),
                "If IPv6 is meant to be used, enable it on that interface",
                *_FIX[1:2],
            ],
            evidence=[h.cite for h in hits[:2]],
            ranks=[h.rank for h in hits if h.rank is not None],
            confidence=Confidence.MEDIUM if all(h.prose for h in hits) else Confidence.HIGH,
        )
    ]


def _bootstrap_failed_on_ipoib(facts: Facts) -> list[Finding]:
    """Bootstrap sockets fail while NCCL's out-of-band interface is an IPoIB one."""
    chains = [
        c
        for c in error_chains(facts)
        if c.result_code == 2
        and any(f[0].endswith(("socket.cc", "bootstrap.cc", "socket.h")) for f in c.frames)
    ]
    if not chains or init_completed(facts):
        return []
    ipoib: list[tuple[str, str, NcclNet]] = []
    for net in facts.of(NcclNet):
        for name, addr in [*net.interfaces, (net.oob_interface or "", net.oob_address or "")]:
            if name.startswith("ib"):
                ipoib.append((name, addr, net))
    if not ipoib:
        return []
    name, addr, net = ipoib[0]
    addr = addr.split("<", 1)[0]
    hosts = sorted({c.host for c in chains if c.host})
    return [
        RULE.finding(
            summary=f"NCCL's bootstrap sockets failed (ncclSystemError in socket.cc / "
            f"bootstrap.cc) while it bootstraps over the IPoIB interface {name} ({addr}): "
            "the ranks cannot reach each other on that network (other subnets per node, "
            "containers without it, IPoIB down)",
            fix=[
                (
                    "Pin bootstrap to the interface that connects the nodes: "
                    "NCCL_SOCKET_IFNAME=<ethernet iface> (`ip -br addr`), keeping IB for data"
                ),
                (
                    f"Or check that {name} is up with an address in one subnet on every node "
                    "(and present inside the containers)"
                ),
                *_FIX[2:3],
            ],
            evidence=first_distinct([net.cite, *(c.cite for c in chains[:2])], 3),
            hosts=hosts,
            confidence=Confidence.MEDIUM,
        )
    ]


def _folder(source: str) -> str:
    return source.rsplit("/", 1)[0] if "/" in source else ""


def selected(names: list[str], value: str, *, gloo: bool = False) -> list[str]:
    """The interfaces of ``names`` that ``NCCL_SOCKET_IFNAME=value`` lets NCCL use.

    NCCL's syntax: a comma list of name prefixes (``eth`` selects ``eth0``),
    ``=`` first for exact names, ``^`` first to exclude instead; ``:port``
    suffixes are ignored here. Gloo takes exact names only. Linear in the
    value: each interface's own prefixes are looked up in a set.
    """
    wanted, excluded, exact = hca_list(value)
    if gloo:
        wanted, excluded, exact = [t.strip() for t in value.split(",") if t.strip()], False, True
    pool = set(wanted)

    def listed(name: str) -> bool:
        if exact:
            return name in pool
        return any(name[:k] in pool for k in range(1, len(name) + 1))

    return [n for n in names if listed(n) != excluded]


def _shown(value: str, limit: int = 60) -> str:
    return value if len(value) <= limit else f"{value[:limit]}… ({len(value)} characters)"


def _absent_here(facts: Facts) -> list[Finding]:
    """NCCL_/GLOO_SOCKET_IFNAME in a live capture's environment selects none of its interfaces."""
    by_folder: dict[str, list[NetInterface]] = {}
    for iface in facts.of(NetInterface):
        by_folder.setdefault(_folder(iface.cite.source), []).append(iface)
    out: list[Finding] = []
    for env in facts.of(EnvVar):
        if env.name not in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME") or not env.value:
            continue
        ifaces = by_folder.get(_folder(env.cite.source))
        if not ifaces or env.form != "dump":
            continue  # not the environment of a host whose interfaces were read
        names = sorted({i.name for i in ifaces})
        if selected(names, env.value, gloo=env.name == "GLOO_SOCKET_IFNAME"):
            continue
        who = "Gloo" if env.name.startswith("GLOO") else "NCCL"
        said = "Unable to find address" if who == "Gloo" else "no socket interface found"
        listed = ", ".join(names[:12]) + (" ..." if len(names) > 12 else "")
        out.append(
            RULE.finding(
                summary=f"{env.name}={_shown(env.value)} selects none of this host's network "
                f"interfaces ({listed}): {who} will find no socket interface, so every job "
                f"started with this environment fails at communicator init ({said!r}).",
                fix=[
                    (
                        f"Run `ip -br addr` here and set {env.name} to the interface that "
                        "carries the address the other hosts reach"
                        + ("" if who == "Gloo" else " (or a prefix of it: eth matches eth0)")
                        + ", or unset it."
                    ),
                    *_FIX[2:],
                ],
                evidence=[env.cite, ifaces[0].cite],
                hosts=[env.host] if env.host else [],
                confidence=Confidence.HIGH,
            )
        )
    return out[:2]


#: The settings that choose the interface a job's sockets use: NCCL's and gloo's, TensorPipe's,
#: Horovod's gloo controller's.
_IFNAME_SETTINGS = frozenset(
    {"NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME", "NCCL_SOCKET_FAMILY"}
)


def _worked(facts: Facts) -> list[Finding]:
    """The reporter says choosing the interface made the job work: the default one was wrong.

    Critical where the job failed with an error (that error was the cascade of the wrong
    interface); a warning where only words say it failed.
    """
    worked = [w for w in settings_that_worked(facts) if w.prose and w.name in _IFNAME_SETTINGS]
    if not worked:
        return []
    first = worked[0]
    failed = failure_cites(facts)
    return [
        RULE.finding(
            summary=f"The job works with {first.name}={first.value}: the interface NCCL or "
            "gloo picked by default was one the other ranks cannot use (a docker bridge, a "
            "second subnet, an address family the peers lack)",
            fix=_FIX,
            evidence=first_distinct([first.cite, *failed[:2]], 3),
            severity=Severity.CRITICAL if failed else Severity.WARNING,
            confidence=Confidence.HIGH if failed else Confidence.MEDIUM,
        )
    ]


def check(facts: Facts) -> list[Finding]:
    return (
        _direct(facts)
        or _worked(facts)
        or _family(facts)
        or _absent_here(facts)
        or _pinned(facts)
        or _unroutable_peer(facts)
        or _virtual(facts)
        or _bootstrap_failed_on_ipoib(facts)
    )
