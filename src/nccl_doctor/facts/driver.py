"""Driver, CUDA and kernel versions read from the typed facts' version fields.

A parser keeps a version as printed (``DriverInfo.driver_version``
``535.104.05``, ``SoftwareVersions.cuda_used_to_build_torch`` ``12.1``, a
torch version ``2.4.0+cu121``, a platform ``Linux-5.10.16.3-microsoft-
standard-WSL2-x86_64``); these functions turn those fields (and the fields a
sign captured) into numbers a rule can compare, so no rule parses text.
"""

from __future__ import annotations

import re

_VERSION = re.compile(r"^\d{2,4}(?:\.\d{1,3}){0,2}$")
_CUDA = re.compile(r"(\d{1,2})\.(\d{1,2})")
_TORCH_CUDA = re.compile(r"\+(cu\d{3,4})\b")

#: A WSL2 kernel release as ``uname -r`` / Python's platform prints it; the
#: ``driver.wsl_kernel`` sign reads the same pattern over the evidence lines.
WSL_KERNEL = re.compile(
    r"\b(?P<version>\d+\.\d+\.\d+(?:\.\d+)?)-microsoft-standard(?:-WSL2)?\b", re.IGNORECASE
)


def parse_version(text: str | None) -> tuple[int, ...] | None:
    """``535.104.05`` -> (535, 104, 5); ``None`` when it is not a driver version."""
    if not text:
        return None
    text = text.strip()
    if not _VERSION.match(text):
        return None
    return tuple(int(p) for p in text.split("."))


def parse_cuda(text: str | None) -> tuple[int, int] | None:
    """``12.1`` / ``12.1.105`` / ``cu121`` / ``12010`` -> (12, 1)."""
    if not text:
        return None
    text = text.strip().lower()
    if text.startswith("cu") and text[2:].isdigit() and len(text) in (5, 6):
        return int(text[2:-1]), int(text[-1])
    if text.isdigit() and len(text) in (4, 5):  # CUDA_VERSION form: 12010, 9000
        number = int(text)
        return number // 1000, (number % 1000) // 10
    match = _CUDA.match(text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def torch_cuda_tag(torch_version: str | None) -> str | None:
    """The CUDA tag of a PyTorch wheel's version: ``2.4.0+cu121`` -> ``cu121``."""
    match = _TORCH_CUDA.search(torch_version or "")
    return match.group(1) if match else None


def wsl_kernel(platform: str | None) -> str | None:
    """The WSL2 kernel release a platform names: ``…-5.10.16.3-microsoft-…`` -> ``5.10.16.3``."""
    match = WSL_KERNEL.search(platform or "")
    return match.group("version") if match else None
