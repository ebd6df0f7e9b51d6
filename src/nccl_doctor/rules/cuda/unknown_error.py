"""CUDA error 999 ("unknown error") whose cause is not otherwise identified.

What it means
-------------
A CUDA call returned ``cudaErrorUnknown`` (999). CUDA returns it when the
driver failed in a way it does not classify: the GPU is held in a state the
context cannot use, the NVSwitch fabric is not ready, the unified-memory
module is missing, or the driver was reloaded or the GPU reset under a
running stack.

Why it matters
--------------
The context of that process is unusable; NCCL reports it as
``ncclUnhandledCudaError ... Cuda failure 999 'unknown error'`` and every
other rank then fails or hangs waiting for it. Rerunning seldom helps until
the cause is removed.

Evidence
--------
``Cuda failure 999``, ``CUDA error: unknown error``, ``cudaErrorUnknown``;
where it happened (communicator set-up, DDP's parameter check); whether
nvidia-smi still answers; the process list, GPU model and count, kernel log
and module evidence that the checklist steps use.

Fix
---
Work through the checklist in order; each step says what the evidence
already shows: other processes on the job's GPUs, the fabric manager and
NVSwitch state on HGX systems, ``nvidia_uvm`` and ``/dev/nvidia-uvm``, a
driver reload, GPU reset or driver/library mismatch since boot; then test
the GPU alone.
"""

from __future__ import annotations

from typing import NamedTuple

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.gpu import Gpu, GpuProcess, SmiError
from nccl_doctor.facts.host import KernelGpuMessage, XidEvent
from nccl_doctor.facts.job import gpu_models, job_pids, rank_gpus
from nccl_doctor.facts.nccl import NcclWarn
from nccl_doctor.facts.run import CudaError
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.knowledge.gpu_boards import nvswitch_model
from nccl_doctor.rules._context import init_phase
from nccl_doctor.rules.base import Rule
from nccl_doctor.signs.cuda import UNKNOWN_ERROR, UVM_NAMED

RULE = Rule(
    id="cuda.unknown_error",
    title="CUDA error 999 (unknown error)",
    severity=Severity.CRITICAL,
    explains=("launch.rank_crash", "app.hang"),
)


class Step(NamedTuple):
    """One checklist step: its text, the lines it cites, the finding it points at."""

    text: str
    cites: list[Cite | Fact]
    #: the catalogue id whose evidence this step found (the 999 then follows from it)
    points_at: str | None = None


def _errors(facts: Facts) -> list[Fact | Cite]:
    found: list[Fact | Cite] = [e for e in facts.of(CudaError) if e.unknown]
    found += [w for w in facts.of(NcclWarn) if w.cuda_error_code == 999]
    if not found:
        found += [h.cite for h in facts.seen(UNKNOWN_ERROR, prose=False)[:3]]
    return found


def _gpu_models(facts: Facts) -> tuple[str | None, int]:
    names = gpu_models(facts)
    return (names[0] if names else None), len(names)


def _step_processes(facts: Facts, failing: int | None) -> Step:
    procs = facts.of(GpuProcess)
    if not procs:
        return Step(
            "Check for other processes on the job's GPUs (`nvidia-smi`): no process list was given",
            [],
        )
    mine = job_pids(facts)
    gpus = rank_gpus(facts)
    job_gpus = {g.gpu_index for g in gpus.values()}
    foreign = [p for p in procs if p.pid not in mine and p.gpu_index in job_gpus]
    if not foreign:
        return Step("Other processes on the job's GPUs: none in the process list given", [])
    gpu = gpus[failing].gpu_index if failing in gpus else None
    on_failing = [p for p in foreign if gpu is not None and p.gpu_index == gpu]
    shown = on_failing or foreign
    names = ", ".join(f"PID {p.pid} ({(p.name or '?').rsplit('/', 1)[-1]})" for p in shown[:3])
    where = f"rank {failing}'s GPU {gpu}" if on_failing else "the job's GPUs"
    return Step(
        f"Free the job's GPUs first: the process list shows {names} on {where} "
        "(see gpu.contention)",
        list(shown[:2]),
        "gpu.contention" if on_failing else None,
    )


