"""NVLink links are down, inactive or erroring.

What it means
-------------
Some NVLink links between GPUs (or to the NVSwitches) are ``<inactive>`` in
``nvidia-smi nvlink -s`` while their siblings run, NVML reports no active
link at all on a GPU of an NVLink board, the error counters of ``nvidia-smi
nvlink -e`` (CRC, replay, recovery) climb, or the driver logged an NVLink
Xid (74; 136 and 144-150/155 on NVLink5) or an NVSwitch SXid.

Why it matters
--------------
NCCL routes over NVLink where the topology has it; a dead link slows every
collective (fewer rings, or a fall-back to PCIe) and a failing one makes
collectives hang or return ``unhandled cuda error`` after minutes of
normal running. Processes stuck on a broken link often cannot be killed and
only a reboot frees the GPUs; the fault returns until the board is fixed.

Evidence
--------
NVLink Xids and SXids (critical), a driver status of a link
(``[NV_ERR_NVLINK_TRAINING_ERROR]``...), inactive links next to active ones and
non-zero error counters (warnings). Counters are critical when they grow between
two readings, or when one link's replay or recovery errors (NVIDIA's health check
fails a link on any) stand beside clean sibling links while a collective timed
out (medium confidence). In words only, a multi-GPU NVLink
machine (SXM parts, HGX/DGX, XE8545...) whose GPU processes wedge until a
reboot after a CUDA error (a low-confidence warning that names what to
collect).

Fix
---
Collect ``nvidia-smi nvlink -s``, ``nvidia-smi nvlink -e`` and ``dmesg |
grep -e Xid -e SXid``; drain the node, reset the GPUs and NVSwitches or
reboot, and run ``dcgmi diag -r 3``. Links that stay inactive or counters
that keep growing mean a hardware fault (GPU baseboard, NVLink bridge or
switch tray): have the vendor replace it. As a stop-gap, ``NCCL_P2P_DISABLE=1``
avoids NVLink at a large speed cost.
"""

from __future__ import annotations

from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.failures import first_failure
from nccl_doctor.facts.host import XidEvent
from nccl_doctor.facts.probe import ProbeBandwidth, far_below
from nccl_doctor.facts.run import CollectiveTimeout
from nccl_doctor.facts.store import Facts
from nccl_doctor.facts.topology import NvLink, NvLinkAllInactive, NvLinkErrorCount
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.knowledge.gpu_boards import nvlink_board as nvlink_board_model
from nccl_doctor.rules.base import Rule
from nccl_doctor.rules.gpu._common import (
    caused_by,
    dcgm_findings,
    first_of_each,
    nvlink_board,
    nvlink_wedge,
    status_finding,
    wedge_hits,
    xid_summary,
    xids_for,
)

RULE = Rule(
    id="gpu.nvlink",
    title="NVLink links down or erroring",
    severity=Severity.CRITICAL,
    explains=(
        "gpu.xid",
        "gpu.lost",
        "nccl.p2p",
        "cuda.unknown_error",
        "cuda.illegal_access",
        "launch.rank_crash",
        "app.hang",
        "nccl.internal",
    ),
)

_FIX = [
    "Collect nvidia-smi nvlink -s, nvidia-smi nvlink -e and dmesg | grep -e Xid -e SXid",
    "Drain the node; reset the GPUs and NVSwitches (or reboot) and run dcgmi diag -r 3",
    (
        "If links stay inactive or the error counters keep growing, have the vendor replace the "
        "GPU baseboard / NVLink bridge / switch tray"
    ),
    "Until then NCCL_P2P_DISABLE=1 avoids NVLink (much slower)",
]
#: Counters whose growth means a bad link (not the throughput counters).
_BAD_COUNTERS = ("crc", "replay", "recovery", "ecc", "error")


