"""The fingerprint of a diagnosed run: what it ran on and with, and what went wrong.

Two runs of one job are compared by their fingerprints (:mod:`nccl_doctor.compare.diff`):
the NCCL init picture (transports, channels, NVLS, CollNet, network and
plugins, GPUDirect RDMA, topology), the environment (the variables that steer
NCCL, PyTorch and CUDA, as the redaction gate left them), the versions, the
hosts and GPUs and which rank ran where, the world size, and the error set
(the findings' ids and the failures' catalogued messages). Everything is read
from typed facts; nothing here reads text. A part the evidence does not show
stays empty (``None``, ``seen=False``), so a comparison can tell "not shown"
from "absent".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from nccl_doctor.differential.symptoms import symptom_of
from nccl_doctor.facts.base import Fact, local_alias
from nccl_doctor.facts.gpu import DriverInfo, Gpu
from nccl_doctor.facts.host import EnvVar, KernelGpuMessage, XidEvent
from nccl_doctor.facts.job import rank_gpus, world_size
from nccl_doctor.facts.live import LibraryVersions
from nccl_doctor.facts.nccl import (
    NcclChannels,
    NcclCommInit,
    NcclCommLayout,
    NcclCudaDriver,
    NcclEnvSetting,
    NcclEvent,
    NcclGdr,
    NcclIbDevice,
    NcclNet,
    NcclPlugin,
    NcclTransport,
    NcclVersion,
)
from nccl_doctor.facts.run import NcclErrorReport, PgEnvironment, PgInitOptions
from nccl_doctor.facts.software import SoftwareVersions
from nccl_doctor.facts.span import nccl_local_ranks
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Finding

#: Variable families that steer the communication stack.
_RELEVANT_PREFIXES = (
    "NCCL_", "TORCH_", "CUDA_", "PYTORCH_", "GLOO_", "UCX_", "FI_", "NVIDIA_", "NVSHMEM_",
    "OMPI_MCA_", "MLX5_", "HPCX_",
)  # fmt: skip
_RELEVANT = frozenset(
    {"LD_LIBRARY_PATH", "LD_PRELOAD", "OMP_NUM_THREADS", "MASTER_ADDR", "WORLD_SIZE",
     "LOCAL_WORLD_SIZE"}
)  # fmt: skip
#: Variables that differ on every run or every rank by design: never a difference worth showing.
_VOLATILE = frozenset(
    {"RANK", "LOCAL_RANK", "GROUP_RANK", "ROLE_RANK", "NODE_RANK", "MASTER_PORT",
     "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_ERROR_FILE",
     "TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "NCCL_DEBUG_FILE", "TORCHELASTIC_USE_AGENT_STORE",
     "NCCL_COMM_ID", "NCCL_HOSTID"}
)  # fmt: skip
_VERSION = re.compile(r"(?<![\d.])\d+(?:\.\d+){1,3}")
_NET_NUMBER = re.compile(r"/\d+(?:\(\d+\))?(?=/|$)")
#: The most ranks and GPUs kept in a fingerprint (a JSON report stays bounded).
MAX_ITEMS = 4096


@dataclass(frozen=True, slots=True)
class GpuSeen:
    """A GPU the evidence shows, by host, index, bus id and UUID where known."""

    host: str | None
    index: int | None = None
    bus_id: str | None = None
    uuid: str | None = None
    name: str | None = None
    serial: str | None = None


@dataclass(frozen=True, slots=True)
class Placement:
    """Where one rank ran: its host and GPU (index, bus id), as far as the evidence says.

    A GPU guessed by convention (local rank r on GPU r) is not a placement: only
    what a log line states is.
    """

    rank: int
    host: str | None = None
    gpu_index: int | None = None
    bus_id: str | None = None


@dataclass(frozen=True, slots=True)
class NcclInit:
    """The NCCL init picture. ``seen`` is whether any init line was read at all.

    ``transports`` maps a transport (device numbers dropped: ``NET/IB/GDRDMA``)
    to how many processes used it; ``channels`` each kind's channel counts
    (``coll``, ``nvls``, ``p2p``...); ``plugins`` the plugins loaded, by type.
    """

    seen: bool = False
    transports: tuple[tuple[str, int], ...] = ()
    channels: tuple[tuple[str, tuple[int, ...]], ...] = ()
    nvls: bool | None = None
    nvls_support: bool | None = None
    collnet: bool | None = None
    network: str | None = None
    plugins: tuple[tuple[str, tuple[str, ...]], ...] = ()
    ib_devices: tuple[str, ...] = ()
    bootstrap: tuple[str, ...] = ()
    gdr: bool | None = None
    nodes: int | None = None
    local_ranks: int | None = None
    mnnvl: bool | None = None
    rings: str | None = None
    trees: bool | None = None
    p2p_disabled: bool = False


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """What a run ran on and with, and its error set (see the module docstring).

    ``env_scope``: ``all`` (a whole environment dump was read), ``nccl``
    (an NCCL INFO log: NCCL echoes each NCCL_* variable it reads that is set,
    ``set by environment to``, so one it does not echo was unset), ``partial``
    (variables set on command lines or in scripts) or ``none``.
    """

    world_size: int | None = None
    hosts: tuple[str, ...] = ()
    ranks: tuple[Placement, ...] = ()
    gpus: tuple[GpuSeen, ...] = ()
    versions: tuple[tuple[str, tuple[str, ...]], ...] = ()
    env: tuple[tuple[str, str | None], ...] = ()
    env_scope: str = "none"
    nccl: NcclInit = field(default_factory=NcclInit)
    findings: tuple[tuple[str, str], ...] = ()
    signatures: tuple[str, ...] = ()

    def as_json(self, clean: Callable[[str], str]) -> dict[str, Any]:
        """The fingerprint as ``docs/json.md`` spells it; ``clean`` applies to evidence text."""

        def c(text: str | None) -> str | None:
            return clean(text) if text is not None else None

        n = self.nccl
        return {
            "world_size": self.world_size,
            "hosts": [clean(h) for h in self.hosts],
            "ranks": [
                {"rank": p.rank, "host": c(p.host), "gpu": p.gpu_index, "bus_id": p.bus_id}
                for p in self.ranks
            ],
            "gpus": [
                {
                    "host": c(g.host),
                    "index": g.index,
                    "bus_id": g.bus_id,
                    "uuid": g.uuid,
                    "name": c(g.name),
                    "serial": g.serial,
                }
                for g in self.gpus
            ],
            "versions": {key: list(values) for key, values in self.versions},
            "environment": {
                "scope": self.env_scope,
                "vars": {name: c(value) for name, value in self.env},
            },
            "nccl": {
                "seen": n.seen,
                "transports": dict(n.transports),
                "channels": {kind: list(counts) for kind, counts in n.channels},
                "nvls": n.nvls,
                "nvls_support": n.nvls_support,
                "collnet": n.collnet,
                "network": n.network,
                "plugins": {kind: list(names) for kind, names in n.plugins},
                "ib_devices": list(n.ib_devices),
                "bootstrap": list(n.bootstrap),
                "gdr": n.gdr,
                "nodes": n.nodes,
                "local_ranks": n.local_ranks,
                "mnnvl": n.mnnvl,
                "rings": n.rings,
                "trees": n.trees,
                "p2p_disabled": n.p2p_disabled,
            },
            "errors": {
                "findings": [{"id": i, "severity": s} for i, s in self.findings],
                "signatures": list(self.signatures),
            },
        }


def relevant(name: str) -> bool:
    """Whether a variable belongs in a fingerprint's environment."""
    if name in _VOLATILE:
        return False
    return name in _RELEVANT or name.startswith(_RELEVANT_PREFIXES)


