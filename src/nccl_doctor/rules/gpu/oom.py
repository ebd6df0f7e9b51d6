"""The job itself ran out of GPU memory.

What it means
-------------
A CUDA allocation of the job failed because the GPU had no room left, and
the memory was taken by the job itself: its tensors, the caching allocator's
reserve, a framework that preallocates most of the device (JAX/XLA, TF),
NCCL's own buffers, or the CUDA contexts of sibling ranks that all landed on
one GPU. PyTorch prints ``CUDA out of memory. Tried to allocate ...``
(``torch.OutOfMemoryError``); NCCL prints ``Cuda failure 'out of memory'``
(or ``cudaErrorMemoryAllocation``, code 2) and returns ``unhandled cuda
error`` or, in old releases, ``unhandled system error``; JAX/XLA print
``RESOURCE_EXHAUSTED: Out of memory``.

Why it matters
--------------
The rank that hit it dies or its communicator never initialises; the other
ranks then hang in their next collective or fail with connection errors. Code
that goes on after the failed allocation (NVSHMEM growing its symmetric heap
with ``cuMemCreate``, which prints ``non-zero status: 2 cuMemCreate failed``)
then faults on the memory it never got: an illegal memory access follows.
When other processes hold the memory, it is ``gpu.contention`` instead.

Evidence
--------
The OOM message and its figures: what was asked for, what was free, what
this process and PyTorch held. The rule stays silent when the message (or
nvidia-smi) names processes other than the job's with real memory on that
GPU: that is ``gpu.contention``. A person's words ("NCCL init hits an OOM")
alone give a low-confidence warning.

Fix
---
Lower the memory the job takes: a smaller batch or sequence length,
activation checkpointing, mixed precision, FSDP/ZeRO sharding. Leave room for
NCCL (hundreds of MiB per communicator): for JAX lower
``XLA_PYTHON_CLIENT_MEM_FRACTION`` (or ``XLA_PYTHON_CLIENT_PREALLOCATE=false``),
for TensorFlow enable memory growth. Call ``torch.cuda.set_device(local_rank)``
before any CUDA work so ranks do not all create contexts on GPU 0. When
reserved memory is far above allocated, set
``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True``.
"""

from __future__ import annotations

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.catalogue import signature_of
from nccl_doctor.facts.gpu import CONTEXT_MIB, GpuProcess
from nccl_doctor.facts.job import job_pids
from nccl_doctor.facts.nccl import NcclWarn
from nccl_doctor.facts.run import CudaError, CudaOutOfMemory
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.rules.base import Rule
from nccl_doctor.rules.gpu._common import prose_hits
from nccl_doctor.signs.gpu import (
    FRAMEWORK_OOM,
    HOST_OOM,
    JAX,
    NVSHMEM_HEAP_OOM,
    SAID_OOM,
    TENSORFLOW,
)

RULE = Rule(
    id="gpu.oom",
    title="The job ran out of GPU memory",
    severity=Severity.CRITICAL,
    explains=(
        "launch.rank_crash",
        "app.hang",
        "nccl.internal",
        "host.resources",
        # an allocation that failed leaves a pointer that code which does not check it then
        # follows: NVSHMEM's barrier faults on the heap chunk cuMemCreate did not give
        "cuda.illegal_access",
    ),
)


_OOM_ERRORS = ("out of memory", "cudaerrormemoryallocation")


#: The catalogue's row for the bootstrap's remote allocator failing (src/bootstrap.cc, NCCL 2.8
#: to 2.11): it allocates GPU memory of the size a peer sends, and a connection not meant for it
#: is read as that size, so the out of memory beside it is NCCL's, not the job's memory.
_REMOTE_ALLOCATOR = "nccl.warn.bootstrap.rem_allocator_allocation_failed_segment"


def _remote_allocator(facts: Facts) -> bool:
    return any(
        (sig := signature_of(w.message)) is not None and sig.id == _REMOTE_ALLOCATOR
        for w in facts.of(NcclWarn)
    )


def _gib(mib: float | None) -> str:
    return "?" if mib is None else f"{mib / 1024:.2f} GiB"


def _foreign(facts: Facts, oom: CudaOutOfMemory | None, pids: set[int]) -> list[str]:
    """Processes not the job's that hold real memory on the GPUs in question."""
    out = [
        f"PID {pid} ({_gib(mib)})"
        for pid, mib in (oom.other_processes if oom else ())
        if pid not in pids and mib >= CONTEXT_MIB
    ]
    listed = oom is not None and oom.process_mib is not None
    index = oom.gpu_index if oom else None
    for proc in facts.of(GpuProcess):
        if proc.pid in pids or (proc.type and "C" not in proc.type):
            continue
        if index is not None and proc.gpu_index not in (None, index):
            continue
        if proc.memory_used_mib is not None and proc.memory_used_mib < CONTEXT_MIB:
            continue
        if listed:
            continue  # torch listed the processes on that GPU when it failed: trust that list
        out.append(f"PID {proc.pid} in nvidia-smi")
    return out


