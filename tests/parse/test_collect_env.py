"""collect_env (torch's and vLLM's): every fixture, old and new layouts, and negatives."""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.software import CpuInfo, PythonPackage, SoftwareVersions
from nccl_doctor.facts.topology import TopoGpu, TopoLink, TopoMatrix
from nccl_doctor.parse.collect_env import CollectEnvParser
from tests.helpers import blocks, fixture_text, of_type, parse_blocks

EXAMPLE = Path(__file__).parents[2] / "examples" / "h200-cuda-999" / "collect_env.txt"


def _facts(text: str) -> list[Fact]:
    return parse_blocks(CollectEnvParser(), text)


def _soft(text: str) -> SoftwareVersions:
    (soft,) = of_type(_facts(text), SoftwareVersions)
    return soft


def test_h100_torch_291_after_runpy_warning() -> None:
    text = fixture_text("collect_env/h100-driver-580-torch-2.9.1-runpy-warning.txt")
    assert [(b[0].number, b[-1].number) for b in blocks(CollectEnvParser(), text)] == [(3, 33)]
    facts = _facts(text)
    (soft,) = of_type(facts, SoftwareVersions)
    assert (soft.torch_version, soft.is_debug_build, soft.cuda_used_to_build_torch) == (
        "2.9.1+cu126",
        False,
        "12.6",
    )
    assert soft.rocm_used_to_build_torch is None
    assert (soft.os, soft.libc_version, soft.cmake_version) == (
        "Ubuntu 22.04.5 LTS (x86_64)",
        "glibc-2.35",
        "4.1.2",
    )
    assert soft.clang_version is None
    assert (soft.python_version, soft.is_cuda_available, soft.cuda_runtime_version) == (
        "3.11.14",
        True,
        "12.6.85",
    )
    assert soft.cuda_module_loading is None
    assert soft.gpu_models == ((0, "NVIDIA H100 80GB HBM3"),)
    assert (soft.nvidia_driver_version, soft.cudnn_version) == ("580.126.09", None)
    assert (soft.is_xpu_available, soft.is_xnnpack_available, soft.wsl) == (False, True, False)
    assert soft.cite.line == 4
    (cpu,) = of_type(facts, CpuInfo)
    assert (cpu.architecture, cpu.cpu_count) == ("x86_64", 224)


def test_python27_torch_na_multiline_gpus_conda_rows() -> None:
    text = fixture_text("collect_env/torch-na-python2.7-multiline-gpu-list-conda-mkl.txt")
    facts = _facts(text)
    (soft,) = of_type(facts, SoftwareVersions)
    assert (soft.torch_version, soft.is_debug_build, soft.is_cuda_available) == (None, None, None)
    assert (soft.python_version, soft.cuda_runtime_version, soft.nvidia_driver_version) == (
        "2.7",
        "9.1.85",
        "390.12",
    )
    assert soft.gpu_models == ((0, "Tesla P100-PCIE-16GB"), (1, "Tesla P100-PCIE-16GB"))
    assert soft.cudnn_version is None  # "Could not collect (Should be v7.4.1.5 ...)"
    assert soft.os == "Red Hat Enterprise Linux Server 7.4 (Maipo)"
    packages = of_type(facts, PythonPackage)
    assert len(packages) == 10
    assert {p.manager for p in packages} == {"conda"}
    torch = packages[-1]
    assert (torch.name, torch.version, torch.build, torch.channel) == (
        "torch",
        "1.0.0a0+db5d313",
        "<pip>",
        None,
    )
    magma = next(p for p in packages if p.name == "magma-cuda91")
    assert (magma.version, magma.channel) == ("2.3.0", "pytorch")
    assert ("conda", "mkl", "2019.1") in soft.libraries
    assert of_type(facts, CpuInfo) == []


def test_vllm_t4_old_lscpu_kvm() -> None:
    facts = _facts(fixture_text("collect_env/vllm-4x-t4-old-lscpu-layout-kvm.txt"))
    (soft,) = of_type(facts, SoftwareVersions)
    assert soft.torch_version == "2.2.1+cu121"
    assert [name for _, name in soft.gpu_models] == ["Tesla T4"] * 4
    assert (soft.nvidia_driver_version, soft.cuda_module_loading, soft.libc_version) == (
        "535.129.03",
        "LAZY",
        "glibc-2.27",
    )
    (cpu,) = of_type(facts, CpuInfo)
    assert (cpu.cpu_count, cpu.sockets, cpu.cores_per_socket, cpu.threads_per_core) == (
        32,
        1,
        16,
        2,
    )
    assert (cpu.numa_nodes, cpu.hypervisor_vendor, cpu.vendor_id) == (1, "KVM", "GenuineIntel")
    assert cpu.model_name == "Intel(R) Xeon(R) Gold 6278C CPU @ 2.60GHz"


