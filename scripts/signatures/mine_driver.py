"""Write ``driver.jsonl``: what the NVIDIA driver and its tools print when the GPU stack fails.

Usage: ``python scripts/signatures/mine_driver.py [DCGM] [OPEN_GPU_KERNEL_MODULES]
[LIBNVIDIA_CONTAINER] [GO_NVML]`` (git directories; the defaults are the mirrors under
``/work/.mirror``).

* NVML's error strings: ``nvmlErrorString`` is closed source; NVIDIA's DCGM
  carries NVML's table (``sdk/nvidia/nvml/nvml_error_strings.h``, the
  ``nvmlReturn_t`` numbers in ``dcgm_nvml.h``), read at DCGM release tags.
  A string is a signature only in the places it reaches a log:
  ``Failed to initialize NVML: <text>`` (nvidia-smi, DCGM, the device
  plugin), pynvml's ``NVMLError_<Name>: <text>`` and libnvidia-container's
  ``nvml error: <text>`` (lower-cased there). The codes whose text says nothing
  about a failure of the stack (``Timeout``, ``Invalid Argument``...) are
  left out; ``Not Supported`` and ``Function Not Found`` are ``info``: a
  monitoring library's query the GPU or driver does not offer, never the
  job's failure. NVIDIA's go-nvml (the NVIDIA container toolkit, the Kubernetes
  device plugin, dcgm-exporter) prints a code by its name since v0.12.0-3
  (``Failed to initialize NVML: ERROR_LIBRARY_NOT_FOUND``): each kept code has
  a second entry for that name, read from go-nvml's ``pkg/nvml/return.go`` at
  its tags (the number from its ``nvml.h``). A name that a CUDA driver error
  also ends in (``CUDA_ERROR_UNKNOWN``) needs ``NVML_`` or ``NVML: `` before it.
* NVRM's kernel lines: ``nv_printf``/``NV_DEV_PRINTF`` and nvidia-uvm's
  ``UVM_ERR_PRINT`` calls in NVIDIA's open GPU kernel modules, at release tags
  (the open modules start at 515; the proprietary ones print the same words).
  A multi-line message's pattern covers the line that names it.
* NVSwitch SXids: ``NVSWITCH_PRINT_SXID`` (``nvidia-%s: SXid (PCI:%04x:%02x:%02x.%x):
  %05d, <fmt>``, ``src/common/nvswitch/kernel/inc/common_nvswitch.h``) and the
  severity each report macro of ``intr_nvswitch.h`` starts its text with
  (``Fatal, ...``, ``Non-fatal, ...``, ``Correctable, ...``), at the same tags.
  A fatal SXid is fatal to the fabric: the GPUs behind the switch lose their
  NVLink traffic (``gpu.nvlink``); the others are no failure of the job.
* libnvidia-container (``nvidia-container-cli``, what Docker's ``--gpus`` and
  the NVIDIA container runtime run): the CLI's ``warnx`` lines (prefixed by
  the program's name) and the library's ``error_set*`` messages (``<message>:
  <cause>``, the cause lower-cased), at release commits. NVIDIA's repository
  holds gigabytes of package pages; a fork that carries its history to
  2024-10-17 is read (:data:`NVC_MIRROR`).
* DCGM's failure reports (``dcgmi diag``, ``dcgmi health``): the messages of
  ``dcgm_errors.h`` for the codes that report the GPU's own health, at the DCGM
  tags (:mod:`dcgm_reports`).
* nvidia-smi's own lines, the fabric manager's (``nv-fabricmanager``) and kmod's
  ``could not insert``: closed source or outside these repositories, kept in
  :data:`DOC_ROWS` with their source.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import dcgm_reports
from clex import blank_comments, find_calls, read_format
from common import PRI_MACROS, PRINTF, escape, pattern_for, write_jsonl

from nccl_doctor.knowledge import cuda_errors

MIRRORS = Path("/work/.mirror")
DCGM_MIRROR = MIRRORS / "NVIDIA+DCGM/repo"
OGKM_MIRROR = MIRRORS / "NVIDIA+open-gpu-kernel-modules/repo"
NVC_MIRROR = MIRRORS / "KevinLiangX+libnvidia-container/repo"
GO_NVML_MIRROR = MIRRORS / "NVIDIA+go-nvml/repo"
GO_NVML_TAGS = ("v0.12.0-3", "v0.12.4-0", "v0.12.9-0", "v0.13.3-0")
GO_NVML_RETURN = "pkg/nvml/return.go"
GO_NVML_HEADER = "pkg/nvml/nvml.h"

DCGM_TAGS = ("v2.1.4", "v3.0.4", "v3.3.9", "v4.0.0", "v4.6.0")
NVML_STRINGS = "sdk/nvidia/nvml/nvml_error_strings.h"
NVML_HEADER = "sdk/nvidia/nvml/dcgm_nvml.h"
OGKM_TAGS = ("515.43.04", "525.85.12", "535.146.02", "550.127.05", "570.211.01", "580.126.16",
             "595.45.04")  # fmt: skip
OGKM_FILES = (
    "kernel-open/nvidia/nv.c",
    "src/nvidia/arch/nvalloc/unix/src/osapi.c",
    "src/nvidia/arch/nvalloc/unix/src/osinit.c",
    "kernel-open/nvidia-uvm/uvm.c",
)
# release commits ("Bump version to ..."): the fork has no tags
NVC_COMMITS = (("e3a2035", "nvc-1.0.0-rc.2"), ("7f13d03", "nvc-1.3.0"), ("20f53b0", "nvc-1.7.0"),
               ("ac1bcd9", "nvc-1.11.0"), ("3796f7f", "nvc-1.13.1"),
               ("63d366e", "nvc-2024-10-17"))  # fmt: skip
PCI = "%04x:%02x:%02x.%x"

# nvmlReturn_t name -> (symptom, hints, bare: the text alone is distinctive enough)
NVML_KEEP: dict[str, tuple[str, tuple[str, ...], bool]] = {
    # the kernel module is not loaded (never installed, not built for the running kernel,
    # refused by Secure Boot) or, in a container, its device nodes were not passed in
    "NVML_ERROR_DRIVER_NOT_LOADED": ("driver_error", ("driver.version_mismatch",
                                                      "driver.container"), False),
    "NVML_ERROR_LIB_RM_VERSION_MISMATCH": ("driver_error", ("driver.version_mismatch",), True),
    # nvmlInit's catch-all: in a container, the device cgroup lost /dev/nvidia* (a systemd
    # reload on cgroup v2 hosts) or the runtime injected other driver libraries
    "NVML_ERROR_UNKNOWN": ("driver_error", ("driver.container",), False),
    "NVML_ERROR_NO_PERMISSION": ("driver_error", ("driver.container",), False),
    "NVML_ERROR_OPERATING_SYSTEM": ("driver_error", ("driver.container",), True),
    "NVML_ERROR_LIBRARY_NOT_FOUND": ("library_missing", ("driver.container",), True),
    "NVML_ERROR_GPU_IS_LOST": ("xid", ("gpu.lost",), False),
    "NVML_ERROR_RESET_REQUIRED": ("xid", ("gpu.lost", "gpu.xid"), False),
    "NVML_ERROR_IRQ_ISSUE": ("driver_error", ("gpu.lost",), False),
    "NVML_ERROR_CORRUPTED_INFOROM": ("driver_error", ("gpu.xid",), False),
    "NVML_ERROR_INSUFFICIENT_POWER": ("driver_error", ("gpu.thermal_power",), False),
    "NVML_ERROR_NOT_SUPPORTED": ("info", (), False),
    "NVML_ERROR_FUNCTION_NOT_FOUND": ("info", (), False),
}  # fmt: skip

# codes newer than DCGM's nvml_error_strings.h (27-29, from nvml.h of driver 550 on): no open
# source carries their nvmlErrorString text (go-nvml and pynvml ask the library for it), so
# each is read by pynvml's exception class (``NVMLError_GpuNotFound: ...``, generated from
# the NVML_ERROR_ constants of NVIDIA's pynvml, which DCGM carries as dcgm_nvml.py) and by
# its C name (``NVML_ERROR_GPU_NOT_FOUND``: go-nvml's Return.Error() has no name for them,
# it prints the library's text). RESET_TYPE_NOT_SUPPORTED (30), a reset request's answer, is
# no failure of the stack and is left out.
NVML_NEWER: dict[str, tuple[str, tuple[str, ...]]] = {
    # "The system is not ready for the request": the GPUs have not finished coming up; on an
    # NVSwitch system they wait for the fabric manager (CUDA's counterpart is 802, system not
    # yet initialized), elsewhere the GPU is not answering
    "NVML_ERROR_NOT_READY": ("driver_error", ("gpu.fabric_manager", "gpu.lost")),
    # "No GPUs were found": none passed into the container, or none came up on the host
    "NVML_ERROR_GPU_NOT_FOUND": ("driver_error", ("driver.container", "gpu.lost")),
    # "Resource not in correct state to perform requested operation": a GPU left in a state
    # only a reset clears (or a confidential-computing ready state not yet set)
    "NVML_ERROR_INVALID_STATE": ("driver_error", ("gpu.lost", "gpu.xid")),
}  # fmt: skip
PYNVML = "testing/python3/dcgm_nvml.py"

# (id, anchor over the format, symptom, hints)
NVRM_KEEP: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    # a user-space component (libcuda, libnvidia-ml) of another build than the loaded module
    ("driver.nvrm.api_mismatch", r"API mismatch: the client", "driver_error",
     ("driver.version_mismatch",)),
    # the driver could not bring the GPU up: it fell off the bus, its firmware (GSP) or
    # power failed, or it is no longer answering
    ("driver.nvrm.rm_init_adapter_failed", r"RmInitAdapter failed|rm_init_adapter failed",
     "driver_error", ("gpu.lost", "gpu.xid")),
    ("driver.nvrm.gpu_not_supported", r"installed in this system is not supported by the",
     "driver_error", ("driver.version_mismatch",)),
    ("driver.nvrm.no_gpu_found", r"NVRM: No NVIDIA GPU found", "driver_error", ("gpu.lost",)),
    ("driver.nvrm.no_devices_probed", r"NVRM: No NVIDIA devices probed", "driver_error",
     ("gpu.lost", "driver.version_mismatch")),
    # nvidia-uvm could not start: CUDA's first call then fails with 999 (unknown error)
    ("driver.uvm.init_failed", r"uvm_global_init\(\) failed", "driver_error", ("driver.uvm",)),
)  # fmt: skip

CLI = "nvidia-container-cli: "
CONTAINER = ("driver.container",)
NVC_KEEP: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    # nvc_init: the driver's libraries (libnvidia-ml, libcuda) could not be loaded or NVML
    # could not start: no driver on the host, WSL without its library path, a mismatch
    ("driver.nvc.init_error", r"^nvidia-container-cli: initialization error: ", "driver_error",
     ("driver.container", "driver.version_mismatch")),
    ("driver.nvc.load_library_failed", r"^load library failed", "library_missing", CONTAINER),
    ("driver.nvc.nvml_error", r"^nvml error", "driver_error",
     ("driver.version_mismatch", "driver.container")),
    ("driver.nvc.detection_error", r"^nvidia-container-cli: detection error: ", "driver_error",
     CONTAINER),
    ("driver.nvc.mount_error", r"^nvidia-container-cli: mount error: ", "driver_error",
     CONTAINER),
    ("driver.nvc.ldcache_error", r"^nvidia-container-cli: ldcache error: ", "driver_error",
     CONTAINER),
    ("driver.nvc.container_error", r"^nvidia-container-cli: container error: ", "driver_error",
     CONTAINER),
    ("driver.nvc.permission_error", r"^nvidia-container-cli: permission error: ",
     "driver_error", CONTAINER),
    ("driver.nvc.cgroup_subsystem_missing", r"^cgroup subsystem ", "driver_error", CONTAINER),
    # NVIDIA_VISIBLE_DEVICES names a GPU this host does not have
    ("driver.nvc.device_error", r"^nvidia-container-cli: device error: ", "cuda_device",
     ("cuda.device_visibility", "driver.container")),
    # the image's NVIDIA_REQUIRE_CUDA (cuda>=12.4) asks for a newer driver than the host's
    ("driver.nvc.requirement_error", r"^nvidia-container-cli: requirement error: ", "cuda_driver",
     ("driver.cuda_mismatch",)),
    ("driver.nvc.unsatisfied_condition", r"^unsatisfied condition: ", "cuda_driver",
     ("driver.cuda_mismatch",)),
)  # fmt: skip
# error_set* and the argument index of their format; those with a cause append ": <cause>"
NVC_SETTERS = {"error_set": (1, True), "error_setx": (1, False), "error_set_nvml": (3, True),
               "error_set_rpc": (2, True), "error_set_dl": (1, True), "error_set_elf": (1, True),
               "warnx": (0, False), "errx": (1, False)}  # fmt: skip


def _git(mirror: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(mirror), *args], check=True, capture_output=True, text=True,
        errors="replace",
    ).stdout  # fmt: skip


def _versions(seen: list[str]) -> dict[str, Any]:
    return {"first": seen[0], "last": seen[-1], "seen": seen}


def _camel(name: str) -> str:
    """pynvml's exception class suffix: ``NVML_ERROR_DRIVER_NOT_LOADED`` -> ``DriverNotLoaded``."""
    return "".join(w.capitalize() for w in name.removeprefix("NVML_ERROR_").split("_"))


