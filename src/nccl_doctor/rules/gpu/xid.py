"""The NVIDIA driver logged a GPU fault (an Xid) that no more specific rule claims.

What it means
-------------
``NVRM: Xid (PCI:0000:3b:00): NN, pid=..., name=..., ...`` is the kernel
driver reporting an error on a GPU. The number says what happened: 13, 31
and 43 are faults of the application's own kernels (a bad address, an
exception) after which its CUDA context is gone; 45 is the clean-up of a
context after an earlier error or a kill; 46, 62, 109, 119/120 (GSP), 143
and 158 are the GPU or its firmware failing and needing a reset. Memory
(48/63/64/94/95...), NVLink (74, 144-150...) and fallen-off-the-bus (79)
Xids are reported by ``gpu.ecc``, ``gpu.nvlink`` and ``gpu.lost``.

Why it matters
--------------
Every process using that GPU sees its CUDA calls fail (often as ``unspecified
launch failure``, ``illegal memory access`` or NCCL ``unhandled cuda
error``), and the other ranks hang or abort after it. A firmware/hardware
Xid keeps coming back until the GPU is reset.

Evidence
--------
Xid lines from ``dmesg``/``journalctl -k``, with the GPU's bus id and the
process the driver named. Severity follows the Xid catalogue: application
Xids are warnings, GPU/firmware ones critical, informational ones context.
With no kernel log, a GPU or firmware Xid the reporter names by its number
("several NVRM Xid 119 lines at the same second as the error") beside a
failure is the finding at low confidence.

Fix
---
For application Xids (13/31/43), debug the kernel that faulted
(``CUDA_LAUNCH_BLOCKING=1``, ``compute-sanitizer``) and restart. For
GPU/firmware Xids, drain the node, reset the GPU (``nvidia-smi -r``) or
reboot, run ``dcgmi diag -r 3``, update the driver/firmware, and RMA the
GPU if it repeats.
"""

from __future__ import annotations

from nccl_doctor.facts.host import KernelGpuMessage, XidEvent
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.knowledge.xid import XidInfo, xid_info
from nccl_doctor.rules.base import Rule
from nccl_doctor.rules.gpu._common import first_of_each, job_failed, xid_summary, xids_for
from nccl_doctor.signs.common import HANG_WORDS
from nccl_doctor.signs.cuda import ILLEGAL_ACCESS
from nccl_doctor.signs.gpu import XID_SAID

RULE = Rule(
    id="gpu.xid",
    title="The driver logged a GPU fault (Xid)",
    severity=Severity.CRITICAL,
    explains=(
        "cuda.illegal_access",
        "cuda.unknown_error",
        "launch.rank_crash",
        "app.hang",
        "nccl.internal",
    ),
)

_SEVERITY = {"critical": Severity.CRITICAL, "warning": Severity.WARNING, "info": Severity.INFO}
#: Xids whose cause is the application's kernels, not the GPU.
_APPLICATION = frozenset({"application"})
#: Xids that only record the clean-up after another error or a kill.
_TRACE = frozenset({45})
_GSP_KINDS = frozenset({"gsp_timeout", "gsp_heartbeat_timeout", "gsp_error"})


def _group(events: list[tuple[XidEvent, XidInfo]]) -> dict[str, list[tuple[XidEvent, XidInfo]]]:
    groups: dict[str, list[tuple[XidEvent, XidInfo]]] = {}
    for event, info in events:
        if event.caused_by_xid is not None:
            continue  # told by the rule of the Xid that caused it
        level = "info" if info.code in _TRACE else info.severity
        groups.setdefault(level, []).append((event, info))
    return groups


def check(facts: Facts) -> list[Finding]:
    """One finding per severity class of the Xids this rule owns."""
    events = [(e, i) for e, i in xids_for(facts, RULE.id) if not e.nvswitch]
    findings: list[Finding] = []
    for level, group in _group(events).items():
        severity = _SEVERITY[level]
        codes = sorted({i.code for _, i in group})
        infos = {i.code: i for _, i in group}
        app = all(infos[c].likely_cause in _APPLICATION for c in codes)
        fix = [f"Xid {c}: {infos[c].action}" for c in codes]
        if severity is Severity.CRITICAL:
            fix.append("Run dcgmi diag -r 3 on the node before returning it to service")
        meaning = "; ".join(f"Xid {c}: {infos[c].meaning}" for c in codes[:3])
        findings.append(
            RULE.finding(
                summary=f"{xid_summary(group)}. {meaning}",
                fix=fix,
                evidence=first_of_each(group),
                severity=severity,
                confidence=Confidence.HIGH,
                gpus=[e.bus_id for e, _ in group if e.bus_id],
                hosts=[e.host for e, _ in group if e.host],
                cause=severity is not Severity.INFO,
                title=(
                    "An application kernel faulted on the GPU (Xid)"
                    if app
                    else "The driver logged a GPU fault (Xid)"
                ),
            )
        )
    return findings + _gsp(facts) + _said(facts)


def _said(facts: Facts) -> list[Finding]:
    """A GPU or firmware Xid of this rule's, named by its number in the reporter's words
    beside a failure, with no kernel log read."""
    if facts.of(XidEvent):
        return []
    said = [
        (h, info)
        for h in facts.told(XID_SAID)
        if h.prose
        and (info := xid_info(h.match["code"])) is not None
        and info.diagnosis_id == RULE.id
        and info.severity == "critical"
    ]
    # the failure read, or retold: a kernel fault (what a process sees of the Xid), or a hang
    if not said or not (job_failed(facts) or facts.told(ILLEGAL_ACCESS) or facts.told(HANG_WORDS)):
        return []
    hit, info = said[0]
    return [
        RULE.finding(
            summary=f"The report names Xid {info.code} ('{hit.match.group(0)}') beside the "
            f"failure: {info.meaning}; the CUDA and NCCL errors of the processes on that GPU "
            "follow from it",
            fix=[
                "Save the kernel log (dmesg -T | grep -e Xid -e NVRM) of the node and paste it",
                f"Xid {info.code}: {info.action}",
                "Run dcgmi diag -r 3 on the node before returning it to service",
            ],
            evidence=[hit.cite],
            severity=Severity.WARNING,
            confidence=Confidence.LOW,
        )
    ]


def _gsp(facts: Facts) -> list[Finding]:
    """GSP firmware timeouts/errors the driver logs without an Xid number."""
    lines = [m for m in facts.of(KernelGpuMessage) if m.kind in _GSP_KINDS]
    if not lines or any(i.code in (119, 120) for _, i in xids_for(facts, RULE.id)):
        return []
    gpus = list(dict.fromkeys(m.bus_id or m.gpu_label or "?" for m in lines))
    kinds = sorted({m.kind.replace("_", " ") for m in lines})
    return [
        RULE.finding(
            summary=(
                f"The driver lost contact with the GPU System Processor on {', '.join(gpus)} "
                f"({', '.join(kinds)}; {len(lines)} kernel lines), the condition of Xid 119/120: "
                f'"{lines[0].message.strip()[:120]}"'
            ),
            fix=[
                "Drain the node and reset the GPU (nvidia-smi -r) or reboot",
                "Update the driver; where supported load it with NVreg_EnableGpuFirmware=0",
                "Run dcgmi diag -r 3 before returning the node to service",
            ],
            evidence=lines[:4],
            gpus=gpus,
            hosts=[m.host for m in lines if m.host],
        )
    ]
