"""Coverage: what evidence was read, what was missing, what to collect next.

What to ask for depends on the diagnosis. A fault in the system (NCCL, the
network, CUDA, the driver, an unexplained GPU error) needs NCCL's log, the
kernel log and the versions; an application's own exception (an
``IndexError``, a device-side assert, mismatched collectives) needs none of
them; a GPU out-of-memory needs the memory and process list, not NCCL's log;
a job its user stopped needs nothing chased. How to keep each rank's output
depends on the launcher that started the ranks.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from nccl_doctor.evidence.reader import ReadResult
from nccl_doctor.facts.failures import Failure, failures_of
from nccl_doctor.facts.gpu import GPU_KINDS
from nccl_doctor.facts.host import KernelGpuMessage, XidEvent
from nccl_doctor.facts.job import launcher_of
from nccl_doctor.facts.live import NVML_OUTCOMES, NvmlOutcome
from nccl_doctor.facts.nccl import NcclLogFact
from nccl_doctor.facts.run import (
    ChildFailure,
    CppException,
    CudaOutOfMemory,
    PgInitOptions,
    PythonTraceback,
)
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Finding
from nccl_doctor.knowledge.signals import STOP_SIGNALS, signal_name
from nccl_doctor.report import Coverage, EvidenceRead
from nccl_doctor.signs.common import IMAGE_LINKED

_NET_IDS = ("net.", "nccl.p2p", "nccl.host_identity")

#: Root causes that are the application's own bug: no NCCL log or kernel log explains them.
_APP_IDS = frozenset(
    {
        "app.param_mismatch",
        "app.unused_params",
        "app.collective_mismatch",
        "cuda.device_assert",
        "launch.duplicate_launch",
        "launch.port_in_use",
    }
)
#: Root causes that only restate the first failure (its layer then decides).
_RESTATE_IDS = frozenset({"launch.rank_crash", "app.hang", "gpu.oom", "gpu.contention"})

#: An exception that comes from the system under the application, not from its own code.
_SYSTEM_TEXT = re.compile(
    r"cuda|nccl|gloo|cudnn|cublas|nvml|driver|\bdevice\b|xid|ecc|socket|connect|network|"
    r"timed? ?out|store|rendezvous|c10d|errno|NET/|\bDist\w*Error|ProcessGroup|illegal memory",
    re.IGNORECASE,
)
_OOM_TEXT = re.compile(r"CUDA out of memory|OutOfMemoryError|CUDA_ERROR_OUT_OF_MEMORY")

#: How to keep every rank's output, by launcher.
_KEEP_OUTPUT = {
    "torchrun": (
        "Keep every rank's output: `torchrun --log-dir DIR --redirects 3 ...` (or `--tee 3`) "
        "writes each rank's stdout/stderr under DIR"
    ),
    "mp.spawn": (
        "mp.spawn shows only the first failing process's error: have each process write its "
        "own log (redirect sys.stdout/sys.stderr to f'rank{rank}.log' at the top of the "
        "spawned function) and attach every file"
    ),
    "srun": "Keep every task's output: `srun --output=%x-%j-%t.out ...` writes one file per task",
    "deepspeed": (
        "Keep every rank's output: `deepspeed --enable_each_rank_log DIR ...` writes one log "
        "per rank"
    ),
}
_KEEP_ANY = "Attach every rank's stdout and stderr (one file per rank)"


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
    if facts.kinds & (GPU_KINDS | {"nccl-log", "xid", "topo", "nvlink", "nccl-tests"}):
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


def _layer(failure: Failure | None) -> str:
    """Where the first failure comes from: ``app``, ``memory`` or ``system``."""
    if failure is None:
        return "system"
    fact = failure.fact
    if isinstance(fact, CudaOutOfMemory) or _OOM_TEXT.search(failure.message):
        return "memory"
    if isinstance(fact, PythonTraceback | CppException) and failure.tier == 0:
        text = f"{fact.exc_type or ''}: {failure.message}"
        return "system" if _SYSTEM_TEXT.search(text) else "app"
    return "system"


def focus(findings: Sequence[Finding], failure: Failure | None) -> str:
    """What the diagnosis points at: ``app``, ``memory`` or ``system`` (ask for everything)."""
    roots = {f.id for f in findings if f.root_cause}
    if roots and roots <= _APP_IDS:
        return "app"
    layer = _layer(failure)
    if roots <= _RESTATE_IDS | _APP_IDS and layer in ("app", "memory"):
        return layer
    if "gpu.oom" in roots and roots <= _RESTATE_IDS:
        return "memory"
    return "system"


def _errorless(facts: Facts) -> list[int]:
    """Ranks the launcher says failed on their own, with no error of theirs in the evidence."""
    told = {f.rank for f in failures_of(facts) if not f.launcher and f.rank is not None}
    out = []
    for child in facts.of(ChildFailure):
        if child.rank is None or child.rank in told or child.rank in out:
            continue
        if child.error_file or child.traceback_lines:
            continue
        if signal_name(child.exitcode, child.signal_name) in STOP_SIGNALS:
            continue  # the launcher stopped it after another rank failed
        out.append(child.rank)
    return sorted(out)


def _ranks_text(ranks: Sequence[int]) -> str:
    shown = ", ".join(str(r) for r in ranks[:8]) + (" ..." if len(ranks) > 8 else "")
    return f"{'rank' if len(ranks) == 1 else 'ranks'} {shown}"


def _rank_output(facts: Facts, missing: list[str], steps: list[str]) -> None:
    """Ranks whose output or error is missing, with the launcher's way to keep it."""
    launcher = launcher_of(facts)
    keep = _KEEP_OUTPUT.get(launcher or "", _KEEP_ANY)
    asked = False
    world = _world_size(facts)
    seen = set(facts.ranks)
    if world and len(seen) < world:
        absent = sorted(set(range(world)) - seen)
        missing.append(f"output of {_ranks_text(absent)} (world size {world})")
        steps.append(keep)
        asked = True
    errorless = _errorless(facts)
    if errorless:
        missing.append(
            f"the error of {_ranks_text(errorless)}: torchrun's summary has `error_file: <N/A>` "
            "and no traceback of it was given"
        )
        if not asked:
            steps.append(keep)
        if launcher == "torchrun":
            steps.append(
                "Decorate the script's entry point with "
                "`@torch.distributed.elastic.multiprocessing.errors.record`: torchrun then writes "
                "each failing rank's traceback to its error file and prints it in the summary"
            )