def nvml_rows(mirror: Path) -> list[dict[str, Any]]:
    texts: dict[str, tuple[str, list[str], list[str]]] = {}
    codes: dict[str, int] = {}
    for tag in DCGM_TAGS:
        src = _git(mirror, "show", f"{tag}:{NVML_STRINGS}")
        for m in re.finditer(r'case (NVML_\w+):\s*return "([^"]*)";', src):
            line = src.count("\n", 0, m.start()) + 1
            text, seen, where = texts.setdefault(m.group(1), (m.group(2), [], []))
            if text != m.group(2):
                raise SystemExit(f"{m.group(1)}: {text!r} became {m.group(2)!r} at {tag}")
            seen.append(f"dcgm-{tag}")
            where.append(f"{NVML_STRINGS}:{line}@{tag}")
        header = _git(mirror, "show", f"{tag}:{NVML_HEADER}")
        codes.update((n, int(v)) for n, v in re.findall(r"(NVML_ERROR_\w+)\s*=\s*(\d+)", header))
    rows = []
    for name, (symptom, hints, bare) in NVML_KEEP.items():
        text, seen, where = texts[name]
        context = rf"Failed to initialize NVML: |NVMLError_{_camel(name)}: |nvml error: "
        body = f"(?i:{escape(text)})"
        rows.append({
            "id": "driver.nvml." + name.removeprefix("NVML_ERROR_").lower(),
            "library": "driver", "level": "info" if symptom == "info" else "error",
            "where": sorted(set(where)), "versions": _versions(seen),
            "format": text, "format_style": "literal",
            "pattern": body if bare else f"(?:{context}){body}", "fields": [],
            "symptom": symptom, "hint_ids": list(hints), "result": name,
            "note": f"nvmlErrorString({codes[name]}), NVML's table as DCGM carries it; printed "
            "as 'Failed to initialize NVML: <text>' (nvidia-smi, DCGM), pynvml's "
            f"'NVMLError_{_camel(name)}: <text>', libnvidia-container's 'nvml error: <text>' "
            "(lower-cased); versions are the DCGM tags that carry the table",
            "example": f"Failed to initialize NVML: {text}",
        })  # fmt: skip
    return rows


