"""Coverage: what evidence was read, what was missing, what to collect next."""

from __future__ import annotations

from collections.abc import Sequence

from nccl_doctor.evidence.reader import ReadResult
from nccl_doctor.facts.host import KernelGpuMessage, XidEvent
from nccl_doctor.facts.live import NVML_OUTCOMES, NvmlOutcome
from nccl_doctor.facts.nccl import NcclLogFact
from nccl_doctor.facts.run import PgInitOptions
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Finding
from nccl_doctor.report import Coverage, EvidenceRead
from nccl_doctor.triage_failures import Failure

_GPU_KINDS = frozenset({"nvidia-smi", "nvidia-smi-q", "nvidia-smi-xml"})
_NET_IDS = ("net.", "nccl.p2p", "nccl.host_identity")


def _evidence(read: ReadResult) -> tuple[EvidenceRead, ...]:
    merged: dict[tuple[str, str], set[int]] = {}
    for section in read.sections:
        if section.kind == "text":
            continue
        merged.setdefault((section.kind, section.source), set()).update(section.ranks)
    return tuple(
        EvidenceRead(kind=kind, source=source, ranks=tuple(sorted(ranks)))
        for (kind, source), ranks in merged.items()
    )


def _uses_gpu(facts: Facts) -> bool:
    """Whether the job ran on GPUs: NCCL, CUDA or NVIDIA tools appear, not gloo alone."""
    if facts.kinds & (_GPU_KINDS | {"nccl-log", "xid", "topo", "nvlink", "nccl-tests"}):
        return True
    return facts.said(r"\bnccl|\bcuda\b|nvidia|\bGPU\b", prose=False)


def _world_size(facts: Facts) -> int | None:
    sizes = [f.size for f in facts.of(PgInitOptions) if f.size]
    return max(sizes) if sizes else None


def unchecked_of(facts: Facts) -> list[tuple[str, str]]:
    """What a live capture could not check, and the step that would let it: (what, step).

    Today the GPUs: NVML did not answer with GPU state (no driver, bindings
    missing, hung...). A GPU NVML lost mid-read is a finding (``gpu.lost``), not
    this.
    """
    out: dict[str, tuple[str, str]] = {}
    for nvml in facts.of(NvmlOutcome):
        if nvml.outcome in ("ok", "gpu_lost"):
            continue
        why, step = NVML_OUTCOMES.get(nvml.outcome, (nvml.outcome, ""))
        detail = (
            f" ({nvml.message})" if nvml.message and nvml.outcome != "library_not_found" else ""
        )
        what = f"GPU state (NVML): {why}{detail}; GPU checks were skipped"
        out.setdefault(what, (what, step or "Run `nvidia-smi` and check again"))
    return list(out.values())


def coverage_of(
    facts: Facts, read: ReadResult, findings: Sequence[Finding], failure: Failure | None
) -> Coverage:
    """Missing evidence, in the order it would help, with the command to collect each."""
    missing: list[str] = []
    steps: list[str] = []
    failed = failure is not None or any(f.severity.value == "critical" for f in findings)
    gpu = _uses_gpu(facts)
    unchecked = unchecked_of(facts)
    steps.extend(step for _, step in unchecked)
    if gpu and not unchecked and not facts.kinds & _GPU_KINDS:
        missing.append("GPU state and process list (nvidia-smi)")
        steps.append(
            "Run `nccl-doctor check` on the failing node (or `nvidia-smi` and "
            "`nvidia-smi -q -x > nvidia-smi.xml`) and attach the output"
        )
    if failed and gpu and not facts.of(NcclLogFact):
        missing.append("NCCL's own log (NCCL_DEBUG output)")
        steps.append(
            "Rerun with `NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV` "
            "(and `NCCL_DEBUG_FILE=nccl.%h.%p.log`) and attach every rank's output"
        )
    if failed and gpu and not facts.of(XidEvent) and not facts.of(KernelGpuMessage):
        missing.append("kernel log (NVRM/Xid lines) from the host")
        steps.append("Collect `sudo dmesg -T | grep -iE 'NVRM|Xid'` on each node")
    world = _world_size(facts)
    seen = set(facts.ranks)
    if world and len(seen) < world:
        absent = sorted(set(range(world)) - seen)
        shown = ", ".join(str(r) for r in absent[:8]) + (" ..." if len(absent) > 8 else "")
        label = "rank" if len(absent) == 1 else "ranks"
        missing.append(f"output of {label} {shown} (world size {world})")
        steps.append("Keep every rank's output: `torchrun --log-dir DIR --tee 3 ...`")
    if failed and "collect_env" not in facts.kinds:
        missing.append("software versions (torch, CUDA, NCCL, driver)")
        steps.append("Run `python -m torch.utils.collect_env` and attach the output")
    if any(f.id.startswith(_NET_IDS) for f in findings) and not facts.kinds & {
        "ibstatus",
        "ibstat",
        "ibv_devinfo",
    }:
        missing.append("network device state (ibstatus / ibv_devinfo)")
        steps.append("Run `ibstatus` and `ibv_devinfo -v` on each node")
    notes = tuple(f"{n.source}: {n.message}" for n in read.notes)
    return Coverage(
        _evidence(read),
        tuple(missing),
        tuple(steps),
        notes,
        unchecked=tuple(what for what, _ in unchecked),
    )
