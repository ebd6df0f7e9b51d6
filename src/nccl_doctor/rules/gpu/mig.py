"""MIG mode is enabled where the job needs whole GPUs or peer-to-peer.

What it means
-------------
Multi-Instance GPU splits an A100/H100/H200/B200 into isolated instances.
A CUDA process sees only one MIG instance (the first one of
``CUDA_VISIBLE_DEVICES``), instances have no P2P/NVLink between them, and
NCCL cannot run a communicator across several instances of one process or
use NVLink between them. nvidia-smi shows ``MIG M.: Enabled`` and a ``MIG
devices`` table; ``CUDA_VISIBLE_DEVICES`` holds ``MIG-<uuid>`` names.

Why it matters
--------------
A multi-GPU job on MIG instances sees fewer devices than it expects
(``invalid device ordinal``, ``no CUDA GPUs are available``), runs all
ranks on one instance, or falls back to slow shared-memory/socket transport;
collectives fail or crawl. A MIG mode change that is pending takes effect
only after a GPU reset.

Evidence
--------
``MIG Mode: Enabled`` / ``MIG M.: Enabled``, MIG device rows, ``MIG-``
UUIDs in ``CUDA_VISIBLE_DEVICES``, a pending MIG mode that differs from
the current one. A distributed job on MIG is a warning, critical when the
job failed, and critical with high confidence beside CUDA's own
device-count failure (``invalid device ordinal``, ``device >= 0 && device <
num_gpus``): that failure is MIG's mechanism where MIG hides devices (a
process enumerates every whole GPU and one MIG instance: MIG on all the
node's GPUs, or on two or more), not where one GPU is partitioned beside
whole ones (its instance takes its place in the count). Where no MIG state was
pasted, the reporter saying the GPUs are MIG instances (``with MIG GPU
instances``) beside that failure in the job's output is critical, with
medium confidence. MIG on its own (no job evidence) is context.

Fix
---
For multi-GPU training disable MIG on the job's GPUs: stop the processes,
``nvidia-smi -i <index> -mig 0`` and reset the GPU (``nvidia-smi -r -i
<index>``) or reboot. If MIG must stay, run one process per instance with
``CUDA_VISIBLE_DEVICES=MIG-<uuid>`` and do not expect NCCL P2P/NVLink
between instances. In Kubernetes pick the ``nvidia.com/gpu`` resource (or
the MIG strategy) that gives whole GPUs.
"""

from __future__ import annotations

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.gpu import Gpu, MigDevice
from nccl_doctor.facts.host import EnvVar
from nccl_doctor.facts.run import CudaError
from nccl_doctor.facts.store import Facts, Hit
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.rules.base import Rule
from nccl_doctor.rules.gpu._common import distributed, gpu_key, gpu_name, job_failed, unique_gpus
from nccl_doctor.signs.gpu import MIG_CUDA_FAIL, MIG_ENUMERATION, MIG_IN_USE, MIG_PROFILE

RULE = Rule(
    id="gpu.mig",
    title="MIG mode enabled on the job's GPUs",
    severity=Severity.WARNING,
    explains=("cuda.device_visibility", "nccl.p2p", "nccl.duplicate_gpu", "app.hang"),
)

_FIX = [
    "Stop the processes on the GPU and disable MIG: nvidia-smi -i <index> -mig 0",
    "Reset the GPU (nvidia-smi -r -i <index>) or reboot so the mode change applies",
    (
        "If MIG must stay, run one process per instance with CUDA_VISIBLE_DEVICES=MIG-<uuid>; "
        "NCCL has no P2P/NVLink between instances"
    ),
]


