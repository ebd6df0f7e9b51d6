"""The GPU is gone or wedged and needs a reset or a reboot.

What it means
-------------
The driver can no longer talk to a GPU: it "fell off the bus" (Xid 79, or
``The NVIDIA GPU ... has fallen off the bus`` in the kernel log), NVML says
``GPU is lost`` or ``Unable to determine the device handle for GPU
0000:07:00.0: Unknown Error``, nvidia-smi prints ``ERR!`` where numbers
should be, or the driver says the GPU requires a reset. The usual causes are
power or cooling (a passively cooled card without airflow shuts itself
down), a bad riser/PCIe slot, or a board failure.

Why it matters
--------------
Every process on that GPU fails and no new CUDA context can be made on it;
ranks on other GPUs hang in their next collective. Processes stuck in the
driver cannot be killed. Only a GPU reset or, usually, a reboot brings the
GPU back, and it will fall off again if the cause stays.

Evidence
--------
nvidia-smi/NVML error lines, kernel lines (Xid 79, fallen off the bus, RM's
``API_GPU_ATTACHED_SANITY_CHECK failed``, a register read of all ones,
nvidia-uvm's fatal error ``requiring os reboot to recover``, a driver status
of a lost GPU such as ``[NV_ERR_RESET_REQUIRED]`` or ``[NV_ERR_GPU_IS_LOST]``),
``ERR!``/``Unknown Error`` fields, ``GPU Reset Status``/recovery action.
A report that processes survive SIGKILL and only a reboot helps is a weak
(words-only) sign of a wedged GPU. A GPU the driver could not initialise at
load is unusable the same way; the driver says why, and the fix follows it:
``GPU does not have the necessary power cables connected``, a BAR of ``0M``
(no address space: Above 4G decoding off), ``WPR2 already up`` or a GFW boot
that never finished (left in a bad state: reset or power-cycle), or only the
stage that failed (``RmInitAdapter failed``, ``Cannot initialize GSP firmware
RM``, ``The NVIDIA probe routine failed``). A module without its GSP firmware
(``No firmware image found``) is an install, not the GPU.

Fix
---
Drain the node and reboot it (a GPU reset is rarely enough after Xid 79).
Check ``dmesg`` for Xid 79/74/48 just before the loss, and the temperature
and power history (``nvidia-smi -q -d TEMPERATURE,POWER``, BMC logs): passive
cards need chassis airflow. Reseat the GPU and its power cables, try another
slot, update the driver and VBIOS; RMA the GPU if it keeps falling off.
"""

from __future__ import annotations

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.gpu import SmiError
from nccl_doctor.facts.host import KernelGpuMessage
from nccl_doctor.facts.probe import ProbeIsolation, ProbeStep
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.knowledge.xid import xid_info
from nccl_doctor.rules.base import Rule
from nccl_doctor.rules.gpu._common import (
    dcgm_findings,
    first_of_each,
    gpu_key,
    gpu_name,
    machine_hits,
    nvlink_wedge,
    prose_hits,
    status_of,
    unique_gpus,
    wedge_hits,
    xid_summary,
    xids_for,
)
from nccl_doctor.signs.gpu import GPU_LOST, SAID_LOST, XID_SAID

RULE = Rule(
    id="gpu.lost",
    title="The GPU is lost or wedged",
    severity=Severity.CRITICAL,
    explains=(
        "gpu.xid",
        # a GPU gone takes its NVLink links down: its peers' and the switches' ports report the
        # links lost; NVLink's own faults can wedge a GPU too, so the first failure decides
        "gpu.nvlink",
        "gpu.thermal_power",
        "cuda.unknown_error",
        "cuda.illegal_access",
        "cuda.device_visibility",
        "launch.rank_crash",
        "app.hang",
        "nccl.internal",
        "driver.version_mismatch",
    ),
)

_FIX = [
    (
        "Drain the node and reboot it; a GPU reset (nvidia-smi -r) is rarely enough once a GPU "
        "has fallen off the bus"
    ),
    "Before rebooting, save dmesg / journalctl -k and look for Xid 79/74/48 at the loss",
    (
        "Check cooling and power: nvidia-smi -q -d TEMPERATURE,POWER history, BMC/IPMI logs; "
        "passively cooled cards (Tesla P4/T4/A2, A100 PCIe) need chassis airflow"
    ),
    "Reseat the GPU and its power cables or try another slot; update the driver and VBIOS",
    "RMA the GPU if it falls off again",
]


#: The driver's lines that say the GPU no longer answers (see KernelGpuMessage)
_GONE = frozenset({"fallen_off_bus", "detached", "reboot_required"})


def _gone(m: KernelGpuMessage) -> bool:
    """A kernel line of a GPU off the bus, or one naming a driver status of a lost GPU."""
    kept = status_of(m)
    return m.kind in _GONE or (kept is not None and kept.id == RULE.id)