def nvml_name_rows(mirror: Path) -> list[dict[str, Any]]:
    """Each kept code by the name go-nvml prints for it, with its class and ids."""
    where: dict[str, list[str]] = {}
    seen: dict[str, list[str]] = {}
    for tag in GO_NVML_TAGS:
        src = _git(mirror, "show", f"{tag}:{GO_NVML_RETURN}")
        for m in re.finditer(r'case (ERROR_\w+):\s*return "(ERROR_\w+)"', src):
            name = "NVML_" + m.group(1)
            if m.group(1) != m.group(2) or name not in NVML_KEEP:
                continue
            line = src.count("\n", 0, m.start()) + 1
            where.setdefault(name, []).append(f"{GO_NVML_RETURN}:{line}@{tag}")
            seen.setdefault(name, []).append(f"go-nvml-{tag}")
    header = _git(mirror, "show", f"{GO_NVML_TAGS[-1]}:{GO_NVML_HEADER}")
    codes = {n: int(v) for n, v in re.findall(r"(NVML_ERROR_\w+)\s*=\s*(\d+)", header)}
    cuda = {e.driver_name for e in cuda_errors.ERRORS if e.driver_name}
    rows = []
    for name, (symptom, hints, _bare) in NVML_KEEP.items():
        short = name.removeprefix("NVML_")
        # CUDA_ERROR_UNKNOWN ends in ERROR_UNKNOWN: the NVML prefix or a "NVML: " context
        shared = any(c.endswith("_" + short) for c in cuda)
        pattern = f"(?:NVML_|(?i:nvml): ){short}" if shared else f"(?:NVML_)?{short}"
        rows.append({
            "id": "driver.nvml." + short.removeprefix("ERROR_").lower() + "_name",
            "library": "driver", "level": "info" if symptom == "info" else "error",
            "where": where[name], "versions": _versions(seen[name]),
            "format": short, "format_style": "literal", "pattern": pattern, "fields": [],
            "symptom": symptom, "hint_ids": list(hints), "result": name,
            "note": f"nvmlReturn_t {codes[name]} by the name go-nvml's Return.Error() prints "
            "(nvidia-container-toolkit, k8s-device-plugin, dcgm-exporter); versions are "
            "go-nvml tags",
            "example": f"Failed to initialize NVML: {short}",
        })  # fmt: skip
    return rows