def pictures_linked(facts: Facts) -> list[str]:
    """Where the evidence links a picture (a screenshot): ``source:line`` of each line."""
    return [f"{h.cite.source}:{h.cite.line}" for h in facts.seen(IMAGE_LINKED)]


def _pictures(facts: Facts, missing: list[str], steps: list[str]) -> None:
    """The text of linked screenshots is evidence nothing read: ask for it as text."""
    where = pictures_linked(facts)
    if not where:
        return
    shown = ", ".join(where[:3]) + (f" and {len(where) - 3} more" if len(where) > 3 else "")
    missing.append(f"the text of the picture(s) linked at {shown} (only text is read)")
    steps.append(
        "Paste the error lines the screenshot shows, or the log it was taken from, as text"
    )


def coverage_of(
    facts: Facts,
    read: ReadResult,
    findings: Sequence[Finding],
    failure: Failure | None,
    stopped: bool = False,
) -> Coverage:
    """Missing evidence, in the order it would help, with the command to collect each."""
    missing: list[str] = []
    steps: list[str] = []
    failed = failure is not None or any(f.severity.value == "critical" for f in findings)
    gpu = _uses_gpu(facts)
    unchecked = unchecked_of(facts)
    steps.extend(step for _, step in unchecked)
    kind = focus(findings, failure) if failed else "system"
    if gpu and not unchecked and not facts.kinds & GPU_KINDS and kind != "app":
        if kind == "memory":
            missing.append("GPU memory and process list while the job runs (nvidia-smi)")
            steps.append(
                "While the job starts, run `nvidia-smi --query-gpu=index,memory.used,memory.total "
                "--format=csv -l 5` and `nvidia-smi` (its process list shows who else holds "
                "memory); print `torch.cuda.memory_summary()` where it fails"
            )
        else:
            missing.append("GPU state and process list (nvidia-smi)")
            steps.append(
                "Run `nccl-doctor check` on the failing node (or `nvidia-smi` and "
                "`nvidia-smi -q -x > nvidia-smi.xml`) and attach the output"
            )
    system = failed and kind == "system"
    if system and gpu and not facts.of(NcclLogFact):
        missing.append("NCCL's own log (NCCL_DEBUG output)")
        steps.append(
            "Rerun with `NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV` "
            "(and `NCCL_DEBUG_FILE=nccl.%h.%p.log`) and attach every rank's output"
        )
    if system and gpu and not facts.of(XidEvent) and not facts.of(KernelGpuMessage):
        missing.append("kernel log (NVRM/Xid lines) from the host")
        steps.append("Collect `sudo dmesg -T | grep -iE 'NVRM|Xid'` on each node")
    if failed:
        _rank_output(facts, missing, steps)
    if system and "collect_env" not in facts.kinds:
        missing.append("software versions (torch, CUDA, NCCL, driver)")
        steps.append("Run `python -m torch.utils.collect_env` and attach the output")
    if any(f.id.startswith(_NET_IDS) for f in findings) and not facts.kinds & {
        "ibstatus",
        "ibstat",
        "ibv_devinfo",
    }:
        missing.append("network device state (ibstatus / ibv_devinfo)")
        steps.append("Run `ibstatus` and `ibv_devinfo -v` on each node")
    _pictures(facts, missing, steps)
    if stopped and not failed:
        steps.append(
            "If you stopped it because it hung: rerun it as `nccl-doctor run -- CMD` (the flight "
            "recorder dumps on a timeout) and, while it hangs, `py-spy dump --pid PID` each rank"
        )
    notes = tuple(f"{n.source}: {n.message}" for n in read.notes)
    return Coverage(
        _evidence(read),
        tuple(missing),
        tuple(steps),
        notes,
        unchecked=tuple(what for what, _ in unchecked),
    )
