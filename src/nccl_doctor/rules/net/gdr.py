"""GPUDirect RDMA unavailable or broken: the NIC cannot read/write GPU memory directly.

What it means
-------------
With GPUDirect RDMA (GDR) the NIC moves data to and from GPU memory without
a copy through host memory. It needs a peer-memory path in the kernel: the
``nvidia_peermem`` module (formerly ``nv_peer_mem``) or DMA-BUF support.
NCCL prints ``GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)`` when
none is present, and registering GPU memory fails (``ibv_reg_mr`` ``Bad
address``, ``ibv_reg_dmabuf_mr`` errors; on AWS EFA, NCCL's libfabric plugin's
``Unable to register memory (type = 2) ... RC: -14, Error: Bad address``)
when the path is broken.

Why it matters
--------------
Without GDR, inter-node traffic is staged through host memory: bandwidth
between nodes drops, often by half or more, although the job runs. A broken
registration path makes the IB transport fail at setup.

Evidence
--------
NCCL's ``GPU Direct RDMA Disabled ... (no module)`` lines; memory-registration
failures with ``Bad address``; an RDMA completion with a local protection
error (``ibv_wc_status`` 4: the NIC may not access the registered buffer,
which with GDR is GPU memory, behind PCIe ACS or an IOMMU that redirect or
refuse peer-to-peer DMA) where GDR is not shown off; kernel errors loading
``nvidia_peermem``; a report that GDR does not get enabled.

Fix
---
Load the module (``modprobe nvidia_peermem``; add it to
``/etc/modules-load.d/`` so it survives reboots) and check ``lsmod | grep -E
'nvidia_peermem|nv_peer_mem'``; for DMA-BUF use a kernel >= 5.12 with the
open GPU kernel modules. Rerun with ``NCCL_DEBUG=INFO`` and check for
``GPU Direct RDMA Enabled`` and ``/GDRDMA`` in the channel lines.
"""

from __future__ import annotations

from nccl_doctor.facts.host import KernelGpuMessage
from nccl_doctor.facts.nccl import NcclGdr, NcclTransport, NcclWarn
from nccl_doctor.facts.span import span_of
from nccl_doctor.facts.store import Facts, asked
from nccl_doctor.facts.topology import TopoLink
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.rules.base import Rule, first_distinct
from nccl_doctor.rules.net._common import REGISTERS, completions
from nccl_doctor.signs.net import GDR_PROBLEM

RULE = Rule(
    id="net.gdr",
    title="GPUDirect RDMA unavailable or broken",
    severity=Severity.WARNING,
    explains=("net.ib_transport",),
)

_FIX = [
    (
        "Load the peer-memory module on every node: modprobe nvidia_peermem (check with "
        "lsmod | grep -E 'nvidia_peermem|nv_peer_mem'), and add nvidia_peermem to "
        "/etc/modules-load.d/ so it survives reboots."
    ),
    (
        "If the module does not load (dmesg), install the nvidia_peermem that matches the driver "
        "and MLNX OFED, or use DMA-BUF (kernel >= 5.12, open GPU kernel modules)."
    ),
    (
        "Rerun with NCCL_DEBUG=INFO: expect `GPU Direct RDMA Enabled` and `/GDRDMA` in the "
        "`via NET/IB/...` channel lines."
    ),
]


def _registration(facts: Facts) -> list[Finding]:
    bad = [
        w
        for w in facts.of(NcclWarn)
        if (w.call or "").startswith(REGISTERS) and (w.errno == 14 or "dmabuf" in (w.call or ""))
    ]
    if not bad:
        return []
    w = bad[0]
    return [
        RULE.finding(
            summary=f"Registering GPU memory with the NIC failed: {w.call} "
            f"({w.os_error or w.message[:80]})"
            + (f" on {w.host}" if w.host else "")
            + "; the GPUDirect RDMA path (nvidia_peermem or DMA-BUF) is broken.",
            fix=[*_FIX[:2], "As a workaround, rerun with NCCL_NET_GDR_LEVEL=LOC (GDR off)."],
            evidence=first_distinct([x.cite for x in bad], 3),
            severity=Severity.CRITICAL,
            hosts=[x.host for x in bad if x.host],
            ranks=[x.rank for x in bad if x.rank is not None],
        )
    ]


#: ibv_wc_status IBV_WC_LOC_PROT_ERR: the NIC was refused access to a registered buffer.
_LOCAL_PROTECTION = 4


def _rdma_gdr(facts: Facts) -> list[NcclGdr]:
    """NCCL's GDR lines for NICs that could read GPU memory: not NET/Socket's, which
    NCCL prints ``Disabled`` for every socket NIC (graph/topo.cc, 2.23+), since its
    socket transport only ever sends from host memory."""
    return [g for g in facts.of(NcclGdr) if g.net != "Socket"]


def _gdr_off(facts: Facts) -> bool:
    """The evidence shows the NIC did not read GPU memory: NCCL disabled GDR, or its
    network channels ran without ``/GDRDMA``."""
    if any(not g.enabled for g in _rdma_gdr(facts)):
        return True
    nets = [t for t in facts.of(NcclTransport) if t.kind == "NET"]
    return bool(nets) and not any(t.gdr for t in nets)