def check(facts: Facts) -> list[Finding]:
    """Lost GPUs from NVML/nvidia-smi, kernel lines, ERR! fields and reset flags."""
    findings: list[Finding] = []
    handle = [e for e in facts.of(SmiError) if e.error == "device_handle"]
    kernel = [m for m in facts.of(KernelGpuMessage) if _gone(m)]
    xids = xids_for(facts, RULE.id)
    cites: list[Cite | Fact] = [*handle[:2], *kernel[:2], *first_of_each(xids, 2)]
    dcgm = dcgm_findings(facts, RULE, _FIX)
    if not cites and not dcgm:  # (a DCGM check that failed is its own finding, below)
        cites = [h.cite for h in machine_hits(facts, GPU_LOST)[:2]]
    if cites:
        buses = [e.bus_id for e in handle if e.bus_id]
        buses += [name for m in kernel if (name := m.bus_id or m.gpu_label)]
        buses += [name for e, _ in xids if (name := e.bus_id or e.gpu_label)]
        parts = [f"nvidia-smi: {e.message.strip()}" for e in handle[:1]]
        parts += [f"kernel: {m.message.strip()[:140]}" for m in kernel[:1]]
        if xids:
            parts.append(xid_summary(xids))
        if not parts:
            parts.append(cites[0].text.strip()[:200] if isinstance(cites[0], Cite) else "")
        before = _earlier_fault(facts, set(buses))
        if before:
            parts.append(f"after {before}, which is the cause")
        who = ", ".join(dict.fromkeys(buses)) or "(unnamed)"
        findings.append(
            RULE.finding(
                # (the driver's own label, "GPU3", needs no "GPU" before it)
                summary=f"{who if who.startswith('GPU') else 'GPU ' + who} is lost: "
                + "; ".join(parts),
                fix=_FIX,
                evidence=cites,
                gpus=list(dict.fromkeys(buses)),
                hosts=[f.host for f in [*handle, *kernel] if f.host],
                cause=not before,
            )
        )
    findings += _gpu_state(facts)
    findings += _init(facts)
    findings += dcgm
    findings += _probe(facts)
    if not findings:
        findings += _words(facts)
    return findings


def _earlier_fault(facts: Facts, buses: set[str | None]) -> str | None:
    """A critical NVLink/ECC Xid on the same GPU logged before it was lost, if any."""
    lost = [e.cite for e, _ in xids_for(facts, RULE.id)]
    lost += [m.cite for m in facts.of(KernelGpuMessage) if _gone(m)]
    for rule_id in ("gpu.nvlink", "gpu.ecc"):
        for event, info in xids_for(facts, rule_id):
            if info.severity != "critical" or event.bus_id not in buses:
                continue
            same = [c.line for c in lost if c.source == event.cite.source]
            if same and event.cite.line < min(same):
                return f"Xid {info.code} ({info.name}) on {event.bus_id}"
    return None


def _gpu_state(facts: Facts) -> list[Finding]:
    out = []
    for gpu in unique_gpus(facts):
        reset = gpu.reset_required is True or (
            gpu.recovery_action is not None and gpu.recovery_action.lower() not in ("none", "n/a")
        )
        if not gpu.errors and not reset:
            continue
        what = []
        if gpu.errors:
            what.append(f"nvidia-smi could not read {', '.join(gpu.errors)} (ERR!/Unknown Error)")
        if gpu.reset_required:
            what.append("the driver says the GPU requires a reset")
        if gpu.recovery_action and gpu.recovery_action.lower() not in ("none", "n/a"):
            what.append(f"recovery action: {gpu.recovery_action}")
        severe = reset or len(gpu.errors) >= 2
        out.append(
            RULE.finding(
                summary=f"{gpu_name(gpu)}: {'; '.join(what)}",
                fix=_FIX,
                evidence=[gpu, *(gpu.cite_of(e) for e in gpu.errors[:3])],
                severity=Severity.CRITICAL if severe else Severity.WARNING,
                confidence=Confidence.HIGH if severe else Confidence.MEDIUM,
                gpus=[gpu_key(gpu)],
                hosts=[gpu.host] if gpu.host else [],
            )
        )
    return out