def _defined(
    mirror: Path, tags: tuple[str, ...], path: str, name: str, label: str, needs: str = ""
) -> tuple[list[str], list[str], int]:
    """Where ``<name> = <number>`` starts a line of ``path`` at each tag (whose file holds
    ``needs``), the tags labelled, and the number."""
    rx = re.compile(rf"^\s*{name}\s*=\s*(\d+)", re.MULTILINE)
    where, seen, code = [], [], 0
    for tag in tags:
        try:
            src = _git(mirror, "show", f"{tag}:{path}")
        except subprocess.CalledProcessError:  # the file is younger than the tag
            continue
        m = rx.search(src)
        if m is None or needs not in src:
            continue
        code = int(m.group(1))
        where.append(f"{path}:{src.count(chr(10), 0, m.start()) + 1}@{tag}")
        seen.append(f"{label}-{tag}")
    if not seen:
        raise SystemExit(f"{name}: not in {path} at any {label} tag")
    return where, seen, code


def nvml_newer_rows(dcgm: Path, go_nvml: Path) -> list[dict[str, Any]]:
    """The codes of :data:`NVML_NEWER` by pynvml's class and by their C name."""
    rows = []
    for name, (symptom, hints) in NVML_NEWER.items():
        short = name.removeprefix("NVML_ERROR_").lower()
        cls = "NVMLError_" + _camel(name)
        where, seen, code = _defined(dcgm, DCGM_TAGS, PYNVML, name, "dcgm",
                                     "def _extractNVMLErrorsAsClasses")  # fmt: skip
        common = {"library": "driver", "level": "error", "fields": [], "symptom": symptom,
                  "hint_ids": list(hints), "result": name}  # fmt: skip
        rows.append({
            "id": f"driver.nvml.{short}", **common, "where": where,
            "versions": _versions(seen), "format": f"{cls}: %s", "format_style": "printf",
            "pattern": escape(cls),
            "note": f"nvmlReturn_t {code}, newer than NVML's string table in DCGM: read by "
            f"pynvml's exception class ({cls}, made from {name} by _extractNVMLErrorsAsClasses; "
            "its text is the library's nvmlErrorString, which no open source carries); "
            "versions are the DCGM tags whose pynvml has it",
            "example": f"pynvml.{cls}",
        })  # fmt: skip
        where, seen, code = _defined(go_nvml, GO_NVML_TAGS, GO_NVML_HEADER, name, "go-nvml")
        rows.append({
            "id": f"driver.nvml.{short}_name", **common, "where": where,
            "versions": _versions(seen), "format": name, "format_style": "literal",
            "pattern": escape(name),
            "note": f"nvmlReturn_t {code} by its C name (nvml.h as go-nvml carries it; go-nvml's "
            "own Return.Error() prints the library's text, not this name); versions are "
            "go-nvml tags",
            "example": f"nvmlInit_v2 returned {name}",
        })  # fmt: skip
    return rows


