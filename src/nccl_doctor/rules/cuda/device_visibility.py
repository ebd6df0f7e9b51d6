"""A rank asked for a GPU it cannot see, or sees no GPU at all.

What it means
-------------
Each process sees the GPUs ``CUDA_VISIBLE_DEVICES`` leaves it, renumbered
from 0. A rank that selects ``cuda:<local_rank>`` (``torch.cuda.set_device``)
beyond that list gets ``invalid device ordinal`` (CUDA error 101); a process
whose list is empty, or that runs where no GPU was allocated, gets ``no CUDA
GPUs are available`` / ``no CUDA-capable device is detected`` (error 100),
and ``ProcessGroupNCCL is only supported with GPUs, no GPUs found!``.
Typical causes: more processes per node than GPUs, a scheduler that gives
every task only its own GPU (Slurm ``--gpus-per-task=1``, so every task's
GPU is ``cuda:0``), ``CUDA_VISIBLE_DEVICES`` set empty or to wrong indices,
a GPU job scheduled without a GPU request.

Why it matters
--------------
The affected ranks die at start-up; the others wait at rendezvous or in
their first collective and time out, which looks like a network problem.

Evidence
--------
``invalid device ordinal`` / ``CUDA_ERROR_INVALID_DEVICE``, ``no CUDA GPUs
are available``, ``no CUDA-capable device is detected``, ``ProcessGroupNCCL
is only supported with GPUs``, the ``CUDA_VISIBLE_DEVICES`` value and the
launcher's settings (``--nproc-per-node``, ``--gpus-per-task``).

Fix
---
Make the processes per node equal to the GPUs each node gives the job and
pick the device from what is visible (``local_rank % torch.cuda.device_count()``,
or ``cuda:0`` when the scheduler binds one GPU per task); unset or correct
``CUDA_VISIBLE_DEVICES``, and export it (``CUDA_VISIBLE_DEVICES=1,2,3 ;`` alone sets a
variable of the shell, which the job never sees); request GPUs from the scheduler or
container runtime.
"""

from __future__ import annotations

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.host import EnvVar, ShellVariable
from nccl_doctor.facts.run import CudaError, PythonTraceback
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.rules.base import Rule
from nccl_doctor.rules.cuda._common import (
    dedupe,
    hits,
    hosts_of,
    matching_errors,
    no_gpu_errors,
    ranks_of,
    who,
)
from nccl_doctor.signs.cuda import GPU_PER_TASK, INVALID_ORDINAL, NO_GPU, VISIBLE_DEVICES

RULE = Rule(
    id="cuda.device_visibility",
    title="A rank cannot see the GPU it asked for",
    severity=Severity.CRITICAL,
    explains=("launch.rank_crash", "launch.rendezvous", "app.hang", "net.unreachable"),
)


def _visible(facts: Facts) -> tuple[str, Cite] | None:
    for var in facts.of(EnvVar):
        if var.name == "CUDA_VISIBLE_DEVICES" and var.value is not None:
            return var.value, var.cite
    for hit in facts.seen(VISIBLE_DEVICES, prose=False):
        return hit.match["devices"], hit.cite
    return None


def _call_site(facts: Facts) -> str | None:
    """``job.py:22`` of the user's frame that called set_device / .to / .cuda."""
    tracebacks = [tb for tb in facts.of(PythonTraceback) if tb.message]
    shown = {
        (h.cite.source, h.cite.line)
        for sign in (INVALID_ORDINAL, NO_GPU)
        for h in facts.seen_on(sign, tracebacks)
    }
    for tb in tracebacks:
        if (tb.cite.source, tb.cite.line) not in shown:
            continue
        user = [f for f in tb.frames if "site-packages" not in f[0] and "/torch/" not in f[0]]
        if user:
            name, line, _ = user[-1]
            return f"{name.rsplit('/', 1)[-1]}:{line}"
    return None


