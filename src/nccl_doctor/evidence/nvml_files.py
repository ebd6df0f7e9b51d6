"""An NVML snapshot written as the files nvidia-smi would have printed.

:func:`smi_xml` writes ``nvidia-smi -q -x`` XML (the elements
:mod:`nccl_doctor.parse.nvidia_smi_xml` reads, under their DTD names),
:func:`nvlink_text` the ``nvidia-smi nvlink -s``/``-e`` text, and
:func:`smi_messages` the lines nvidia-smi prints when NVML cannot run
(``Failed to initialize NVML: Driver/library version mismatch``, ``Unable
to determine the device handle for GPU...: GPU is lost``). So a saved bundle
is read back by the existing parsers into the same facts the live read gave.
Values NVML did not give are ``N/A``; a field that failed with NVML's
unknown error is ``Unknown Error``, as nvidia-smi prints it.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable
from typing import Any

from nccl_doctor.evidence.nvml import REASON_BITS, Snapshot
from nccl_doctor.redact import redact

_NA = "N/A"


def _yes(value: object) -> str:
    return _NA if value is None else ("Yes" if value else "No")


def _enabled(value: object) -> str:
    return _NA if value is None else ("Enabled" if value else "Disabled")


class _Gpu:
    """Writes one ``<gpu>`` element; knows which fields read as Unknown Error."""

    def __init__(self, parent: ET.Element, gpu: dict[str, Any]) -> None:
        self.gpu = gpu
        self.errors = set(gpu.get("errors") or ())
        self.node = ET.SubElement(parent, "gpu", id=gpu.get("bus_id") or _NA)

    def put(
        self,
        parent: ET.Element,
        tag: str,
        key: str,
        fmt: Callable[[Any], str] = str,
        error: str | None = None,
    ) -> None:
        value = self.gpu.get(key)
        if (error or key) in self.errors:
            text = "Unknown Error"
        else:
            text = _NA if value is None else fmt(value)
        ET.SubElement(parent, tag).text = text

    def section(self, tag: str, parent: ET.Element | None = None) -> ET.Element:
        return ET.SubElement(self.node if parent is None else parent, tag)


def _write_gpu(root: ET.Element, gpu: dict[str, Any]) -> None:
    w = _Gpu(root, gpu)
    node = w.node
    w.put(node, "product_name", "name")
    w.put(node, "persistence_mode", "persistence_mode", _enabled)
    mig = w.section("mig_mode")
    w.put(mig, "current_mig", "mig_mode", _enabled)
    w.put(mig, "pending_mig", "mig_mode_pending", _enabled)
    migs = w.section("mig_devices")
    for dev in gpu.get("mig_devices") or ():
        item = ET.SubElement(migs, "mig_device")
        for tag in ("index", "gpu_instance_id", "compute_instance_id"):
            ET.SubElement(item, tag).text = _NA if dev.get(tag) is None else str(dev[tag])
        fb = ET.SubElement(item, "fb_memory_usage")
        for tag in ("total", "used"):
            value = dev.get(f"memory_{tag}_mib")
            ET.SubElement(fb, tag).text = _NA if value is None else f"{value} MiB"
    if not len(migs):
        migs.text = "None"
    w.put(node, "serial", "serial")
    w.put(node, "uuid", "uuid")
    pci = w.section("pci")
    w.put(pci, "pci_bus_id", "bus_id")
    link = w.section("pci_gpu_link_info", pci)
    gen = w.section("pcie_gen", link)
    w.put(gen, "max_link_gen", "pcie_gen_max", error="pcie")
    w.put(gen, "current_link_gen", "pcie_gen_current", error="pcie")
    w.put(gen, "max_device_link_gen", "pcie_gen_device_max", error="pcie")
    widths = w.section("link_widths", link)
    w.put(widths, "max_link_width", "pcie_width_max", lambda v: f"{v}x", error="pcie")
    w.put(widths, "current_link_width", "pcie_width_current", lambda v: f"{v}x", error="pcie")
    w.put(pci, "replay_counter", "pcie_replays")
    reasons = gpu.get("clocks_event_reasons")
    if reasons is not None:
        events = w.section("clocks_event_reasons")
        for _, name in REASON_BITS:
            state = "Active" if name in reasons else "Not Active"
            ET.SubElement(events, f"clocks_event_reason_{name}").text = state
    fb = w.section("fb_memory_usage")
    w.put(fb, "total", "memory_total_mib", lambda v: f"{v} MiB", error="memory")
    w.put(fb, "used", "memory_used_mib", lambda v: f"{v} MiB", error="memory")
    w.put(node, "compute_mode", "compute_mode")
    util = w.section("utilization")
    w.put(util, "gpu_util", "utilization_gpu_pct", lambda v: f"{v} %", error="utilization")
    w.put(util, "memory_util", "utilization_memory_pct", lambda v: f"{v} %", error="utilization")
    ecc = w.section("ecc_mode")
    w.put(ecc, "current_ecc", "ecc_mode", _enabled)
    w.put(ecc, "pending_ecc", "ecc_mode_pending", _enabled)
    errors = w.section("ecc_errors")
    for scope in ("volatile", "aggregate"):
        part = w.section(scope, errors)
        w.put(w.section("single_bit", part), "total", f"ecc_{scope}_corrected")
        w.put(w.section("double_bit", part), "total", f"ecc_{scope}_uncorrected")
    retired = w.section("retired_pages")
    single = w.section("multiple_single_bit_retirement", retired)
    w.put(single, "retired_count", "retired_pages_single_bit")
    w.put(w.section("double_bit_retirement", retired), "retired_count", "retired_pages_double_bit")
    w.put(retired, "pending_retirement", "retired_pages_pending", _yes, error="retired_pages")
    rows = gpu.get("remapped_rows")
    remap = w.section("remapped_rows")
    for tag, position, fmt in (
        ("remapped_row_corr", 0, str),
        ("remapped_row_unc", 1, str),
        ("remapped_row_pending", 2, _yes),
        ("remapped_row_failure", 3, _yes),
    ):
        if "remapped_rows" in w.errors:
            text = "Unknown Error"
        else:
            text = _NA if rows is None else fmt(rows[position])
        ET.SubElement(remap, tag).text = text
    temperature = w.section("temperature")
    w.put(temperature, "gpu_temp", "temperature_c", lambda v: f"{v} C", error="temperature")
    power = w.section("gpu_power_readings")
    w.put(power, "power_draw", "power_draw_w", lambda v: f"{v:.2f} W")
    w.put(power, "current_power_limit", "power_limit_w", lambda v: f"{v:.2f} W")
    fabric = w.section("fabric")
    w.put(fabric, "state", "fabric_state")
    w.put(fabric, "status", "fabric_status")
    procs = w.section("processes")
    for proc in gpu.get("processes") or ():
        info = ET.SubElement(procs, "process_info")
        for tag in ("gpu_instance_id", "compute_instance_id", "pid"):
            ET.SubElement(info, tag).text = _NA if proc.get(tag) is None else str(proc[tag])
        ET.SubElement(info, "type").text = "C"
        ET.SubElement(info, "process_name").text = redact(_process_name(proc))
        used = proc.get("used_memory_mib")
        ET.SubElement(info, "used_memory").text = _NA if used is None else f"{used} MiB"


def _process_name(proc: dict[str, Any]) -> str:
    """The executable as nvidia-smi names it: the command line's first word, else comm."""
    cmdline = (proc.get("cmdline") or "").split(" ", 1)[0]
    return cmdline or proc.get("comm") or ""