def _sorted_set(values: Iterable[str | None]) -> tuple[str, ...]:
    return tuple(sorted({v for v in values if v}))


def _version(text: str | None) -> str | None:
    """``2.28.9`` out of ``2.28.9+cuda13.0``, ``(2, 28, 9)`` and the like."""
    if not text:
        return None
    text = re.sub(r"\((\d+), (\d+), (\d+)\)", r"\1.\2.\3", text)
    m = _VERSION.search(text)
    return m.group(0) if m else None


def _versions(facts: Facts) -> tuple[tuple[str, tuple[str, ...]], ...]:
    smi = facts.of(DriverInfo)
    soft = facts.of(SoftwareVersions)
    libs = facts.of(LibraryVersions)
    kernel = [k.version for k in facts.of(KernelGpuMessage) if k.kind == "module_version"]
    nccl: list[str | None] = [v.version for v in facts.of(NcclVersion)]
    nccl += [s.nccl_version for s in soft] + [lib.nccl_version for lib in libs]
    for cls in (PgEnvironment, PgInitOptions, NcclErrorReport):
        nccl += [getattr(f, "nccl_version", None) for f in facts.of(cls)]
    found = {
        "driver": [d.driver_version for d in smi]
        + [s.nvidia_driver_version for s in soft]
        + [lib.driver_version or lib.kernel_module_version for lib in libs]
        + kernel,
        "cuda_driver": [d.cuda_version for d in smi]
        + [v.version_text for v in facts.of(NcclCudaDriver)]
        + [lib.cuda_driver_version for lib in libs],
        "cuda_torch": [s.cuda_used_to_build_torch for s in soft],
        "nccl": nccl,
        "torch": [s.torch_version for s in soft] + [lib.torch_version for lib in libs],
        "python": [s.python_version for s in soft] + [lib.python_version for lib in libs],
    }
    out = []
    for key, values in found.items():
        keep = values if key == "torch" else [_version(v) for v in values]
        norm = _sorted_set(keep)
        if norm:
            out.append((key, norm))
    return tuple(out)