def _words(facts: Facts) -> list[Finding]:
    said = prose_hits(facts, SAID_LOST)
    if said:
        return [
            RULE.finding(
                summary=f'The report says the GPU was lost: "{said[0].cite.text.strip()[:160]}"',
                fix=["Paste dmesg | grep -i -e Xid -e NVRM and nvidia-smi -q", *_FIX],
                evidence=[h.cite for h in said[:2]],
                severity=Severity.WARNING,
                confidence=Confidence.LOW,
            )
        ]
    wedge = wedge_hits(facts)
    # an Xid named beside it whose fault is another diagnosis's (62: a micro-controller halt,
    # gpu.xid's): the wedge is that fault's aftermath
    other = [
        h
        for h in facts.seen(XID_SAID)
        if (info := xid_info(h.match["code"])) is not None
        and info.diagnosis_id != RULE.id
        and info.severity == "critical"
    ]
    if wedge and not nvlink_wedge(facts) and not other:
        return [
            RULE.finding(
                summary=(
                    "After a GPU error the processes could not be killed and only a reboot "
                    "helped: the GPU is wedged in the driver "
                    f'("{wedge[0].cite.text.strip()[:140]}")'
                ),
                fix=["Save dmesg | grep -e Xid -e NVRM before the next reboot and paste it", *_FIX],
                evidence=[h.cite for h in wedge[:3]],
                severity=Severity.WARNING,
                confidence=Confidence.LOW,
            )
        ]
    return []


#: What to do first about a GPU the driver could not initialise, by what the driver said
_INIT_FIX = {
    "no_power": (
        "Connect the GPU's auxiliary power cables (its 8-pin or 12VHPWR leads) and check that "
        "the power supply can carry the board: the driver will not use a GPU without them"
    ),
    "bar_invalid": (
        "Enable 'Above 4G decoding' (and Resizable BAR where offered) in the system BIOS so the "
        "GPU's memory windows (BARs) get addresses; dmesg | grep -i BAR at boot names the "
        "window that got none"
    ),
    "reset_needed": (
        "Reset the GPU (nvidia-smi -r -i <gpu>) or power-cycle the node: an earlier driver or "
        "a crash left it in a state the driver cannot boot from (a warm reboot may not clear it)"
    ),
    "init_failed": (
        "Read the NVRM lines just before it (dmesg -T | grep NVRM): the stage that failed; check "
        "the GPU is on the bus (lspci -d 10de: -vv) and power-cycle the node"
    ),
    "probe_failed": (
        "Read the NVRM lines before it (dmesg -T | grep NVRM) for the GPU that failed; check it "
        "is on the bus (lspci -d 10de: -vv) and power-cycle the node"
    ),
}


def _init(facts: Facts) -> list[Finding]:
    """A GPU the driver could not bring up at load: no power, no BAR space, a bad state, or a
    failed initialisation stage."""
    failed = [m for m in facts.of(KernelGpuMessage) if m.kind in _INIT_FIX]
    # a module without its GSP firmware fails every GPU's init: the install, not the GPU
    # (driver.version_mismatch)
    if not failed or any(m.kind == "no_firmware" for m in facts.of(KernelGpuMessage)):
        return []
    names = list(dict.fromkeys(n for m in failed if (n := m.bus_id or m.gpu_label)))
    who = ", ".join(names) or "a GPU"
    # the most telling line: what the board lacks before a generic stage failure
    first = min(failed, key=lambda m: list(_INIT_FIX).index(m.kind))
    said = (first.detail or first.message).strip()
    return [
        RULE.finding(
            summary=f"The driver could not initialise {who}: {said[:160]}; "
            "the GPU is unusable until this is fixed",
            fix=[_INIT_FIX[first.kind], *_FIX[3:]],
            evidence=[first, *(m for m in failed if m is not first)][:3],
            title="The driver could not initialise the GPU",
            gpus=names,
            hosts=[m.host for m in failed if m.host],
        )
    ]


_PROBE_STEPS = ("context", "alloc", "kernel")


def _probe(facts: Facts) -> list[Finding]:
    """A probe run: a GPU whose context, allocation or kernel failed or hung; or bisection."""
    out = []
    for s in facts.of(ProbeStep):
        if s.phase == "device" and s.step in _PROBE_STEPS and not s.ok:
            gpu = ", ".join(map(str, s.gpus))
            out.append(
                RULE.finding(
                    summary=f"nccl-doctor probe: GPU {gpu}: step {s.step} {s.status}"
                    + (f": {s.error[:160]}" if s.error else ""),
                    fix=_FIX,
                    evidence=[s],
                    gpus=[str(g) for g in s.gpus],
                    hosts=[s.host] if s.host else [],
                    confidence=Confidence.HIGH if s.status == "hung" else Confidence.MEDIUM,
                )
            )
    named = [i for i in facts.of(ProbeIsolation) if i.conclusion == "gpu"]
    out.extend(
        RULE.finding(
            summary=f"nccl-doctor probe: {i.step} fails whenever GPU "
            f"{', '.join(map(str, i.gpus))} takes part, also on its own "
            f"(bisection, {i.rounds} rounds): that GPU is faulty",
            fix=_FIX[1:],
            evidence=[i],
            gpus=[str(g) for g in i.gpus],
            hosts=[i.host] if i.host else [],
            confidence=Confidence.MEDIUM,
        )
        for i in named
    )
    return out