def _calls(
    src: str, setters: dict[str, tuple[int, bool]]
) -> list[tuple[str, int, str, list[str], bool]]:
    """``(setter, line, format, argument expressions, has_cause)`` for each literal format."""
    out = []
    for name, line, args, _end in find_calls(src, tuple(setters)):
        index, cause = setters[name]
        if len(args) <= index:
            continue
        fmt = read_format(args[index], args[index + 1 :], PRI_MACROS)
        if fmt is not None:
            out.append((name, line, fmt.text, fmt.args, cause))
    return out


def _mine(
    keep: tuple[tuple[str, str, str, tuple[str, ...]], ...],
    found: dict[tuple[str, str], dict[str, list[str]]],
    args_of: dict[str, list[str]],
    labels: list[str],
    note: str,
) -> list[dict[str, Any]]:
    rows = []
    for ident, anchor, symptom, hints in keep:
        variants = sorted(
            ((f, w) for (i, f), w in found.items() if i == ident), key=lambda fw: -len(fw[1])
        )
        if not variants:
            raise SystemExit(f"{ident}: not found")
        for n, (fmt, where) in enumerate(variants):
            seen = [v for v in labels if v in where]
            # the pattern covers the line of a multi-line message that names it
            lines = fmt.split("\n")
            k = next((i for i, x in enumerate(lines) if re.search(anchor, x)), 0)
            line = lines[k]
            before = len([c for c in PRINTF.findall("\n".join(lines[:k])) if c[-1] != "%"])
            pattern, fields = pattern_for(line, "printf", args_of[fmt][before:])
            row = {
                "id": ident if n == 0 else f"{ident}_{n + 1}", "library": "driver",
                "level": "error", "where": sorted({w for ws in where.values() for w in ws}),
                "versions": _versions(seen), "format": fmt, "format_style": "printf",
                "pattern": pattern, "fields": fields, "symptom": symptom,
                "hint_ids": list(hints), "note": note,
            }  # fmt: skip
            if line != fmt.split("\n")[0]:
                row["example"] = _render(line)
            rows.append(row)
    return rows


def _render(line: str) -> str:
    """A printf line with sample values (for the rows whose pattern covers a later line)."""
    return re.sub(r"%[-+ #0]*\d*(?:l|ll|z)?([sdiuxp])", lambda m: "x" if m.group(1) == "s" else
                  "1", line).strip()  # fmt: skip


SXID_MACRO = "src/common/nvswitch/kernel/inc/common_nvswitch.h"
SXID_REPORTS = "src/common/nvswitch/kernel/inc/intr_nvswitch.h"
# the severity a report's text starts with -> (id, symptom, level, hints, note)
SXID_KEEP = {
    "Fatal": ("driver.nvswitch.sxid_fatal", "xid", "error", ("gpu.nvlink",),
              ("an uncorrectable error fatal to the fabric (NVSWITCH_REPORT_FATAL): the switch's "
              "GPUs lose NVLink traffic and their CUDA jobs fail; reset the GPUs and switches")),
    "Non-fatal": ("driver.nvswitch.sxid_nonfatal", "info", "warning", (),
                  ("uncorrectable but not fatal to the fabric (NVSWITCH_REPORT_NONFATAL): traffic "
                  "goes on; worth a look when it repeats, never the job's failure by itself")),
    "Correctable": ("driver.nvswitch.sxid_correctable", "info", "warning", (),
                    "corrected by the hardware (NVSWITCH_REPORT_CORRECTABLE): informational"),
}  # fmt: skip
SXID_RX = (
    r"nvidia-nvswitch(?P<switch>\d{0,4}): SXid \(PCI:(?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:"
    r"[0-9a-fA-F]{2}\.[0-9a-fA-F])\): (?P<sxid>\d{1,6}), "
)


def nvswitch_rows(mirror: Path) -> list[dict[str, Any]]:
    """The NVSwitch SXid line, one entry per severity its text starts with."""
    where: dict[str, list[str]] = {k: [] for k in SXID_KEEP}
    seen: list[str] = []
    for tag in OGKM_TAGS:
        macro = _git(mirror, "show", f"{tag}:{SXID_MACRO}")
        sxid = [n for n, x in enumerate(macro.split("\n"), 1) if '"nvidia-%s: SXid (PCI:"' in x]
        if not sxid:
            raise SystemExit(f"{tag}: no SXid format in {SXID_MACRO}")
        reports = _git(mirror, "show", f"{tag}:{SXID_REPORTS}").split("\n")
        for severity in SXID_KEEP:
            lines = [n for n, x in enumerate(reports, 1) if f'"{severity}, ' in x]
            if not lines:
                raise SystemExit(f"{tag}: no {severity!r} report in {SXID_REPORTS}")
            where[severity] += [f"{SXID_MACRO}:{sxid[0]}@{tag}", f"{SXID_REPORTS}:{lines[0]}@{tag}"]
        seen.append(tag)
    rows = []
    for severity, (ident, symptom, level, hints, note) in SXID_KEEP.items():
        example = {"Fatal": "20034, Fatal, Link 46 LTSSM Fault Up",
                   "Non-fatal": "12028, Non-fatal, Link 32 egress non-posted PRIV error (First)",
                   "Correctable": "19049, Correctable, Link 12 NVLDL rx replay error"}[severity]  # fmt: skip
        rows.append({
            "id": ident, "library": "driver", "level": level, "where": where[severity],
            "versions": _versions(seen),
            "format": f"nvidia-%s: SXid (PCI:{PCI}): %05d, {severity}, %s",
            "format_style": "printf",
            "pattern": SXID_RX + escape(severity) + r", (?P<detail>[^\n]{0,400})",
            "fields": ["switch", "pci", "sxid", "detail"], "symptom": symptom,
            "hint_ids": list(hints), "note": note,
            "example": f"nvidia-nvswitch3: SXid (PCI:0000:c5:00.0): {example}",
        })  # fmt: skip
    return rows