def _environment(facts: Facts) -> tuple[tuple[tuple[str, str | None], ...], str]:
    values: dict[str, set[str]] = {}
    scope = "none"
    for var in facts.of(EnvVar):
        if relevant(var.name):
            values.setdefault(var.name, set()).add(var.value or "")
        if var.form == "dump":
            scope = "all"
        elif scope == "none":
            scope = "partial"
    for setting in facts.of(NcclEnvSetting):
        if relevant(setting.name) and not setting.invalid:
            values.setdefault(setting.name, set()).add(setting.value or "")
    echoed = bool(facts.of(NcclEnvSetting)) or bool(facts.of(NcclCommInit))
    if scope in ("none", "partial") and echoed:
        scope = "nccl"  # at INFO, NCCL echoes every NCCL_* variable it reads that is set
    for pg in facts.of(PgEnvironment):
        for name, value in pg.settings:
            if name.isupper() and relevant(name) and name not in values:
                values[name] = {value}
    env = tuple(
        (name, " | ".join(sorted(vals)) if vals != {""} else None)
        for name, vals in sorted(values.items())
    )
    return env, scope


def _hosts(facts: Facts) -> tuple[str, ...]:
    """The hosts the evidence names, without ``localhost`` (a launcher's name for its own)."""
    return tuple(h for h in facts.hosts if not local_alias(h))


def _only_host(facts: Facts) -> str | None:
    hosts = _hosts(facts)
    return hosts[0] if len(hosts) == 1 else None


def _gpus(facts: Facts) -> tuple[GpuSeen, ...]:
    only = _only_host(facts)
    seen: dict[tuple[str | None, str], GpuSeen] = {}
    for gpu in facts.of(Gpu):
        key: tuple[str | None, str] = (gpu.host or only, gpu.uuid or gpu.bus_id or f"#{gpu.index}")
        host = key[0]
        if key not in seen and len(seen) < MAX_ITEMS:
            seen[key] = GpuSeen(host, gpu.index, gpu.bus_id, gpu.uuid, gpu.name, gpu.serial)
    named: list[tuple[str | None, int | None, str | None, str | None]] = [
        (i.host, i.nvml_dev, i.bus_id, None) for i in facts.of(NcclCommInit)
    ]
    named += [(x.host, None, x.bus_id, x.uuid) for x in facts.of(XidEvent) if not x.nvswitch]
    named += [(k.host, None, k.bus_id, k.uuid) for k in facts.of(KernelGpuMessage)]
    by_bus = {(g.host, g.bus_id): key for key, g in seen.items() if g.bus_id}
    for host_of, index, bus_id, uuid in named:
        host = host_of or only
        if not bus_id:
            continue
        found = by_bus.get((host, bus_id))
        if found is not None:
            old = seen[found]
            seen[found] = replace(old, index=old.index if old.index is not None else index,
                                uuid=old.uuid or uuid)  # fmt: skip
        elif len(seen) < MAX_ITEMS:
            by_bus[(host, bus_id)] = (host, bus_id)
            seen[(host, bus_id)] = GpuSeen(host, index, bus_id, uuid)
    return tuple(sorted(seen.values(), key=lambda g: (g.host or "", g.bus_id or "", g.index or 0)))


def _placements(facts: Facts) -> tuple[Placement, ...]:
    hosts: dict[int, str] = {}
    for fact in facts.all:
        rank, host_of = fact.rank, fact.host
        if rank is not None and host_of and rank not in hosts and not local_alias(host_of):
            hosts[rank] = host_of
    gpus = rank_gpus(facts)
    ranks = sorted(set(hosts) | set(gpus))[:MAX_ITEMS]
    only = _only_host(facts)
    out = []
    for rank in ranks:
        gpu = gpus.get(rank)
        stated = gpu if gpu is not None and gpu.how != "convention" else None
        host = hosts.get(rank, only)
        if host is not None or stated is not None:  # a rank placed nowhere says nothing
            index, bus = (stated.gpu_index, stated.bus_id) if stated is not None else (None, None)
            out.append(Placement(rank, host, index, bus))
    return tuple(out)


def transport_name(transport: str) -> str:
    """A transport without its device numbers: ``NET/IB/0/GDRDMA`` is ``NET/IB/GDRDMA``."""
    return _NET_NUMBER.sub("", transport.strip())


