"""DCGM's failure reports (``dcgmi diag``, ``dcgmi health``, nv-hostengine), for ``driver.jsonl``.

Every failure DCGM reports carries a code of ``dcgmlib/dcgm_errors.h`` and the
message ``DCGM_FR_<CODE>_MSG`` formats for it; the text reaches the user in
``dcgmi diag``'s result table, ``dcgmi health -c`` and the host engine's log.
The codes that report the GPU's own health (memory, NVLink and NVSwitch, PCIe,
power and temperature, a lost GPU, the fabric) are kept, each with the
catalogue id it points at; the rest (DCGM's own API, configuration, test
plumbing) say nothing about why a job failed and are left out. Read at DCGM
release tags; a message whose words changed between tags keeps the newest.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

from common import pattern_for

HEADER = "dcgmlib/dcgm_errors.h"

_ECC = ("gpu.ecc",)
_NVLINK = ("gpu.nvlink",)
_PCIE = ("gpu.pcie_degraded",)
_HEAT = ("gpu.thermal_power",)
_LOST = ("gpu.lost",)

#: code (without ``DCGM_FR_`` and ``_MSG``) -> (symptom, catalogue ids it points at)
KEEP: dict[str, tuple[str, tuple[str, ...]]] = {
    "VOLATILE_DBE_DETECTED": ("xid", _ECC),
    "VOLATILE_SBE_DETECTED": ("info", _ECC),
    "PENDING_PAGE_RETIREMENTS": ("xid", _ECC),
    "RETIRED_PAGES_LIMIT": ("xid", _ECC),
    "RETIRED_PAGES_DBE_LIMIT": ("xid", _ECC),
    "DBE_PENDING_PAGE_RETIREMENTS": ("xid", _ECC),
    "CUDA_DBE": ("xid", _ECC),
    "ROW_REMAP_FAILURE": ("xid", _ECC),
    "UNCORRECTABLE_ROW_REMAP": ("xid", _ECC),
    "UNCORRECTABLE_ROW_REMAP_LIMIT": ("xid", _ECC),
    "PENDING_ROW_REMAP": ("xid", _ECC),
    "UNCONTAINED_ERROR": ("xid", _ECC),
    "SRAM_THRESHOLD": ("xid", _ECC),
    "FAULTY_MEMORY": ("xid", _ECC),
    "MEMORY_MISMATCH": ("xid", _ECC),
    "ECC_PENDING": ("info", _ECC),
    "CORRUPT_INFOROM": ("xid", ("gpu.xid",)),
    "XID_ERROR": ("xid", ("gpu.xid",)),
    "FALLEN_OFF_BUS": ("xid", _LOST),
    "GPU_RECOVERY_RESET": ("xid", _LOST),
    "GPU_RECOVERY_REBOOT": ("xid", _LOST),
    "GPU_RECOVERY_DRAIN_P2P": ("xid", _LOST),
    "GPU_RECOVERY_DRAIN_RESET": ("xid", _LOST),
    "NVLINK_ERROR_THRESHOLD": ("xid", _NVLINK),
    "NVLINK_ERROR_CRITICAL": ("xid", _NVLINK),
    "NVLINK_CRC_ERROR_THRESHOLD": ("xid", _NVLINK),
    "NVLINK_EFFECTIVE_BER_THRESHOLD": ("xid", _NVLINK),
    "NVLINK_SYMBOL_BER_THRESHOLD": ("xid", _NVLINK),
    "NVLINK_DOWN": ("xid", _NVLINK),
    "GPU_EXPECTED_NVLINKS_UP": ("xid", _NVLINK),
    "NVSWITCH_EXPECTED_NVLINKS_UP": ("xid", _NVLINK),
    "NVSWITCH_FATAL_ERROR": ("xid", _NVLINK),
    "NVSWITCH_NON_FATAL_ERROR": ("info", _NVLINK),
    "NVSWITCH_DOWN": ("xid", _NVLINK),
    "NVSWITCH_NVLINK_DOWN": ("xid", _NVLINK),
    "SXID_ERROR": ("xid", _NVLINK),
    "BROKEN_P2P_NVLINK_MEMORY_DEVICE": ("xid", _NVLINK),
    "BROKEN_P2P_NVLINK_WRITER_DEVICE": ("xid", _NVLINK),
    "BROKEN_P2P_PCIE_MEMORY_DEVICE": ("xid", ("nccl.p2p",)),
    "BROKEN_P2P_PCIE_WRITER_DEVICE": ("xid", ("nccl.p2p",)),
    "BROKEN_P2P_MEMORY_DEVICE": ("xid", ("nccl.p2p", "gpu.nvlink")),
    "BROKEN_P2P_WRITER_DEVICE": ("xid", ("nccl.p2p", "gpu.nvlink")),
    "PCI_REPLAY_RATE": ("pcie_error", _PCIE),
    "PCIE_GENERATION": ("pcie_error", _PCIE),
    "PCIE_WIDTH": ("pcie_error", _PCIE),
    "PCIE_H_REPLAY_VIOLATION": ("pcie_error", _PCIE),
    "CLOCKS_EVENT_THERMAL": ("info", _HEAT),
    "CLOCKS_EVENT_POWER": ("info", _HEAT),
    "THERMAL_VIOLATIONS": ("info", _HEAT),
    "TEMP_VIOLATION": ("info", _HEAT),
    "FABRIC_MANAGER_TRAINING_ERROR": ("xid", ("gpu.fabric_manager",)),
    "FABRIC_PROBE_STATE": ("info", ("gpu.fabric_manager",)),
}

_DEFINE = re.compile(r"#define DCGM_FR_(\w+?)_MSG\b((?:[^\n]*\\\n)*[^\n]*)")
_LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')


def _git(mirror: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(mirror), *args], check=True, capture_output=True, text=True,
        errors="replace",
    ).stdout  # fmt: skip


def messages(src: str) -> dict[str, tuple[str, int]]:
    """Each code's message (its string literals joined) and the line it is defined on."""
    out: dict[str, tuple[str, int]] = {}
    for m in _DEFINE.finditer(src):
        body = re.sub(r"/\*.*?\*/|//[^\n]*", "", m.group(2))
        text = "".join(_LITERAL.findall(body)).replace('\\"', '"')
        if text:
            out[m.group(1)] = (text, src.count("\n", 0, m.start()) + 1)
    return out


