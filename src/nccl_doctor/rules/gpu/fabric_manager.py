"""NVSwitch system whose fabric manager is not running or does not match the driver.

What it means
-------------
On NVSwitch machines (HGX/DGX A100, H100, H200, B200) the GPUs must register
with the NVLink fabric before CUDA may use them; ``nvidia-fabricmanager``
(plus NVLSM on NVLink5 systems) does that. When the service is missing,
failed, or built for another driver version (``fabric manager NVIDIA GPU
driver interface version X don't match with driver version Y``), the GPUs
stay in fabric state ``In Progress``/``Not Started`` and every CUDA
context fails with error 802, ``system not yet initialized``
(cudaErrorSystemNotReady).

Why it matters
--------------
Nothing CUDA runs on the node: torch reports ``CUDA initialization:
Unexpected error from cudaGetDeviceCount() ... Error 802``,
``torch.cuda.is_available()`` is False, NCCL tests and the GPU operator's
validators fail. It typically appears after a driver upgrade that did not
upgrade the fabric manager, or on a fresh image without it.

Evidence
--------
CUDA error 802 / ``system not yet initialized`` (machine output: critical,
high; quoted in a report: critical, medium), the ``Fabric`` section of
``nvidia-smi -q`` (State not ``Completed``, Status not ``Success``), and
a driver status of the fabric (``[NV_ERR_NVLINK_FABRIC_FAILURE]``,
``[NV_ERR_FABRIC_MANAGER_NOT_PRESENT]``...), and
fabric manager log / systemd lines, except those of a source whose log
says it has nothing to do (``NV_WARN_NOTHING_TO_DO``: no NVSwitch on that
machine) or that shows the unit up after them (a later ``Started NVIDIA
fabric manager`` or ``Successfully configured`` line, or a status block
whose unit is ``active (running)`` above its journal's older lines).

Fix
---
Install the ``nvidia-fabricmanager`` package whose version equals the
driver's exactly (``nvidia-smi`` driver version vs ``nv-fabricmanager
--version``), then ``systemctl enable --now nvidia-fabricmanager`` (and
``nvlsm`` on Blackwell). Check ``systemctl status nvidia-fabricmanager`` and
``/var/log/fabricmanager.log``, and that ``nvidia-smi -q | grep -A2 Fabric``
shows ``Completed``/``Success`` before starting jobs. In Kubernetes let the
GPU operator's driver container run the matching fabric manager.
"""

from __future__ import annotations

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.run import CudaError
from nccl_doctor.facts.store import Facts, Hit
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.rules.base import Rule
from nccl_doctor.rules.gpu._common import (
    gpu_key,
    gpu_name,
    job_failed,
    status_finding,
    unique_gpus,
)
from nccl_doctor.signs.gpu import (
    FABRIC_MANAGER_LOG,
    FM_NOTHING_TO_DO,
    FM_UP,
    SYSTEM_NOT_READY,
)

RULE = Rule(
    id="gpu.fabric_manager",
    title="NVSwitch fabric manager not running or mismatched",
    severity=Severity.CRITICAL,
    explains=(
        "cuda.unknown_error",
        "cuda.device_visibility",
        "driver.container",
        "nccl.nvls",
        "launch.rank_crash",
        "nccl.internal",
    ),
)

_FIX = [
    (
        "Install the nvidia-fabricmanager package of exactly the driver's version "
        "(compare nvidia-smi's Driver Version with nv-fabricmanager --version)"
    ),
    "Start it: systemctl enable --now nvidia-fabricmanager (and nvlsm on NVLink5/Blackwell)",
    "Check systemctl status nvidia-fabricmanager and /var/log/fabricmanager.log for errors",
    "Wait until nvidia-smi -q | grep -A2 Fabric shows State Completed / Status Success, then rerun",
    (
        "On a machine without NVSwitches, error 802 instead means the GPU is not ready for another "
        "reason (confidential-computing mode not set ready): check nvidia-smi conf-compute -q"
    ),
]
_BAD_STATES = ("in progress", "not started", "failed", "not supported by fm")


