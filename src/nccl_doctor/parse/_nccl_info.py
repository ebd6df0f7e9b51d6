"""NCCL ``INFO`` lines other than channels and error chains: one function per family.

:func:`parse_info` takes the text after ``NCCL INFO `` and returns the facts of
the line, and whether they are of the kind that repeats per communicator (to
be emitted once per process).
"""

from __future__ import annotations

import re

from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.nccl import (
    NcclChannels,
    NcclCommInit,
    NcclCommLayout,
    NcclCudaDriver,
    NcclEnvSetting,
    NcclEvent,
    NcclGdr,
    NcclIbDevice,
    NcclInitTiming,
    NcclNet,
    NcclPlugin,
    nccl_bus_id,
)
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._nccl_common import Who, errno_of, strip_value, to_float, to_int

_PTR = r"0x[0-9a-fA-F]{1,16}|\(nil\)"
_HEXV = rf"{_PTR}|-?[0-9a-fA-F]{{1,16}}"
_INIT = LazyPattern(
    rf"(?:\[Rank -?\d+\] )?(?:(?P<func>\w+) )?comm (?P<comm>{_PTR}) "
    r"rank (?P<rank>-?\d{1,7}) nranks (?P<nranks>\d{1,7})(?P<rest>.*)$"
)
_OLD_INIT = LazyPattern(r"(?:rank (?P<rank>\d{1,7}) )?nranks (?P<nranks>\d{1,7})\s*$")
_KV = LazyPattern(
    rf"\b(?P<k>cudaDev|nvmlDev|busId|commId|parent|color|key|splitCount|childCount) (?P<v>{_HEXV})"
)
_PHASE = LazyPattern(r"-\s*(?P<what>Init|Abort|Destroy) (?P<state>START|COMPLETE)\b")
_LAYOUT = LazyPattern(rf"comm (?P<comm>{_PTR}) rank (?P<rank>\d{{1,7}}) nRanks (?P<n>\d{{1,7}})")
_LAYOUT_KV = LazyPattern(r"\b(?P<k>nNodes|localRanks|localRank|MNNVL) (?P<v>-?\d{1,7})")
_TIMING = LazyPattern(
    r"Init timings(?: - (?P<func>\w+))?: rank (?P<rank>\d{1,7}) nranks (?P<n>\d{1,7}) "
    r"total (?P<total>[\d.]+)(?: \((?P<parts>[^)]*)\))?"
)
_IB_USING = LazyPattern(r"NET/IB ?: Using(?P<list>.*?)(?P<ro>\[RO\])? ?; OOB (?P<oob>\S*)\s*$")
_IB_DEV = LazyPattern(r"\[(?P<i>\d{1,4})\](?P<name>[^\s:\[\]]+):(?P<port>\d{1,4})/(?P<ll>\w+)")
_IB_DEVICE = LazyPattern(
    r"NET/IB ?: \[(?P<i>\d{1,4})\] (?P<name>[^\s:]+):(?P<dev>[^\s:]+):(?P<port>\d{1,4})"
    r"/(?P<ll>\w+)(?P<rest>.*)$"
)
_IB_DEVICE_KV = LazyPattern(r"\b(?P<k>provider|speed|pciPath|ar)=(?P<v>\S+)")
_USING_LIST = LazyPattern(r"(?:NET/(?P<net>[\w-]+)|(?P<boot>Bootstrap)) ?: Using(?P<list>( .*)?)$")
_IFACE = LazyPattern(r"(?:\[\d{1,4}\])?(?P<name>[^\s:\[\]]+):(?P<addr>\S+)")
_PORT = LazyPattern(r"-?\d{1,4}")
_SELECTED = LazyPattern(r"Using network (?P<net>\S(?:.*\S)?)\s*$")
_GDR = LazyPattern(
    r"(?:NET/(?P<net>[\w-]+) ?: )?GPU Direct RDMA (?P<state>Enabled|Disabled) for "
    r"(?:GPU (?P<gpu>\S+) / )?HCA (?P<hca>[0-9a-fA-Fx]+)(?: '(?P<name>[^']*)')?"
    r"(?: \((?P<paren>[^)]*)\))?(?:, read (?P<read>\d))?(?: mode (?P<mode>\S+))?"
)
_DISTANCE = LazyPattern(r"distance (?P<d>\d{1,4}) [<>=]+ (?P<limit>\d{1,4})")
_PLUGIN = LazyPattern(r"(?P<type>NET|COLLNET|TUNER|PROFILER|GIN|ENV|RMA)/Plugin ?: ?(?P<msg>.*)$")
_PLUGIN_ASSIGNED = LazyPattern(
    r"(?P<verb>Initialized|Assigned|Failed to initialize) (?P<type>NET|GIN|RMA|COLLNET) "
    r"plugin (?P<name>\S+)"
)
_LOADED = LazyPattern(
    r"(?:Loaded|Using) (?:(?P<what>net|coll|collnet|gin|rma) plugin )?"
    r"(?P<name>.{1,500}?) \((?P<v>v\d+)\)"
)
_NOT_FOUND = LazyPattern(
    r"(?:No plugin found(?: \((?P<a>[^)\s]+)\))?|Could not find: ?(?P<b>\S+?)\.?(?:\s|$))"
)
#: ``NCCL_X set by environment to V`` (ncclGetEnv's notice), and the IB transport's own echo of
#: the device list, ``NCCL_IB_HCA set to mlx5_0:1,mlx5_1:1`` (net_ib.cc, every release)
_ENV = LazyPattern(r"(?P<name>[A-Z][A-Z0-9_]{2,}) set (?:by environment )?to ?(?P<value>.*)$")
_INVALID = LazyPattern(
    r"Invalid value (?P<value>.{0,500}?) for (?P<name>[A-Z][A-Z0-9_]*), using default (?P<d>.*)$"
)
_DRIVER = LazyPattern(r"cudaDriverVersion (?P<v>\d{1,7})\s*$")
_NVLS = LazyPattern(
    r"NVLS multicast support is (?P<not>not )?available on dev (?P<dev>\d{1,4})"
    r"(?: \(NVLS_NCHANNELS (?P<n>\d+)\))?"
)
_NVLS_BIND = LazyPattern(
    r"Failed to bind NVLink SHARP \(NVLS\) Multicast memory of size (?P<size>\d+) : "
    r"CUDA error (?P<code>-?\d+) '(?P<err>[^']*)'"
)
_SMEM = LazyPattern(
    r"ncclMaxSharedMem (?P<need>\d{1,9}) exceeds device/fn maxSharedMem (?P<max>\d{1,9})"
)
#: graph/topo.cc (2.30.3-2.30.4): the pair of ranks that share one GPU, before the refusal
_SHARING = LazyPattern(
    r"Detected ranks (?P<a>\d{1,7}) and (?P<b>\d{1,7}) sharing GPU with bus "
    r"(?P<bus>[0-9A-Fa-f]{1,16})"
)
#: misc/socket.cc (2.30): a handshake of another socket type, dropped (3 NetSocket, 4 NetIb)
_SOCKET_TYPE = LazyPattern(
    r"socketFinalizeAccept from (?P<peer>\S{1,200}): wrong socket type \(peer (?P<got>\d{1,3}) "
    r"!= expected (?P<want>\d{1,3})"
)
#: init.cc (2.30): rank 0 names each rank that sees fewer network devices than the most
_NET_COUNT = LazyPattern(
    r"Rank (?P<rank>\d{1,7}) has (?P<n>\d{1,4}) local Net devices \(max (?P<most>\d{1,4})\)"
)
_P2P_OFF = LazyPattern(
    r"P2P is disabled between (?:NVLINK )?connected GPUs (?P<a>\d+) and (?P<b>\d+)"
)
_CHANNELS = LazyPattern(r"(?P<n>\d{1,5}) (?P<kind>[a-z][a-z0-9]*) channels(?P<peer> per peer)?")
_RINGS = LazyPattern(r"Connected all rings(?:, use ring PXN (?P<pxn>\d+) GDR (?P<gdr>\d+))?")
_RETRY = LazyPattern(
    r"(?:Call to (?P<call>\w+)|(?P<call2>connect|accept) to (?P<peer>\S+)) "
    r"returned (?P<err>.{1,500}?), retrying"
)