def rows(mirror: Path, tags: tuple[str, ...]) -> list[dict[str, Any]]:
    """One row per kept code whose message the tags' headers define."""
    found: dict[str, tuple[str, list[str], list[str]]] = {}
    for tag in tags:
        for code, (text, line) in messages(_git(mirror, "show", f"{tag}:{HEADER}")).items():
            if code not in KEEP:
                continue
            _, seen, where = found.setdefault(code, (text, [], []))
            found[code] = (text, seen, where)  # the newest tag's words win
            seen.append(f"dcgm-{tag}")
            where.append(f"{HEADER}:{line}@{tag}")
    out = []
    patterns: set[str] = set()
    for code, (text, seen, where) in sorted(found.items()):
        symptom, hints = KEEP[code]
        pattern, fields = pattern_for(text, "printf")
        if pattern in patterns:
            continue  # two codes with one message: the first keeps it
        patterns.add(pattern)
        out.append({
            "id": "driver.dcgm." + code.lower(),
            "library": "driver", "level": "info" if symptom == "info" else "error",
            "where": where, "versions": {"first": seen[0], "last": seen[-1], "seen": seen},
            "format": text, "format_style": "printf", "pattern": pattern, "fields": fields,
            "symptom": symptom, "hint_ids": list(hints), "result": f"DCGM_FR_{code}",
            "note": f"DCGM_FR_{code}'s message (dcgmi diag / dcgmi health / nv-hostengine); "
            "versions are the DCGM tags whose dcgm_errors.h defines it",
        })  # fmt: skip
    return out