def smi_xml(snap: Snapshot, timestamp: str) -> str | None:
    """``nvidia-smi -q -x`` XML of a snapshot that has GPUs, else ``None``."""
    gpus = [g for g in snap.get("gpus") or () if g.get("bus_id") and not g.get("lost")]
    if snap.get("outcome") != "ok" or not gpus:
        return None
    root = ET.Element("nvidia_smi_log")
    ET.SubElement(root, "timestamp").text = timestamp
    for tag, key in (("driver_version", "driver_version"), ("cuda_version", "cuda_driver_version")):
        ET.SubElement(root, tag).text = snap.get(key) or _NA
    ET.SubElement(root, "attached_gpus").text = str(snap.get("gpu_count") or len(gpus))
    for gpu in gpus:
        _write_gpu(root, gpu)
    ET.indent(root, space="\t")
    body = ET.tostring(root, encoding="unicode", short_empty_elements=False)
    return '<?xml version="1.0" ?>\n' + body + "\n"


def smi_messages(snap: Snapshot) -> str | None:
    """The lines nvidia-smi prints for the snapshot's failures, else ``None``."""
    outcome, message = snap.get("outcome"), snap.get("message") or ""
    lines: list[str] = []
    if outcome == "version_mismatch":
        lines.append("Failed to initialize NVML: Driver/library version mismatch")
    elif outcome == "driver_not_loaded":
        lines.append(
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
            "Make sure that the latest NVIDIA driver is installed and running."
        )
    elif outcome in ("init_failed", "no_permission"):
        lines.append(f"Failed to initialize NVML: {message or 'Unknown Error'}")
    elif outcome == "no_devices":
        lines.append("No devices were found")
    for gpu in snap.get("gpus") or ():
        if gpu.get("lost"):
            where = f"{gpu['bus_id']}: " if gpu.get("bus_id") else ""
            lines.append(
                f"Unable to determine the device handle for GPU{gpu['index']}: {where}GPU is lost. "
                "Reboot the system to recover this GPU"
            )
    return "\n".join(lines) + "\n" if lines else None


def nvlink_text(snap: Snapshot) -> str | None:
    """``nvidia-smi nvlink -s`` and ``-e`` text of the GPUs with NVLinks, else ``None``."""
    out: list[str] = []
    for gpu in snap.get("gpus") or ():
        links = gpu.get("nvlinks") or []
        if not links:
            continue
        out.append(f"GPU {gpu['index']}: {gpu.get('name') or 'GPU'} (UUID: {gpu.get('uuid')})")
        for link in links:
            speed = link.get("speed_mbps")
            if not link.get("active"):
                state = "<inactive>"
            else:
                state = f"{speed / 1000:.3f} GB/s" if isinstance(speed, int) else "<active>"
            out.append(f"\t Link {link['link']}: {state}")
        for link in links:
            for label, count in (link.get("errors") or {}).items():
                out.append(f"\t Link {link['link']}: {label}: {count}")
    return "\n".join(out) + "\n" if out else None
