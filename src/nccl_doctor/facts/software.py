"""Facts of the software stack as ``torch.utils.collect_env`` (and vLLM's fork) prints it, and
as a one-line Python print of torch's versions shows it.

One collect_env block yields one :class:`SoftwareVersions`, one :class:`PythonPackage`
per ``[pip3]``/``[conda]`` row and, when the lscpu part is present, one
:class:`CpuInfo`. A GPU topology embedded by vLLM yields the topology facts
of :mod:`nccl_doctor.facts.topology`. ``N/A``, ``Could not collect``,
``No CUDA`` and empty values are ``None``. A print of ``torch.__version__``,
``torch.version.cuda`` or ``torch.cuda.nccl.version()`` yields one :class:`VersionPrint`.
"""

from __future__ import annotations

from dataclasses import dataclass

from nccl_doctor.facts.base import Fact


@dataclass(frozen=True, slots=True, kw_only=True)
class SoftwareVersions(Fact):
    """The versions one collect_env printed (cites ``PyTorch version``, else the first line).

    ``python_version`` is the bare version (``3.11.14``), ``python_version_text``
    the whole value; ``gpu_models`` the ``GPU n: name`` list as (index, name);
    ``cudnn_libraries`` the paths of a ``Probably one of the following`` list;
    ``nccl_version`` comes from an NCCL package row (``nvidia-nccl-cu12``,
    conda ``nccl``); ``wsl`` is ``True`` for a Microsoft WSL kernel, ``None``
    when no platform was printed; ``libraries`` the package rows as
    (manager, package, version), version ``""`` when the row has none;
    ``fields`` every ``key: value`` of the version sections as printed.
    """

    torch_version: str | None = None
    is_debug_build: bool | None = None
    cuda_used_to_build_torch: str | None = None
    rocm_used_to_build_torch: str | None = None
    os: str | None = None
    gcc_version: str | None = None
    clang_version: str | None = None
    cmake_version: str | None = None
    libc_version: str | None = None
    python_version: str | None = None
    python_version_text: str | None = None
    python_platform: str | None = None
    is_cuda_available: bool | None = None
    cuda_runtime_version: str | None = None
    cuda_module_loading: str | None = None
    gpu_models: tuple[tuple[int, str], ...] = ()
    nvidia_driver_version: str | None = None
    cudnn_version: str | None = None
    cudnn_libraries: tuple[str, ...] = ()
    is_xpu_available: bool | None = None
    hip_runtime_version: str | None = None
    miopen_runtime_version: str | None = None
    is_xnnpack_available: bool | None = None
    caching_allocator_config: str | None = None
    vllm_version: str | None = None
    wsl: bool | None = None
    nccl_version: str | None = None
    libraries: tuple[tuple[str, str, str], ...] = ()
    fields: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class PythonPackage(Fact):
    """One package row of ``Versions of relevant libraries`` (cites the row).

    ``manager`` is ``pip``/``pip3``/``conda``; ``version`` ``None`` when the
    row names none (``torch @ file://...``); ``build``/``channel`` are conda's
    columns.
    """

    manager: str
    name: str
    version: str | None
    build: str | None = None
    channel: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CpuInfo(Fact):
    """The host CPU as the lscpu part of collect_env printed it (cites ``CPU:`` or its first line).

    ``numa_node_cpus`` are (node, CPU list) from ``NUMA node0 CPU(s):`` rows;
    ``hypervisor_vendor`` (``KVM``, ``Microsoft``) marks a virtual machine.
    """

    architecture: str | None = None
    cpu_count: int | None = None
    model_name: str | None = None
    vendor_id: str | None = None
    sockets: int | None = None
    cores_per_socket: int | None = None
    threads_per_core: int | None = None
    numa_nodes: int | None = None
    numa_node_cpus: tuple[tuple[int, str], ...] = ()
    hypervisor_vendor: str | None = None
    virtualization: str | None = None
    virtualization_type: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class VersionPrint(Fact):
    """What a one-line Python print of torch's versions showed on the line after its command
    (``python -c "import torch; print(torch.__version__, torch.cuda.nccl.version())"`` then
    ``2.2.2+cu121 (2, 19, 3)``), on the machine its prompt names (``host``).

    ``nccl_version`` is ``major.minor.patch`` of the NCCL torch runs, from the tuple torch
    prints (or the version code older torch printed: ``2708`` is 2.7.8); ``cuda_version`` is
    ``torch.version.cuda``. Cites the printed line.
    """

    torch_version: str | None = None
    nccl_version: str | None = None
    cuda_version: str | None = None