_PLUGIN_WORD = {"net": "NET", "coll": "COLLNET", "collnet": "COLLNET", "gin": "GIN", "rma": "RMA"}


def parse_info(who: Who, body: str) -> tuple[list[Fact], bool]:
    """The facts of one INFO body, and whether they repeat per communicator."""
    if "nranks" in body:
        init = _init(who, body)
        if init is not None:
            return [init], False
        if m := _TIMING.match(body):
            return [_timing(who, m)], False
    if "nNodes" in body and (m := _LAYOUT.search(body)):
        return [_layout(who, body, m)], False
    if " coll channels" in body:
        return [_channels(who, body)], False
    if body.startswith(("NET/", "Bootstrap")):
        return _net(who, body), True
    if "GPU Direct RDMA" in body and (m := _GDR.search(body)):
        return [_gdr(who, m)], True
    if m := _SELECTED.match(body):
        return [_fact_net(who, role="selected", net=m["net"])], True
    if "lugin" in body:
        plugin = _plugin(who, body)
        return ([plugin] if plugin else []), True
    if m := _ENV.match(body):
        value = strip_value(m["value"]) if m["value"].strip() else None
        return [_env(who, m["name"], value)], True
    if m := _INVALID.search(body):
        default = strip_value(m["d"]) or None
        return [
            _env(who, m["name"], m["value"].strip() or None, invalid=True, default=default)
        ], True
    if m := _DRIVER.match(body):
        v = to_int(m["v"])
        text = f"{v // 1000}.{(v % 1000) // 10}" if v is not None else None
        fact = NcclCudaDriver(
            cite=who.cite,
            rank=who.rank,
            host=who.host,
            pid=who.pid,
            device=who.device,
            version=v,
            version_text=text,
        )
        return [fact], True
    event = _event(body)
    if event is not None:
        fact_e = NcclEvent(
            cite=who.cite,
            rank=who.rank,
            host=who.host,
            pid=who.pid,
            device=who.device,
            event=event[0],
            detail=event[1],
        )
        return [fact_e], True
    return [], True


