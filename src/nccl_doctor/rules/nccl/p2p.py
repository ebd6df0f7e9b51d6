"""GPU peer-to-peer transport broken (PCIe ACS/IOMMU, virtualisation, unsupported peer access).

What it means
-------------
NCCL moves data between GPUs of one host directly (``via P2P/IPC``,
``P2P/CUMEM``, ``P2P/direct``) when the driver reports that peer access
works. On many PCIe hosts it does not really work: PCIe Access Control
Services (ACS) or an IOMMU in translating mode reroute peer writes through the
root complex, which drops or stalls them; hypervisors often expose peer access
that the host below does not support; some consumer GPUs refuse it
(``peer access is not supported between these two devices``).

Why it matters
--------------
The first collective that uses the P2P path hangs forever (no error, 100% GPU
utilisation) or fails, and every rank then reports a timeout. It usually
looks like a network or application problem while the job is on one machine.
``NCCL_P2P_DISABLE=1`` making the job work is the classic confirmation.

Evidence
--------
CUDA error 217 / ``peer access is not supported``, NCCL WARNs from
``transport/p2p.cc`` (IPC handle open/import failures); a hang at the first
collective of a single-host multi-GPU job whose INFO log shows P2P channels,
or an nccl-tests run that never printed a result row; a reporter's
"works with NCCL_P2P_DISABLE=1", ACS/IOMMU or VM remarks. An illegal memory
access that the watchdog reports at the ranks' first exchange, on a VM or a
host with an IOMMU/ACS, is the P2P writes going astray (the fault its cascade).

Fix
---
Confirm with ``NCCL_P2P_DISABLE=1`` (slower, but it should run) and with the
CUDA samples ``p2pBandwidthLatencyTest``. Then fix the platform: disable ACS
on the PCIe switches/root ports (BIOS, or ``setpci`` at boot), boot with
``iommu=pt`` (or ``amd_iommu=off``/``intel_iommu=off``), on VMs enable P2P in
the hypervisor or keep P2P disabled, and update the driver. Remove
``NCCL_P2P_DISABLE`` once P2P works.
"""

from __future__ import annotations

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.catalogue import recovered_from
from nccl_doctor.facts.job import collectives_completed, world_size
from nccl_doctor.facts.nccl import (
    NcclTestCommand,
    NcclTestFailure,
    NcclTestRank,
    NcclTestRow,
    NcclWarn,
    error_chains,
)
from nccl_doctor.facts.probe import ProbeIsolation, ProbeStep
from nccl_doctor.facts.run import CollectiveTimeout, CudaError, WatchdogState
from nccl_doctor.facts.software import CpuInfo
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.knowledge.workarounds import mask_of
from nccl_doctor.rules.base import Rule, first_distinct
from nccl_doctor.rules.nccl._common import machine, prose, text_of, transports, warn_text
from nccl_doctor.signs.app import unfilled_gathers
from nccl_doctor.signs.common import HANG_WORDS
from nccl_doctor.signs.cuda import ILLEGAL_ACCESS, WATCHDOG
from nccl_doctor.signs.nccl import P2P_PLATFORM, PEER_ACCESS_FAILED, SEGFAULT
from nccl_doctor.signs.settings import settings_that_worked

RULE = Rule(
    id="nccl.p2p",
    title="GPU peer-to-peer (P2P) transport broken",
    severity=Severity.CRITICAL,
    explains=(
        "app.hang",
        "launch.rank_crash",
        "cuda.unknown_error",
        "app.param_mismatch",
        "cuda.illegal_access",
    ),
)


def _p2p_transport(file: str | None) -> bool:
    """A WARN of the GPU-to-GPU transport (``transport/p2p.cc``), not of the IB transport's
    own ``transport/net_ib/p2p.cc`` (NCCL 2.29+: RDMA sends and receives, no GPU P2P)."""
    return file is not None and file.endswith("p2p.cc") and "net_ib" not in file


def _p2p_failure(facts: Facts) -> list[Cite | Fact]:
    out: list[Cite | Fact] = [
        e for e in facts.of(CudaError) if e.code == 217 or "peer access" in (e.error or "")
    ]
    out += [w for w in facts.of(NcclWarn) if _p2p_transport(w.file) or w.cuda_error_code == 217]
    out.extend(
        h.cite for h in machine(facts, PEER_ACCESS_FAILED) if not recovered_from(h.cite.text)
    )
    return first_distinct(out, 3)


def _workaround(facts: Facts) -> list[Cite]:
    """Lines saying the job works with P2P off or limited, not those that negate it (two)."""
    return [
        w.cite
        for w in settings_that_worked(facts)
        if w.name.startswith("NCCL_P2P_") and mask_of(w.name, w.value) is not None
    ][:2]