def _unexported(facts: Facts) -> list[Finding]:
    """CUDA_VISIBLE_DEVICES set as the shell's own variable, and nowhere in the environment."""
    shell = [v for v in facts.of(ShellVariable) if v.name == "CUDA_VISIBLE_DEVICES"]
    if not shell or any(v.name == "CUDA_VISIBLE_DEVICES" for v in facts.of(EnvVar)):
        return []
    value = shell[0].value or ""
    return [
        RULE.finding(
            summary=(
                f"CUDA_VISIBLE_DEVICES={value} is set as a shell variable, not exported: the "
                "programs the shell starts do not see it (unless it was exported before), so "
                "the job's processes see every GPU and number them from 0"
            ),
            fix=[
                (
                    f"export CUDA_VISIBLE_DEVICES={value} before starting the job, or put it in "
                    f"front of the command: CUDA_VISIBLE_DEVICES={value} python train.py"
                ),
                (
                    "Print os.environ.get('CUDA_VISIBLE_DEVICES') and torch.cuda.device_count() "
                    "in the job to see what it got"
                ),
            ],
            evidence=[shell[0].cite],
            severity=Severity.WARNING,
            confidence=Confidence.MEDIUM,
        )
    ]


def check(facts: Facts) -> list[Finding]:
    """Ordinal and no-GPU errors, with the ranks, the visible devices and the launch settings."""
    named_ordinal = set(matching_errors(facts, INVALID_ORDINAL))
    ordinal = [e for e in facts.of(CudaError) if e.code == 101 or e in named_ordinal]
    none = no_gpu_errors(facts)
    ord_lines, ord_machine = hits(facts, INVALID_ORDINAL)
    none_lines, none_machine = hits(facts, NO_GPU)
    is_ordinal = bool(ordinal or ord_lines)
    if not (is_ordinal or none or none_lines):
        return _unexported(facts)
    direct: list[Fact] = [*ordinal, *none]
    lines = ord_lines if is_ordinal else none_lines
    machine = bool(direct) or (ord_machine if is_ordinal else none_machine)
    sign = INVALID_ORDINAL if is_ordinal else NO_GPU
    ranks = ranks_of(facts, sign, direct, [h for h in lines if not h.prose])
    hosts = hosts_of(direct, lines)
    visible = _visible(facts)
    per_task = facts.seen(GPU_PER_TASK)
    site = _call_site(facts)
    evidence: list[Fact | Cite] = [*direct[:2], *(h.cite for h in lines[:2])]
    if is_ordinal:
        summary = f"{who(ranks, hosts).capitalize()} asked for a GPU index beyond those it can see "
        summary += "('invalid device ordinal')"
        if site:
            summary += f" at {site}"
    else:
        summary = f"{who(ranks, hosts).capitalize()} found no visible GPU"
    fix: list[str] = []
    if visible is not None:
        shown = visible[0] or "empty"
        summary += f"; CUDA_VISIBLE_DEVICES is {shown}"
        evidence.append(visible[1])
        if not visible[0]:
            fix.append("Unset CUDA_VISIBLE_DEVICES or set it to the node's GPUs (e.g. 0,1,2,3)")
    if per_task:
        summary += (
            f"; the job uses `{per_task[0].match.group(0)}`, so each task sees only its own GPU "
            "(as cuda:0) and set_device(local_rank) fails for every local rank but 0"
        )
        evidence.append(per_task[0].cite)
        fix.append(
            "Request GPUs per node (`--gpus-per-node=N` / `--gres=gpu:N`) instead of per task, "
            "or select `cuda:0` when each task is bound to one GPU"
        )
    if is_ordinal:
        fix.append(
            "Start no more processes per node than it has GPUs (`--nproc-per-node` <= "
            "`nvidia-smi -L | wc -l`), and pick the device as "
            "`local_rank % torch.cuda.device_count()`"
        )
    else:
        fix.append(
            "Make sure the job was given GPUs: a GPU request in the scheduler (`--gpus`, "
            "`--gres=gpu:N`), `--gpus all` for a container, and `nvidia-smi` working there"
        )
    fix.append(
        "Print `os.environ.get('CUDA_VISIBLE_DEVICES')` and `torch.cuda.device_count()` in each "
        "rank before init_process_group"
    )
    return [
        RULE.finding(
            summary=summary,
            fix=fix,
            evidence=dedupe(evidence, 5),
            ranks=ranks,
            hosts=hosts,
            severity=Severity.CRITICAL if machine else Severity.WARNING,
            confidence=Confidence.HIGH if machine else Confidence.LOW,
        )
    ]
