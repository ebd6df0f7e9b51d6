"""Uncorrectable GPU memory errors, pending page retirement or a failed row remap.

What it means
-------------
GPU memory returned data its ECC could not correct (a double-bit or
uncontained error), or the driver has marked bad memory for retirement or
row remapping that only takes effect at the next GPU reset, or remapping
failed because the spare rows ran out. CUDA reports it to the process as
``uncorrectable ECC error encountered`` (cudaErrorECCUncorrectable, 214);
the kernel log shows Xid 48 (double-bit), 94/95 (contained/uncontained),
63/64 (remap recorded/failed), 92 (many corrected errors).

Why it matters
--------------
The process that touched the memory is killed and every rank of the job
then fails or hangs. Until the GPU is reset (or replaced) the same bad
memory keeps breaking jobs scheduled on it; a recurring error on every run
is a hardware fault.

Evidence
--------
The CUDA error line; nvidia-smi ECC counters (``Volatile Uncorr. ECC`` in
the table, SRAM/DRAM Uncorrectable in ``-q``/XML), ``Pending Page
Blacklist: Yes``, ``Remapped Rows: Pending: Yes``, ``Remapping Failure
Occurred: Yes``; Xid 48/63/64/92/94/95/140 lines; a driver status of the
memory (``[NV_ERR_ECC_ERROR]``, ``[NV_ERR_MEMORY_ERROR]``...). Aggregate (lifetime)
counts alone are history and only context.

Fix
---
Drain the node; stop the jobs on the GPU and reset it (``nvidia-smi -r -i
N``) or reboot so pending retirements/remaps apply; check ``nvidia-smi -q -d
ECC,ROW_REMAPPER,PAGE_RETIREMENT`` again and run ``dcgmi diag -r 3``; RMA
the GPU when remapping failed or errors return after the reset. Rerun the
job on other GPUs meanwhile.
"""

from __future__ import annotations

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.gpu import Gpu
from nccl_doctor.facts.run import CudaError
from nccl_doctor.facts.software import SoftwareVersions
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.rules.base import Rule
from nccl_doctor.rules.gpu._common import (
    caused_by,
    dcgm_findings,
    first_of_each,
    gpu_key,
    gpu_name,
    job_failed,
    prose_hits,
    status_finding,
    unique_gpus,
    xid_summary,
    xids_for,
)
from nccl_doctor.signs.gpu import CORRECTABLE, DENIED_ECC, SAID_ECC, UNCORRECTABLE

RULE = Rule(
    id="gpu.ecc",
    title="Uncorrectable GPU memory (ECC) errors",
    severity=Severity.CRITICAL,
    explains=(
        "gpu.xid",
        "cuda.illegal_access",
        "cuda.unknown_error",
        "launch.rank_crash",
        "app.hang",
        "nccl.internal",
    ),
)

_FIX = [
    "Drain the node and move the job to other GPUs",
    (
        "Stop every process on the GPU and reset it (nvidia-smi -r -i <index>) or reboot, so "
        "pending page retirements / row remaps take effect"
    ),
    "Check nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT and dmesg for Xid 48/63/64/94/95",
    "Run dcgmi diag -r 3; RMA the GPU if remapping failed or the errors come back",
]