def _first_collective_hang(facts: Facts) -> list[Cite | Fact]:
    """A machine-printed hang that happened before any collective completed."""
    out: list[Cite | Fact] = [
        s for s in facts.of(WatchdogState) if s.last_completed is not None and s.last_completed <= 0
    ]
    out += [t for t in facts.of(CollectiveTimeout) if t.seq is not None and t.seq <= 2]
    return first_distinct(out, 2)


def _first_collective_fault(facts: Facts) -> list[Cite]:
    """A kernel fault (an illegal memory access) that NCCL's watchdog reported, where no
    collective is known to have completed: the ranks' first exchange faulted."""
    if collectives_completed(facts) is not None:
        return []
    watchdog = {h.cite for h in machine(facts, WATCHDOG)}
    return [h.cite for h in machine(facts, ILLEGAL_ACCESS) if h.cite in watchdog][:1]


def _single_host_gpus(facts: Facts) -> tuple[str | None, int]:
    """(host, GPUs) of an nccl-tests run whose ranks all sit on one host with distinct GPUs."""
    ranks = facts.of(NcclTestRank)
    hosts = {r.host for r in ranks}
    devices = {(r.host, r.bus_id_raw or r.device) for r in ranks}
    # every rank must be shown: a paste cut after the first lines of 'mpirun -np 128' lists
    # ranks of the first host only
    shown = {r.rank for r in ranks}
    launched = max((c.ranks for c in facts.of(NcclTestCommand)), default=0)
    if shown != set(range(len(shown))) or launched > len(shown):
        return None, 0
    if len(hosts) == 1 and len(devices) >= 2:
        return next(iter(hosts)), len(devices)
    return None, 0


def check(facts: Facts) -> list[Finding]:
    """Fire on peer-access failures, hangs on the P2P path, and confirmed workarounds."""
    if probe := _probe(facts):
        return probe
    failure = _p2p_failure(facts)
    workaround = _workaround(facts)
    platform = [h.cite for h in facts.seen(P2P_PLATFORM)[:2]]
    vm = [c for c in facts.of(CpuInfo) if c.hypervisor_vendor]
    p2p = transports(facts, ["P2P"])
    hang_machine = _first_collective_hang(facts)
    hang_words = [h.cite for h in facts.seen(HANG_WORDS)[:2]]
    host, n_gpus = _single_host_gpus(facts)
    # (a run that printed no row and died of a segfault crashed: it did not hang)
    no_rows = (
        bool(facts.of(NcclTestRank))
        and not facts.of(NcclTestRow)
        and not facts.of(NcclTestFailure)
        and not error_chains(facts)
        and not facts.seen(SEGFAULT)
    )
    later = any(t.seq is not None and t.seq > 2 for t in facts.of(CollectiveTimeout))
    fix = [
        "Rerun once with NCCL_P2P_DISABLE=1: if it then runs, P2P between the GPUs is broken",
        (
            "Run the CUDA sample p2pBandwidthLatencyTest (or nvidia-smi topo -p2p r) to see "
            "which GPU pairs fail"
        ),
        (
            "Disable PCIe ACS in the BIOS (or with setpci on the switches/root ports) and boot "
            "with iommu=pt (amd_iommu=off / intel_iommu=off if that is not enough)"
        ),
        "On a VM, enable GPU peer-to-peer in the hypervisor (or run on bare metal)",
        (
            "Until then, NCCL_P2P_DISABLE=1 keeps jobs running (slower); remove it once "
            "p2pBandwidthLatencyTest passes"
        ),
    ]
    if failure:
        return [
            RULE.finding(
                summary="CUDA/NCCL report that GPU peer access failed: "
                f"{warn_text(text_of(failure[0]))[:160]}",
                fix=fix,
                evidence=[*failure, *workaround[:1]],
                ranks=[f.rank for f in failure if isinstance(f, Fact) and f.rank is not None],
            )
        ]
    hang = hang_machine or hang_words
    if workaround:
        # the job stalls on P2P, or its first collective moved no data (DDP read 0 parameters
        # from a peer), and it runs with P2P off
        unfilled = [h.cite for h in unfilled_gathers(facts)]
        stalled = hang_machine or facts.of(CollectiveTimeout) or unfilled
        severity = Severity.CRITICAL if stalled else None
        return [
            RULE.finding(
                summary="The job works with GPU peer-to-peer disabled (NCCL_P2P_DISABLE=1), so "
                "the P2P path between the GPUs is broken (ACS/IOMMU, VM or driver)"
                + (
                    "; without it DDP read 0 parameters from a peer: the first collective "
                    "moved no data"
                    if unfilled
                    else ""
                ),
                fix=fix[1:],
                evidence=[*workaround, *unfilled[:1], *hang[:1], *platform[:1]],
                severity=severity or Severity.WARNING,
                confidence=Confidence.MEDIUM if severity else Confidence.LOW,
            )
        ]
    # the first exchange faulted on a platform whose peer writes go astray (a hypervisor's
    # passthrough, an IOMMU): NCCL's P2P writes land where the GPU may not write
    faulted = _first_collective_fault(facts)
    # (a job of one rank has no peer to write to)
    alone = world_size(facts) == 1
    if faulted and platform and (vm or prose(facts, P2P_PLATFORM)) and not later and not alone:
        return [
            RULE.finding(
                summary="A kernel faulted (illegal memory access) at the ranks' first exchange, "
                "on a host with an IOMMU/ACS or virtualised PCIe: NCCL's peer-to-peer writes "
                "through it are the likely fault",
                fix=fix,
                evidence=[*faulted, *platform],
                confidence=Confidence.LOW,
            )
        ]
    if not hang:
        return []
    p2p_hosts = {t.host for t in p2p}
    if p2p and len(p2p_hosts) <= 1 and not later:
        where = f" on {next(iter(p2p_hosts))}" if p2p_hosts and None not in p2p_hosts else ""
        return [
            RULE.finding(
                summary=f"The job hangs while NCCL uses P2P ({p2p[0].transport}) between the "
                f"GPUs of one host{where}; a hang on the P2P path with no error is the "
                "signature of broken peer-to-peer (ACS/IOMMU, VM)",
                fix=fix,
                evidence=[p2p[0], *hang[:2], *platform[:1]],
                severity=Severity.CRITICAL if hang_machine and platform else Severity.WARNING,
                confidence=Confidence.MEDIUM if hang_machine else Confidence.LOW,
            )
        ]
    if host is not None and no_rows:
        return [
            RULE.finding(
                summary=f"nccl-tests on {n_gpus} GPUs of one host ({host}) hangs before "
                "printing any result and shows no NCCL error: the intra-node P2P path is "
                "the first suspect (PCIe ACS/IOMMU, VM)",
                fix=fix,
                evidence=[*facts.of(NcclTestRank)[:2], *hang[:1], *platform[:1]],
                severity=Severity.WARNING,
                confidence=Confidence.MEDIUM,
                hosts=[host],
            )
        ]
    if platform and (vm or prose(facts, P2P_PLATFORM)) and hang_machine:
        return [
            RULE.finding(
                summary="The first collective hangs on a host with an IOMMU/ACS or "
                "virtualised PCIe: GPU peer-to-peer is the likely cause",
                fix=fix,
                evidence=[*hang_machine, *platform],
                severity=Severity.WARNING,
                confidence=Confidence.LOW,
            )
        ]
    return []


