"""Two ranks of one NCCL communicator were placed on the same GPU.

What it means
-------------
NCCL found two ranks of one communicator on the same GPU (the same bus id on
what it believes is the same host) and refused to build the communicator:
``Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 40``. The
device number NCCL prints is the GPU's PCI bus id in NCCL's hex form (``40``
is ``0000:00:04.0``), not a CUDA ordinal.

Why it matters
--------------
NCCL does not support several ranks per GPU; the job stops at its first
collective (``ncclInvalidUsage``). Rebooting does not help: the process-to-GPU
mapping is wrong, usually because the script never calls
``torch.cuda.set_device(local_rank)`` (every rank uses GPU 0), because
``CUDA_VISIBLE_DEVICES`` gives each rank one GPU and the script then indexes
by rank, or because the launcher started more ranks per node than GPUs.

Evidence
--------
NCCL's ``Duplicate GPU detected`` WARN (to 2.29; from 2.30 ``Multiple
ranks detected using the same GPU on this node``, then ``Multiple Ranks are
using the same GPU/Partition``, with the INFO line ``Detected ranks A and B
sharing GPU with bus X`` in 2.30.3-2.30.4), or the same text in PyTorch's
``Last error:`` lines or a DistBackendError.

Fix
---
Give every rank its own GPU before the process group is created
(``torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))`` or
``init_process_group(device_id=...)``), start at most as many ranks per node as
there are GPUs, and check what ``CUDA_VISIBLE_DEVICES`` each rank sees. When the
two ranks are on different machines, those machines share a host identity (see
nccl.host_identity). NCCL 2.30 can run several ranks on one GPU when asked
(``NCCL_MULTI_RANK_GPU_ENABLE=1``), but that is a test set-up, not a fix.
"""

from __future__ import annotations

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.nccl import NcclCommInit, NcclWarn, nccl_bus_id
from nccl_doctor.facts.run import DistributedError
from nccl_doctor.facts.store import Facts, Hit
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.rules.base import Rule
from nccl_doctor.signs.nccl import DUPLICATE_GPU, TWO_MACHINES

RULE = Rule(
    id="nccl.duplicate_gpu",
    title="Two ranks on the same GPU",
    severity=Severity.CRITICAL,
    explains=("launch.rank_crash", "cuda.device_visibility", "app.hang"),
)


def _shared_gpus(facts: Facts) -> dict[str, set[int]]:
    """Bus ids (NCCL's hex form) that two ranks of one communicator on one host started on."""
    by_gpu: dict[tuple[str | None, str, str], set[int]] = {}
    for init in facts.of(NcclCommInit):
        if init.comm_id and init.bus_id_raw and init.comm_rank is not None:
            key = (init.host, init.comm_id, init.bus_id_raw.lower())
            by_gpu.setdefault(key, set()).add(init.comm_rank)
    return {bus: ranks for (_, _, bus), ranks in by_gpu.items() if len(ranks) > 1}


def check(facts: Facts) -> list[Finding]:
    """Fire on NCCL's duplicate-GPU refusal."""
    evidence: list[Cite | Fact] = []
    ranks: set[int] = set()
    devices: list[str] = []
    lines: set[int] = set()
    shown: list[tuple[Cite | Fact, int | None, Hit]] = []
    errors = [e for e in facts.of(DistributedError) if e.category == "duplicate_gpu"]
    warns = facts.showing(DUPLICATE_GPU, facts.of(NcclWarn))
    ranks.update(r for w in warns for r in w.ranks)
    for fact in [*errors, *warns]:
        shown.extend((fact, fact.rank, h) for h in facts.seen_on(DUPLICATE_GPU, (fact,))[:1])
    shown += [(h.cite, h.rank, h) for h in facts.seen(DUPLICATE_GPU)]
    for item, rank, hit in shown:
        cite = item if isinstance(item, Cite) else item.cite
        if cite.line not in lines and len(evidence) < 3:
            lines.add(cite.line)
            evidence.append(item)
        if rank is not None:
            ranks.add(rank)
        pair = (hit.match["rank_a"], hit.match["rank_b"], hit.match["device"])
        if pair[0] is None:
            pair = (hit.match["pair_a"], hit.match["pair_b"], hit.match["bus"])
        if pair[0] is not None and pair[1] is not None and pair[2] is not None:
            ranks.update((int(pair[0]), int(pair[1])))
            if pair[2].lower() not in devices:
                devices.append(pair[2].lower())
    if not evidence or all(hit.match["pair_a"] for _, _, hit in shown):
        return []  # 2.30's pair INFO alone: NCCL_MULTI_RANK_GPU_ENABLE=1 allowed the pair
    if not devices:  # 2.30's refusal names no pair: the communicator's own init lines do
        for bus, sharing in _shared_gpus(facts).items():
            ranks.update(sharing)
            devices.append(bus)
    gpu_text = ", ".join(f"{d} (PCI {nccl_bus_id(d) or '?'})" for d in devices)
    where = f"GPU bus id {gpu_text}" if devices else "one GPU"
    if len(ranks) > 1:
        who = "ranks " + " and ".join(str(r) for r in sorted(ranks))
    else:
        who = "two ranks" + "".join(f" (rank {r} among them)" for r in ranks)
    several_hosts = facts.saw(TWO_MACHINES)
    fix = [
        (
            "Call torch.cuda.set_device(int(os.environ['LOCAL_RANK'])) (or pass "
            "init_process_group(device_id=...)) in every rank before the first collective"
        ),
        (
            "Check the device each rank picks: print LOCAL_RANK, CUDA_VISIBLE_DEVICES and "
            "torch.cuda.current_device() per rank; do not index GPUs by the global rank"
        ),
        "Start no more ranks per node than GPUs (torchrun --nproc-per-node, mpirun -np/-npernode)",
    ]
    if several_hosts:
        fix.append(
            "If the two ranks run on different machines, give the machines distinct "
            "hostnames/boot ids or set NCCL_HOSTID per machine (nccl.host_identity)"
        )
    return [
        RULE.finding(
            summary=f"NCCL refused the communicator: {who} are both on {where}; each rank "
            "needs its own GPU",
            fix=fix,
            evidence=evidence,
            ranks=ranks,
            gpus=[nccl_bus_id(d) or d for d in devices],
            confidence=Confidence.HIGH,
        )
    ]