def nvrm_rows(mirror: Path) -> list[dict[str, Any]]:
    found: dict[tuple[str, str], dict[str, list[str]]] = {}
    args_of: dict[str, list[str]] = {}
    setters = {"nv_printf": (1, False), "NV_DEV_PRINTF": (2, False), "UVM_ERR_PRINT": (0, False)}
    for tag in OGKM_TAGS:
        for path in OGKM_FILES:
            src = blank_comments(_git(mirror, "show", f"{tag}:{path}").replace("\\\n", "  "))
            for name, line, text, call_args, _cause in _calls(src, setters):
                fmt, args = text, call_args
                if name == "NV_DEV_PRINTF":
                    fmt, args = f"NVRM: GPU {PCI}: {fmt}", ["domain", "bus", "slot", "fn", *args]
                elif name == "UVM_ERR_PRINT":
                    fmt = f"nvidia-uvm: %s:%u %s[pid:%d] {fmt}"
                    args = ["file", "source_line", "function", "pid", *args]
                fmt = fmt.rstrip("\n")
                args_of[fmt] = args
                for ident, anchor, _s, _h in NVRM_KEEP:
                    if re.search(anchor, fmt):
                        found.setdefault((ident, fmt), {}).setdefault(tag, []).append(
                            f"{path}:{line}@{tag}"
                        )
    return _mine(NVRM_KEEP, found, args_of, list(OGKM_TAGS),
                 "NVRM prints each line of a message with its own 'NVRM: ' (a kernel log "
                 "prefixes timestamps); versions are open-gpu-kernel-modules tags")  # fmt: skip


def nvc_rows(mirror: Path) -> list[dict[str, Any]]:
    found: dict[tuple[str, str], dict[str, list[str]]] = {}
    args_of: dict[str, list[str]] = {}
    labels = [label for _c, label in NVC_COMMITS]
    for commit, label in NVC_COMMITS:
        files = _git(mirror, "ls-tree", "-r", "--name-only", commit, "--", "src").split()
        for path in files:
            if not re.fullmatch(r"src/(?:cli/)?[\w]+\.[ch]", path):
                continue
            src = blank_comments(_git(mirror, "show", f"{commit}:{path}"))
            for name, line, text, call_args, cause in _calls(src, NVC_SETTERS):
                fmt, args = text, call_args
                if name in ("warnx", "errx"):
                    fmt = CLI + fmt  # warnx(3): "<program>: <message>"
                elif cause:
                    fmt, args = fmt + ": %s", [*args, "cause"]
                args_of[fmt] = args
                for ident, anchor, _s, _h in NVC_KEEP:
                    if re.search(anchor, fmt):
                        found.setdefault((ident, fmt), {}).setdefault(label, []).append(
                            f"{path}:{line}@{commit}"
                        )
    return _mine(NVC_KEEP, found, args_of, labels,
                 "libnvidia-container lower-cases the cause after the last ':'; Docker quotes "
                 "the CLI's line in 'error running hook #0 ... stderr: nvidia-container-cli: "
                 "...'; versions are nvc-<release> commits (NVIDIA/libnvidia-container history)")  # fmt: skip


CURRENT = {"first": "current", "last": "current", "seen": ["current"]}
SMI = (
    "nvidia-smi (closed source; the line as it prints it; exit codes in nvidia-smi(1) RETURN VALUE)"
)
FM = (
    "nv-fabricmanager (closed source; the line as it logs it, seen in NVIDIA/gpu-operator "
    "issues 356 and 610 and matched by leptonai/gpud components/accelerator/nvidia/"
    "fabric-manager; meaning: NVIDIA Fabric Manager User Guide, "
    "docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide)"
)
XID_SRC = "NVIDIA/open-gpu-kernel-modules src/nvidia/src/kernel/gpu/rc/kernel_rc.c"
PCI_RX = r"(?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})"


def _doc(ident: str, where: str, fmt: str, pattern: str, fields: list[str], symptom: str,
         hints: list[str], note: str, style: str = "doc", example: str = "",
         level: str = "error") -> dict[str, Any]:  # fmt: skip
    row = {
        "id": ident, "library": "driver", "level": level, "where": [where],
        "versions": CURRENT, "format": fmt, "format_style": style, "pattern": pattern,
        "fields": fields, "symptom": symptom, "hint_ids": hints, "note": note,
    }  # fmt: skip
    if example:
        row["example"] = example
    return row