def test_vllm_info_tail_packages_and_gpu_topology() -> None:
    text = fixture_text("collect_env/vllm-info-tail-gpu-topology-h100-16nic.txt")
    assert [(b[0].number, b[-1].number) for b in blocks(CollectEnvParser(), text)] == [(1, 23)]
    facts = _facts(text)
    (soft,) = of_type(facts, SoftwareVersions)
    assert (soft.nccl_version, soft.vllm_version, soft.torch_version) == (
        "2.27.5",
        "0.1.dev10973+g1fb4217a0",
        None,
    )
    assert ("pip3", "torch", "2.9.0+cu129") in soft.libraries
    packages = of_type(facts, PythonPackage)
    nccl = next(p for p in packages if p.name == "nvidia-nccl-cu12")
    assert (nccl.manager, nccl.version, nccl.cite.line) == ("pip3", "2.27.5", 1)
    assert all(p.manager == "pip3" for p in packages)  # "[conda] Could not collect" is no package
    (matrix,) = of_type(facts, TopoMatrix)
    assert (matrix.gpu_count, matrix.nic_count, matrix.cite.line) == (8, 16, 21)
    assert [g.gpu for g in of_type(facts, TopoGpu)] == ["GPU0", "GPU1"]
    gpu_nic = [f for f in of_type(facts, TopoLink) if (f.a, f.b) == ("GPU0", "NIC4")]
    assert [f.link for f in gpu_nic] == ["PXB"]
    assert next(f for f in of_type(facts, TopoLink) if (f.a, f.b) == ("GPU1", "GPU2")).nvlinks == 18


def test_vllm_wsl2_laptop() -> None:
    soft = _soft(fixture_text("collect_env/vllm-wsl2-rtx4070-laptop-driver-551.txt"))
    assert soft.wsl is True
    assert soft.python_platform == "Linux-5.15.153.1-microsoft-standard-WSL2-x86_64-with-glibc2.35"
    assert (soft.nvidia_driver_version, soft.torch_version) == ("551.88", "2.4.0+cu121")
    assert soft.gpu_models == ((0, "NVIDIA GeForce RTX 4070 Laptop GPU"),)
    assert soft.clang_version == "14.0.0-1ubuntu1.1"
    assert soft.python_version == "3.12.3"


def test_h200_example_after_wget_output() -> None:
    text = EXAMPLE.read_bytes().decode("utf-8", errors="replace")
    assert [(b[0].number, b[-1].number) for b in blocks(CollectEnvParser(), text)] == [(11, 52)]
    facts = _facts(text)
    (soft,) = of_type(facts, SoftwareVersions)
    assert soft.torch_version is None
    assert (soft.is_cuda_available, soft.is_xnnpack_available, soft.cuda_module_loading) == (
        None,
        None,
        None,
    )
    assert soft.gpu_models == tuple((i, "NVIDIA H200") for i in range(8))
    assert (soft.nvidia_driver_version, soft.cuda_runtime_version) == ("570.172.08", "12.8.93")
    assert (soft.python_version, soft.os) == ("3.10.12", "Ubuntu 24.04.3 LTS (x86_64)")
    assert soft.cite.line == 12
    (cpu,) = of_type(facts, CpuInfo)
    assert cpu.cpu_count == 240


OLD_2019 = """\
Collecting environment information...
PyTorch version: 1.0.0
Is debug build: No
CUDA used to build PyTorch: 9.0.176

OS: Ubuntu 16.04.5 LTS
GCC version: (Ubuntu 5.4.0-6ubuntu1~16.04.10) 5.4.0 20160609
CMake version: version 3.5.1

Python version: 3.6
Is CUDA available: Yes
CUDA runtime version: 9.0.176
GPU models and configuration:
GPU 0: GeForce GTX 1080 Ti
GPU 1: GeForce GTX 1080 Ti

Nvidia driver version: 410.78
cuDNN version: Probably one of the following:
/usr/local/cuda-9.0/lib64/libcudnn.so.7.0.5
/usr/local/cuda-9.0/lib64/libcudnn_static.a

Versions of relevant libraries:
[pip] numpy==1.15.4
[pip] torch==1.0.0
[conda] pytorch                   1.0.0           py3.6_cuda9.0.176_cudnn7.4.1_1    pytorch
[conda] nccl                      2.4.8.1              hcb6b4a5_0    conda-forge
Traceback (most recent call last):
"""