def _step_fabric(facts: Facts) -> Step:
    states = [g for g in facts.of(Gpu) if g.fabric_state]
    bad = [g for g in states if (g.fabric_state or "").lower() not in ("completed", "n/a")]
    if bad:
        g = bad[0]
        return Step(
            f"Fix the NVSwitch fabric: GPU {g.index} fabric state is {g.fabric_state}; "
            "restart nvidia-fabricmanager (`systemctl restart nvidia-fabricmanager`) and check "
            "its version matches the driver",
            [g.cite_of("fabric_state")],
            "gpu.fabric_manager",
        )
    if states:
        return Step(
            "NVSwitch fabric state: Completed on the GPUs listed (fabric manager is fine)", []
        )
    model, count = _gpu_models(facts)
    if model and nvswitch_model(model) and count >= 8:
        return Step(
            (
                f"Check the fabric manager: {count}x {model} is an NVSwitch (HGX) board, "
                "where CUDA fails until nvidia-fabricmanager runs at the driver's exact version "
                "(`systemctl status nvidia-fabricmanager`; `nvidia-smi -q | grep -A2 Fabric`)"
            ),
            [],
        )
    return Step(
        (
            "On an NVSwitch (HGX/DGX) system, check that nvidia-fabricmanager runs at the driver's "
            "version (`systemctl status nvidia-fabricmanager`)"
        ),
        [],
    )


def _step_uvm(facts: Facts) -> Step:
    hits = facts.seen(UVM_NAMED)
    if hits:
        return Step(
            (
                "Reload the unified-memory module: the evidence mentions nvidia_uvm "
                "(`sudo modprobe -r nvidia_uvm && sudo modprobe nvidia_uvm`)"
            ),
            [hits[0].cite],
            "driver.uvm",
        )
    return Step(
        (
            "Check the unified-memory module: `lsmod | grep nvidia_uvm` and "
            "`ls -l /dev/nvidia-uvm` (not in the evidence); load it with `sudo modprobe nvidia_uvm`"
        ),
        [],
    )


_KERNEL_IDS = {"api_mismatch": "driver.version_mismatch", "fallen_off_bus": "gpu.lost"}


def _step_driver(facts: Facts) -> Step:
    xids = facts.of(XidEvent)
    kernel = [k for k in facts.of(KernelGpuMessage) if k.kind in ("api_mismatch", "fallen_off_bus")]
    if xids or kernel:
        first: Fact = xids[0] if xids else kernel[0]
        return Step(
            (
                "Reset the GPU or reboot: the kernel log shows driver faults "
                f"({first.cite.text.strip()[:80]})"
            ),
            [first],
            "gpu.xid" if xids else _KERNEL_IDS.get(kernel[0].kind),
        )
    return Step(
        (
            "Look for a driver reload, GPU reset or driver update without reboot: "
            "`sudo dmesg -T | grep -iE 'NVRM|Xid'` (no kernel log was given); reboot if the driver "
            "was upgraded"
        ),
        [],
    )


def check(facts: Facts) -> list[Finding]:
    """Error 999, with the ordered checklist marked by what the evidence shows."""
    errors = _errors(facts)
    if not errors:
        return []
    first = errors[0]
    cite = first if isinstance(first, Cite) else first.cite
    ranks = sorted({e.rank for e in errors if isinstance(e, Fact) and e.rank is not None})
    failing = ranks[0] if ranks else None
    phase = init_phase(facts, failing)
    smi_ok = bool(facts.of(GpuProcess) or facts.of(Gpu)) and not facts.of(SmiError)
    who = f"rank {', '.join(map(str, ranks))}" if ranks else "the job"
    summary = f"CUDA error 999 on {who}"
    if phase:
        summary += f" {phase}: the communicator could not be created (not a model bug)"
    if smi_ok:
        summary += "; nvidia-smi still answers, so the driver is loaded and the fault is in CUDA"
    steps = [_step_processes(facts, failing), _step_fabric(facts), _step_uvm(facts)]
    steps.append(_step_driver(facts))
    gpu = rank_gpus(facts).get(failing) if failing is not None else None
    target = f"CUDA_VISIBLE_DEVICES={gpu.gpu_index} " if gpu and gpu.gpu_index is not None else ""
    alone = "import torch; print(torch.ones(1, device='cuda') + 1)"
    steps.append(
        Step(f'Test the GPU alone: `{target}python -c "{alone}"`, then `nccl-doctor probe`', [])
    )
    fix = [step.text for step in steps]
    evidence: list[Cite | Fact] = [cite]
    for step in steps:
        evidence += step.cites
    return [
        RULE.finding(
            summary=summary,
            fix=fix,
            evidence=evidence,
            confidence=Confidence.MEDIUM,
            ranks=ranks,
            gpus=[str(gpu.gpu_index)] if gpu and gpu.gpu_index is not None else [],
            defers_to=[step.points_at for step in steps if step.points_at],
        )
    ]
