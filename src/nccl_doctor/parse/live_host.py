"""The ``live-host`` kind: the ``host.json`` of an ``nccl-doctor check``/``capture`` bundle.

The file starts with the line ``{"nccl_doctor_live_host": 1,`` and holds one
top-level key per line (``"nvml": {...},``), closed by a lone ``}``; each
fact cites the line of its key. It carries what no tool's text output says
(see :mod:`nccl_doctor.facts.live`); the GPU state of the same capture is in
its nvidia-smi XML. Odd or partial JSON yields the facts of the keys that
could be read, never an exception.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.live import (
    CaptureHost,
    DeviceNode,
    FabricManagerState,
    GpuProcessOwner,
    HostLimits,
    HostRuntime,
    KernelLogAccess,
    KernelModule,
    LibraryVersions,
    NetInterface,
    NvmlOutcome,
    ShmInfo,
)
from nccl_doctor.facts.net import IbPortCounters
from nccl_doctor.parse._values import cite
from nccl_doctor.parse.base import BlockParser

_HEAD = '{"nccl_doctor_live_host"'


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _num(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _bool(value: object) -> bool | None:
    return value if isinstance(value, bool) else None


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _nvml(v: Any, at: dict[str, Any]) -> list[Fact]:
    d = _dict(v)
    if not _str(d.get("outcome")):
        return []
    facts: list[Fact] = [
        NvmlOutcome(
            **at,
            outcome=str(d["outcome"]),
            message=_str(d.get("message")) or "",
            timeout_s=_num(d.get("timeout_s")),
            gpu_count=_int(d.get("gpu_count")),
            driver_version=_str(d.get("driver_version")),
            cuda_driver_version=_str(d.get("cuda_driver_version")),
        )
    ]
    for gpu in _list(d.get("lost")):
        g = _dict(gpu)
        facts.append(
            NvmlOutcome(
                **at,
                outcome="gpu_lost",
                message=_str(g.get("message")) or "",
                gpu_index=_int(g.get("index")),
                bus_id=_str(g.get("bus_id")),
            )
        )
    return facts


def _hostname(v: Any, at: dict[str, Any]) -> list[Fact]:
    return [CaptureHost(**at, hostname=name)] if (name := _str(v)) else []


def _modules(v: Any, at: dict[str, Any]) -> list[Fact]:
    return [
        KernelModule(**at, name=k, loaded=bool(x))
        for k, x in _dict(v).items()
        if _bool(x) is not None
    ]


def _nodes(v: Any, at: dict[str, Any]) -> list[Fact]:
    return [
        DeviceNode(**at, path=k, present=bool(x))
        for k, x in _dict(v).items()
        if _bool(x) is not None
    ]


def _listed(v: Any, at: dict[str, Any]) -> list[Fact]:
    return [DeviceNode(**at, path=p, present=True, listed=True) for p in _list(v) if _str(p)]


def _fabric(v: Any, at: dict[str, Any]) -> list[Fact]:
    d = _dict(v)
    if _bool(d.get("nvswitch")) is None:
        return []
    return [
        FabricManagerState(
            **at,
            nvswitch=bool(d["nvswitch"]),
            systemd_state=_str(d.get("systemd_state")),
            process_running=_bool(d.get("process")),
        )
    ]


def _kernel(v: Any, at: dict[str, Any]) -> list[Fact]:
    d = _dict(v)
    if not _str(d.get("status")):
        return []
    return [
        KernelLogAccess(
            **at,
            status=str(d["status"]),
            source=_str(d.get("source")),
            message=_str(d.get("message")) or "",
            lines=_int(d.get("lines")) or 0,
        )
    ]


def _net(v: Any, at: dict[str, Any]) -> list[Fact]:
    out: list[Fact] = []
    for item in _list(v):
        d = _dict(item)
        if name := _str(d.get("name")):
            out.append(
                NetInterface(
                    **at, name=name, operstate=_str(d.get("operstate")), mtu=_int(d.get("mtu"))
                )
            )
    return out


def _shm(v: Any, at: dict[str, Any]) -> list[Fact]:
    d = _dict(v)
    if not _str(d.get("path")):
        return []
    return [
        ShmInfo(
            **at,
            path=str(d["path"]),
            size_mib=_int(d.get("size_mib")),
            used_mib=_int(d.get("used_mib")),
            free_mib=_int(d.get("free_mib")),
        )
    ]


def _limits(v: Any, at: dict[str, Any]) -> list[Fact]:
    d = _dict(v)
    memlock, nofile = _list(d.get("memlock")), _list(d.get("nofile"))
    if len(memlock) != 2 or len(nofile) != 2:
        return []
    return [
        HostLimits(
            **at,
            memlock_soft_bytes=_int(memlock[0]),
            memlock_hard_bytes=_int(memlock[1]),
            memlock_unlimited=memlock[0] == "unlimited",
            nofile_soft=_int(nofile[0]),
            nofile_hard=_int(nofile[1]),
        )
    ]


def _runtime(v: Any, at: dict[str, Any]) -> list[Fact]:
    d = _dict(v)
    if _bool(d.get("container")) is None:
        return []
    return [
        HostRuntime(
            **at,
            container=bool(d["container"]),
            container_kind=_str(d.get("container_kind")),
            wsl=_bool(d.get("windows_subsystem")),
            kernel=_str(d.get("kernel")),
        )
    ]


def _versions(v: Any, at: dict[str, Any], nvml: dict[str, Any]) -> list[Fact]:
    d = _dict(v)
    if not d:
        return []
    return [
        LibraryVersions(
            **at,
            torch_version=_str(d.get("torch")),
            nccl_version=_str(d.get("nccl")),
            nccl_library=_str(d.get("nccl_library")),
            python_version=_str(d.get("python")),
            kernel_module_version=_str(d.get("kernel_module")),
            driver_version=_str(nvml.get("driver_version")),
            cuda_driver_version=_str(nvml.get("cuda_driver_version")),
        )
    ]


def _procs(v: Any, at: dict[str, Any]) -> list[Fact]:
    out: list[Fact] = []
    for item in _list(v):
        d = _dict(item)
        if (pid := _int(d.get("pid"))) is not None:
            out.append(
                GpuProcessOwner(
                    **at,
                    pid=pid,
                    gpu_index=_int(d.get("gpu_index")),
                    gpu_bus_id=_str(d.get("gpu_bus_id")),
                    comm=_str(d.get("comm")),
                    cmdline=_str(d.get("cmdline")),
                    uid=_int(d.get("uid")),
                )
            )
    return out


def _ib_counters(v: Any, at: dict[str, Any]) -> list[Fact]:
    out: list[Fact] = []
    for item in _list(v):
        d = _dict(item)
        device, port = _str(d.get("device")), _int(d.get("port"))
        counters = tuple(
            (k, x) for k, x in sorted(_dict(d.get("counters")).items()) if _int(x) is not None
        )
        if device and port is not None and counters:
            out.append(IbPortCounters(**at, device=device, port=port, counters=counters))
    return out


_Section = Callable[[Any, dict[str, Any]], list[Fact]]
_SECTIONS: dict[str, _Section] = {
    "hostname": _hostname,
    "ib_counters": _ib_counters,
    "nvml": _nvml,
    "modules": _modules,
    "device_nodes": _nodes,
    "nvidia_nodes": _listed,
    "fabric_manager": _fabric,
    "kernel_log": _kernel,
    "net": _net,
    "shm": _shm,
    "limits": _limits,
    "runtime": _runtime,
    "gpu_processes": _procs,
}


def _key_lines(block: Sequence[Line]) -> dict[str, Line]:
    out: dict[str, Line] = {}
    for line in block[1:]:
        text = line.text
        if text.startswith(' "') and '":' in text:
            out.setdefault(text[2 : text.index('":')], line)
    return out


class LiveHostParser(BlockParser):
    """Parses a capture bundle's ``host.json``."""

    kind = "live-host"
    anchors = (_HEAD,)
    max_lines = 1_000

    def starts(self, line: Line) -> bool:
        """The ``{"nccl_doctor_live_host": 1,`` first line."""
        return line.text.startswith(_HEAD)

    def accepts(self, line: Line, block: Sequence[Line]) -> bool:
        """Every line up to the closing ``}``."""
        return bool(block) and block[-1].text.rstrip() != "}"

    def parse(self, block: Sequence[Line]) -> list[Fact]:
        """One fact (or a few) per key of host.json."""
        if not block:
            return []
        try:
            data = json.loads("\n".join(line.text for line in block))
        except (ValueError, RecursionError):
            data = None
        if not isinstance(data, dict):
            return []
        lines = _key_lines(block)
        facts: list[Fact] = []
        for key, value in data.items():
            line = lines.get(key, block[0])
            at: dict[str, Any] = {"cite": cite(line), "rank": line.rank, "host": line.host}
            if key == "versions":
                facts.extend(_versions(value, at, _dict(data.get("nvml"))))
            elif section := _SECTIONS.get(key):
                facts.extend(section(value, at))
        return facts