def _xids(facts: Facts) -> list[Finding]:
    events = xids_for(facts, RULE.id) + caused_by(facts, RULE.id)
    switches = [e for e in facts.of(XidEvent) if e.nvswitch]
    if not events and not switches:
        return []
    parts = [xid_summary(events)] if events else []
    if switches:
        codes = sorted({str(e.xid) for e in switches})
        parts.append(f"NVSwitch SXid {', '.join(codes)} on {switches[0].bus_id or 'a switch'}")
    severe = any(i.severity == "critical" for _, i in events) or any(
        _fatal(e.detail) for e in switches
    )
    evidence: list[Fact] = [*first_of_each(events), *switches[:2]]
    return [
        RULE.finding(
            summary="; ".join(parts),
            fix=_FIX,
            evidence=evidence,
            severity=Severity.CRITICAL if severe else Severity.WARNING,
            gpus=[e.bus_id for e, _ in events if e.bus_id],
            hosts=[e.host for e in facts.of(XidEvent) if e.host],
        )
    ]


def _fatal(detail: str | None) -> bool:
    """An SXid of severity Fatal (the driver also prints Non-fatal and Correctable ones)."""
    words = (detail or "").lower().replace("non-fatal", "").replace("nonfatal", "")
    return "fatal" in words


def _links(facts: Facts) -> list[Finding]:
    links = facts.of(NvLink)
    out = []
    by_gpu: dict[tuple[str | None, int | None], list[NvLink]] = {}
    for link in links:
        by_gpu.setdefault((link.host, link.gpu_index), []).append(link)
    down = [
        (gpu, [lk for lk in group if lk.active is False])
        for gpu, group in by_gpu.items()
        if any(lk.active for lk in group) and any(lk.active is False for lk in group)
    ]
    if down:
        parts = [
            f"GPU {gpu[1]}: links {', '.join(str(lk.link) for lk in dead)} inactive, "
            f"{sum(bool(lk.active) for lk in by_gpu[gpu])} up"
            for gpu, dead in down
        ]
        out.append(
            RULE.finding(
                summary=f"NVLink links inactive while their siblings run ({'; '.join(parts)})",
                fix=_FIX,
                evidence=[lk for _, dead in down for lk in dead][:4],
                severity=Severity.WARNING,
                gpus=[str(gpu[1]) for gpu, _ in down if gpu[1] is not None],
            )
        )
    inactive = facts.of(NvLinkAllInactive)
    listed = {a.gpu_index for a in inactive} | {lk.gpu_index for lk in links}
    dead_gpus = [a for a in inactive if nvlink_board_model(a.gpu_name) and len(listed) > 1]
    if dead_gpus or (inactive and any(lk.active for lk in links)):
        gone = dead_gpus or list(facts.of(NvLinkAllInactive))
        out.append(
            RULE.finding(
                summary=(
                    f"No active NVLink on GPU {', '.join(str(a.gpu_index) for a in gone)} "
                    f"({gone[0].gpu_name or 'NVLink GPU'}), which should have NVLink"
                ),
                fix=_FIX,
                evidence=gone[:3],
                severity=Severity.WARNING,
                gpus=[str(a.gpu_index) for a in gone if a.gpu_index is not None],
            )
        )
    counts = [
        c
        for c in facts.of(NvLinkErrorCount)
        if c.count and any(k in c.counter.lower() for k in _BAD_COUNTERS)
    ]
    if counts:
        out.append(_counters(facts, counts))
    return out


def _key(c: NvLinkErrorCount) -> tuple[str | None, int | None, int, str]:
    return c.host, c.gpu_index, c.link, c.counter.lower()


def _failing(c: NvLinkErrorCount) -> bool:
    """A replay or recovery counter: NVIDIA's health check fails a link on any (DCGM's
    MonitorNVLink: replay and recovery errors should be 0; CRC ones only above a rate)."""
    name = c.counter.lower()
    return "replay" in name or "recovery" in name


