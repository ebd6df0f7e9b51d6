"""The report's inventory: the hosts, GPUs, versions and probe figures the evidence names.

The fleet history (:mod:`nccl_doctor.fleet`) records every run by these, so
they are read once here, from facts, and travel in the report (JSON
``inventory``). Where a GPU sits:

- the host its own line names (log prefixes, a probe record's ``host``);
- else the host of the capture it belongs to: the files of one ``check``
  bundle or ``run`` snapshot sit in one folder with the ``host.json`` that
  names the host;
- else, when the whole evidence names exactly one host, that host;
- else unknown (``None``): the history keeps it unattributed.

GPUs are merged across tools by UUID, serial, then (host, bus id), then
(host, index). The counter deltas of a run's before/after snapshots are
:mod:`nccl_doctor.triage.counters`'s.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.gpu import Gpu
from nccl_doctor.facts.host import KernelGpuMessage, XidEvent
from nccl_doctor.facts.live import CaptureHost
from nccl_doctor.facts.nccl import NcclCommInit
from nccl_doctor.facts.probe import ProbeBandwidth
from nccl_doctor.facts.software import SoftwareVersions
from nccl_doctor.facts.store import Facts
from nccl_doctor.facts.topology import NvLink
from nccl_doctor.facts.versions import versions_of
from nccl_doctor.report import GpuIdentity, Inventory, ProbeFigure
from nccl_doctor.triage.counters import counter_deltas, folder_of

#: Bounds: a log of thousands of ranks names many GPUs; the report keeps this many.
MAX_GPUS = 4096
MAX_FIGURES = 512


class Hosts:
    """Which host a fact describes (see the module doc)."""

    def __init__(self, facts: Facts) -> None:
        self.by_folder = {folder_of(f.cite.source): f.hostname for f in facts.of(CaptureHost)}
        self.all = tuple(dict.fromkeys([*facts.hosts, *self.by_folder.values()]))
        self.only = self.all[0] if len(self.all) == 1 else None

    def of(self, fact: Fact) -> str | None:
        """The host of ``fact``, or ``None`` when the evidence does not say."""
        return fact.host or self.by_folder.get(folder_of(fact.cite.source)) or self.only


#: A GPU record while readings merge: GpuIdentity's fields, filled as they come.
_Gpu = dict[str, Any]
_FIELDS = ("host", "index", "bus_id", "uuid", "serial", "name")


def _gpu(
    host: str | None,
    *,
    index: int | None = None,
    bus_id: str | None = None,
    uuid: str | None = None,
    serial: str | None = None,
    name: str | None = None,
) -> _Gpu:
    return {
        "host": host,
        "index": index,
        "bus_id": bus_id,
        "uuid": uuid,
        "serial": serial,
        "name": name,
    }


def _fill(known: _Gpu, other: _Gpu) -> None:
    for name in _FIELDS:
        if known[name] is None:
            known[name] = other[name]


class _Gpus:
    """GPU records merged as they come, through indexes (thousands of ranks stay linear)."""

    def __init__(self) -> None:
        self.items: list[_Gpu] = []
        self.index: dict[tuple[str, object, object], _Gpu] = {}

    @staticmethod
    def _keys(g: _Gpu) -> Iterator[tuple[str, object, object]]:
        if g["uuid"]:
            yield ("uuid", g["uuid"], None)
        if g["serial"]:
            yield ("serial", g["serial"], None)
        if g["bus_id"]:
            yield ("bus", g["host"], g["bus_id"])

    def add(self, g: _Gpu) -> None:
        """Merge ``g`` into the GPU it names, or add it (up to :data:`MAX_GPUS`).

        An index matches only where one side has no bus id: the same index
        with two bus ids is two readings that disagree, kept apart.
        """
        found = next((self.index[k] for k in self._keys(g) if k in self.index), None)
        if found is None and g["index"] is not None:
            same = self.index.get(("index", g["host"], g["index"]))
            if same is not None and (same["bus_id"] is None or g["bus_id"] is None):
                found = same
        if found is None:
            if len(self.items) >= MAX_GPUS:
                return
            self.items.append(g)
            found = g
        else:
            _fill(found, g)
        for key in self._keys(found):
            self.index.setdefault(key, found)
        if found["index"] is not None:
            self.index.setdefault(("index", found["host"], found["index"]), found)


def _gpu_records(facts: Facts, hosts: Hosts) -> Iterator[_Gpu]:
    position: dict[str, int] = {}
    for gpu in facts.of(Gpu):
        index = gpu.index
        if index is None and gpu.tool in ("nvidia-smi-xml", "nvidia-smi-q"):
            # -q and -q -x list the GPUs in index order (the contention rule reads them so too)
            index = position[gpu.cite.source] = position.get(gpu.cite.source, -1) + 1
        yield _gpu(
            hosts.of(gpu),
            index=index,
            bus_id=gpu.bus_id,
            uuid=gpu.uuid,
            serial=gpu.serial,
            name=gpu.name,
        )
    for msg in facts.of(KernelGpuMessage):
        if msg.kind in ("gpu_identity", "board_serial") and (msg.bus_id or msg.uuid):
            yield _gpu(hosts.of(msg), bus_id=msg.bus_id, uuid=msg.uuid, serial=msg.serial)
    for xid in facts.of(XidEvent):
        if not xid.nvswitch and (xid.bus_id or xid.uuid):
            yield _gpu(hosts.of(xid), bus_id=xid.bus_id, uuid=xid.uuid)
    for link in facts.of(NvLink):
        if link.uuid:
            yield _gpu(hosts.of(link), index=link.gpu_index, uuid=link.uuid, name=link.gpu_name)
    for env in facts.of(SoftwareVersions):
        for index, name in env.gpu_models:
            yield _gpu(hosts.of(env), index=index, name=name)
    for bw in facts.of(ProbeBandwidth):
        if len(bw.gpus) == 1 and bw.world is None:  # a device figure: one GPU, by its ordinal
            yield _gpu(hosts.of(bw), index=bw.gpus[0], name=bw.gpu_model)
    seen: set[tuple[str | None, str]] = set()
    for init in facts.of(NcclCommInit):
        host = hosts.of(init)
        if init.bus_id and (host, init.bus_id) not in seen:
            seen.add((host, init.bus_id))
            yield _gpu(host, bus_id=init.bus_id)


def gpus_of(facts: Facts, hosts: Hosts) -> tuple[GpuIdentity, ...]:
    """Every GPU the evidence names, merged across tools, in first-seen order."""
    merged = _Gpus()
    for record in _gpu_records(facts, hosts):
        merged.add(record)
    kept = [g for g in merged.items if g["host"] is not None]
    for g in merged.items:
        if g["host"] is not None:
            continue
        same = [k for k in kept if _same_place(k, g)]
        if len(same) == 1:  # an unattributed reading of a GPU one host has: that one
            _fill(same[0], g)
        else:
            kept.append(g)
    order = {id(g): n for n, g in enumerate(merged.items)}
    kept.sort(key=lambda g: order[id(g)])
    return tuple(GpuIdentity(**g) for g in kept)


def _same_place(known: _Gpu, loose: _Gpu) -> bool:
    if loose["bus_id"] and known["bus_id"]:
        return bool(loose["bus_id"] == known["bus_id"])
    return loose["index"] is not None and loose["index"] == known["index"]


def probe_figures(facts: Facts, hosts: Hosts) -> tuple[ProbeFigure, ...]:
    """Each probe measurement series' best bus bandwidth, per host, kind, GPUs and world.

    Isolation reruns (transports switched off) are left out: they measure a
    configuration, not the machine; so are collectives of one rank, which
    move no data (their bus bandwidth is 0 by nccl-tests' formulas).
    """
    best: dict[tuple[str | None, str, tuple[int, ...], int | None], ProbeFigure] = {}
    for bw in facts.of(ProbeBandwidth):
        if bw.busbw_gbytes_s is None or bw.phase == "isolation" or bw.transport_env:
            continue
        if bw.world is not None and bw.world < 2:
            continue
        key = (hosts.of(bw), bw.kind, bw.gpus, bw.world)
        known = best.get(key)
        if known is None and len(best) >= MAX_FIGURES:
            continue
        if known is None or bw.busbw_gbytes_s > known.busbw_gbytes_s:
            best[key] = ProbeFigure(
                host=key[0],
                kind=bw.kind,
                gpus=bw.gpus,
                world=bw.world,
                size_bytes=bw.size_bytes,
                busbw_gbytes_s=round(bw.busbw_gbytes_s, 3),
                expected_gbytes_s=bw.expected_gbytes_s,
                gpu_model=bw.gpu_model,
            )
    return tuple(best.values())


def inventory_of(facts: Facts) -> Inventory:
    """The inventory of a report's facts."""
    hosts = Hosts(facts)
    gpus = gpus_of(facts, hosts)
    deltas, compared = counter_deltas(facts, hosts.by_folder, gpus)
    return Inventory(
        hosts=hosts.all,
        gpus=gpus,
        versions=versions_of(facts),
        probe=probe_figures(facts, hosts),
        counters=deltas,
        compared=compared,
    )