def _init(who: Who, body: str) -> NcclCommInit | None:
    """A comm init/abort/destroy line, or NCCL 2.3/2.4's bare ``rank R nranks N``."""
    m = _INIT.match(body)
    if m is None:
        old = _OLD_INIT.match(body)
        if old is None:
            return None
        comm_rank = to_int(old["rank"])
        return NcclCommInit(
            cite=who.cite,
            rank=who.rank if who.rank is not None else comm_rank,
            host=who.host,
            pid=who.pid,
            device=who.device,
            phase="init",
            comm_rank=comm_rank,
            nranks=to_int(old["nranks"]),
        )
    rest = m["rest"]
    kv = {k["k"]: k["v"] for k in _KV.finditer(rest)}
    phase_m = _PHASE.search(rest)
    if phase_m is None:
        phase = "init"
    elif phase_m["what"] == "Init":
        phase = "start" if phase_m["state"] == "START" else "complete"
    else:
        phase = phase_m["what"].lower()
    func = m["func"] if m["func"] and m["func"].startswith("nccl") else None
    comm_rank = to_int(m["rank"])
    bus_raw = kv.get("busId")
    parent = kv.get("parent")
    return NcclCommInit(
        cite=who.cite,
        rank=who.rank if who.rank is not None else comm_rank,
        host=who.host,
        pid=who.pid,
        device=who.device,
        phase=phase,
        function=func,
        comm=m["comm"],
        comm_rank=comm_rank,
        nranks=to_int(m["nranks"]),
        cuda_dev=to_int(kv.get("cudaDev")),
        nvml_dev=to_int(kv.get("nvmlDev")),
        bus_id_raw=bus_raw,
        bus_id=nccl_bus_id(bus_raw),
        comm_id=kv.get("commId"),
        parent_comm=parent if parent and parent.startswith(("0x", "(nil)")) else None,
        color=to_int(kv.get("color")),
        key=to_int(kv.get("key")),
        split_count=to_int(kv.get("splitCount") or kv.get("childCount")),
    )


