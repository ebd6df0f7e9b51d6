"""Error counters that moved during a job: a run folder's before/after snapshots compared.

``nccl-doctor run`` captures the node into ``node-before/`` and
``node-after/``; each capture holds RDMA port counters (host.json
``ib_counters``), GPU ECC, retired-page, remapped-row and PCIe replay counts
(its nvidia-smi XML), NVLink error counters (``nvlink.txt``) and the
kernel log's NVIDIA lines. The difference is what the job's nodes suffered
while it ran: symbol errors on a port, a link that went down, a corrected
ECC burst, a new Xid. Only counters that moved are kept (``compared`` says
which hosts were compared, so an empty list still means "nothing moved").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.gpu import Gpu
from nccl_doctor.facts.host import XidEvent
from nccl_doctor.facts.live import CaptureHost
from nccl_doctor.facts.net import IbPortCounters
from nccl_doctor.facts.store import Facts
from nccl_doctor.facts.topology import NvLinkErrorCount
from nccl_doctor.report import CounterDelta, GpuIdentity

BEFORE, AFTER = "node-before", "node-after"
#: The counters of a GPU row compared between snapshots.
GPU_COUNTERS = (
    "ecc_volatile_corrected",
    "ecc_volatile_uncorrected",
    "ecc_aggregate_corrected",
    "ecc_aggregate_uncorrected",
    "retired_pages_single_bit",
    "retired_pages_double_bit",
    "remapped_rows_correctable",
    "remapped_rows_uncorrectable",
    "pcie_replays",
)
MAX_DELTAS = 4096
#: (device, counter, gpu key) -> value
Reading = dict[tuple[str, str, str | None], int]


def folder_of(source: str) -> str:
    """The folder part of a source name (``run/node-after/host.json`` -> ``run/node-after``)."""
    return source.rsplit("/", 1)[0] if "/" in source else ""


def _gpu_key(uuid: str | None, bus_id: str | None, by_bus: Mapping[str, str]) -> str | None:
    """A GPU's key in counter names: its UUID, else the UUID its bus id maps to, else the bus id."""
    return uuid or (by_bus.get(bus_id) if bus_id else None) or bus_id


def _reading(facts: Sequence[Fact], by_bus: Mapping[str, str]) -> Reading:
    out: Reading = {}
    for fact in facts:
        if isinstance(fact, IbPortCounters):
            for name, value in fact.counters:
                out[(f"{fact.device}/{fact.port}", name, None)] = value
        elif isinstance(fact, Gpu):
            key = _gpu_key(fact.uuid, fact.bus_id, by_bus)
            for name in GPU_COUNTERS if key else ():
                value = getattr(fact, name)
                if isinstance(value, int):
                    out[(str(key), name, key)] = value
        elif isinstance(fact, NvLinkErrorCount) and fact.count is not None:
            key = fact.uuid or (f"GPU {fact.gpu_index}" if fact.gpu_index is not None else None)
            if key:
                name = "nvlink_" + "_".join(fact.counter.lower().split())
                out[(f"{key} link {fact.link}", name, key)] = fact.count
    return out


def _xids(facts: Sequence[Fact]) -> list[XidEvent]:
    return [f for f in facts if isinstance(f, XidEvent) and f.xid is not None]


def _new_xids(
    host: str | None, before: Sequence[Fact], after: Sequence[Fact], by_bus: Mapping[str, str]
) -> list[CounterDelta]:
    """Xid lines of the after-snapshot's kernel log that the before-snapshot did not have."""
    seen = Counter(x.cite.text for x in _xids(before))
    old: Counter[tuple[str, int]] = Counter()
    new: Counter[tuple[str, int]] = Counter()
    for xid in _xids(before):
        old[(_gpu_key(xid.uuid, xid.bus_id, by_bus) or "unknown GPU", int(xid.xid or 0))] += 1
    for xid in _xids(after):
        key = (_gpu_key(xid.uuid, xid.bus_id, by_bus) or "unknown GPU", int(xid.xid or 0))
        if seen[xid.cite.text] > 0:
            seen[xid.cite.text] -= 1
        else:
            new[key] += 1
    return [
        CounterDelta(
            host=host,
            device=gpu,
            counter=f"xid_{number}",
            before=old[(gpu, number)],
            after=old[(gpu, number)] + count,
            delta=count,
            gpu=None if gpu == "unknown GPU" else gpu,
        )
        for (gpu, number), count in sorted(new.items())
    ]


def counter_deltas(
    facts: Facts, by_folder: Mapping[str, str], gpus: Sequence[GpuIdentity]
) -> tuple[tuple[CounterDelta, ...], tuple[str, ...]]:
    """The counters that moved between each ``node-before``/``node-after`` pair, and the hosts."""
    by_bus = {g.bus_id: g.uuid for g in gpus if g.bus_id and g.uuid}
    grouped: dict[str, list[Fact]] = {}  # a capture's folder -> its facts (its host.json's too)
    for cls in (CaptureHost, IbPortCounters, Gpu, NvLinkErrorCount, XidEvent):
        for fact in facts.of(cls):
            grouped.setdefault(folder_of(fact.cite.source), []).append(fact)
    deltas: list[CounterDelta] = []
    compared: list[str] = []
    for folder in sorted(grouped):
        base, _, name = folder.rpartition("/")
        before_folder = f"{base}/{BEFORE}" if base else BEFORE
        if name != AFTER or before_folder not in grouped:
            continue
        before, after = grouped[before_folder], grouped[folder]
        host = by_folder.get(folder) or by_folder.get(before_folder)
        compared.append(host or folder)
        old, now = _reading(before, by_bus), _reading(after, by_bus)
        for (device, counter, gpu), value in sorted(now.items()):
            was = old.get((device, counter, gpu))
            if was is None or value == was:
                continue
            delta = value - was if value > was else value  # went backwards: reset in between
            if delta:
                deltas.append(CounterDelta(host, device, counter, was, value, delta, gpu))
        deltas.extend(_new_xids(host, before, after, by_bus))
    return tuple(deltas[:MAX_DELTAS]), tuple(dict.fromkeys(compared))
