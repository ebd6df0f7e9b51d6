"""The GPU's compute mode forbids sharing it (Exclusive Process or Prohibited).

What it means
-------------
nvidia-smi's ``Compute M.`` is ``Default`` on most machines: any number of
processes may create contexts on a GPU. ``Exclusive_Process`` (``E.
Process``) allows one process at a time and ``Prohibited`` none. A second
process (another rank, a leftover job, a monitoring tool that opens CUDA)
then fails with ``all CUDA-capable devices are busy or unavailable``
(cudaErrorDevicesUnavailable, 46) or ``CUDA-capable device(s) is/are busy or
unavailable``.

Why it matters
--------------
Schedulers (Slurm, some clusters) set exclusive mode on purpose; a job that
puts two ranks on one GPU, or whose rank 1..N touches GPU 0 before
``set_device``, dies at its first CUDA call. With ``Prohibited`` nothing
runs at all.

Evidence
--------
The compute mode in nvidia-smi (table, ``-q``, XML) and the ``busy or
unavailable`` error. Exclusive mode with no error is context (the job may
well use one process per GPU); the error with a non-Default mode is
critical; the error alone is a medium-confidence finding.

Fix
---
Give each rank its own GPU and call ``torch.cuda.set_device(local_rank)``
before any CUDA work; find and stop the process that already holds the GPU
(``nvidia-smi``, ``fuser -v /dev/nvidia*``). If sharing is wanted, set the
mode back: ``sudo nvidia-smi -i <index> -c DEFAULT`` (or ask the scheduler
admin; Slurm may set it per job).
"""

from __future__ import annotations

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.run import CudaError
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.rules.base import Rule
from nccl_doctor.rules.gpu._common import gpu_key, gpu_name, unique_gpus
from nccl_doctor.signs.gpu import DEVICES_BUSY

RULE = Rule(
    id="gpu.compute_mode",
    title="Compute mode forbids sharing the GPU",
    severity=Severity.CRITICAL,
    explains=("launch.rank_crash", "cuda.device_visibility", "nccl.internal", "app.hang"),
)


def check(facts: Facts) -> list[Finding]:
    """Non-Default compute modes, and the 'busy or unavailable' error."""
    strict = [g for g in unique_gpus(facts) if g.compute_mode not in (None, "Default")]
    busy_errors: list[Cite | Fact] = [
        e for e in facts.of(CudaError) if e.error and "busy or unavailable" in e.error
    ]
    busy_errors += [
        h.cite
        for h in facts.seen(DEVICES_BUSY)
        if h.cite not in {b.cite if isinstance(b, Fact) else b for b in busy_errors}
    ]
    if not strict and not busy_errors:
        return []
    modes = ", ".join(f"{gpu_name(g)} {g.compute_mode}" for g in strict[:4])
    fix = [
        "Give each rank its own GPU: call torch.cuda.set_device(local_rank) before any CUDA work",
        "Find and stop the process already on the GPU (nvidia-smi; fuser -v /dev/nvidia*)",
        (
            "If the GPU should be shared, set the mode back: sudo nvidia-smi -i <index> -c DEFAULT "
            "(or ask the scheduler admin)"
        ),
    ]
    if strict and busy_errors:
        severity, confidence = Severity.CRITICAL, Confidence.HIGH
        summary = f"Compute mode {modes} and CUDA says the devices are busy or unavailable"
    elif busy_errors:
        first = busy_errors[0]
        text = (first.cite if isinstance(first, Fact) else first).text.strip()
        prose_only = not any(isinstance(b, Fact) for b in busy_errors) and all(
            h.prose for h in facts.seen(DEVICES_BUSY)
        )
        if any(g.compute_mode == "Default" for g in unique_gpus(facts)):
            return []  # the mode is not the cause; another rule owns this error
        severity = Severity.WARNING if prose_only else Severity.CRITICAL
        confidence = Confidence.LOW if prose_only else Confidence.MEDIUM
        summary = (
            f'CUDA reports the GPUs busy or unavailable ("{text[:160]}"): the usual cause is '
            "an Exclusive_Process/Prohibited compute mode with another process on the GPU"
        )
        fix = ["Check nvidia-smi --query-gpu=index,compute_mode --format=csv", *fix]
    else:
        severity, confidence = Severity.WARNING, Confidence.MEDIUM
        summary = (
            f"Compute mode {modes}: only one process may use each GPU; ranks sharing a GPU or "
            "touching GPU 0 before set_device will fail"
        )
        if all(g.compute_mode == "Exclusive_Process" for g in strict):
            severity = Severity.INFO
    evidence: list[Cite | Fact] = [
        *(g.cite_of("compute_mode") for g in strict[:3]),
        *busy_errors[:2],
    ]
    return [
        RULE.finding(
            summary=summary,
            fix=fix,
            evidence=evidence,
            severity=severity,
            confidence=confidence,
            gpus=[gpu_key(g) for g in strict],
            cause=severity is not Severity.INFO,
        )
    ]