def _timing(who: Who, m: re.Match[str]) -> NcclInitTiming:
    """``Init timings - fn: rank R nranks N total T (part t, ...)``."""
    parts: list[tuple[str, float]] = []
    for part in (m["parts"] or "").split(","):
        name, _, value = part.strip().partition(" ")
        seconds = to_float(value)
        if name and seconds is not None:
            parts.append((name, seconds))
    comm_rank = to_int(m["rank"])
    return NcclInitTiming(
        cite=who.cite,
        rank=who.rank if who.rank is not None else comm_rank,
        host=who.host,
        pid=who.pid,
        device=who.device,
        function=m["func"],
        comm_rank=comm_rank,
        nranks=to_int(m["n"]),
        total_s=to_float(m["total"]),
        phases_s=tuple(parts),
    )


def _layout(who: Who, body: str, m: re.Match[str]) -> NcclCommLayout:
    """``comm 0x.. rank R nRanks N nNodes H localRanks L localRank l MNNVL m``."""
    kv = {k["k"]: to_int(k["v"]) for k in _LAYOUT_KV.finditer(body)}
    comm_rank = to_int(m["rank"])
    return NcclCommLayout(
        cite=who.cite,
        rank=who.rank if who.rank is not None else comm_rank,
        host=who.host,
        pid=who.pid,
        device=who.device,
        comm=m["comm"],
        comm_rank=comm_rank,
        nranks=to_int(m["n"]),
        n_nodes=kv.get("nNodes"),
        local_ranks=kv.get("localRanks"),
        local_rank=kv.get("localRank"),
        mnnvl=kv.get("MNNVL"),
    )


def _channels(who: Who, body: str) -> NcclChannels:
    """``N coll channels, N collnet channels, N nvls channels, N p2p channels, N ... per peer``."""
    counts: dict[str, int | None] = {}
    for m in _CHANNELS.finditer(body):
        key = "p2p_per_peer" if m["kind"] == "p2p" and m["peer"] else m["kind"]
        if key in ("coll", "collnet", "nvls", "p2p", "p2p_per_peer"):
            counts.setdefault(key, to_int(m["n"]))
    return NcclChannels(
        cite=who.cite,
        rank=who.rank,
        host=who.host,
        pid=who.pid,
        device=who.device,
        coll=counts.get("coll"),
        collnet=counts.get("collnet"),
        nvls=counts.get("nvls"),
        p2p=counts.get("p2p"),
        p2p_per_peer=counts.get("p2p_per_peer"),
    )


def _env(
    who: Who, name: str, value: str | None, *, invalid: bool = False, default: str | None = None
) -> NcclEnvSetting:
    return NcclEnvSetting(
        cite=who.cite,
        rank=who.rank,
        host=who.host,
        pid=who.pid,
        device=who.device,
        name=name,
        value=value,
        invalid=invalid,
        default_value=default,
    )


def _fact_net(
    who: Who,
    *,
    role: str,
    net: str | None = None,
    interfaces: tuple[tuple[str, str], ...] = (),
    ib_devices: tuple[tuple[str, int | None, str | None], ...] = (),
    oob: str = "",
    relaxed_ordering: bool | None = None,
    no_device: bool = False,
    truncated: bool = False,
) -> NcclNet:
    oob_if, sep, oob_addr = oob.partition(":")
    return NcclNet(
        cite=who.cite,
        rank=who.rank,
        host=who.host,
        pid=who.pid,
        device=who.device,
        role=role,
        net=net,
        interfaces=interfaces,
        ib_devices=ib_devices,
        oob_interface=oob_if or None,
        oob_address=(oob_addr or None) if sep else None,
        relaxed_ordering=relaxed_ordering,
        no_device=no_device,
        truncated=truncated,
    )