def check(facts: Facts) -> list[Finding]:
    """MIG enabled or pending on listed GPUs, MIG devices, MIG UUIDs in CUDA_VISIBLE_DEVICES."""
    findings: list[Finding] = []
    listed = unique_gpus(facts)
    gpus = [g for g in listed if g.mig_mode]
    devices = facts.of(MigDevice)
    env = [
        v
        for v in facts.of(EnvVar)
        if v.name == "CUDA_VISIBLE_DEVICES" and "MIG-" in (v.value or "")
    ]
    if gpus or devices or env:
        dist = distributed(facts)
        failed = job_failed(facts)
        enumeration = _enumeration(facts, listed)
        if enumeration:
            # the failure is the mechanism itself: a process enumerates one MIG instance
            machine = any(not h.prose for h in enumeration)
            severity = Severity.CRITICAL
            confidence = Confidence.HIGH if machine else Confidence.MEDIUM
        elif dist and failed:
            severity, confidence = Severity.CRITICAL, Confidence.MEDIUM
        elif dist or env:
            severity, confidence = Severity.WARNING, Confidence.MEDIUM
        else:
            severity, confidence = Severity.INFO, Confidence.HIGH
        names = [gpu_name(g) for g in gpus]
        owners = sorted({str(d.gpu_index) for d in devices if d.gpu_index is not None})
        if not names and owners:
            names = [f"GPU {i}" for i in owners]
        parts = [f"MIG is enabled on {', '.join(names) or 'the GPU'}"]
        if devices:
            parts.append(f"{len(devices)} MIG instance(s) listed")
        if env:
            parts.append(f"CUDA_VISIBLE_DEVICES={env[0].value}")
        if enumeration:
            parts.append(
                f"CUDA could not give a process the device it asked for "
                f"('{enumeration[0].match.group(0)}'): {_counted(listed)}"
            )
        if dist:
            parts.append("a multi-process NCCL job cannot use P2P/NVLink between instances")
        evidence: list[Cite | Fact] = [
            *(h.cite for h in enumeration[:1]),
            *(g.cite_of("mig_mode") for g in gpus[:3]),
            *devices[:2],
            *env[:1],
        ]
        findings.append(
            RULE.finding(
                summary="; ".join(parts),
                fix=_FIX,
                evidence=evidence,
                severity=severity,
                confidence=confidence,
                gpus=[gpu_key(g) for g in gpus] or owners,
                cause=severity is not Severity.INFO,
            )
        )
    pending = [
        g
        for g in unique_gpus(facts)
        if g.mig_mode is not None
        and g.mig_mode_pending is not None
        and g.mig_mode != g.mig_mode_pending
    ]
    findings.extend(_pending(gpu) for gpu in pending)
    return findings or _named_slices(facts) or _said_in_use(facts)


def _enumeration(facts: Facts, listed: list[Gpu]) -> tuple[Hit, ...]:
    """CUDA's device-count failure ('invalid device ordinal'...), where MIG's enumeration
    explains it: a process enumerates every whole GPU and at most one MIG instance, so MIG
    hides devices when it is on for every listed GPU, or for two or more of them (a node of
    four with two partitioned shows CUDA three). One MIG GPU beside whole ones hides none
    (its one instance takes its place), so that failure is the job's own count. With no GPU's
    MIG state listed, nothing says MIG hides none."""
    if any(g.mig_mode is not None for g in listed) and _hidden(listed) < 1:
        return ()
    return facts.seen(MIG_ENUMERATION)


def _counts(listed: list[Gpu]) -> list[tuple[int, int]]:
    """Per host (each host's processes count their own GPUs): its whole and its partitioned
    GPUs."""
    hosts: dict[str | None, list[Gpu]] = {}
    for gpu in listed:
        hosts.setdefault(gpu.host, []).append(gpu)
    return [
        (sum(1 for g in gpus if g.mig_mode is False), sum(1 for g in gpus if g.mig_mode))
        for gpus in hosts.values()
    ]


def _hidden(listed: list[Gpu]) -> int:
    """How many of a host's listed GPUs a CUDA process cannot enumerate, at most, by MIG's
    rule (every whole GPU, one MIG instance): all of a host partitioned hides all but one."""
    return max((_hides(*c) for c in _counts(listed)), default=0)


