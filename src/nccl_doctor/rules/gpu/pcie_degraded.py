"""The GPU's PCIe link runs below its maximum width or, under load, its generation.

What it means
-------------
nvidia-smi reports the PCIe link the GPU trained at (``Link Width Current
8x`` of ``Max 16x``, ``PCIe Generation Current 3`` of ``Max 4``). Idle GPUs
drop to generation 1 to save power, so a low generation only counts while
the GPU is busy; a narrow width does not change with power state and points
to a slot, riser or seating problem (or a slot that is only wired x8). A
growing replay counter means link errors.

Why it matters
--------------
Host-device copies and, on PCIe-only machines, NCCL's peer traffic and
GPUDirect RDMA go through this link: a x8 or Gen3 link halves bandwidth and
makes the GPU the slowest rank that every collective waits for. Replays
can end in Xid 79 (fallen off the bus).

Evidence
--------
``-q``/XML PCIe fields: current vs max generation and width, the GPU's
utilisation and clock event reasons (idle or not), ``Replays Since Reset``;
``lspci -vv``'s ``LnkSta: Speed 2.5GT/s (downgraded)`` (its own comparison with
what both ends can do).
A warning at most: it slows a job but does not stop it.

Fix
---
Check the slot is wired x16 (``lspci -vv -s <bus> | grep -e LnkCap -e
LnkSta``), reseat the GPU and its riser, set the slot to the right
generation in the BIOS, and compare with the other GPUs of the node. Check
the generation again under load (``nvidia-smi -q -d PCIE`` while a job
runs). Replace the riser/cable or the board when replays keep growing.
"""

from __future__ import annotations

from nccl_doctor.facts.gpu import Gpu
from nccl_doctor.facts.probe import ProbeBandwidth, far_below
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.rules.base import Rule
from nccl_doctor.rules.gpu._common import dcgm_findings, gpu_key, gpu_name, unique_gpus
from nccl_doctor.signs.gpu import LINK_DOWNGRADED

RULE = Rule(
    id="gpu.pcie_degraded",
    title="PCIe link below its maximum",
    severity=Severity.WARNING,
    explains=("app.hang",),
)

#: Replays this many since reset mean a noisy link, not a one-off.
_REPLAYS = 100
_BUSY_PCT = 20


def _busy(gpu: Gpu) -> bool:
    idle = gpu.clocks_event_reasons is not None and "gpu_idle" in gpu.clocks_event_reasons
    return not idle and (gpu.utilization_gpu_pct or 0) >= _BUSY_PCT


def _problems(gpu: Gpu) -> list[tuple[str, str]]:
    out = []
    if (
        gpu.pcie_width_current
        and gpu.pcie_width_max
        and gpu.pcie_width_current < gpu.pcie_width_max
    ):
        out.append(
            (f"width x{gpu.pcie_width_current} of x{gpu.pcie_width_max}", "pcie_width_current")
        )
    top = gpu.pcie_gen_max
    if gpu.pcie_gen_host_max and top:
        top = min(top, gpu.pcie_gen_host_max)
    if gpu.pcie_gen_current and top and gpu.pcie_gen_current < top and _busy(gpu):
        out.append(
            (
                f"Gen{gpu.pcie_gen_current} of Gen{top} at {gpu.utilization_gpu_pct}% utilisation",
                "pcie_gen_current",
            )
        )
    if gpu.pcie_replays is not None and gpu.pcie_replays >= _REPLAYS:
        out.append((f"{gpu.pcie_replays} PCIe replays since reset", "pcie_replays"))
    return out


_RESEAT = "Reseat the GPU and its riser/cable; check the slot's generation in the BIOS"
_REPLACE = "Replace the riser/cable or board if replays keep growing"


def _wiring(bus_id: str | None) -> str:
    return f"Check the slot wiring: lspci -vv -s {bus_id or '<bus id>'} | grep -e LnkCap -e LnkSta"