def test_old_2019_yes_no_and_cudnn_candidates() -> None:
    assert [(b[0].number, b[-1].number) for b in blocks(CollectEnvParser(), OLD_2019)] == [(1, 26)]
    facts = _facts(OLD_2019)
    (soft,) = of_type(facts, SoftwareVersions)
    assert (soft.torch_version, soft.is_debug_build, soft.is_cuda_available) == (
        "1.0.0",
        False,
        True,
    )
    assert soft.cudnn_version is None
    assert soft.cudnn_libraries == (
        "/usr/local/cuda-9.0/lib64/libcudnn.so.7.0.5",
        "/usr/local/cuda-9.0/lib64/libcudnn_static.a",
    )
    assert len(soft.gpu_models) == 2
    assert soft.nccl_version == "2.4.8.1"
    assert soft.wsl is None
    assert [(p.manager, p.name, p.version) for p in of_type(facts, PythonPackage)][:2] == [
        ("pip", "numpy", "1.15.4"),
        ("pip", "torch", "1.0.0"),
    ]


VLLM_2025 = """\
Collecting environment information...
==============================
        System Info
==============================
OS                           : Ubuntu 22.04.4 LTS (x86_64)
GCC version                  : (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0
Clang version                : Could not collect
CMake version                : version 3.31.6
Libc version                 : glibc-2.35

==============================
       PyTorch Info
==============================
PyTorch version              : 2.7.0+cu126
Is debug build               : False
CUDA used to build PyTorch   : 12.6
ROCM used to build PyTorch   : N/A

==============================
      Python Environment
==============================
Python version               : 3.12.10 (main, Apr  9 2025, 04:44:59) [GCC 11.4.0] (64-bit runtime)
Python platform              : Linux-5.15.0-136-generic-x86_64-with-glibc2.35

==============================
       CUDA / GPU Info
==============================
Is CUDA available            : True
CUDA runtime version         : 12.6.85
CUDA_MODULE_LOADING set to   : LAZY
GPU models and configuration :
GPU 0: NVIDIA A100-SXM4-80GB
GPU 1: NVIDIA A100-SXM4-80GB

Nvidia driver version        : 550.127.05
cuDNN version                : Could not collect
HIP runtime version          : N/A
MIOpen runtime version       : N/A
Is XNNPACK available         : True

==============================
          CPU Info
==============================
Architecture:                         x86_64
CPU(s):                               128
Model name:                           AMD EPYC 7763 64-Core Processor
Socket(s):                            2
NUMA node(s):                         2
NUMA node0 CPU(s):                    0-63
NUMA node1 CPU(s):                    64-127
Vulnerability Spectre v2:             Mitigation; Retpolines; IBPB conditional

==============================
Versions of relevant libraries
==============================
[pip3] nvidia-nccl-cu12==2.26.2
[pip3] torch==2.7.0
[conda] Could not collect

==============================
         vLLM Info
==============================
ROCM Version                 : Could not collect
vLLM Version                 : 0.9.0
vLLM Build Flags:
  CUDA Archs: Not Set; ROCm: Disabled
GPU Topology:
  \tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
GPU0\t X \tNV12\t0-63\t0\t\tN/A
GPU1\tNV12\t X \t0-63\t0\t\tN/A

Legend:

  X    = Self
  NV#  = Connection traversing a bonded set of # NVLinks

==============================
     Environment Variables
==============================
NCCL_CUMEM_ENABLE=0
PYTORCH_NVML_BASED_CUDA_CHECK=1
"""


def test_vllm_2025_boxed_sections_stop_before_env_vars() -> None:
    found = blocks(CollectEnvParser(), VLLM_2025)
    assert len(found) == 1
    assert found[0][-1].text == "=============================="
    assert all("NCCL_CUMEM_ENABLE" not in line.raw for line in found[0])
    facts = _facts(VLLM_2025)
    (soft,) = of_type(facts, SoftwareVersions)
    assert (soft.torch_version, soft.os, soft.cmake_version) == (
        "2.7.0+cu126",
        "Ubuntu 22.04.4 LTS (x86_64)",
        "3.31.6",
    )
    assert (soft.python_version, soft.is_cuda_available, soft.cuda_module_loading) == (
        "3.12.10",
        True,
        "LAZY",
    )
    assert len(soft.gpu_models) == 2
    assert (soft.nvidia_driver_version, soft.nccl_version, soft.vllm_version) == (
        "550.127.05",
        "2.26.2",
        "0.9.0",
    )
    (cpu,) = of_type(facts, CpuInfo)
    assert (cpu.cpu_count, cpu.sockets, cpu.numa_nodes) == (128, 2, 2)
    assert cpu.numa_node_cpus == ((0, "0-63"), (1, "64-127"))
    assert cpu.model_name == "AMD EPYC 7763 64-Core Processor"
    (matrix,) = of_type(facts, TopoMatrix)
    assert matrix.devices == ("GPU0", "GPU1")
    assert [g.cpu_affinity for g in of_type(facts, TopoGpu)] == ["0-63", "0-63"]


