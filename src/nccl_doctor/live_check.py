"""``check`` and ``capture``: read the live node into a bundle, then diagnose the bundle.

A capture reads NVML (in a child process under a deadline) and the host,
and writes evidence files the existing parsers read (``nvidia-smi.xml``,
``nvidia-smi-errors.txt``, ``nvlink.txt``, ``kernel-log.txt``,
``proc-driver-nvidia-version.txt``, ``ibstatus.txt``, ``env.txt``) plus
``host.json`` (kind ``live-host``) and ``MANIFEST.json`` (what was read,
how long each read took, what failed). ``check`` diagnoses that folder with
the same pipeline as ``diagnose``, so ``diagnose bundle.tgz`` on a saved
capture gives the same report.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from nccl_doctor import __version__
from nccl_doctor.errors import UsageError
from nccl_doctor.evidence.host_live import read_host
from nccl_doctor.evidence.live import DEFAULT_TIMEOUT_S, Outcome, ReadLog
from nccl_doctor.evidence.nvml import Snapshot, read_nvml
from nccl_doctor.evidence.nvml_files import nvlink_text, smi_messages, smi_xml
from nccl_doctor.facts.live import NVML_OUTCOMES
from nccl_doctor.facts.store import Facts
from nccl_doctor.files import replace_file, write_file
from nccl_doctor.redact import redact, redact_data, scrub
from nccl_doctor.report import Report

#: The first line of host.json: the live-host parser's anchor.
HOST_JSON_HEAD = '{"nccl_doctor_live_host": 1,'
#: The folder name inside a bundle archive.
BUNDLE_DIR = "nccl-doctor-bundle"


@dataclass(frozen=True, slots=True)
class Capture:
    """A written capture: its folder, NVML snapshot and what each read gave."""

    folder: Path
    snapshot: Snapshot
    manifest: dict[str, Any]


def nvml_section(snap: Snapshot) -> dict[str, Any]:
    """host.json's ``nvml``: the outcome and the GPUs NVML lost."""
    lost = [
        {"index": g.get("index"), "bus_id": g.get("bus_id"), "message": g.get("message") or ""}
        for g in snap.get("gpus") or ()
        if g.get("lost")
    ]
    keys = ("outcome", "message", "timeout_s", "gpu_count", "driver_version", "cuda_driver_version")
    return {**{k: snap.get(k) for k in keys}, "lost": lost}


def _processes(snap: Snapshot) -> list[dict[str, Any]]:
    return [
        {
            "pid": p["pid"],
            "gpu_index": g.get("index"),
            "gpu_bus_id": g.get("bus_id"),
            "comm": p.get("comm"),
            "cmdline": redact(p["cmdline"]) if p.get("cmdline") else None,
            "uid": p.get("uid"),
        }
        for g in snap.get("gpus") or ()
        for p in g.get("processes") or ()
    ]


def host_json(data: dict[str, Any]) -> str:
    """host.json text: the anchor line, then one top-level key per line, secrets redacted."""
    lines = [HOST_JSON_HEAD]
    items = list(redact_data(data).items())
    for i, (key, value) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        lines.append(f" {json.dumps(key)}: {json.dumps(value, sort_keys=True)}{comma}")
    return "\n".join(lines) + "\n}\n"


def capture(
    folder: Path,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    nvml_module: str = "pynvml",
    nvml_env: dict[str, str] | None = None,
    root: Path = Path("/"),
    environ: dict[str, str] | None = None,
) -> Capture:
    """Read the node and write its evidence files into ``folder`` (created)."""
    folder.mkdir(parents=True, exist_ok=True)
    started = time.time()
    log = ReadLog()
    begin = time.monotonic()
    snap = read_nvml(timeout_s, module=nvml_module, env=nvml_env)
    log.add(
        Outcome(
            "nvml",
            "ok" if snap.get("outcome") == "ok" else str(snap.get("outcome")),
            message=str(snap.get("message") or ""),
            elapsed_s=time.monotonic() - begin,
        )
    )
    host = read_host(log, timeout_s, root=root, environ=environ)
    stamp = time.strftime("%a %b %d %H:%M:%S %Y", time.localtime(started))
    written = {
        "nvidia-smi.xml": smi_xml(snap, stamp),
        "nvidia-smi-errors.txt": smi_messages(snap),
        "nvlink.txt": nvlink_text(snap),
    }
    files = {**host.files, **{k: v for k, v in written.items() if v is not None}}
    hostname = socket.gethostname()
    data = {"hostname": hostname, "nvml": nvml_section(snap), **host.data}
    data["gpu_processes"] = _processes(snap)
    files["host.json"] = host_json(data)
    for name in list(files):  # a bundle is made to be shared: no secret in it
        if name != "host.json":
            files[name] = scrub(files[name])
    manifest = {
        "tool": "nccl-doctor",
        "version": __version__,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "hostname": hostname,
        "timeout_s": timeout_s,
        "files": sorted(files),
        "reads": log.manifest(),
        "failed": [e.what for e in log.entries if not e.ok],
    }
    files["MANIFEST.json"] = json.dumps(redact_data(manifest), indent=1, sort_keys=True) + "\n"
    try:
        for name, text in files.items():
            write_file(folder / name, text.encode("utf-8"))
    except OSError as exc:
        raise UsageError(
            f"cannot write the capture to {folder}: {exc.strerror or exc}",
            "free space there (a temporary folder: set TMPDIR to another file system)",
        ) from exc
    return Capture(folder, snap, manifest)


