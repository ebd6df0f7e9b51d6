"""The versions the evidence names: the driver, CUDA, torch and NCCL, the first read of each."""

from __future__ import annotations

from collections.abc import Iterable

from nccl_doctor.facts.gpu import DriverInfo
from nccl_doctor.facts.host import KernelGpuMessage
from nccl_doctor.facts.live import LibraryVersions, NvmlOutcome
from nccl_doctor.facts.nccl import NcclVersion
from nccl_doctor.facts.run import NcclErrorReport, PgEnvironment, PgInitOptions
from nccl_doctor.facts.software import SoftwareVersions
from nccl_doctor.facts.store import Facts
from nccl_doctor.signs.nccl import VLLM_NCCL_VERSION

#: The versions a report names, in the order it lists them.
VERSION_NAMES = ("driver", "cuda", "torch", "torch_cuda", "nccl")


def _version_pairs(facts: Facts) -> Iterable[tuple[str, str | None]]:
    for lib in facts.of(LibraryVersions):
        yield from (("driver", lib.driver_version), ("cuda", lib.cuda_driver_version))
        yield from (("torch", lib.torch_version), ("nccl", lib.nccl_version))
    for nvml in facts.of(NvmlOutcome):
        yield from (("driver", nvml.driver_version), ("cuda", nvml.cuda_driver_version))
    for smi in facts.of(DriverInfo):
        yield from (("driver", smi.driver_version), ("cuda", smi.cuda_version))
    for nccl in facts.of(NcclVersion):
        yield ("nccl", nccl.version)
    # PyTorch's ncclGetVersion: the libnccl it loaded
    yield from (("nccl", o.nccl_version) for o in facts.of(PgInitOptions))
    yield from (("nccl", e.nccl_version) for e in facts.of(PgEnvironment))
    yield from (("nccl", r.nccl_version) for r in facts.of(NcclErrorReport))
    # vLLM's pynccl: the libnccl its own communicator loaded (machine output first)
    yield from (
        ("nccl", h.match["v"]) for h in sorted(facts.seen(VLLM_NCCL_VERSION), key=lambda h: h.prose)
    )
    for env in facts.of(SoftwareVersions):
        yield from (("torch", env.torch_version), ("torch_cuda", env.cuda_used_to_build_torch))
        yield from (("nccl", env.nccl_version), ("driver", env.nvidia_driver_version))
    for msg in facts.of(KernelGpuMessage):
        if msg.kind == "module_version":
            yield ("driver", msg.version)


def versions_of(facts: Facts) -> tuple[tuple[str, str], ...]:
    """driver, cuda (the driver's), torch, torch_cuda (torch's build), nccl: the first read of each.

    A live read (NVML, package metadata) comes before a tool's text, which
    comes before what a person pasted. Read once per evidence (the differential's
    context and the report's inventory both ask).
    """
    return facts.derived("versions", _versions)


def _versions(facts: Facts) -> tuple[tuple[str, str], ...]:
    found: dict[str, str] = {}
    for name, value in _version_pairs(facts):
        if value and name not in found:
            found[name] = value.split("+", 1)[0] if name == "torch" else value
    return tuple((name, found[name]) for name in VERSION_NAMES if name in found)