def _detail(oom: CudaOutOfMemory) -> str:
    parts = []
    if oom.tried_mib is not None:
        parts.append(f"tried to allocate {_gib(oom.tried_mib)}")
    if oom.gpu_index is not None:
        parts.append(f"on GPU {oom.gpu_index}")
    if oom.free_mib is not None and oom.total_mib is not None:
        parts.append(f"with {_gib(oom.free_mib)} free of {_gib(oom.total_mib)}")
    if oom.process_mib is not None:
        parts.append(f"this process held {_gib(oom.process_mib)}")
    if oom.allocated_mib is not None and oom.reserved_mib is not None:
        parts.append(
            f"PyTorch had {_gib(oom.allocated_mib)} allocated, {_gib(oom.reserved_mib)} reserved"
        )
    return ", ".join(parts)


def _fix(facts: Facts, oom: CudaOutOfMemory | None, siblings: bool) -> list[str]:
    steps = []
    if siblings:
        steps.append(
            "Call torch.cuda.set_device(local_rank) before any CUDA work (and pass "
            "device_ids/map_location), so sibling ranks do not create contexts on one GPU"
        )
    if facts.saw(JAX):
        steps.append(
            "Leave room for NCCL: export XLA_PYTHON_CLIENT_MEM_FRACTION=0.8 (or "
            "XLA_PYTHON_CLIENT_PREALLOCATE=false) before starting, or upgrade jaxlib"
        )
    if facts.saw(NVSHMEM_HEAP_OOM):
        steps.append(
            "Size NVSHMEM's symmetric heap to the GPU: lower what the job allocates in it (for "
            "DeepEP the buffers' num_nvl_bytes/num_rdma_bytes), and set NVSHMEM_SYMMETRIC_SIZE "
            "to what it needs, below the GPU's free memory"
        )
    if facts.saw(TENSORFLOW):
        steps.append("Enable TensorFlow memory growth (tf.config.experimental.set_memory_growth)")
    steps.append(
        "Reduce the per-GPU memory: smaller batch or sequence length, activation "
        "checkpointing, bf16/fp16, FSDP/ZeRO sharding"
    )
    if (
        oom
        and oom.allocated_mib
        and oom.reserved_mib
        and oom.reserved_mib > 1.5 * oom.allocated_mib
    ):
        steps.append(
            "Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: reserved memory is far "
            "above allocated (fragmentation)"
        )
    steps.append("Rerun and watch nvidia-smi --query-gpu=memory.used --format=csv -l 1")
    return steps


def check(facts: Facts) -> list[Finding]:
    """Fire on the job's own CUDA out-of-memory; defer to gpu.contention on foreign holders."""
    pids = job_pids(facts)
    ooms = facts.of(CudaOutOfMemory)
    oom = ooms[0] if ooms else None
    if _foreign(facts, oom, pids):
        return []
    errors: list[Fact] = [
        e for e in facts.of(CudaError) if e.error and any(k in e.error for k in _OOM_ERRORS)
    ]
    # NCCL's own allocation refused (its WARN "Cuda failure 'out of memory'", before the
    # ncclUnhandledCudaError it returns), not where its remote allocator read the size
    if not _remote_allocator(facts):
        errors += [
            w
            for w in facts.of(NcclWarn)
            if w.cuda_error and any(k in w.cuda_error.lower() for k in _OOM_ERRORS)
        ]
    others = [h.cite for s in (FRAMEWORK_OOM, NVSHMEM_HEAP_OOM) for h in facts.seen(s, prose=False)]
    if oom is not None:
        siblings = bool(oom.other_processes)  # all of them are the job's, or we returned
        who = (
            f" (sibling ranks' PIDs {', '.join(str(p) for p, _ in oom.other_processes)})"
            if siblings
            else ""
        )
        summary = (
            f"CUDA out of memory on rank {oom.rank}: "
            if oom.rank is not None
            else ("CUDA out of memory: ")
        )
        summary += (_detail(oom) or oom.message[:160]) + who
        evidence: list[Cite | Fact] = [oom, *errors[:2]]
        return [
            RULE.finding(
                summary=summary,
                fix=_fix(facts, oom, siblings),
                evidence=evidence,
                ranks=[o.rank for o in ooms if o.rank is not None],
                gpus=[str(oom.gpu_index)] if oom.gpu_index is not None else [],
                hosts=[o.host for o in ooms if o.host],
            )
        ]
    if errors or others:
        first = errors[0] if errors else None
        text = first.cite.text.strip() if first else others[0].text.strip()
        ranks = [e.rank for e in errors if e.rank is not None]
        return [
            RULE.finding(
                summary=f"A CUDA allocation failed with out of memory: {text[:200]}",
                fix=_fix(facts, None, False),
                evidence=[*errors[:3], *others[:2]],
                ranks=ranks,
                hosts=[e.host for e in errors if e.host],
            )
        ]
    host = facts.lines_of(HOST_OOM)
    said = [h for h in prose_hits(facts, SAID_OOM) if h.said not in host]
    if said:
        return [
            RULE.finding(
                summary=(
                    "The report says the GPU ran out of memory (no OOM line in the evidence): "
                    f'"{said[0].cite.text.strip()[:160]}"'
                ),
                fix=[
                    (
                        "Rerun with NCCL_DEBUG=INFO and paste the full log with the "
                        "'Cuda failure' / 'out of memory' lines"
                    ),
                    *_fix(facts, None, False),
                ],
                evidence=[h.cite for h in said[:2]],
                severity=Severity.WARNING,
                confidence=Confidence.LOW,
            )
        ]
    return []