_status = status_finding(RULE, "The NVSwitch fabric is not set up", _FIX)


def check(facts: Facts) -> list[Finding]:
    """CUDA 802, fabric state not Completed, fabric manager failures."""
    errors: list[Cite | Fact] = [
        e
        for e in facts.of(CudaError)
        if e.code == 802 or (e.error and "not yet initiali" in e.error)
    ]
    quoted = [h for h in facts.seen(SYSTEM_NOT_READY) if h.cite not in {_c(e) for e in errors}]
    machine = bool(errors) or any(not h.prose for h in quoted)
    gpus = [
        g
        for g in unique_gpus(facts)
        if (g.fabric_state and g.fabric_state.lower() in _BAD_STATES)
        or (g.fabric_status and g.fabric_status.lower() not in ("success", "n/a", "none"))
    ]
    log = _not_since_up(facts)
    if not errors and not quoted and not gpus and not log:
        return _status(facts)
    parts = []
    evidence: list[Cite | Fact] = [*errors[:2], *(h.cite for h in quoted[:2])]
    if errors or quoted:
        parts.append(
            "CUDA error 802 'system not yet initialized': the GPUs never joined the NVLink fabric"
        )
    if gpus:
        states = ", ".join(
            f"{gpu_name(g)} fabric {g.fabric_state or '?'}/{g.fabric_status or '?'}"
            for g in gpus[:4]
        )
        parts.append(states)
        evidence += [g.cite_of("fabric_state") for g in gpus[:3]]
    if log:
        parts.append(f"fabric manager: {log[0].cite.text.strip()[:160]}")
        evidence += [h.cite for h in log[:2]]
    if machine or (gpus and job_failed(facts)) or any(not h.prose for h in log):
        severity, confidence = Severity.CRITICAL, Confidence.HIGH
        if not machine and not gpus:
            confidence = Confidence.MEDIUM
    elif quoted:
        # The exact CUDA error string quoted in a report: nobody writes it unprompted.
        severity, confidence = Severity.CRITICAL, Confidence.MEDIUM
    else:
        severity, confidence = Severity.WARNING, Confidence.MEDIUM if gpus else Confidence.LOW
    return [
        RULE.finding(
            summary="; ".join(parts),
            fix=_FIX,
            evidence=evidence,
            severity=severity,
            confidence=confidence,
            ranks=[e.rank for e in errors if isinstance(e, Fact) and e.rank is not None],
            gpus=[gpu_key(g) for g in gpus],
            hosts=[e.host for e in errors if isinstance(e, Fact) and e.host],
        )
    ]


def _not_since_up(facts: Facts) -> tuple[Hit, ...]:
    """The fabric manager's failures its source does not show it up after (a later 'Started'
    or 'Successfully configured' line, or a status block whose unit is active (running) now:
    its journal's lines below are older) nor idle (no NVSwitch to manage)."""
    ups = facts.seen(FM_UP)
    headers = {(h.cite.source, h.cite.line) for h in ups if h.match["header"]}
    running_now = {
        h.cite.source
        for h in ups
        if h.match["active"]
        and any((h.cite.source, h.cite.line - back) in headers for back in (1, 2, 3))
    }
    started: dict[str, int] = {}
    for h in ups:
        if not h.match["active"] and not h.match["header"]:
            started[h.cite.source] = max(started.get(h.cite.source, 0), h.cite.line)
    # no NVSwitch on the machine: the fabric manager has nothing to manage, and its unit's
    # failure that follows is no failure of the GPUs (that machine's: its own source)
    idle = {h.cite.source for h in facts.seen(FM_NOTHING_TO_DO)}
    return tuple(
        h
        for h in facts.seen(FABRIC_MANAGER_LOG)
        if h.cite.source not in running_now | idle and h.cite.line > started.get(h.cite.source, 0)
    )


def _c(item: Cite | Fact) -> Cite:
    return item.cite if isinstance(item, Fact) else item