def _counters(facts: Facts, counts: list[NvLinkErrorCount]) -> Finding:
    """Non-zero error counters: a warning, unless they grew between two readings, or a link's
    replays or recoveries stand beside a clean sibling link when a collective timed out first."""
    # each counter's first reading; a later, higher one of the same counter grew since
    first: dict[tuple[str | None, int | None, int, str], int] = {}
    for c in facts.of(NvLinkErrorCount):
        if c.count is not None:
            first.setdefault(_key(c), c.count)
    grown = [c for c in counts if (c.count or 0) > first[_key(c)]]
    clean = {
        (c.host, c.gpu_index, c.counter.lower())
        for c in facts.of(NvLinkErrorCount)
        if c.count == 0 and _failing(c)
    }
    lone = [c for c in counts if _failing(c) and (c.host, c.gpu_index, c.counter.lower()) in clean]
    failure, _ = first_failure(facts)
    lead = failure.fact if failure is not None else None
    worst = sorted(grown or counts, key=lambda c: -(c.count or 0))
    text = ", ".join(f"GPU {c.gpu_index} link {c.link} {c.counter} {c.count}" for c in worst[:4])
    gpus = sorted({str(c.gpu_index) for c in counts if c.gpu_index is not None})
    if grown:
        return RULE.finding(
            summary=f"NVLink error counters grew between two readings: {text} (a link failing "
            "now, not errors left from an earlier day)",
            fix=_FIX,
            evidence=worst[:4],
            gpus=gpus,
        )
    if isinstance(lead, CollectiveTimeout) and lone:
        where = sorted({(c.gpu_index, c.link) for c in lone}, key=str)
        links = ", ".join(f"GPU {g} link {k}" for g, k in where[:4])
        return RULE.finding(
            summary=f"A collective timed out while {links} shows replay or recovery "
            f"errors its sibling links do not ({text}): a failing NVLink stalls the transfers "
            "that cross it, and the collective never completes",
            fix=["Reset the counters (nvidia-smi nvlink -ec) and check whether they grow", *_FIX],
            evidence=[*sorted(lone, key=lambda c: -(c.count or 0))[:3], lead],
            gpus=gpus,
            confidence=Confidence.MEDIUM,
        )
    return RULE.finding(
        summary=f"NVLink error counters are non-zero: {text}",
        fix=["Reset the counters (nvidia-smi nvlink -ec) and check they stay at 0", *_FIX],
        evidence=worst[:4],
        severity=Severity.WARNING,
        gpus=gpus,
    )


def _wedge(facts: Facts) -> list[Finding]:
    if not nvlink_wedge(facts):
        return []
    board = nvlink_board(facts)
    wedge = wedge_hits(facts)
    return [
        RULE.finding(
            summary=(
                f'A multi-GPU NVLink machine ("{board[0].match.group(0)}") hit a CUDA error and '
                "its GPU processes could not be killed until a reboot, again after each reboot: "
                "a GPU/NVLink hardware fault, not the application. NVLink (Xid 74) is the first "
                "suspect; no NVLink counters or kernel log were given to confirm it"
            ),
            fix=_FIX,
            evidence=[board[0].cite, *(h.cite for h in wedge[:3])],
            severity=Severity.WARNING,
            confidence=Confidence.LOW,
        )
    ]


_status = status_finding(RULE, "An NVLink failed", _FIX)


def check(facts: Facts) -> list[Finding]:
    """NVLink Xids/SXids, inactive links, error counters, wedged NVLink machines."""
    findings = _xids(facts) + _links(facts) + _probe(facts) + dcgm_findings(facts, RULE, _FIX)
    return findings or _status(facts) or _wedge(facts)


def _probe(facts: Facts) -> list[Finding]:
    """A probe run: peer bandwidth of some GPU pairs far below NVLink while others reach it."""
    pairs = [b for b in facts.of(ProbeBandwidth) if b.kind == "p2p" and b.expected_gbytes_s]
    slow = [b for b in pairs if far_below(b)]
    if not slow or len(slow) == len(pairs):
        return []
    names = ", ".join(
        f"{'->'.join(map(str, b.gpus))} {b.busbw_gbytes_s or 0:.0f} GB/s" for b in slow[:4]
    )
    return [
        RULE.finding(
            summary=f"nccl-doctor probe: peer copies on {len(slow)} of {len(pairs)} GPU pairs "
            f"run far below NVLink (about {slow[0].expected_gbytes_s or 0:.0f} GB/s): {names}",
            fix=_FIX,
            evidence=slow[:3],
            gpus=[str(g) for b in slow for g in b.gpus],
            hosts=[b.host for b in slow if b.host],
            severity=Severity.WARNING,
            confidence=Confidence.MEDIUM,
        )
    ]
