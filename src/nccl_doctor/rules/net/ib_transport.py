"""RDMA transfers failed at run time: IB completion errors and async fatal events.

What it means
-------------
NCCL's IB/RoCE transport posted a send or receive that completed with an
error (``NET/IB : Got completion from peer ... with error 12`` or
``status=12``), or the adapter raised an asynchronous fatal event (a
device, completion-queue or queue-pair error; from 2.23 NCCL counts it and
fails the communicator's next operation: ``communicator encountered a fatal
error (detected in ncclIbIsend)``, shown alone when the event's own line is
in another rank's log or before the log starts). The
number is the verbs ``ibv_wc_status``: 12 retry exceeded (the peer never
acknowledged), 13 receiver not ready, 4 local protection (a memory
registration the NIC may not touch), 10 remote access, 5 flushed (the queue
pair had already failed). On AWS EFA, NCCL's libfabric plugin (aws-ofi-nccl)
reports the same as a request that ``completed with error``, with the EFA
provider's error: 4124/4126 ``Unresponsive receiver``, 13 ``Unresponsive
remote`` and 9 a queue pair that is gone (the peer stopped answering: it
exited or failed, or its host or device did), 5/7 a registration the NIC
may not use.

Why it matters
--------------
The queue pair is dead: the collective cannot finish, NCCL returns
``ncclRemoteError``/``ncclSystemError`` and the other ranks time out or see
their connection closed. Retry-exceeded errors mostly mean the link or the
path to the peer broke (port flap, cable, switch, RoCE routing/GID, a peer
that died); protection errors point at memory registration (GPUDirect RDMA,
PCIe ACS/IOMMU). Where a port on the path is seen going down, flapping or
downed at that time (its kernel line, ``LinkDownedCounter``), the failed
transfers are that link's cascade: the diagnosis is ``net.ib_link``.

Evidence
--------
``NCCL WARN NET/IB : Got completion from peer <addr> with error <n>`` (old)
or ``with status=<n> ... vendor err <v> (Send|Recv)`` (new), also quoted in
PyTorch's ``Last error:``; ``NET/IB : mlx5_0:1 async fatal event``, or an
older ``Got async event`` naming a fault (not one that tells a change of the
fabric's state: ``SM change``, ``client reregistration``, ``LID change``);
``communicator encountered a fatal error (detected in ...)`` (medium
confidence when it is the only sign). Unacknowledged sends (12, 13, flushed)
defer to a worker that died first of its own error, or to a GPU lost (Xid 79)
not shown to come after them: the process on it died with it.

Fix
---
Find the first error in time (status 5 flushes follow it). For 12/13: check
both hosts' ports (``ibstat``, error counters with ``perfquery``/``ethtool -S``),
the switch logs, and whether the peer process died first; try a larger
``NCCL_IB_TIMEOUT``. For 4/10: test with ``NCCL_NET_GDR_LEVEL=LOC`` (GDR off)
and check ACS/IOMMU. Rerun ``nccl-tests`` between the two hosts named.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from nccl_doctor.facts.host import XidEvent
from nccl_doctor.facts.nccl import NcclWarn
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.rules._probe import isolated_transport
from nccl_doctor.rules.base import Rule, first_distinct
from nccl_doctor.rules.gpu._common import xids_for
from nccl_doctor.rules.net._common import completions, died_first, plural
from nccl_doctor.rules.net._efa import PEER_GONE, REGISTRATION, efa_completions, reading
from nccl_doctor.signs.net import IB_ASYNC_EVENT, IB_FATAL_COUNTED, NON_FATAL

RULE = Rule(
    id="net.ib_transport",
    title="RDMA transfers failed (IB completion errors)",
    severity=Severity.CRITICAL,
    explains=("app.hang", "launch.rank_crash", "nccl.internal"),
)

_MEANING = {
    1: "local length error",
    2: "local QP operation error",
    4: "local protection error: the NIC may not access a registered buffer",
    5: "work request flushed: the queue pair had already failed",
    9: "invalid request at the remote side",
    10: "remote access error: the peer rejected the memory key",
    11: "remote operation error",
    12: "transport retry counter exceeded: the peer never acknowledged (link, path or peer lost)",
    13: "receiver-not-ready retry exceeded",
}
_FIX_BY = {
    12: "Check both hosts' ports and error counters (ibstat; perfquery -x; ethtool -S <netdev> "
    "for RoCE) and the switch logs for link flaps; check whether the peer process died first.",
    13: "Check whether the receiving rank stalled or died, then retry with a larger "
    "NCCL_IB_TIMEOUT.",
    4: "Rerun with NCCL_NET_GDR_LEVEL=LOC (GPUDirect RDMA off): if it then works, check "
    "nvidia_peermem/DMA-BUF and disable PCIe ACS / set the IOMMU to passthrough.",
    10: "Check that every rank runs the same NCCL and net plugin, and whether the peer "
    "exited first.",
}


#: Completion statuses of sends a peer never acknowledged: its link, its path, or the peer
#: itself was gone (retry exceeded, receiver not ready, flushed after either).
_PEER_LOST = frozenset({12, 13, 5})


def _gpu_lost_first(facts: Facts, warns: Sequence[NcclWarn]) -> XidEvent | None:
    """A GPU lost (an Xid the table reads as gpu.lost: fallen off the bus, ...) not shown to
    come after the first completion error: the process on it died with it."""
    lost = [event for event, _ in xids_for(facts, "gpu.lost")]
    if not lost:
        return None
    first = lost[0]
    timed = [w for w in warns if w.time_s is not None and w.clock == first.clock]
    if first.time_s is not None and timed and first.time_s > min(w.time_s or 0 for w in timed):
        return None
    return first


def check(facts: Facts) -> list[Finding]:
    if probe := _probe(facts):
        return probe
    found = completions(facts)
    warns, quoted = found.warns, found.quoted
    events = list(facts.seen(IB_ASYNC_EVENT, prose=False))
    if events:
        non_fatal = facts.lines_of(NON_FATAL)
        events = [h for h in events if h.said not in non_fatal]
    counted = list(facts.seen(IB_FATAL_COUNTED, prose=False))
    if not warns and not quoted and not events and not counted:
        return _libfabric(facts)
    codes: Counter[int] = Counter()
    names: dict[int, str] = {}
    for w in warns:
        status = w.ib_status if w.ib_status is not None else -1
        codes[status] += 1
        if w.ib_status_name:
            names[status] = w.ib_status_name
    for _, code, _ in quoted:
        codes[code] += 1
    primary = [c for c in codes if c != 5] or list(codes)
    parts: list[str] = []
    for code in sorted(primary, key=lambda c: -codes[c]):
        label = names.get(code, f"status {code}")
        meaning = _MEANING.get(code, "see ibv_wc_status")
        parts.append(f"{plural(codes[code], 'completion error')} {label} ({code}: {meaning})")
    if 5 in codes and primary != [5]:
        parts.append(f"{codes[5]} flushed after it")
    hosts = sorted({w.host for w in warns if w.host})
    peers = sorted({w.peer for w in warns if w.peer} | {p for _, _, p in quoted if p})
    vendor = sorted({w.ib_vendor_err for w in warns if w.ib_vendor_err is not None})
    reqs = sorted({w.ib_request for w in warns if w.ib_request})
    where = []
    if hosts:
        where.append(f"on {', '.join(hosts[:4])}")
    if peers:
        where.append(f"from peer {', '.join(peers[:3])}" + (" ..." if len(peers) > 3 else ""))
    if reqs:
        where.append(f"({'/'.join(reqs)})")
    if vendor:
        where.append(f"vendor err {', '.join(str(v) for v in vendor)}")
    summary = "NCCL's IB/RoCE transport failed: " + "; ".join(parts) if parts else ""
    if where:
        summary += " " + " ".join(where)
    if events:
        ev = events[0].match.group(0).strip()
        summary = (summary + "; " if summary else "") + f"the adapter reported: {ev}"
    if counted and not events:
        fn = counted[0].match["fn"]
        summary = (summary + "; " if summary else "NCCL's IB/RoCE transport failed: ") + (
            "the adapter raised a fatal async event (device, completion-queue or queue-pair "
            f"error) and NCCL failed the communicator's next operation ({fn}); the event's own "
            "line is not in the evidence"
        )
    fix = [_FIX_BY[c] for c in sorted(primary, key=lambda c: -codes[c]) if c in _FIX_BY]
    fix += [
        (
            "Find the first IB error in time across all ranks; later flushed (status 5) errors "
            "and peers' timeouts follow from it."
        ),
        (
            "Run nccl-tests (all_reduce_perf) between the hosts named, with NCCL_DEBUG=INFO, "
            "to confirm the path before restarting the job."
        ),
    ]
    if (events or counted) and not warns and not quoted:
        fix.insert(
            0,
            "Check the adapter named in the async event (dmesg, mlxlink, ibstat); "
            "a fatal event needs the port or the host reset."
            + (
                ""
                if events
                else " Find the event's own WARN in every rank's log (NET/IB : "
                "<hca>:<port> async fatal event)."
            ),
        )
    evidence = first_distinct(
        [w.cite for w in warns]
        + [c for c, _, _ in quoted]
        + [e.cite for e in events]
        + [h.cite for h in counted],
        4,
    )
    # flushed completions alone: the queue pair was already in its error state when they
    # completed (ibv_wc_status IBV_WC_WR_FLUSH_ERR), so the error that put it there, on this
    # side or the peer's (its process gone, its own completion error), is not in the evidence
    flushed_only = primary == [5] and not events and not counted
    if flushed_only:
        summary += (
            ": flushed work requests only, which follow the queue pair's failure; the error "
            "that failed it (the peer's exit, or its own completion error) is elsewhere"
        )
    # unacknowledged sends (12, 13, flushed) to a peer whose worker had died of an error of
    # its own: the peer was gone, not the path to it; the death is the cause
    peer_lost = set(primary) <= _PEER_LOST and not events
    died = died_first(facts) if peer_lost else None
    lost = _gpu_lost_first(facts, warns) if peer_lost else None
    detail: list[str] = []
    if died is not None:
        on = f" on {died.host}" if died.host else ""
        detail.append(
            f"a worker{on} died first of its own error ({(died.error or '')[:120]}): "
            "sends to it went unacknowledged because it was gone"
        )
    if lost is not None:
        detail.append(
            f"a GPU was lost first (Xid {lost.xid} on {lost.bus_id or 'a GPU'}): the rank on it "
            "died with it, and sends to that rank went unacknowledged"
        )
    yields = [*(["launch.rank_crash"] if died else []), *(["gpu.lost"] if lost else [])]
    return [
        RULE.finding(
            summary=summary + ".",
            fix=list(dict.fromkeys(fix)),
            evidence=evidence,
            ranks=[w.rank for w in warns if w.rank is not None],
            hosts=hosts,
            explains=[i for i in RULE.explains if i not in yields] if yields else None,
            defers_to=yields,
            detail=detail,
            severity=Severity.WARNING if flushed_only else RULE.severity,
            confidence=(
                Confidence.MEDIUM
                if flushed_only or not (warns or quoted or events)
                else Confidence.HIGH
            ),
            cause=not flushed_only,
        )
    ]


def _probe(facts: Facts) -> list[Finding]:
    """A probe run whose transport isolation named this transport."""
    return isolated_transport(
        RULE,
        facts,
        "IB",
        "InfiniBand/RoCE (IB) transport",
        [
            (
                "Check the HCAs and ports of the node pair (ibstat, "
                "ibv_devinfo, error counters) and rerun the probe"
            ),
            "NCCL_IB_DISABLE=1 (TCP sockets) is a slow stopgap only",
        ],
    )


def _libfabric(facts: Facts) -> list[Finding]:
    """Transfers on NCCL's libfabric plugin (EFA) that completed with an error, where the
    peer was reached (a peer never reached is :mod:`.unreachable`'s)."""
    failed = efa_completions(facts).failed
    if not failed:
        return []
    texts = Counter(w.prov_error for w in failed if w.prov_error)
    said = "; ".join(f"{plural(n, 'completion')} '{text}'" for text, n in texts.most_common(2))
    codes = sorted({w.prov_errno for w in failed if w.prov_errno is not None})
    hosts = sorted({w.host for w in failed if w.host})
    gone = bool(set(codes) & PEER_GONE)
    fix = [
        (
            "Find the first error in time across every rank's log: a peer that exited or "
            "failed first holds the cause, and the others' transfer errors follow from it."
            if gone
            else "Find the first error in time across every rank's log."
        ),
        (
            "Check each node's EFA device (fi_info -p efa; the instance's EFA interfaces in "
            "the console) and run nccl-tests (all_reduce_perf) between the hosts named with "
            "NCCL_DEBUG=INFO before restarting the job."
        ),
    ]
    if set(codes) & REGISTRATION:
        fix.insert(
            0,
            "Rerun with FI_EFA_USE_DEVICE_RDMA=0 (GPUDirect RDMA off): if the error goes, the "
            "GPU-to-NIC path (DMA-BUF, the peer-memory module) is at fault.",
        )
    return [
        RULE.finding(
            summary="NCCL's libfabric (EFA) transport failed: "
            + said
            + (f" (provider error {', '.join(str(c) for c in codes)})" if codes else "")
            + (f" on {', '.join(hosts[:4])}" if hosts else "")
            + f"; {reading(failed)}.",
            fix=fix,
            evidence=first_distinct([w.cite for w in failed], 4),
            ranks=[w.rank for w in failed if w.rank is not None],
            hosts=hosts,
            confidence=Confidence.MEDIUM if gone else Confidence.HIGH,
        )
    ]
