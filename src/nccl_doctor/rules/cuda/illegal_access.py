"""A GPU kernel made an illegal memory access or another sticky fault.

What it means
-------------
A kernel read or wrote memory it does not own (``an illegal memory access
was encountered``, error 700), used a misaligned address (716), ran an
illegal instruction (715) or faulted in another way CUDA only reports as
``unspecified launch failure`` (719). These errors are sticky: the CUDA
context of that process is lost and every later call fails the same way.
Kernel errors are reported asynchronously, so the call that reports one (a
``cudaMemcpy``, NCCL's watchdog, the next collective) is often not the
kernel that faulted.

Why it matters
--------------
The rank that faulted dies; the others then fail with connection errors or
hang in their next collective. The cause is usually the application (a
custom CUDA extension, an out-of-bounds index with asserts compiled out, a
use-after-free across streams), sometimes a library bug (NCCL, cuDNN,
Triton kernels) and, when the kernel log shows Xid 48/79/94/95, the GPU.

Evidence
--------
The CUDA error messages or names (``cudaErrorIllegalAddress``,
``CUDA_ERROR_LAUNCH_FAILED``...) in PyTorch's ``CUDA error:`` lines, NCCL's
``Cuda failure`` warnings or an NCCL error report's last error; the kernel
log's Xids decide between the application and the hardware. A kernel that
traps on purpose also fails its launch (719): DeepEP's dispatch and combine
kernels trap after ~100 s without a peer's tokens, after printing ``DeepEP
timeout ...``; with that line and only launch failures, the finding is
information (the trap), not a cause, and the timeout's own class ranks the
causes. An illegal address (700) stays a fault of its own: DeepEP's peers
then time out waiting for the rank that faulted.

Fix
---
Rerun the failing rank with ``CUDA_LAUNCH_BLOCKING=1`` to find the kernel,
then with ``compute-sanitizer --tool memcheck`` to find the access. If the
fault is inside NCCL kernels, try ``NCCL_P2P_DISABLE=1`` and a newer NCCL;
if the kernel log shows a hardware Xid, treat it as a GPU fault.
"""

from __future__ import annotations

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.host import XidEvent
from nccl_doctor.facts.run import CudaError
from nccl_doctor.facts.store import Facts, Hit
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.knowledge import cuda_errors
from nccl_doctor.knowledge.xid import xid_info
from nccl_doctor.rules.app._deepep import deepep_timeouts
from nccl_doctor.rules.base import Rule
from nccl_doctor.rules.cuda._common import (
    cascade,
    dedupe,
    hits,
    hosts_of,
    matching_errors,
    nccl_saw,
    ranks_of,
    who,
)
from nccl_doctor.signs.cuda import ILLEGAL_ACCESS, WATCHDOG

RULE = Rule(
    id="cuda.illegal_access",
    title="A GPU kernel made an illegal memory access",
    severity=Severity.CRITICAL,
    explains=(
        "launch.rank_crash",
        "app.hang",
        "cuda.unknown_error",
        "nccl.internal",
        "net.unreachable",
        "gpu.xid",
    ),
)

_KNOWN = tuple(e for e in cuda_errors.ERRORS if e.diagnosis_id == "cuda.illegal_access")
_CODES = frozenset(e.code for e in _KNOWN)
#: cudaErrorLaunchFailure, what a kernel's trap() leaves, by number and by CUDA's words
_LAUNCH_FAILED = 719
_LAUNCH_FAILURE = "unspecified launch failure"
#: What to do when the fault is DeepEP's trap after its timeout
_DEEPEP_PEER = (
    "Find the peer DeepEP waited for: its timeout lines name the waiting rank (and, in the "
    "low-latency kernels, src_rank); that rank's own output says why it never sent"
)
#: Xids that mean the GPU, not the application, faulted.
_HARDWARE_XIDS = frozenset({48, 61, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120, 121, 140, 154})


def _gpu_side(code: int | None) -> bool:
    """Whether an Xid is the GPU's own fault, not the consequence of a kernel's: the ones named
    above, or any the Xid table reads as a critical fault whose likely cause is not the
    application (Xid 109's context-switch timeout, the driver's; NVLink's 144-158)."""
    if code is None:
        return False
    info = xid_info(str(code))
    return code in _HARDWARE_XIDS or (
        info is not None and info.severity == "critical" and info.likely_cause != "application"
    )


