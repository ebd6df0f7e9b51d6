"""Helpers shared by the gpu rules: naming GPUs, the job's own PIDs, whether the job failed."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence

from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.failures import failures_of
from nccl_doctor.facts.gpu import DcgmReport, Gpu, MigDevice, SmiError
from nccl_doctor.facts.host import KernelGpuMessage, XidEvent
from nccl_doctor.facts.signs import Sign
from nccl_doctor.facts.store import Facts, Hit
from nccl_doctor.findings import Finding
from nccl_doctor.knowledge.nv_status import NvStatus, status
from nccl_doctor.knowledge.xid import XidInfo, xid_info
from nccl_doctor.rules.base import Rule, first_distinct
from nccl_doctor.signs.gpu import GPU_ERROR, MULTI_GPU, NVLINK_BOARD, WEDGE


def gpu_name(gpu: Gpu) -> str:
    """``GPU 0 (00000000:3B:00.0)``, or whichever of the two is known."""
    if gpu.index is not None and gpu.bus_id:
        return f"GPU {gpu.index} ({gpu.bus_id})"
    if gpu.index is not None:
        return f"GPU {gpu.index}"
    return f"GPU {gpu.bus_id}" if gpu.bus_id else "a GPU"


def gpu_key(gpu: Gpu) -> str:
    """The subject string of a GPU: its bus id, else its index."""
    return gpu.bus_id or (str(gpu.index) if gpu.index is not None else "?")


def unique_gpus(facts: Facts) -> list[Gpu]:
    """One Gpu per physical GPU (bus id, else tool+index), the richest output first.

    ``-q``/XML carry far more fields than the table; when both describe a GPU,
    the fuller one is kept.
    """
    rank = {"nvidia-smi-xml": 0, "nvidia-smi-q": 1, "nvml": 2, "nvidia-smi": 3, "nvidia-smi-csv": 4}
    chosen: dict[str, Gpu] = {}
    for gpu in sorted(facts.of(Gpu), key=lambda g: rank.get(g.tool, 9)):
        key = gpu.bus_id or f"{gpu.host}:{gpu.cite.source}:{gpu.index}:{gpu.cite.line}"
        chosen.setdefault(key, gpu)
    return sorted(chosen.values(), key=lambda g: (g.cite.source, g.cite.line))


def job_failed(facts: Facts) -> bool:
    """Whether the evidence shows the job failed (a traceback, CUDA/NCCL error, bad exit...)."""
    return bool(failures_of(facts))


def distributed(facts: Facts) -> bool:
    """Whether the evidence is of a multi-process (NCCL/torchrun) job."""
    return (
        len(facts.ranks) > 1
        or facts.has("nccl-log")
        or facts.has("torchrun")
        or facts.has("nccl-tests")
    )


def xids_for(facts: Facts, rule_id: str) -> list[tuple[XidEvent, XidInfo]]:
    """The GPU Xid events whose catalogue row feeds ``rule_id``, in reading order."""
    return list(facts.derived("xids_by_rule", _xids_by_rule)[0].get(rule_id, ()))


def caused_by(facts: Facts, rule_id: str) -> list[tuple[XidEvent, XidInfo]]:
    """Xid 45-style events ``caused by previous Xid N`` whose N feeds ``rule_id``."""
    return list(facts.derived("xids_by_rule", _xids_by_rule)[1].get(rule_id, ()))


_ByRule = dict[str, list[tuple[XidEvent, XidInfo]]]


def _xids_by_rule(facts: Facts) -> tuple[_ByRule, _ByRule]:
    """Each Xid event under the rule its code feeds, and under the rule its cause feeds.

    Built once per diagnosis: eight rules ask, and a fleet's kernel log holds
    tens of thousands of events.
    """
    own: _ByRule = {}
    cause: _ByRule = {}
    for event in facts.of(XidEvent):
        for code, by in ((event.xid, own), (event.caused_by_xid, cause)):
            info = xid_info(code) if code is not None else None
            if info is not None and info.diagnosis_id:
                by.setdefault(info.diagnosis_id, []).append((event, info))
    return own, cause


def xid_summary(events: Iterable[tuple[XidEvent, XidInfo]]) -> str:
    """``Xid 48 (Double Bit ECC Error) x2 on 00000000:3B:00.0, pid 1234 python``."""
    groups: dict[tuple[int, str], list[XidEvent]] = {}
    names: dict[int, str] = {}
    for event, info in events:
        groups.setdefault(
            (info.code, event.bus_id or event.gpu_label or "an unnamed GPU"), []
        ).append(event)
        names[info.code] = info.name
    parts = []
    for (code, bus), group in groups.items():
        times = f" x{len(group)}" if len(group) > 1 else ""
        procs = sorted({f"pid {e.pid} {e.process_name or ''}".strip() for e in group if e.pid})
        who = f" ({', '.join(procs[:3])})" if procs else ""
        head = f"Xid {code} ({names[code]})"
        if all(e.caused_by_xid == code and e.xid != code for e in group):
            head = f"Xid {group[0].xid} caused by previous Xid {code} ({names[code]})"
        parts.append(f"{head}{times} on {bus}{who}")
    return "; ".join(parts)


def first_of_each(events: Iterable[tuple[XidEvent, XidInfo]], limit: int = 4) -> list[Fact]:
    """The first event of each (code, GPU), for citing a few lines, not dozens."""
    firsts = first_distinct(events, limit, key=lambda pair: (pair[1].code, pair[0].bus_id))
    return [event for event, _ in firsts]


def machine_hits(facts: Facts, sign: Sign) -> tuple[Hit, ...]:
    """Hits of ``sign`` in machine output only."""
    return facts.seen(sign, prose=False)


def prose_hits(facts: Facts, sign: Sign) -> tuple[Hit, ...]:
    """Hits of ``sign`` in people's sentences only, where the sentence does not tell it as
    not happening ("the Xid 79 errors are gone since we reseated the card")."""
    return tuple(h for h in facts.told(sign) if h.prose)


def mig_devices(facts: Facts) -> tuple[MigDevice, ...]:
    """Every MIG device listed."""
    return facts.of(MigDevice)


def smi_errors(facts: Facts, *kinds: str) -> tuple[SmiError, ...]:
    """nvidia-smi failures of the given ``error`` kinds."""
    return tuple(e for e in facts.of(SmiError) if e.error in kinds)


def wedge_hits(facts: Facts) -> tuple[Hit, ...]:
    """Lines saying GPU processes could not be killed / only a reboot helped, after a GPU error."""
    hits = facts.seen(WEDGE)
    if not hits or not facts.saw(GPU_ERROR):
        return ()
    return hits


def nvlink_board(facts: Facts) -> tuple[Hit, ...]:
    """Lines naming a multi-GPU NVLink/NVSwitch board (SXM parts, HGX/DGX, known servers)."""
    hits = facts.seen(NVLINK_BOARD)
    multi = len({g.bus_id or g.index for g in facts.of(Gpu)}) > 1 or facts.saw(MULTI_GPU)
    return hits if hits and multi else ()


def nvlink_wedge(facts: Facts) -> bool:
    """Whether a wedged-GPU report comes from a multi-GPU NVLink machine."""
    return bool(wedge_hits(facts)) and bool(nvlink_board(facts))


def status_of(m: KernelGpuMessage) -> NvStatus | None:
    """The driver status a kernel line names, where :mod:`~nccl_doctor.knowledge.nv_status`
    keeps it."""
    return status(name=m.status) if m.status else None


def driver_status(facts: Facts, rule_id: str) -> list[tuple[NvStatus, KernelGpuMessage]]:
    """The driver's kernel lines that name a status pointing to ``rule_id``, with it."""
    return [
        (kept, m)
        for m in facts.of(KernelGpuMessage)
        if (kept := status_of(m)) is not None and kept.id == rule_id
    ]