def _counters(facts: Facts, failed: bool) -> list[Finding]:
    findings = []
    for gpu in unique_gpus(facts):
        problems: list[str] = []
        cites: list[Cite | Fact] = []
        severity = Severity.WARNING
        if gpu.ecc_volatile_uncorrected:
            problems.append(f"{gpu.ecc_volatile_uncorrected} uncorrectable ECC errors since boot")
            cites.append(gpu.cite_of("ecc_volatile_uncorrected"))
            severity = Severity.CRITICAL if failed else Severity.WARNING
        if gpu.remapped_rows_failure:
            problems.append("row remapping failed (no spare rows left)")
            cites.append(gpu.cite_of("remapped_rows_failure"))
            severity = Severity.CRITICAL
        if gpu.retired_pages_pending:
            problems.append("a page retirement is pending (Pending Page Blacklist: Yes)")
            cites.append(gpu.cite_of("retired_pages_pending"))
        if gpu.remapped_rows_pending:
            rows = gpu.remapped_rows_uncorrectable or gpu.remapped_rows_correctable
            problems.append(f"a row remap is pending ({rows or 0} rows), applied at the next reset")
            cites.append(gpu.cite_of("remapped_rows_pending"))
        if gpu.remapped_rows_uncorrectable and not problems:
            problems.append(
                f"{gpu.remapped_rows_uncorrectable} rows remapped for uncorrectable errors"
            )
            cites.append(gpu.cite_of("remapped_rows_uncorrectable"))
            severity = Severity.INFO
        if not problems:
            continue
        if gpu.ecc_volatile_corrected:
            problems.append(f"{gpu.ecc_volatile_corrected} corrected errors")
        findings.append(
            RULE.finding(
                summary=" ".join(filter(None, (gpu_name(gpu), gpu.name)))
                + f": {'; '.join(problems)}",
                fix=_FIX,
                evidence=[gpu, *cites],
                severity=severity,
                gpus=[gpu_key(gpu)],
                hosts=[gpu.host] if gpu.host else [],
                cause=severity is not Severity.INFO,
            )
        )
    return findings


_status = status_finding(RULE, "The GPU's memory failed", _FIX)


def check(facts: Facts) -> list[Finding]:
    """CUDA ECC errors, ECC/remap counters and memory Xids."""
    findings: list[Finding] = []
    errors = [e for e in facts.of(CudaError) if e.error and "ecc" in e.error]
    if errors:
        gpus = sorted({g.name for g in facts.of(Gpu) if g.name})
        gpus += sorted({n for v in facts.of(SoftwareVersions) for _, n in v.gpu_models})
        findings.append(
            RULE.finding(
                summary=(
                    f"CUDA reported '{errors[0].error}' ({len(errors)} line(s)"
                    + (
                        f", ranks {sorted({e.rank for e in errors if e.rank is not None})}"
                        if any(e.rank is not None for e in errors)
                        else ""
                    )
                    + "): the GPU's memory returned data ECC could not correct"
                    + (f" ({', '.join(gpus[:2])})" if gpus else "")
                ),
                fix=_FIX,
                evidence=errors[:3],
                ranks=[e.rank for e in errors if e.rank is not None],
                hosts=[e.host for e in errors if e.host],
            )
        )
    findings += _counters(facts, job_failed(facts))
    events = xids_for(facts, RULE.id) + caused_by(facts, RULE.id)
    # (DCGM's memory check of a GPU whose ECC Xid is read says the same: one finding)
    findings += dcgm_findings(facts, RULE, _FIX, {e.gpu_label for e, _ in events if e.gpu_label})
    if events:
        worst = min((i.severity for _, i in events), key=["critical", "warning", "info"].index)
        severity = {"critical": Severity.CRITICAL, "warning": Severity.WARNING}.get(
            worst, Severity.INFO
        )
        codes = sorted({i.code for _, i in events})
        meaning = "; ".join(
            f"Xid {c}: {next(i.meaning for _, i in events if i.code == c)}" for c in codes[:3]
        )
        findings.append(
            RULE.finding(
                summary=f"{xid_summary(events)}. {meaning}",
                fix=_FIX,
                evidence=first_of_each(events),
                severity=severity,
                gpus=[e.bus_id for e, _ in events if e.bus_id],
                hosts=[e.host for e, _ in events if e.host],
            )
        )
    if not findings:
        findings += _status(facts)
    if not findings:
        corrected = facts.lines_of(CORRECTABLE) - facts.lines_of(UNCORRECTABLE)
        denied = facts.lines_of(DENIED_ECC)  # "nvidia-smi shows no ECC errors"
        said = [
            h
            for h in prose_hits(facts, SAID_ECC)
            if h.said not in corrected and h.said not in denied
        ]
        if said:
            findings.append(
                RULE.finding(
                    summary=f'The report mentions ECC errors: "{said[0].cite.text.strip()[:160]}"',
                    fix=["Paste nvidia-smi -q -d ECC,ROW_REMAPPER and dmesg | grep Xid", *_FIX],
                    evidence=[h.cite for h in said[:2]],
                    severity=Severity.WARNING,
                    confidence=Confidence.LOW,
                )
            )
    return findings
