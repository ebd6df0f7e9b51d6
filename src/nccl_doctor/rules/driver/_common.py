"""Helpers of the driver.* rules: driver/CUDA version tables and the versions the facts give."""

from __future__ import annotations

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.driver import parse_cuda, parse_version, torch_cuda_tag
from nccl_doctor.facts.gpu import DriverInfo
from nccl_doctor.facts.software import SoftwareVersions
from nccl_doctor.facts.store import Facts, Hit
from nccl_doctor.signs.driver import CUDA_DRIVER_VERSION, TOOL_PREFIX

#: CUDA toolkit release -> the oldest Linux driver that supports it fully
#: (NVIDIA's CUDA toolkit release notes, table "CUDA Toolkit and Corresponding
#: Driver Versions"). Newest first.
CUDA_MIN_DRIVER: tuple[tuple[tuple[int, int], tuple[int, ...]], ...] = (
    ((13, 1), (590, 44, 1)),
    ((13, 0), (580, 65, 6)),
    ((12, 9), (575, 51, 3)),
    ((12, 8), (570, 26)),
    ((12, 6), (560, 28, 3)),
    ((12, 5), (555, 42, 2)),
    ((12, 4), (550, 54, 14)),
    ((12, 3), (545, 23, 6)),
    ((12, 2), (535, 54, 3)),
    ((12, 1), (530, 30, 2)),
    ((12, 0), (525, 60, 13)),
    ((11, 8), (520, 61, 5)),
    ((11, 7), (515, 43, 4)),
    ((11, 6), (510, 39, 1)),
    ((11, 5), (495, 29, 5)),
    ((11, 4), (470, 42, 1)),
    ((11, 3), (465, 19, 1)),
    ((11, 2), (460, 27, 3)),
    ((11, 1), (455, 23)),
    ((11, 0), (450, 36, 6)),
    ((10, 2), (440, 33)),
    ((10, 1), (418, 39)),
    ((10, 0), (410, 48)),
    ((9, 2), (396, 26)),
    ((9, 1), (390, 46)),
    ((9, 0), (384, 81)),
    ((8, 0), (375, 26)),
)

#: The oldest driver a CUDA major version runs on at all (minor-version
#: compatibility: a newer 11.x/12.x/13.x runtime works on the first driver of
#: its major, except for PTX JIT and newer APIs).
MAJOR_FLOOR: dict[int, tuple[int, ...]] = {11: (450, 80, 2), 12: (525, 60, 13), 13: (580, 65, 6)}


def show(version: tuple[int, ...]) -> str:
    """(535, 104, 5) -> ``535.104.05``."""
    head, *rest = version
    return ".".join([str(head), *(f"{p:02d}" for p in rest)])


def show_cuda(cuda: tuple[int, int]) -> str:
    """(12, 1) -> ``12.1``."""
    return f"{cuda[0]}.{cuda[1]}"


def max_cuda(driver: tuple[int, ...]) -> tuple[int, int] | None:
    """The newest CUDA release a driver supports fully (a bare branch ``525`` as ``525.*``)."""
    for cuda, need in CUDA_MIN_DRIVER:
        if (driver[0] >= need[0]) if len(driver) == 1 else (driver >= need):
            return cuda
    return None


def min_driver(cuda: tuple[int, int]) -> tuple[int, ...] | None:
    """The oldest driver that supports a CUDA release fully."""
    for release, need in CUDA_MIN_DRIVER:
        if release <= cuda:
            return need
    return None


def driver_version(facts: Facts) -> tuple[tuple[int, ...], Cite] | None:
    """The installed driver version, from nvidia-smi or collect_env."""
    for info in facts.of(DriverInfo):
        parsed = parse_version(info.driver_version)
        if parsed:
            return parsed, info.cite
    for soft in facts.of(SoftwareVersions):
        parsed = parse_version(soft.nvidia_driver_version)
        if parsed and soft.wsl is not True:
            return parsed, soft.cite
    return None


def driver_cuda(facts: Facts) -> tuple[tuple[int, int], Cite] | None:
    """The newest CUDA the installed driver supports, as printed or from its version."""
    for info in facts.of(DriverInfo):
        parsed = parse_cuda(info.cuda_version)
        if parsed:
            return parsed, info.cite
    for hit in facts.seen(CUDA_DRIVER_VERSION, prose=False):
        parsed = parse_cuda(hit.match["version"])
        if parsed:
            return parsed, hit.cite
    found = driver_version(facts)
    if found:
        cuda = max_cuda(found[0])
        if cuda:
            return cuda, found[1]
    return None


def runtime_cuda(facts: Facts) -> tuple[tuple[int, int], Cite, str] | None:
    """The CUDA the framework was built with (torch's), with where it was read and a label."""
    for soft in facts.of(SoftwareVersions):
        parsed = parse_cuda(soft.cuda_used_to_build_torch)
        if parsed:
            return (
                parsed,
                soft.cite,
                f"PyTorch {soft.torch_version or '?'} (CUDA {show_cuda(parsed)})",
            )
        parsed = parse_cuda(torch_cuda_tag(soft.torch_version))
        if parsed:
            return parsed, soft.cite, f"PyTorch {soft.torch_version}"
    return None


def machine_hit(facts: Facts, hit: Hit) -> bool:
    """Machine output, counting ``tool: message`` lines the prose heuristic takes for sentences."""
    return not hit.prose or hit.said in facts.lines_of(TOOL_PREFIX)
