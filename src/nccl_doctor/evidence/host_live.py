"""Live reads of the host around the GPUs: modules, /dev nodes, kernel log, RDMA, limits...

:func:`read_host` returns a :class:`HostRead`: the text files that existing
parsers read (the kernel log's NVIDIA lines, ``/proc/driver/nvidia/version``,
``ibstatus``-format RDMA ports, a ``KEY=VALUE`` dump of the NCCL/torch/CUDA
variables) and the ``host.json`` data of everything else. Every read goes
through :mod:`nccl_doctor.evidence.live` with the capture's deadline and is
logged; a read that fails is recorded (``denied``, ``missing``,
``timeout``), never raised. torch is never imported: its version comes from
the package metadata and NCCL's from the library file next to it.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import re
import resource
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nccl_doctor.evidence.envfile import env_file
from nccl_doctor.evidence.live import (
    Outcome,
    ReadLog,
    call,
    read_file,
    read_kmsg,
    run_command,
)
from nccl_doctor.redact import redact

MODULES = ("nvidia", "nvidia_uvm", "nvidia_peermem", "nv_peer_mem", "nvidia_fs", "nvidia_drm")
DEVICE_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-caps")
ENV_PREFIXES = ("NCCL_", "TORCH_NCCL_", "TORCH_DISTRIBUTED_", "CUDA_")
#: What the kernel log is read for (the rest of a busy or flooding log is not kept).
_KERNEL_LINE = re.compile(rb"NVRM|nvidia|Xid|SXid|NVSwitch", re.IGNORECASE)
_KERNEL_TEXT = re.compile(_KERNEL_LINE.pattern.decode(), re.IGNORECASE)
_MODULE_VERSION = re.compile(r"Kernel Module\s+(?:for \w+\s+)?(\d+\.\d+(?:\.\d+)?)")
_NCCL_FILE = re.compile(r"libnccl\.so\.(\d+\.\d+\.\d+)$")
_NCCL_BYTES = re.compile(rb"NCCL version (\d+\.\d+\.\d+)")
_CONTAINER_MARKS = (
    ("kubepods", "kubernetes"),
    ("docker", "docker"),
    ("containerd", "containerd"),
    ("libpod", "podman"),
    ("lxc", "lxc"),
)
_SYSFS_IB = Path("/sys/class/infiniband")
#: The error counters of an RDMA port kept for before/after deltas: the IB spec's
#: ``counters/`` (PortCounters, as perfquery names them in snake case) ...
IB_COUNTERS = (
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "port_rcv_errors",
    "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors",
    "port_xmit_discards",
    "port_xmit_constraint_errors",
    "port_rcv_constraint_errors",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "VL15_dropped",
    "port_xmit_wait",
)
#: ... and the transport errors mlx5 adds under ``hw_counters/``.
IB_HW_COUNTERS = (
    "local_ack_timeout_err",
    "packet_seq_err",
    "out_of_sequence",
    "rnr_nak_retry_err",
    "implied_nak_seq_err",
    "req_cqe_error",
    "resp_cqe_error",
    "req_remote_access_errors",
    "resp_remote_access_errors",
)
#: At most this many RDMA ports have their counters read.
MAX_IB_PORTS = 64
#: The host reads of one capture take at most this many per-read deadlines in all.
BUDGET_READS = 6
_SYSFS_NET = Path("/sys/class/net")


@dataclass(slots=True)
class HostRead:
    """What the host reads gave: evidence files by name, and host.json's data."""

    files: dict[str, str] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)


