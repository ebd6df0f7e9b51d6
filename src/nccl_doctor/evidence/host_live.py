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

import importlib.metadata
import os
import re
import resource
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nccl_doctor.evidence.live import ReadLog, read_file, read_kmsg, run_command
from nccl_doctor.redact import redact, redact_env

MODULES = ("nvidia", "nvidia_uvm", "nvidia_peermem", "nv_peer_mem", "nvidia_fs", "nvidia_drm")
DEVICE_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-caps")
ENV_PREFIXES = ("NCCL_", "TORCH_NCCL_", "TORCH_DISTRIBUTED_", "CUDA_")
_KERNEL_LINE = re.compile(r"NVRM|nvidia|Xid|SXid|NVSwitch", re.IGNORECASE)
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
_SYSFS_NET = Path("/sys/class/net")


@dataclass(slots=True)
class HostRead:
    """What the host reads gave: evidence files by name, and host.json's data."""

    files: dict[str, str] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)


class _Reader:
    def __init__(self, log: ReadLog, timeout_s: float, root: Path) -> None:
        self.log, self.timeout_s, self.root = log, timeout_s, root

    def text(self, path: str) -> str | None:
        """A host file's text (re-rooted under ``root``), or ``None`` when unreadable."""
        return self.found(self.root / path.lstrip("/"))

    def found(self, path: Path) -> str | None:
        """The text of a file found under ``root`` (by a glob), or ``None``."""
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
    done = r.log.add(run_command(["dmesg"], r.timeout_s))
    source, lines = "dmesg", done.text.splitlines() if done.ok else []
    if not done.ok:
        kmsg = r.log.add(read_kmsg(r.timeout_s))
        if kmsg.ok:
            done, source = kmsg, "/dev/kmsg"
            lines = []
            for record in kmsg.text.splitlines():
                head, _, message = record.partition(";")
                parts = head.split(",")
                stamp = int(parts[2]) / 1e6 if len(parts) > 2 and parts[2].isdigit() else 0.0
                lines.append(f"[{stamp:12.6f}] {message}")
    kept = [redact(line) for line in lines if _KERNEL_LINE.search(line)]
    info = {"status": done.status, "source": source, "message": done.message, "lines": len(kept)}
    return info, ("\n".join(kept) + "\n") if kept else None


def _fabric_manager(r: _Reader, nodes: list[str]) -> dict[str, Any]:
    nvswitch = (
        any("nvswitch" in n for n in nodes) or (r.root / "proc/driver/nvidia-nvswitch").is_dir()
    )
    out: dict[str, Any] = {"nvswitch": nvswitch, "systemd_state": None, "process": None}
    if not nvswitch:
        return out
    if shutil.which("systemctl"):
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


def _shm(root: Path) -> dict[str, Any] | None:
    try:
        st = os.statvfs(root / "dev/shm")
    except OSError:
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


def _versions(kernel_version: str | None) -> dict[str, Any]:
    nccl = next(filter(None, (_version(f"nvidia-nccl-cu{v}") for v in (13, 12, 11))), None)
    library = None
    if nccl is None:
        nccl, library = _nccl_library()
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


def env_dump(environ: dict[str, str]) -> str | None:
    """``KEY=VALUE`` lines of the NCCL/torch-distributed/CUDA variables, secrets redacted."""
    lines = [
        redact_env(key, value)
        for key, value in sorted(environ.items())
        if key.startswith(ENV_PREFIXES) and not key.startswith("NCCL_DOCTOR_") and "\n" not in value
    ]
    return "\n".join(lines) + "\n" if lines else None


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
        "shm": _shm(root),
        "limits": {
            "memlock": _limit(resource.RLIMIT_MEMLOCK),
            "nofile": _limit(resource.RLIMIT_NOFILE),
        },
        "runtime": _runtime(r),
        "versions": _versions(kernel_version),
    }
    return out