def _protection(facts: Facts) -> list[Finding]:
    """RDMA completions with a local protection error, where GDR is not shown off.

    With GPUDirect RDMA the buffer the NIC reads is GPU memory, reached by peer-to-peer
    DMA across PCIe: PCIe ACS (which sends that traffic up to the root complex) or an
    IOMMU in translation mode refuse it, and the NIC reports a local protection error on
    the first transfer. Host buffers registered by NCCL give no such error.
    """
    found = completions(facts)
    refused = found.of_status(_LOCAL_PROTECTION)
    if not refused or _gdr_off(facts):
        return []
    warns = [w for w in found.warns if w.ib_status == _LOCAL_PROTECTION]
    shown = any(t.gdr for t in facts.of(NcclTransport)) or any(g.enabled for g in facts.of(NcclGdr))
    return [
        RULE.finding(
            summary="RDMA transfers failed with a local protection error (IBV_WC_LOC_PROT_ERR): "
            "the NIC was refused access to the buffer it was sending from or receiving into"
            + (", which is GPU memory (NCCL used GPUDirect RDMA: /GDRDMA)" if shown else "")
            + ". Peer-to-peer DMA between NIC and GPU is being blocked: PCIe ACS on the switches "
            "between them, an IOMMU in translation mode, or a broken peer-memory module.",
            fix=[
                (
                    "Rerun with NCCL_NET_GDR_LEVEL=LOC (GPUDirect RDMA off): if the error goes, "
                    "the GPU-to-NIC path is at fault."
                ),
                (
                    "Disable PCIe ACS on the switches between GPUs and NICs (lspci -vvv | grep "
                    "ACSCtl: SrcValid+ means on; setpci, or the BIOS) and set the IOMMU to "
                    "passthrough (iommu=pt) or off."
                ),
                *_FIX[:1],
            ],
            evidence=first_distinct(refused, 3),
            severity=Severity.CRITICAL,
            confidence=Confidence.HIGH if shown else Confidence.MEDIUM,
            hosts=[w.host for w in warns if w.host],
            ranks=[w.rank for w in warns if w.rank is not None],
        )
    ]


def _no_module(facts: Facts) -> list[Finding]:
    off = [  # "(no module)" before 2.19-ish; newer releases print no reason for it
        g
        for g in _rdma_gdr(facts)
        if not g.enabled
        and (
            "module" in (g.reason or "") or (g.distance is None and g.gpu is None and not g.reason)
        )
    ]
    kernel = [
        k
        for k in facts.of(KernelGpuMessage)
        if k.kind == "module_load_error" and (k.module or "") in ("nvidia_peermem", "nv_peer_mem")
    ]
    if not off and not kernel:
        return []
    span = span_of(facts)
    hcas = sorted({g.hca_name or g.hca or "?" for g in off})
    what = []
    if off:
        what.append(
            f"NCCL disabled GPUDirect RDMA for HCA {', '.join(hcas[:6])} "
            "(no peer-memory module or DMA-BUF)"
        )
    if kernel:
        what.append(f"the kernel failed to load {kernel[0].module}")
    if span.multi is False:
        return [
            RULE.finding(
                summary="; ".join(what) + f". The job runs on one node ({span.why}), where NCCL "
                "does not use the NIC, so this does not affect it.",
                fix=_FIX[:1],
                evidence=first_distinct(
                    [*(g.cite for g in off), *(k.cite for k in kernel), *span.cites], 3
                ),
                severity=Severity.INFO,
                cause=False,
            )
        ]
    return [
        RULE.finding(
            summary="; ".join(what) + ": inter-node traffic is staged through host memory, "
            "which costs bandwidth" + (f" ({span.why})" if span.multi else "") + ".",
            fix=_FIX,
            evidence=first_distinct(
                [*(g.cite for g in off), *(k.cite for k in kernel), *span.cites], 4
            ),
            severity=Severity.WARNING,
        )
    ]


def _reported(facts: Facts) -> list[Finding]:
    # (not a guess asked: "Is GPUDirect RDMA the problem here?")
    said = [h for h in facts.seen_prose(GDR_PROBLEM) if not asked(h.cite.text, h.match)]
    if not said:
        return []
    close = [
        t
        for t in facts.of(TopoLink)
        if t.link in ("PIX", "PXB") and ("NIC" in t.a.upper() or "NIC" in t.b.upper())
    ]
    near = ""
    if close:
        pairs = sorted({f"{t.a}-{t.b}" for t in close})
        near = (
            f"; nvidia-smi topo shows NIC and GPU on one PCIe switch ({', '.join(pairs[:4])}: "
            f"{close[0].link}), where NCCL uses GDR whenever a peer-memory module is loaded, "
            "so the missing piece is most likely nvidia_peermem"
        )
    return [
        RULE.finding(
            summary="The report says GPUDirect RDMA is not in use "
            f"({said[0].cite.text.strip()[:120]!r}){near}. NCCL_DEBUG=INFO would confirm it "
            "with `GPU Direct RDMA Disabled ... (no module)`.",
            fix=[
                (
                    "Check lsmod | grep -E 'nvidia_peermem|nv_peer_mem' on every node; if absent, "
                    "modprobe nvidia_peermem."
                ),
                *_FIX[1:],
            ],
            evidence=first_distinct([said[0].cite, *(t.cite for t in close[:2])], 3),
            severity=Severity.WARNING,
            confidence=Confidence.LOW if not close else Confidence.MEDIUM,
        )
    ]


def check(facts: Facts) -> list[Finding]:
    return _registration(facts) or _protection(facts) or _no_module(facts) or _reported(facts)