def write_bundle(cap: Capture, path: Path) -> Path:
    """The capture as a ``.tgz`` (or a folder when ``path`` has no archive suffix).

    Every file is synced before success is reported; a failure (a full disk)
    raises :class:`OSError` and leaves no partial bundle: a ``.tgz`` is
    written beside its path and renamed over it, a folder loses the files
    this call wrote (and the folder itself when this call made it).
    """
    names = sorted(p.name for p in cap.folder.iterdir() if p.is_file())
    if path.name.endswith((".tgz", ".tar.gz")):

        def fill(handle: BinaryIO) -> None:
            with tarfile.open(fileobj=handle, mode="w:gz") as archive:
                for name in names:
                    archive.add(cap.folder / name, arcname=f"{BUNDLE_DIR}/{name}")

        replace_file(path, fill)
        return path
    made = not path.exists()
    path.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    try:
        for name in names:
            written.append(path / name)
            write_file(path / name, (cap.folder / name).read_bytes())
    except OSError:
        for done in written:
            with contextlib.suppress(OSError):
                done.unlink()
        if made:
            with contextlib.suppress(OSError):
                path.rmdir()
        raise
    return path


def headline(snap: Snapshot) -> str | None:
    """The plain line a check without GPU state starts with, else ``None``."""
    outcome = str(snap.get("outcome"))
    if outcome == "ok" and snap.get("gpus"):
        return None
    why = NVML_OUTCOMES[outcome][0] if outcome in NVML_OUTCOMES else outcome
    detail = snap.get("message")
    plain = ("library_not_found", "driver_not_loaded", "no_devices", "version_mismatch")
    tail = f" ({detail})" if detail and outcome not in plain else ""
    return f"No GPU state: {why}{tail}. GPU checks were skipped; the rest of the node was checked."


def check(
    *, timeout_s: float = DEFAULT_TIMEOUT_S, nvml_module: str = "pynvml", keep: str | None = None
) -> tuple[Report, Capture]:
    """Capture into a temporary folder and diagnose it (``keep``: also save the bundle there)."""
    report, _, cap = check_with_facts(timeout_s=timeout_s, nvml_module=nvml_module, keep=keep)
    return report, cap


def check_with_facts(
    *, timeout_s: float = DEFAULT_TIMEOUT_S, nvml_module: str = "pynvml", keep: str | None = None
) -> tuple[Report, Facts, Capture]:
    """:func:`check`, with the facts the report was built from (the gate reads them)."""
    from nccl_doctor.evidence.reader import read_paths  # noqa: PLC0415 -- loads the parsers
    from nccl_doctor.pipeline import diagnose_with_facts  # noqa: PLC0415 -- loads the rules

    with tempfile.TemporaryDirectory(prefix="nccl-doctor-check-") as tmp:
        folder = Path(tmp) / BUNDLE_DIR
        cap = capture(folder, timeout_s=timeout_s, nvml_module=nvml_module)
        report, facts = diagnose_with_facts(read_paths([str(folder)], line_totals=False))
        if keep:
            _save(cap, Path(keep))
    return report, facts, cap


def _save(cap: Capture, path: Path) -> Path:
    try:
        return write_bundle(cap, path)
    except OSError as exc:
        raise UsageError(
            f"cannot write {path}: {exc.strerror or exc}; nothing was saved",
            "free space there or pick a writable path",
        ) from exc


def save(output: str, timeout_s: float = DEFAULT_TIMEOUT_S, nvml_module: str = "pynvml") -> Path:
    """Capture the node and write the bundle to ``output`` (``.tgz`` or a folder)."""
    with tempfile.TemporaryDirectory(prefix="nccl-doctor-capture-") as tmp:
        cap = capture(Path(tmp) / BUNDLE_DIR, timeout_s=timeout_s, nvml_module=nvml_module)
        return _save(cap, Path(output))


def nvml_module_name() -> str:
    """The NVML bindings module: ``pynvml``, or ``NCCL_DOCTOR_NVML_MODULE`` (tests, replays)."""
    return os.environ.get("NCCL_DOCTOR_NVML_MODULE") or "pynvml"