def _probe(facts: Facts) -> list[Finding]:
    """A probe run: a failed or hung P2P step, P2P named by isolation, or one bad GPU pair."""
    dead = {g for s in facts.of(ProbeStep) if s.phase == "device" and not s.ok for g in s.gpus}
    steps = [
        s for s in facts.of(ProbeStep) if s.phase == "p2p" and not s.ok and not set(s.gpus) & dead
    ]
    named = [i for i in facts.of(ProbeIsolation) if i.transport == "P2P"]
    pairs = [
        i
        for i in facts.of(ProbeIsolation)
        if i.conclusion == "link" and len(i.gpus) == 1 and len(i.other_gpus) == 1
    ]
    if not (steps or named or pairs):
        return []
    parts = [f"{s.step} {s.status}" + (f" ({s.error[:120]})" if s.error else "") for s in steps[:3]]
    parts += [f"{i.step} passed only with {', '.join(i.env)}" for i in named[:1]]
    parts += [f"{i.step} fails on GPUs {i.gpus[0]}+{i.other_gpus[0]} only" for i in pairs[:1]]
    gpus = {g for s in steps for g in s.gpus} | {g for i in pairs for g in (*i.gpus, *i.other_gpus)}
    return [
        RULE.finding(
            summary="nccl-doctor probe: GPU peer-to-peer is broken: " + "; ".join(parts),
            fix=[
                "Check ACS/IOMMU (iommu=pt) and the PCIe/NVLink path between the GPUs named",
                "NCCL_P2P_DISABLE=1 keeps jobs running meanwhile (slower)",
            ],
            evidence=[*steps[:3], *named[:1], *pairs[:1]],
            gpus=[str(g) for g in sorted(gpus)],
            hosts=[f.host for f in [*steps, *named, *pairs] if f.host],
        )
    ]