def _plugins(facts: Facts) -> tuple[tuple[str, tuple[str, ...]], ...]:
    loaded: dict[str, set[str]] = {}
    for plugin in facts.of(NcclPlugin):
        if plugin.loaded and plugin.plugin_type and plugin.name:
            loaded.setdefault(plugin.plugin_type, set()).add(plugin.name)
    return tuple((kind, tuple(sorted(names))) for kind, names in sorted(loaded.items()))


def _nccl_init(facts: Facts) -> NcclInit:
    inits = facts.of(NcclCommInit)
    channels = facts.of(NcclChannels)
    transports = facts.of(NcclTransport)
    seen = bool(inits or channels or transports or facts.of(NcclVersion))
    if not seen:
        return NcclInit()
    users: dict[str, set[tuple[str | None, int | None, int | None]]] = {}
    for t in transports:
        users.setdefault(transport_name(t.transport), set()).add((t.host, t.pid, t.comm_rank))
    counts: dict[str, set[int]] = {}
    for ch in channels:
        for kind in ("coll", "collnet", "nvls", "p2p", "p2p_per_peer"):
            value = getattr(ch, kind)
            if value is not None:
                counts.setdefault(kind, set()).add(value)
    events = facts.of(NcclEvent)
    names = {e.event for e in events}
    nvls_channels = counts.get("nvls")
    nvls: bool | None = None
    if "connected-nvls-tree" in names or (nvls_channels and max(nvls_channels) > 0):
        nvls = True
    elif nvls_channels is not None:
        nvls = False
    support = [dict(e.detail).get("available") for e in events if e.event == "nvls-support"]
    plugins = _plugins(facts)
    kinds = {t.kind for t in transports}
    collnet = True if "COLLNET" in kinds or any(k == "COLLNET" for k, _ in plugins) else None
    if collnet is None and (transports or channels):
        collnet = False
    selected = [n.net for n in facts.of(NcclNet) if n.role == "selected" and n.net]
    ib = [f"{name}:{port}" for n in facts.of(NcclNet) for name, port, _ in n.ib_devices]
    ib += [f"{d.name}:{d.port}" for d in facts.of(NcclIbDevice) if d.name]
    boot = [i for n in facts.of(NcclNet) if n.role == "bootstrap" for i, _ in n.interfaces]
    gdr_facts = facts.of(NcclGdr)
    gdr: bool | None = None
    if any(g.enabled for g in gdr_facts) or any(t.gdr for t in transports):
        gdr = True
    elif gdr_facts:
        gdr = False
    layouts = facts.of(NcclCommLayout)
    rings = [dict(e.detail) for e in events if e.event == "connected-rings" and e.detail]
    return NcclInit(
        seen=True,
        transports=tuple(sorted((name, len(who)) for name, who in users.items())),
        channels=tuple((kind, tuple(sorted(v))) for kind, v in sorted(counts.items())),
        nvls=nvls,
        nvls_support=("1" in support) if support else None,
        collnet=collnet,
        network=selected[0] if selected else None,
        plugins=plugins,
        ib_devices=_sorted_set(ib),
        bootstrap=_sorted_set(boot),
        gdr=gdr,
        nodes=max((x.n_nodes for x in layouts if x.n_nodes), default=None),
        local_ranks=nccl_local_ranks(facts),
        mnnvl=any(x.mnnvl for x in layouts) if any(x.mnnvl is not None for x in layouts) else None,
        rings=f"PXN {rings[0].get('pxn')} GDR {rings[0].get('gdr')}" if rings else None,
        trees=True if "connected-trees" in names else None,
        p2p_disabled="p2p-disabled" in names,
    )


def _signatures(failures: Sequence[Fact]) -> tuple[str, ...]:
    found: dict[str, None] = {}
    for fact in failures:
        symptom = symptom_of(fact)
        if symptom is not None:
            found.setdefault(symptom.signature or symptom.cls)
        if len(found) >= 64:
            break
    return tuple(sorted(found))


def fingerprint_of(
    facts: Facts, findings: Sequence[Finding], failures: Sequence[Fact]
) -> Fingerprint:
    """The fingerprint of a run from its facts, its findings (folded ones too) and failures."""
    env, scope = _environment(facts)
    return Fingerprint(
        world_size=world_size(facts),
        hosts=tuple(sorted(_hosts(facts))),
        ranks=_placements(facts),
        gpus=_gpus(facts),
        versions=_versions(facts),
        env=env,
        env_scope=scope,
        nccl=_nccl_init(facts),
        findings=tuple(dict.fromkeys((f.id, f.severity.value) for f in findings)),
        signatures=_signatures(failures),
    )