class _Reader:
    """The host reads of one capture: each under the per-read deadline, all under a budget.

    Reads that each time out (a wedged driver's sysfs files) would add up: once
    :data:`BUDGET_READS` deadlines' worth of time is spent, the reads left are
    logged as not read instead of waited for.
    """

    def __init__(self, log: ReadLog, timeout_s: float, root: Path) -> None:
        self.log, self.per_read_s, self.root = log, timeout_s, root
        self.budget_s = timeout_s * BUDGET_READS
        self.end = time.monotonic() + self.budget_s

    @property
    def timeout_s(self) -> float:
        """The deadline of the next read: the per-read one, or what is left of the budget."""
        return max(0.0, min(self.per_read_s, self.end - time.monotonic()))

    def spent(self, what: str) -> bool:
        """Whether the budget is spent (then ``what`` is logged as not read)."""
        if self.timeout_s > 0:
            return False
        message = f"not read: the capture's time budget ({self.budget_s:g} s) was spent"
        self.log.add(Outcome(what, "timeout", message=message))
        return True

    def text(self, path: str) -> str | None:
        """A host file's text (re-rooted under ``root``), or ``None`` when unreadable."""
        return self.found(self.root / path.lstrip("/"))

    def found(self, path: Path) -> str | None:
        """The text of a file found under ``root`` (by a glob), or ``None``."""
        if self.spent(str(path)):
            return None
        done = self.log.add(read_file(path, self.timeout_s))
        return done.text if done.ok else None

    def value(self, path: Path) -> str | None:
        """A sysfs value found under ``root``, stripped."""
        text = self.found(path)
        return text.strip() if text is not None else None


def _modules(r: _Reader) -> dict[str, bool] | None:
    text = r.text("/proc/modules")
    if text is None:
        return None
    loaded = {line.split(" ", 1)[0] for line in text.splitlines() if line}
    return {name: name in loaded for name in MODULES}


def _nodes(root: Path) -> tuple[dict[str, bool], list[str]]:
    dev = root / "dev"
    present = sorted(f"/dev/{p.name}" for p in dev.glob("nvidia*")) if dev.is_dir() else []
    nodes = {name: (root / name.lstrip("/")).exists() for name in DEVICE_NODES}
    return nodes, present


def _kernel_log(r: _Reader) -> tuple[dict[str, Any], str | None]:
    if r.spent("dmesg"):
        return {"status": "timeout", "source": "dmesg", "message": "not read", "lines": 0}, None
    done = r.log.add(run_command(["dmesg"], r.timeout_s, keep=_KERNEL_LINE))
    source, lines = "dmesg", done.text.splitlines() if done.ok else []
    if not done.ok and not r.spent("/dev/kmsg"):
        kmsg = r.log.add(read_kmsg(r.timeout_s, keep=_KERNEL_LINE))
        if kmsg.ok:
            done, source = kmsg, "/dev/kmsg"
            lines = []
            for record in kmsg.text.splitlines():
                head, _, message = record.partition(";")
                parts = head.split(",")
                stamp = int(parts[2]) / 1e6 if len(parts) > 2 and parts[2].isdigit() else 0.0
                lines.append(f"[{stamp:12.6f}] {message}")
    kept = [redact(line) for line in lines if _KERNEL_TEXT.search(line)]
    info = {"status": done.status, "source": source, "message": done.message, "lines": len(kept)}
    return info, ("\n".join(kept) + "\n") if kept else None


def _fabric_manager(r: _Reader, nodes: list[str]) -> dict[str, Any]:
    nvswitch = (
        any("nvswitch" in n for n in nodes) or (r.root / "proc/driver/nvidia-nvswitch").is_dir()
    )
    out: dict[str, Any] = {"nvswitch": nvswitch, "systemd_state": None, "process": None}
    if not nvswitch:
        return out
    if shutil.which("systemctl") and not r.spent("systemctl"):
        done = r.log.add(
            run_command(["systemctl", "is-active", "nvidia-fabricmanager"], r.timeout_s)
        )
        out["systemd_state"] = done.text.strip() or done.status
    proc = r.root / "proc"
    out["process"] = any(_comm(p).startswith("nv-fabricmanage") for p in proc.glob("[0-9]*/comm"))
    return out


def _comm(path: Path) -> str:
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return ""