def status_finding(rule: Rule, lead: str, fix: Sequence[str]) -> Callable[[Facts], list[Finding]]:
    """A check that reports the driver's kernel lines naming a status of ``rule``'s id: the
    status's text, name and number, the GPU and the line, after ``lead``."""

    def check(facts: Facts) -> list[Finding]:
        found = driver_status(facts, rule.id)
        if not found:
            return []
        kept, lines = found[0][0], [m for _, m in found]
        gpus = ", ".join(dict.fromkeys(m.bus_id or m.gpu_label or "" for m in lines)).strip(", ")
        on = f" on {gpus}" if gpus else ""
        return [
            rule.finding(
                summary=f"{lead}: the driver reports '{kept.text}' ({kept.name}, "
                f"0x{kept.code:02X}){on}: '{lines[0].message.strip()[:140]}'",
                fix=fix,
                evidence=lines[:3],
                gpus=[m.bus_id for m in lines if m.bus_id],
                hosts=[m.host for m in lines if m.host],
            )
        ]

    return check


def dcgm_findings(
    facts: Facts, rule: Rule, fix: Sequence[str], told: Collection[str] = ()
) -> list[Finding]:
    """A finding of ``rule`` for the checks DCGM failed whose message points first at it, but
    for the GPUs in ``told`` (labels such as ``GPU1``), which another of its findings names."""
    failed = [
        r
        for r in facts.of(DcgmReport)
        if r.failed and r.points_at[:1] == (rule.id,) and r.entity not in told
    ]
    if not failed:
        return []
    first = failed[0]
    where = f" on {first.entity}" if first.entity else ""
    what = f"{first.test!r} " if first.test else ""
    more = f" ({len(failed)} such reports)" if len(failed) > 1 else ""
    return [
        rule.finding(
            summary=f"DCGM's {what}check failed{where}: {first.message[:240]}{more}",
            fix=list(fix),
            evidence=first_distinct([r.cite for r in failed], 3),
            gpus=list(dict.fromkeys(r.entity for r in failed if r.entity)),
        )
    ]