def _hides(whole: int, partitioned: int) -> int:
    if not partitioned:
        return 0
    return partitioned - 1 if whole else max(1, partitioned - 1)


def _counted(listed: list[Gpu]) -> str:
    """What a process enumerates on the host MIG hides the most of, in words."""
    whole, partitioned = max(_counts(listed), key=lambda c: _hides(*c), default=(0, 0))
    if not whole:
        return "a process enumerates only one MIG instance, however many GPUs NVML counts"
    return (
        f"a process enumerates the {whole} whole GPU(s) and one MIG instance, "
        f"{whole + 1} device(s) of the {whole + partitioned} NVML counts"
    )


#: The way to keep MIG: one instance a process, one rank an instance.
_ONE_EACH = (
    "Give each process exactly one MIG instance: CUDA_VISIBLE_DEVICES=MIG-<uuid> "
    "(`nvidia-smi -L` lists them), one rank per instance"
)


def _named_slices(facts: Facts) -> list[Finding]:
    """No MIG state was pasted, but the devices are MIG slices and CUDA fails on them."""
    profiles = facts.seen(MIG_PROFILE)
    failures = facts.seen(MIG_CUDA_FAIL)
    if not profiles or not failures:
        return []
    machine = not all(h.prose for h in (*profiles, *failures))
    return [
        RULE.finding(
            summary=f"The job runs on MIG slices ({profiles[0].match['profile']}) and CUDA fails: "
            "one process can use only one MIG instance (CUDA enumerates one), and NCCL cannot "
            "use P2P/NVLink between instances",
            fix=[_ONE_EACH, *_FIX[1:]],
            evidence=[profiles[0].cite, failures[0].cite],
            severity=Severity.CRITICAL if machine else Severity.WARNING,
            confidence=Confidence.MEDIUM if machine else Confidence.LOW,
        )
    ]


def _said_in_use(facts: Facts) -> list[Finding]:
    """No MIG state was pasted, the reporter says the GPUs are MIG instances, and CUDA's own
    device-count failure is in the output (or, less sure, in their words): the failure is
    MIG's enumeration (unless a listed GPU has MIG off, whose whole device a process may
    use)."""
    said = facts.seen(MIG_IN_USE)
    enumeration = _enumeration(facts, unique_gpus(facts))
    failed = [h for h in enumeration if not h.prose] or list(enumeration)
    if not said or not failed:
        return []
    # the failure retold in the reporter's words only: the same mechanism, less sure (a
    # paragraph that quotes CUDA's error is still its output: the error parsed from it)
    machine = not failed[0].prose or bool(facts.seen_on(MIG_ENUMERATION, facts.of(CudaError)))
    return [
        RULE.finding(
            summary=f"The GPUs are said to be MIG instances ('{said[0].match.group(0)}') and CUDA "
            f"could not give a process the device it asked for ('{failed[0].match.group(0)}'): "
            "a process enumerates only one MIG instance, so every rank past the first asks for "
            "a device it does not have",
            fix=[_ONE_EACH, *_FIX[:2]],
            evidence=[failed[0].cite, said[0].cite],
            severity=Severity.CRITICAL if machine else Severity.WARNING,
            confidence=Confidence.MEDIUM if machine else Confidence.LOW,
        )
    ]


def _pending(gpu: Gpu) -> Finding:
    want = "Enabled" if gpu.mig_mode_pending else "Disabled"
    return RULE.finding(
        summary=f"{gpu_name(gpu)}: MIG mode change to {want} is pending until the GPU is reset",
        fix=["Stop the processes on the GPU and reset it (nvidia-smi -r -i <index>) or reboot"],
        evidence=[gpu.cite_of("mig_mode_pending")],
        severity=Severity.WARNING,
        gpus=[gpu_key(gpu)],
    )