def _ibstatus(r: _Reader) -> str | None:
    base = r.root / str(_SYSFS_IB).lstrip("/")
    blocks = []
    for port in sorted(base.glob("*/ports/*")):
        device, number = port.parent.parent.name, port.name
        fields = (
            ("default gid", r.value(port / "gids/0")),
            ("base lid", r.value(port / "lid")),
            ("sm lid", r.value(port / "sm_lid")),
            ("state", r.value(port / "state")),
            ("phys state", r.value(port / "phys_state")),
            ("rate", r.value(port / "rate")),
            ("link_layer", r.value(port / "link_layer")),
        )
        body = "".join(f"\t{key}:\t {value}\n" for key, value in fields if value is not None)
        blocks.append(f"Infiniband device '{device}' port {number} status:\n{body}")
    return "\n".join(blocks) if blocks else None


def _port_counters(port: Path) -> dict[str, int]:
    """The error counters of one port that exist and read as integers (a helper thread's job)."""
    out: dict[str, int] = {}
    for folder, names in (("counters", IB_COUNTERS), ("hw_counters", IB_HW_COUNTERS)):
        for name in names:
            try:
                with (port / folder / name).open("rb") as handle:
                    text = handle.read(64).decode("ascii", "replace").strip()
            except OSError:
                continue  # this HCA or driver does not have it
            if text.isdigit():
                out[name] = int(text)
    return out


def _ib_counters(r: _Reader) -> list[dict[str, Any]]:
    """Each RDMA port's error counters, one deadline per port (``ib_counters`` of host.json)."""
    base = r.root / str(_SYSFS_IB).lstrip("/")
    out: list[dict[str, Any]] = []
    for port in sorted(base.glob("*/ports/*"))[:MAX_IB_PORTS]:
        what = f"{port}/counters"
        if not port.name.isdigit() or r.spent(what):
            continue
        done, found = call(what, functools.partial(_port_counters, port), r.timeout_s)
        if found is None:
            r.log.add(done)
        elif found:
            out.append(
                {"device": port.parent.parent.name, "port": int(port.name), "counters": found}
            )
    return out


def _net(r: _Reader) -> list[dict[str, Any]]:
    out = []
    for dev in sorted((r.root / str(_SYSFS_NET).lstrip("/")).glob("*")):
        mtu = r.value(dev / "mtu")
        out.append(
            {
                "name": dev.name,
                "operstate": r.value(dev / "operstate"),
                "mtu": int(mtu) if mtu and mtu.isdigit() else None,
            }
        )
    return out


def _shm(r: _Reader) -> dict[str, Any] | None:
    if r.spent("statvfs /dev/shm"):
        return None
    done, st = call("statvfs /dev/shm", lambda: os.statvfs(r.root / "dev/shm"), r.timeout_s)
    if st is None:
        if done.status == "timeout":
            r.log.add(done)  # a stuck mount is worth saying; a missing one is not
        return None
    mib = 1024 * 1024
    size, free = st.f_blocks * st.f_frsize // mib, st.f_bavail * st.f_frsize // mib
    shm = "/dev/shm"  # noqa: S108 -- its size is reported; nothing is written there
    return {"path": shm, "size_mib": size, "free_mib": free, "used_mib": size - free}


def _limit(which: int) -> list[int | str]:
    soft, hard = resource.getrlimit(which)
    return [v if v != resource.RLIM_INFINITY else "unlimited" for v in (soft, hard)]


def _runtime(r: _Reader) -> dict[str, Any]:
    cgroup = r.text("/proc/1/cgroup") or ""
    kind = next((k for mark, k in _CONTAINER_MARKS if mark in cgroup), None)
    if kind is None and (r.root / ".dockerenv").exists():
        kind = "docker"
    if kind is None and (r.root / "run/.containerenv").exists():
        kind = "podman"
    version = r.text("/proc/version") or ""
    return {
        "container": kind is not None,
        "container_kind": kind,
        "windows_subsystem": "microsoft" in version.lower() if version else None,
        "kernel": version.strip()[:300] or None,
    }