#: What to do about a PCIe check DCGM failed (its message names the GPU and the link).
_DCGM_FIX = (_wiring(None), _RESEAT, _REPLACE)


def check(facts: Facts) -> list[Finding]:
    """One warning per GPU whose link is narrower, slower under load, or replaying."""
    gpus = unique_gpus(facts)
    widths = {g.pcie_width_current for g in gpus if g.pcie_width_current}
    findings = _probe(facts) + dcgm_findings(facts, RULE, _DCGM_FIX) + _lspci(facts)
    for gpu in gpus:
        problems = _problems(gpu)
        if not problems:
            continue
        peers = (
            f"; other GPUs here run x{max(widths)}"
            if gpu.pcie_width_current and widths and max(widths) > gpu.pcie_width_current
            else ""
        )
        findings.append(
            RULE.finding(
                summary=f"{' '.join(filter(None, (gpu_name(gpu), gpu.name)))} PCIe link: "
                + ", ".join(p for p, _ in problems)
                + peers,
                fix=[
                    _wiring(gpu.bus_id),
                    _RESEAT,
                    "Recheck under load with nvidia-smi -q -d PCIE while the job runs",
                    _REPLACE,
                ],
                evidence=[gpu, *(gpu.cite_of(f) for _, f in problems)],
                severity=Severity.WARNING,
                confidence=Confidence.HIGH if peers else Confidence.MEDIUM,
                gpus=[gpu_key(gpu)],
                hosts=[gpu.host] if gpu.host else [],
            )
        )
    return findings


def _lspci(facts: Facts) -> list[Finding]:
    """lspci marks a link status downgraded: trained below what the device and its port do.

    A GPU drops its link speed when idle to save power, which lspci marks downgraded all the
    same: a speed counts only where another link of the listing runs faster and is marked
    ok (the GPUs were busy, this one is not at speed); a width counts always (idle keeps it).
    """
    links = facts.seen(LINK_DOWNGRADED, prose=False)
    fast = max((float(h.match["speed"]) for h in links if h.match["sstat"] == "ok"), default=0.0)
    down = [
        h
        for h in links
        if h.match["wstat"] == "downgraded"
        or (h.match["sstat"] == "downgraded" and float(h.match["speed"]) < fast)
    ]
    if not down:
        return []
    first = down[0]
    what = (
        f"width {first.match['width']}"
        if first.match["wstat"] == "downgraded"
        else f"{first.match['speed']} GT/s where others of the listing run {fast:g} GT/s"
    )
    return [
        RULE.finding(
            summary=f"lspci reports {len(down)} PCIe link(s) downgraded ({what}): trained below "
            "what the device and its slot support, so copies and peer traffic over it run slower",
            fix=[_wiring(None), _RESEAT, "Recheck under load: nvidia-smi -q -d PCIE", _REPLACE],
            evidence=[h.cite for h in down[:3]],
            confidence=Confidence.HIGH,
        )
    ]


def _probe(facts: Facts) -> list[Finding]:
    """A probe run: host<->device bandwidth of a GPU far below its model's PCIe rate."""
    slow = [b for b in facts.of(ProbeBandwidth) if b.kind in ("h2d", "d2h") and far_below(b)]
    return [
        RULE.finding(
            summary=f"nccl-doctor probe: GPU {', '.join(map(str, bw.gpus))} "
            f"{bw.kind} pinned copy at {bw.busbw_gbytes_s or 0:.1f} GB/s, expected about "
            f"{bw.expected_gbytes_s or 0:.0f} GB/s for {bw.gpu_model}",
            fix=[
                "Check the link: nvidia-smi -q -d PCIE (current vs max gen/width)",
                "Reseat the GPU or riser; check BIOS PCIe settings and NUMA binding",
            ],
            evidence=[bw],
            gpus=[str(g) for g in bw.gpus],
            hosts=[bw.host] if bw.host else [],
            confidence=Confidence.MEDIUM,
        )
        for bw in slow
    ]