def _name(facts: Facts, error: CudaError) -> str:
    """The fault's message or name as the error text holds it (else the start of that text)."""
    text = error.error or ""
    said = (h.match.group(0).lower() for h in facts.seen_on(ILLEGAL_ACCESS, [error]))
    return next((s for s in said if s in text), text.strip()[:60])


def _launch_failures_only(errors: list[CudaError], lines: tuple[Hit, ...]) -> bool:
    """Whether every fault read is a failed launch (719): what a kernel's trap() gives."""
    said = [*(e.error or "" for e in errors), *(h.match.group(0) for h in lines)]
    return all(e.code in (None, _LAUNCH_FAILED) for e in errors) and all(
        _LAUNCH_FAILURE in text.lower() or "launch_failed" in text.lower() for text in said
    )


def check(facts: Facts) -> list[Finding]:
    """Sticky kernel faults, with the rank that hit them and whether the GPU is suspect."""
    errors = [
        e for e in facts.of(CudaError) if e.code in _CODES and e.kind != "device_assert"
    ] or matching_errors(facts, ILLEGAL_ACCESS)
    lines, machine = hits(facts, ILLEGAL_ACCESS)
    if not errors and not lines:
        return []
    machine = machine or bool(errors)
    direct: list[Fact] = list(errors)
    ranks = ranks_of(facts, ILLEGAL_ACCESS, direct, [h for h in lines if not h.prose])
    hosts = hosts_of(direct, lines)
    error_text = _name(facts, errors[0]) if errors else lines[0].match.group(0)
    summary = f"{who(ranks, hosts).capitalize()} hit '{error_text}'"
    report = nccl_saw(facts, ILLEGAL_ACCESS)
    if facts.lines_of(WATCHDOG) & {h.said for h in lines}:
        summary += (
            "; ProcessGroupNCCL's watchdog reported it, so the kernel that faulted may be any "
            "earlier one"
        )
    elif report is not None:
        summary += "; NCCL reported it, but kernel errors are asynchronous: any earlier kernel may "
        summary += "have faulted"
    hardware = [x for x in facts.of(XidEvent) if _gpu_side(x.xid)]
    explains: tuple[str, ...] | None = None
    cause = True
    if hardware:
        xid = hardware[0]
        summary += (
            f"; the kernel log shows Xid {xid.xid} on {xid.bus_id or 'a GPU'}, so the GPU, not "
            "the code, is the likely cause"
        )
        explains = tuple(i for i in RULE.explains if i != "gpu.xid")
        cause = False
    others = [r for r in facts.ranks if r not in ranks]
    if ranks and others:
        summary += cascade(others)
    target = f"rank {ranks[0]}" if ranks else "the failing rank"
    fix = [
        f"Rerun {target} with CUDA_LAUNCH_BLOCKING=1 to find the kernel that faulted",
        "Run it under `compute-sanitizer --tool memcheck python ...` to find the bad access",
        "If the fault is inside NCCL's kernels, rerun with NCCL_P2P_DISABLE=1 and try a newer NCCL",
        (
            "Check `dmesg -T | grep -i xid` on that node: Xid 13/31/43 point at the code, "
            "48/79/94/95 at the GPU"
        ),
    ]
    trapped = deepep_timeouts(facts)
    if trapped and cause and _launch_failures_only(errors, lines):
        # DeepEP traps its kernel when a peer's tokens never come: the launch fails (719); an
        # illegal address (700) is a fault of its own, which DeepEP's peers then time out on
        return [
            RULE.finding(
                summary=f"{summary}; DeepEP timed out waiting for a peer first and trapped its "
                "kernel: this is that trap, not a fault of the code",
                fix=[_DEEPEP_PEER],
                evidence=dedupe([*errors[:1], *(h.cite for h in lines[:1]), trapped[0]]),
                ranks=ranks,
                hosts=hosts,
                severity=Severity.INFO,
                confidence=Confidence.HIGH,
                cause=False,
            )
        ]
    evidence: list[Fact | Cite] = [*errors[:2], *(h.cite for h in lines[:2])]
    if report is not None:
        evidence.append(report)
    evidence += hardware[:1]
    return [
        RULE.finding(
            summary=summary,
            fix=fix,
            evidence=dedupe(evidence),
            ranks=ranks,
            hosts=hosts,
            severity=Severity.CRITICAL if machine else Severity.WARNING,
            confidence=Confidence.HIGH if machine else Confidence.LOW,
            cause=cause,
            explains=explains,
        )
    ]