def _nccl_library() -> tuple[str | None, str | None]:
    """(version, path) of the libnccl next to torch or in the nvidia-nccl wheel."""
    candidates: list[Path] = []
    for entry in sys.path:
        base = Path(entry or ".")
        for pattern in ("nvidia/nccl/lib/libnccl.so*", "torch/lib/libnccl*.so*"):
            candidates.extend(sorted(base.glob(pattern)))
    for lib in candidates:
        if named := _NCCL_FILE.search(lib.name):
            return named[1], str(lib)
        try:
            found = _scan(lib)
        except OSError:
            continue
        return found, str(lib)
    return None, None


def _scan(lib: Path, chunk: int = 8 << 20, limit: int = 512 << 20) -> str | None:
    """The ``NCCL version X`` string inside a library, read in chunks (no mapping)."""
    tail = b""
    seen = 0
    with lib.open("rb") as handle:
        while seen < limit and (block := handle.read(chunk)):
            seen += len(block)
            found = _NCCL_BYTES.search(tail + block)
            if found:
                return found[1].decode()
            tail = block[-64:]
    return None


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _versions(r: _Reader, kernel_version: str | None) -> dict[str, Any]:
    nccl = next(filter(None, (_version(f"nvidia-nccl-cu{v}") for v in (13, 12, 11))), None)
    library = None
    if nccl is None and not r.spent("libnccl version"):
        done, found = call("libnccl version", _nccl_library, r.timeout_s)
        if found is None:
            r.log.add(done)
        nccl, library = found or (None, None)
    return {
        "torch": _version("torch"),
        "nccl": nccl,
        "nccl_library": library,
        "python": sys.version.split()[0],
        "kernel_module": kernel_version,
    }


def process_details(pid: int) -> dict[str, Any]:
    """comm, command line and owner uid of ``pid`` from /proc (``None`` where unreadable)."""
    base = Path("/proc") / str(pid)
    out: dict[str, Any] = {"comm": None, "cmdline": None, "uid": None}
    try:
        out["comm"] = (base / "comm").read_text(errors="replace").strip() or None
        raw = (base / "cmdline").read_bytes()
        out["cmdline"] = " ".join(a.decode("utf-8", "replace") for a in raw.split(b"\0") if a)
        for line in (base / "status").read_text(errors="replace").splitlines():
            if line.startswith("Uid:") and len(line.split()) > 1:
                out["uid"] = int(line.split()[1])
    except (OSError, ValueError):
        pass  # gone, or another PID namespace: what was read stays
    return out


def _wanted(name: str) -> bool:
    return name.startswith(ENV_PREFIXES) and not name.startswith("NCCL_DOCTOR_")


def env_dump(environ: dict[str, str]) -> str | None:
    """``KEY=VALUE`` lines of the NCCL/torch-distributed/CUDA variables (see ``envfile``)."""
    return env_file(environ, _wanted) or None


def read_host(
    log: ReadLog, timeout_s: float, *, root: Path = Path("/"), environ: dict[str, str] | None = None
) -> HostRead:
    """Everything the host tells (``root`` re-roots the file reads, for tests)."""
    r = _Reader(log, timeout_s, root)
    out = HostRead()
    version_text = r.text("/proc/driver/nvidia/version")
    kernel_version = None
    if version_text:
        out.files["proc-driver-nvidia-version.txt"] = version_text
        if m := _MODULE_VERSION.search(version_text):
            kernel_version = m[1]
    nodes, present = _nodes(root)
    kernel, kernel_text = _kernel_log(r)
    if kernel_text:
        out.files["kernel-log.txt"] = kernel_text
    if ib := _ibstatus(r):
        out.files["ibstatus.txt"] = ib
    if env := env_dump(dict(os.environ) if environ is None else environ):
        out.files["env.txt"] = env
    out.data = {
        "modules": _modules(r),
        "device_nodes": nodes,
        "nvidia_nodes": present,
        "fabric_manager": _fabric_manager(r, present),
        "kernel_log": kernel,
        "net": _net(r),
        "ib_counters": _ib_counters(r),
        "shm": _shm(r),
        "limits": {
            "memlock": _limit(resource.RLIMIT_MEMLOCK),
            "nofile": _limit(resource.RLIMIT_NOFILE),
        },
        "runtime": _runtime(r),
        "versions": _versions(r, kernel_version),
    }
    return out