def _net(who: Who, body: str) -> list[Fact]:
    """``Bootstrap : Using``, ``NET/IB : Using``/``No device found``, ``NET/Socket : Using``..."""
    if body.startswith(("NET/IB : No device found", "NET/IB: No device found")):
        return [_fact_net(who, role="ib", net="IB", no_device=True)]
    if m := _IB_USING.match(body):
        devices = tuple(
            (d["name"], to_int(d["port"]), d["ll"]) for d in _IB_DEV.finditer(m["list"])
        )
        return [
            _fact_net(
                who,
                role="ib",
                net="IB",
                ib_devices=devices,
                oob=m["oob"],
                relaxed_ordering=bool(m["ro"]),
            )
        ]
    if m := _IB_DEVICE.match(body):
        kv = {k["k"]: k["v"] for k in _IB_DEVICE_KV.finditer(m["rest"])}
        ar = to_int(kv.get("ar"))
        device = NcclIbDevice(
            cite=who.cite,
            rank=who.rank,
            host=who.host,
            pid=who.pid,
            device=who.device,
            index=to_int(m["i"]),
            name=m["name"],
            dev_name=m["dev"],
            port=to_int(m["port"]),
            link_layer=m["ll"],
            provider=kv.get("provider"),
            speed_mbits_s=to_int(kv.get("speed")),
            pci_path=kv.get("pciPath"),
            adaptive_routing=None if ar is None else ar != 0,
        )
        return [device]
    if (m := _USING_LIST.match(body)) and "threads" not in m["list"]:
        role = "bootstrap" if m["boot"] else ("socket" if m["net"] == "Socket" else None)
        return [_using_list(who, role, m["list"])] if role else []
    if "/Plugin" in body:
        plugin = _plugin(who, body)
        return [plugin] if plugin else []
    if "GPU Direct RDMA" in body and (g := _GDR.search(body)):
        return [_gdr(who, g)]
    return []


def _using_list(who: Who, role: str, text: str) -> NcclNet:
    """The ``[0]eth0:10.0.0.1<0> [1]...`` list of a Bootstrap or NET/Socket line."""
    interfaces: list[tuple[str, str]] = []
    ib_devices: list[tuple[str, int | None, str | None]] = []
    truncated = False
    for token in text.split():
        t = _IFACE.fullmatch(token)
        if t is None:
            truncated = True
            continue
        addr = t["addr"]
        if role == "bootstrap" and _PORT.fullmatch(addr):
            port = to_int(addr)
            ib_devices.append((t["name"], port if port is not None and port >= 0 else None, None))
            continue
        if "<" not in addr or not addr.endswith(">"):
            truncated = True
        interfaces.append((t["name"], addr))
    return _fact_net(
        who,
        role=role,
        net="Socket" if role == "socket" else None,
        interfaces=tuple(interfaces),
        ib_devices=tuple(ib_devices),
        truncated=truncated,
    )


def _gdr(who: Who, m: re.Match[str]) -> NcclGdr:
    """A ``GPU Direct RDMA Enabled|Disabled for ...`` line."""
    paren = m["paren"]
    distance: int | None = None
    limit: int | None = None
    reason: str | None = None
    if paren:
        if d := _DISTANCE.search(paren):
            distance, limit = to_int(d["d"]), to_int(d["limit"])
        else:
            reason = paren.strip() or None
    read = m["read"]
    return NcclGdr(
        cite=who.cite,
        rank=who.rank,
        host=who.host,
        pid=who.pid,
        device=who.device,
        enabled=m["state"] == "Enabled",
        net=m["net"],
        gpu=m["gpu"],
        hca=m["hca"],
        hca_name=m["name"],
        distance=distance,
        distance_limit=limit,
        read=None if read is None else read == "1",
        mode=m["mode"],
        reason=reason,
    )