def test_cpu_only_no_cuda_and_allocator_config() -> None:
    text = (
        "PyTorch version: 2.1.0+cpu\n"
        "Is debug build: False\n"
        "CUDA used to build PyTorch: None\n"
        "Is CUDA available: False\n"
        "CUDA runtime version: No CUDA\n"
        "GPU models and configuration: No CUDA\n"
        "Nvidia driver version: No CUDA\n"
        "cuDNN version: No CUDA\n"
        "Caching allocator config: expandable_segments:True\n"
    )
    soft = _soft(text)
    assert (soft.cuda_used_to_build_torch, soft.is_cuda_available, soft.gpu_models) == (
        None,
        False,
        (),
    )
    assert (soft.nvidia_driver_version, soft.cudnn_version) == (None, None)
    assert soft.caching_allocator_config == "expandable_segments:True"


@pytest.mark.parametrize(
    "relative",
    [
        "topo/b200-a4-nv18-8nic-nic-legend.txt",
        "nvlink/h800-8links-per-gpu-elided-middle.txt",
        "ibstat/cx6dx-mt4125-roce-100g-2port.txt",
        "ibv_devinfo/cx7-infiniband-lids-partial.txt",
        "ibstatus/roce-100g-edr-after-topo-legend.txt",
    ],
)
def test_other_kinds_do_not_start_a_block(relative: str) -> None:
    assert blocks(CollectEnvParser(), fixture_text(relative)) == []


def test_prose_about_pytorch_version_is_not_a_block() -> None:
    text = "INFO: PyTorch version 2.1.0 available.\nUsing [pip3]install later\n"
    assert blocks(CollectEnvParser(), text) == []


VLLM_2024_THEN_TRACEBACK = """\
Versions of relevant libraries:
[pip3] nvidia-nccl-cu12==2.20.5
[pip3] torch==2.3.0
[conda] torch                     2.3.0                    pypi_0    pypi
ROCM Version: Could not collect
Neuron SDK Version: N/A
vLLM Version: 0.5.0.post1
vLLM Build Flags:
CUDA Archs: Not Set; ROCm: Disabled; Neuron: Disabled
GPU Topology:
GPU0    GPU1    CPU Affinity    NUMA Affinity
GPU0     X      SYS     0-31            0
GPU1    SYS      X      32-63           1

[rank0]:   File "/opt/vllm/vllm/distributed/device_communicators/pynccl.py", line 118, in all_reduce
[rank0]: RuntimeError: NCCL error: invalid usage (run with NCCL_DEBUG=WARN for details)
"""


def test_vllm_2024_info_after_packages_ends_before_traceback() -> None:
    found = blocks(CollectEnvParser(), VLLM_2024_THEN_TRACEBACK)
    assert [(b[0].number, b[-1].number) for b in found] == [(1, 13)]
    facts = _facts(VLLM_2024_THEN_TRACEBACK)
    (soft,) = of_type(facts, SoftwareVersions)
    assert (soft.vllm_version, soft.nccl_version) == ("0.5.0.post1", "2.20.5")
    assert ("conda", "torch", "2.3.0") in soft.libraries
    (matrix,) = of_type(facts, TopoMatrix)
    assert matrix.cite.line == 11
    assert [(g.gpu, g.numa_node) for g in of_type(facts, TopoGpu)] == [("GPU0", 0), ("GPU1", 1)]


def test_exception_and_nccl_lines_end_the_block() -> None:
    text = (
        "PyTorch version: 2.1.0\n"
        "Is CUDA available: True\n"
        "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:219\n"
        "PyTorch version: 2.1.0\n"
        "NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
    )
    found = blocks(CollectEnvParser(), text)
    assert [(b[0].number, b[-1].number) for b in found] == [(1, 2), (4, 4)]


def test_mig_devices_under_gpu_list() -> None:
    text = (
        "PyTorch version: 2.0.1+cu117\n"
        "GPU models and configuration: \n"
        "GPU 0: NVIDIA A100-SXM4-40GB\n"
        "  MIG 3g.20gb     Device  0:\n"
        "  MIG 3g.20gb     Device  1:\n"
        "\n"
        "Nvidia driver version: 525.85.12\n"
    )
    assert [(b[0].number, b[-1].number) for b in blocks(CollectEnvParser(), text)] == [(1, 7)]
    soft = _soft(text)
    assert (soft.gpu_models, soft.nvidia_driver_version) == (
        ((0, "NVIDIA A100-SXM4-40GB"),),
        "525.85.12",
    )
