"""Which GPU model names are NVLink/NVSwitch board parts, from the names as printed.

A model name (``NVIDIA A100-SXM4-80GB``, ``NVIDIA H100 80GB HBM3``, a server
such as ``PowerEdge XE9680``) says whether the GPUs sit on an NVLink board:
SXM parts, HGX/DGX systems and the cloud instances built on them. The rules
ask it of typed fields (an NVML GPU name, collect_env's GPU list); the sign
table reads :data:`NVLINK_BOARD_PATTERN` over the evidence's lines
(``gpu.nvlink_board``), so the one list of names lives here.
"""

from __future__ import annotations

import re

#: GPU models that are NVLink/NVSwitch boards (SXM, HGX/DGX), from names as printed
#: (matched without regard to case).
NVLINK_BOARD_PATTERN = (
    r"SXM|HGX|DGX|\bXE8545\b|\bXE9680\b|\bp4d|\bp5\.|\bND\d*[a-z]*[ _-]?(?:A100|H100|H200)|"
    r"\bH100 80GB HBM3\b|\bH200\b(?! NVL)|\bB200\b|\bGB200\b|\bH800\b|\bA800-SXM"
)
_NVLINK_BOARD = re.compile(NVLINK_BOARD_PATTERN, re.IGNORECASE)

#: GPU models sold as HGX/DGX boards behind NVSwitch when eight sit in one node
#: (upper case, as NVIDIA prints them).
_NVSWITCH_MODELS = re.compile(r"\b(?:A100|A800|H100|H800|H200|H20|B100|B200|GB200)\b")


#: GeForce and TITAN boards (as printed): the driver gives them no PCIe peer-to-peer
#: between cards (only over an NVLink bridge), and NCCL's P2P set-up has hung on them where
#: the driver said otherwise (RTX 4090 with drivers before the fix); NCCL then needs SHM.
CONSUMER_BOARD_PATTERN = (
    r"\bGeForce\b|\bTITAN (?:RTX|V|Xp?)\b|\bRTX ?(?:20|30|40|50)[5-9]0(?: ?Ti| ?SUPER)?\b"
)
_CONSUMER_BOARD = re.compile(CONSUMER_BOARD_PATTERN, re.IGNORECASE)


def consumer_board(model: str | None) -> bool:
    """Whether ``model`` names a GeForce/TITAN board (no PCIe peer-to-peer between cards)."""
    return bool(model) and _CONSUMER_BOARD.search(model or "") is not None


def nvlink_board(model: str | None) -> bool:
    """Whether ``model`` names an NVLink/NVSwitch board part (SXM, HGX/DGX, known servers)."""
    return bool(model) and _NVLINK_BOARD.search(model or "") is not None


def nvswitch_model(model: str | None) -> bool:
    """Whether ``model`` is one sold on NVSwitch (HGX) boards when eight sit in one node."""
    return bool(model) and _NVSWITCH_MODELS.search(model or "") is not None