def _plugin(who: Who, body: str) -> NcclPlugin | None:
    """A plugin search, load or assignment line."""
    if m := _PLUGIN_ASSIGNED.match(body):
        return NcclPlugin(
            cite=who.cite,
            rank=who.rank,
            host=who.host,
            pid=who.pid,
            device=who.device,
            plugin_type=m["type"],
            name=m["name"],
            loaded=m["verb"] != "Failed to initialize",
            message=body,
        )
    m = _PLUGIN.match(body)
    if m is None:
        return None
    kind, msg = m["type"], m["msg"].strip()
    name: str | None = None
    version: str | None = None
    loaded: bool | None = None
    if lm := _LOADED.search(msg):
        what = lm["what"]
        kind = _PLUGIN_WORD.get(what, kind) if what else kind
        name, version, loaded = lm["name"].strip().strip("'"), lm["v"], True
    elif nf := _NOT_FOUND.search(msg):
        name, loaded = (nf["a"] or nf["b"] or None), False
    elif msg.startswith(("Using internal", "Failed to load", "Plugin load returned")):
        loaded = False
    return NcclPlugin(
        cite=who.cite,
        rank=who.rank,
        host=who.host,
        pid=who.pid,
        device=who.device,
        plugin_type=kind,
        name=name,
        version=version,
        loaded=loaded,
        internal=True if "internal" in msg else None,
        message=msg,
    )


def _event(body: str) -> tuple[str, tuple[tuple[str, str], ...]] | None:
    """A milestone or notice line as (event, detail)."""
    if m := _RINGS.match(body):
        detail = (("pxn", m["pxn"]), ("gdr", m["gdr"])) if m["pxn"] is not None else ()
        return "connected-rings", detail
    if body.startswith("Connected all trees"):
        return "connected-trees", ()
    if body.startswith("Connected NVLS tree"):
        return "connected-nvls-tree", ()
    if m := _NVLS.search(body):
        nvls = [("available", "0" if m["not"] else "1"), ("dev", m["dev"])]
        if m["n"] is not None:
            nvls.append(("nchannels", m["n"]))
        return "nvls-support", tuple(nvls)
    if body.startswith("Loading topology file "):  # graph/topo.cc: NCCL_TOPO_FILE or nccl.conf's
        return "topology-file", (("path", body.removeprefix("Loading topology file ").strip()),)
    if body.startswith(("NVLS Bind mem", "NVLS comm 0x", "NVLS Unbind MC handle")):
        return "nvls-setup", ()  # transport/nvls.cc binding multicast memory for a communicator
    if m := _NVLS_BIND.search(body):
        bind = (("size_bytes", m["size"]), ("cuda_error_code", m["code"]), ("cuda_error", m["err"]))
        return "nvls-bind-failed", bind
    if m := _SMEM.search(body):  # enqueue.cc: its kernels need more than this GPU offers
        return "shared-mem-exceeds", (("need", m["need"]), ("max", m["max"]))
    if m := _SHARING.search(body):
        return "gpu-shared", (("ranks", f"{m['a']},{m['b']}"), ("bus_id", m["bus"].lower()))
    if m := _SOCKET_TYPE.search(body):
        return "socket-type-refused", (
            ("peer", m["peer"]),
            ("got", m["got"]),
            ("expected", m["want"]),
        )
    if m := _NET_COUNT.search(body):
        return "net-count", (("rank", m["rank"]), ("count", m["n"]), ("max", m["most"]))
    if m := _P2P_OFF.search(body):
        return "p2p-disabled", (("gpus", f"{m['a']},{m['b']}"),)
    if m := _RETRY.search(body):
        retry = [("call", m["call"] or m["call2"]), ("os_error", m["err"].strip())]
        if m["peer"]:
            retry.append(("peer", m["peer"]))
        number = errno_of(m["err"])
        if number is not None:
            retry.append(("errno", str(number)))
        return "connect-retry", tuple(retry)
    return None