DOC_ROWS = [
    _doc("driver.nvrm.xid", XID_SRC, "NVRM: Xid (PCI:%04x:%02x:%02x): %d, pid=%s, name=%s, %s",
         r"NVRM: Xid \((?:PCI:)?" + PCI_RX + r"\): (?P<xid>\d{1,4}), (?P<detail>[^\n]{0,400})",
         ["pci", "xid", "detail"], "xid", ["gpu.xid"],
         "the Xid number decides the meaning (knowledge.xid); drivers before ~450 print "
         "'NVRM: Xid (0000:01:00): 31, ...' without 'PCI:', which the pattern also takes",
         "printf", "NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, name=python, GPU has fallen off "
         "the bus."),
    _doc("driver.nvrm.xid_mig", XID_SRC,
         "NVRM: Xid (PCI:%04x:%02x:%02x GPU-I:%02u GPU-CI:%02u): %d, pid=%s, name=%s, %s",
         r"NVRM: Xid \(PCI:" + PCI_RX + r" GPU-I:(?P<gpu_instance>\d{1,3}) GPU-CI:"
         r"(?P<compute_instance>\d{1,3})\): (?P<xid>\d{1,4}), (?P<detail>[^\n]{0,400})",
         ["pci", "gpu_instance", "compute_instance", "xid", "detail"], "xid",
         ["gpu.xid", "gpu.mig"], "an Xid attributed to a MIG GPU/compute instance", "printf"),
    _doc("driver.nvrm.fallen_off_bus", "NVIDIA driver kernel log (Xid 79 text)",
         "NVRM: GPU %04x:%02x:%02x.%x: GPU has fallen off the bus.",
         r"NVRM: GPU (?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F]): GPU "
         r"has fallen off the bus", ["pci"], "xid", ["gpu.lost", "gpu.xid"],
         "printed with Xid 79; the GPU needs a reset or reboot", "printf",
         "NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus."),
    _doc("driver.nvml.gpu_lost", "NVML nvml.h (NVML_ERROR_GPU_IS_LOST's description)",
         "The GPU has fallen off the bus or has otherwise become inaccessible",
         r"GPU has fallen off the bus or has otherwise become inaccessible", [], "xid",
         ["gpu.lost"], "NVML's description of a lost GPU, quoted by tools that print it",
         "literal"),
    # nvidia-smi: NVML could not reach the kernel module (NVML_ERROR_DRIVER_NOT_LOADED, exit 9)
    _doc("driver.smi.no_driver", SMI,
         "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make "
         "sure that the latest NVIDIA driver is installed and running.",
         r"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver",
         [], "driver_error", ["driver.version_mismatch", "driver.container"],
         "the kernel module is not loaded: never installed, not built for the running kernel "
         "(DKMS after a kernel update), refused by Secure Boot; in a container, no device nodes",
         example="NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
         "Make sure that the latest NVIDIA driver is installed and running."),
    # NVML started but counts no device: a container given none, or every GPU failed to init
    _doc("driver.smi.no_devices", SMI, "No devices were found", r"No devices were found", [],
         "driver_error", ["driver.container", "gpu.lost"],
         "nvidia-smi exits 6; inside a container the GPUs were not passed in "
         "(NVIDIA_VISIBLE_DEVICES, --gpus), on a host the driver could not bring any GPU up "
         "(see NVRM: RmInitAdapter failed)", "literal"),
    _doc("driver.smi.device_handle", SMI, "Unable to determine the device handle for GPU%s: %s",
         r"Unable to determine the device handle for (?:GPU ?|gpu ?)?(?P<pci>[0-9A-Fa-f:.]{1,20}):"
         r" (?P<error>[^\n]{1,200})", ["pci", "error"], "xid", ["gpu.lost", "gpu.xid"],
         "NVML found the GPU but cannot open it: NVML's text follows ('GPU is lost', 'Unknown "
         "Error'); the GPU fell off the bus or hangs (an Xid in the kernel log)",
         example="Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error"),
    # nv-fabricmanager (closed source): the lines as it logs them to fabricmanager.log and
    # syslog; what each means from NVIDIA's Fabric Manager User Guide
    _doc("driver.fm.driver_mismatch", FM,
         "fabric manager NVIDIA GPU driver interface version %s don't match with driver version "
         "%s. Please update with matching NVIDIA driver package.",
         r"fabric manager NVIDIA GPU driver interface version (?P<fm_version>\d{1,4}(?:\.\d{1,4}){0,3})"
         r" don't match with driver version (?P<driver_version>\d{1,4}(?:\.\d{1,4}){0,3})",
         ["fm_version", "driver_version"], "cuda_driver", ["gpu.fabric_manager"],
         "the fabric manager refuses a driver of another version and exits: the GPUs never "
         "join the NVLink fabric and CUDA fails with 802 (system not yet initialized)", "printf",
         "nv-fabricmanager[104230]: fabric manager NVIDIA GPU driver interface version 550.127.05 "
         "don't match with driver version 550.120. Please update with matching NVIDIA driver "
         "package."),
    _doc("driver.fm.topology_mismatch", FM,
         "detected number of NVSwitches don't match with any supported system topology, "
         "aborting fabric manager",
         r"detected number of NVSwitches don't match with any supported system topology", [],
         "cuda_driver", ["gpu.fabric_manager", "gpu.nvlink"],
         "an NVSwitch is missing from the PCI bus (failed or not enumerated) or the topology "
         "files are absent: the fabric manager exits and CUDA fails with 802", "literal",
         "[Sep 08 2025 23:21:50] [ERROR] detected number of NVSwitches don't match with any "
         "supported system topology, aborting fabric manager"),
    _doc("driver.fm.nvswitch_fatal", FM,
         "detected NVSwitch fatal error %d on fid %d on NVSwitch pci bus id %s physical id %d "
         "port %d",
         r"detected NVSwitch fatal error (?P<sxid>\d{1,6})", ["sxid"], "xid", ["gpu.nvlink"],
         "the fabric manager's record of a fatal SXid (the kernel log's 'SXid ..., Fatal'): the "
         "GPUs on that switch lose NVLink traffic", "printf",
         "[Jul 23 2024 07:53:55] [ERROR] [tid 841] detected NVSwitch fatal error 20034 on fid 0 "
         "on NVSwitch pci bus id 00000000:86:00.0 physical id 3 port 33"),
    _doc("driver.fm.nvswitch_nonfatal", FM,
         "detected NVSwitch non-fatal error %d on fid %d on NVSwitch pci bus id %s physical id "
         "%d port %d",
         r"detected NVSwitch non-fatal error (?P<sxid>\d{1,6})", ["sxid"], "info", [],
         "a non-fatal SXid: the fabric goes on; never the job's failure by itself", "printf",
         "[Jul 09 2024 18:14:07] [ERROR] [tid 12727] detected NVSwitch non-fatal error 12028 on "
         "fid 0 on NVSwitch pci bus id 00000000:86:00.0 physical id 3 port 61", level="warning"),
    _doc("driver.fm.nothing_to_do", FM,
         "request to query NVSwitch device information from NVSwitch driver failed with "
         "error:WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]",
         r"request to query NVSwitch device information from NVSwitch driver failed with "
         r"error:WARNING Nothing to do", [], "info", [],
         "the fabric manager found no NVSwitch (PCIe GPUs, NVLink bridges, GH200): it is not "
         "needed there and its failure to start is no failure of the job", "literal",
         "nv-fabricmanager[4177]: request to query NVSwitch device information from NVSwitch "
         "driver failed with error:WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]", level="warning"),
    _doc("driver.fm.configured", FM,
         "Successfully configured all the available NVSwitches to route GPU NVLink traffic.",
         r"Successfully configured all the available (?:GPUs and )?NVSwitches to route "
         r"(?:GPU )?NVLink traffic", [], "info", [],
         "the fabric manager's start-up completed (older releases: 'all the available GPUs and "
         "NVSwitches to route NVLink traffic')", "literal",
         "nv-fabricmanager[1120]: Successfully configured all the available NVSwitches to route "
         "GPU NVLink traffic.", level="info"),
    # kmod's modprobe (tools/modprobe.c: "could not insert '%s': %s")
    _doc("driver.modprobe.uvm_insert_failed", "kmod tools/modprobe.c (insmod failure message)",
         "modprobe: ERROR: could not insert '%s': %s",
         r"could not insert 'nvidia_uvm': (?P<error>[^\n]{1,200})", ["error"], "driver_error",
         ["driver.uvm"], "nvidia_uvm did not load: CUDA's first call fails with 999",
         example="modprobe: ERROR: could not insert 'nvidia_uvm': No such device"),
    _doc("driver.modprobe.insert_failed", "kmod tools/modprobe.c (insmod failure message)",
         "modprobe: ERROR: could not insert '%s': %s",
         r"could not insert '(?P<module>nvidia(?:_drm|_modeset|_peermem)?)': "
         r"(?P<error>[^\n]{1,200})", ["module", "error"], "driver_error",
         ["driver.version_mismatch"], "the module was not built for the running kernel (Unknown "
         "symbol, Exec format error), Secure Boot refused it (Key was rejected by service) or no "
         "GPU is there (No such device)",
         example="modprobe: ERROR: could not insert 'nvidia': Key was rejected by service"),
]  # fmt: skip


def main(argv: list[str]) -> int:
    dcgm = Path(argv[1]) if len(argv) > 1 else DCGM_MIRROR
    ogkm = Path(argv[2]) if len(argv) > 2 else OGKM_MIRROR
    nvc = Path(argv[3]) if len(argv) > 3 else NVC_MIRROR
    go_nvml = Path(argv[4]) if len(argv) > 4 else GO_NVML_MIRROR
    rows = [*DOC_ROWS, *nvml_rows(dcgm), *nvml_name_rows(go_nvml),
            *nvml_newer_rows(dcgm, go_nvml), *nvrm_rows(ogkm),
            *nvswitch_rows(ogkm), *nvc_rows(nvc),
            *dcgm_reports.rows(dcgm, DCGM_TAGS)]  # fmt: skip
    print(f"{len(rows)} signatures -> {write_jsonl('driver', rows)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
