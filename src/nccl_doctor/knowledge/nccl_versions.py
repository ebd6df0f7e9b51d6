"""NCCL releases: version parsing, known failure-causing bugs, and the NCCL each torch wheel ships.

Sources, read on 2026-12-02:

- the release notes of every NVIDIA/nccl release (the messages of the release
  commits tagged v2.3.7-1 ... v2.30.7-1 in github.com/NVIDIA/nccl, which are the
  text of docs.nvidia.com/deeplearning/nccl/release-notes), quoted by release;
- NVIDIA/nccl issues #750 (hang with CUDA_LAUNCH_BLOCKING=1), #788, #1116 and #1134
  (alltoall connection deadlock with cuMem), #1185, #1234 (cuMem memory overhead);
  NVIDIA/JAX-Toolbox#331 (NVLS hangs in 2.17); pytorch/pytorch#97843, #153960 and
  PR #154055 (non-blocking communicator hang with NCCL 2.26);
- the ``Requires-Dist: nvidia-nccl-cu12`` / ``nvidia-nccl-cu11`` / ``nvidia-nccl-cu13``
  pins in the PyPI metadata of the default Linux x86_64 torch wheels 2.0.1-2.11.0.

A :class:`KnownIssue` covers releases from ``affected_from`` (the earliest release
the sources show affected; ``None`` when they do not say, and then every older
release counts) up to, not including, ``fixed_in``. Where no fixed release is
known, ``affected_through`` is the last release known affected. ``condition``
says when the bug bites; rules should check it before blaming the version.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_VERSION_RE = re.compile(r"(?<![\d.])v?(\d{1,3})\.(\d{1,3})(?:\.(\d{1,4}))?(?:-(\d{1,3}))?")


def parse_version(text: str) -> tuple[int, int, int] | None:
    """``(major, minor, patch)`` of the first version in ``text``, else ``None``.

    Accepts ``2.18.1``, ``v2.18.3-1``, ``2.21.5+cuda12.4``, ``NCCL version
    2.20.5``, ``(2, 19, 3)`` and NCCL_VERSION_CODE integers such as ``21903``
    (2.9 and later: major*10000 + minor*100 + patch) or ``2708`` (before 2.9:
    major*1000 + minor*100 + patch). A missing patch is 0.
    """
    if not isinstance(text, str):
        return None
    s = text.strip()[:200]
    tup = re.fullmatch(r"\(?\s*(\d{1,3})\s*,\s*(\d{1,3})\s*,\s*(\d{1,4})\s*\)?", s)
    if tup:
        return int(tup.group(1)), int(tup.group(2)), int(tup.group(3))
    if s.isascii() and s.isdigit() and 4 <= len(s) <= 6:
        return version_from_code(int(s))
    m = _VERSION_RE.search(s)
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def version_from_code(code: int) -> tuple[int, int, int] | None:
    """The version of an ``NCCL_VERSION_CODE`` integer, else ``None``."""
    if isinstance(code, bool) or not isinstance(code, int) or code <= 0:
        return None
    if code >= 20900:
        return code // 10000, code // 100 % 100, code % 100
    if 2000 <= code < 3000:
        return code // 1000, code // 100 % 10, code % 100
    return None


def compare_versions(a: str, b: str) -> int | None:
    """-1, 0 or 1 as version ``a`` is older, equal or newer than ``b``; ``None`` if unreadable."""
    va, vb = parse_version(a), parse_version(b)
    if va is None or vb is None:
        return None
    return (va > vb) - (va < vb)


#: First NCCL release supporting a GPU generation, most specific name first (``GB200``
#: before ``B200``, the workstation and GeForce Blackwell parts before ``Blackwell``): data-
#: centre Blackwell from 2.25.1 (NVIDIA/nccl#1611, maintainer); GeForce and workstation
#: Blackwell (sm_120) from 2.26.2, whose kernels fit their smaller shared memory
#: (NVIDIA/nccl-tests#287 and #291, NVIDIA's kiskra-nvidia, confirmed by the reporters).
MIN_NCCL_FOR_GPU: dict[str, str] = {
    "RTX 5090": "2.26.2",
    "RTX 5080": "2.26.2",
    "RTX PRO 6000": "2.26.2",
    "GB200": "2.25.1",
    "B200": "2.25.1",
    "Blackwell": "2.25.1",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class KnownIssue:
    """A bug of some NCCL releases that makes jobs fail, hang or corrupt data."""

    id: str
    summary: str
    symptom: str
    affected_from: str | None
    fixed_in: str | None
    source: str
    diagnosis_id: str
    affected_through: str | None = None
    condition: str | None = None
    workaround: str | None = None
    #: Where the condition is only a setting and an operation, both checkable: the setting
    #: (name, value) that turns the buggy path off, so the bug bites unless the job sets it,
    #: and the operation it bites in (a key of ``nccl_doctor.signs.nccl.OPERATIONS``), which the
    #: evidence must name.
    off_with: tuple[str, str] | None = None
    operation: str | None = None

    def affects(self, version: str) -> bool:
        """Whether ``version`` falls in this issue's range."""
        v = parse_version(version)
        if v is None:
            return False
        low = parse_version(self.affected_from) if self.affected_from else None
        if low is not None and v < low:
            return False
        if self.fixed_in is not None:
            high = parse_version(self.fixed_in)
            return high is not None and v < high
        last = parse_version(self.affected_through) if self.affected_through else None
        return last is not None and v <= last


def _notes(release: str) -> str:
    """The citation of one release's notes."""
    return f"NCCL {release} release notes"


_HANG = "app.hang"
_INT = "nccl.internal"

KNOWN_ISSUES: tuple[KnownIssue, ...] = (
    KnownIssue(
        id="bootstrap-socket-reuse-hang",
        summary="hang during bootstrap from socket reuse",
        symptom="ranks hang in init",
        affected_from=None,
        fixed_in="2.3.7",
        source=_notes("2.3.7-1"),
        diagnosis_id=_HANG,
    ),
    KnownIssue(
        id="ll-cleanup-hang",
        summary="LL buffer cleanup hang in long-running jobs",
        symptom="a long training run hangs after many iterations",
        affected_from="2.4.2",
        fixed_in="2.4.6",
        source=_notes("2.4.6-1"),
        diagnosis_id=_HANG,
        workaround="NCCL_PROTO=^LL or upgrade",
    ),
    KnownIssue(
        id="ll128-2pow31-hang",
        summary="hang with the LL128 protocol after 2^31 steps",
        symptom="a long job hangs after days of collectives",
        affected_from="2.5.6",
        fixed_in="2.8.3",
        source=_notes("2.8.3-1"),
        diagnosis_id=_HANG,
        workaround="NCCL_PROTO=^LL128 or upgrade",
    ),
    KnownIssue(
        id="one-gpu-per-node-protocol-mismatch",
        summary="protocol mismatch between ranks with one GPU per node",
        symptom="hangs or crashes in collectives",
        affected_from=None,
        fixed_in="2.8.3",
        source=_notes("2.8.3-1") + " (NVIDIA/nccl#394)",
        diagnosis_id=_HANG,
        condition="one GPU per node",
    ),
    KnownIssue(
        id="nvlink-down-corruption",
        summary="wrong NVLink detection when some links are down",
        symptom="data corruption (NaN or wrong results)",
        affected_from=None,
        fixed_in="2.12.7",
        source=_notes("2.12.7-1"),
        diagnosis_id="gpu.nvlink",
        condition="some NVLinks down",
    ),
    KnownIssue(
        id="cuda-launch-blocking-hang",
        summary="deadlock between kernel launch and the proxy thread with CUDA_LAUNCH_BLOCKING=1",
        symptom="the first inter-node collective hangs",
        affected_from="2.13.4",
        fixed_in="2.17.1",
        source="NVIDIA/nccl#750, NVIDIA/nccl#774, pytorch/pytorch#97843",
        diagnosis_id=_HANG,
        condition="CUDA_LAUNCH_BLOCKING=1 with network peers",
        workaround="unset CUDA_LAUNCH_BLOCKING",
    ),
    KnownIssue(
        id="h100-ring-ll128-2gpu-hang",
        summary="hang on H100 with Ring/LL128 on 2 GPUs",
        symptom="collectives hang",
        affected_from="2.15.1",
        fixed_in="2.15.5",
        source=_notes("2.15.5-1"),
        diagnosis_id=_HANG,
        condition="H100, 2 GPUs",
        workaround="NCCL_PROTO=^LL128",
    ),
    KnownIssue(
        id="ll128-unaligned-corruption",
        summary="potential data corruption with LL128 on unaligned buffers",
        symptom="wrong results or NaN",
        affected_from="2.15.1",
        fixed_in="2.15.5",
        source=_notes("2.15.5-1"),
        diagnosis_id=_INT,
        workaround="NCCL_PROTO=^LL128",
    ),
    KnownIssue(
        id="comm-abort-crash",
        summary="crash in ncclCommAbort",
        symptom="segfault on abort",
        affected_from="2.16.2",
        fixed_in="2.16.5",
        source=_notes("2.16.5-1"),
        diagnosis_id=_INT,
    ),
    KnownIssue(
        id="nvls-217-hang",
        summary="intermittent hangs with NVLink SHARP in 2.17",
        symptom="all-reduce hangs on NVSwitch systems",
        affected_from="2.17.1",
        fixed_in="2.18.1",
        source="NVIDIA/JAX-Toolbox#331",
        diagnosis_id="nccl.nvls",
        condition="NVSwitch system with NVLS enabled",
        workaround="NCCL_NVLS_ENABLE=0",
    ),
    KnownIssue(
        id="alltoallv-hang-788",
        summary="alltoallv hang",
        symptom="alltoallv hangs",
        affected_from=None,
        fixed_in="2.18.1",
        source=_notes("2.18.1-1") + " (NVIDIA/nccl#788)",
        diagnosis_id=_HANG,
    ),
    KnownIssue(
        id="tree-ll128-1gpu1nic-corruption",
        summary="data corruption with Tree/LL128 on systems with one NIC per GPU",
        symptom="wrong results or NaN",
        affected_from="2.18.1",
        fixed_in="2.18.3",
        source=_notes("2.18.3-1"),
        diagnosis_id=_INT,
        condition="1 GPU : 1 NIC systems",
    ),
    KnownIssue(
        id="shm-create-crash",
        summary="crash when shared memory creation fails",
        symptom="segfault or Bus error at init when /dev/shm is small",
        affected_from="2.18.1",
        fixed_in="2.18.3",
        source=_notes("2.18.3-1"),
        diagnosis_id="nccl.shm",
        workaround="give the container more /dev/shm (--shm-size, --ipc=host)",
    ),
    KnownIssue(
        id="shm-bus-error",
        summary="SHM allocation failures not detected, crashing with SIGBUS",
        symptom="Bus error (SIGBUS) in NCCL when /dev/shm is full",
        affected_from=None,
        fixed_in="2.19.1",
        source=_notes("2.19.1-1"),
        diagnosis_id="nccl.shm",
        workaround="give the container more /dev/shm (--shm-size, --ipc=host)",
    ),
    KnownIssue(
        id="cumem-alltoall-deadlock",
        summary="deadlock during alltoall connection setup with cuMem (default since 2.19)",
        symptom="alltoall or init hangs at scale",
        affected_from="2.19.1",
        fixed_in="2.20.3",
        source=_notes("2.20.3-1") + "; NVIDIA/nccl#1116, NVIDIA/nccl#1134",
        diagnosis_id=_HANG,
        condition="NCCL_CUMEM_ENABLE not 0, an alltoall (the A2A connection set-up)",
        workaround="NCCL_CUMEM_ENABLE=0",
        off_with=("NCCL_CUMEM_ENABLE", "0"),
        operation="alltoall",
    ),
    KnownIssue(
        id="cumem-memory-overhead",
        summary="cuMem allocations raise GPU memory use, notably with CUDA graphs",
        symptom="more GPU memory used than with 2.18; OOM in graph capture",
        affected_from="2.19.1",
        fixed_in="2.22.3",
        source="NVIDIA/nccl#1234; vllm-project/vllm#24141",
        diagnosis_id="gpu.oom",
        condition="NCCL_CUMEM_ENABLE not 0",
        workaround="NCCL_CUMEM_ENABLE=0",
    ),
    KnownIssue(
        id="uds-commsplit-failure",
        summary="UDS connection failure with ncclCommSplit",
        symptom="errors creating split communicators",
        affected_from="2.20.3",
        fixed_in="2.20.5",
        source=_notes("2.20.5-1") + " (NVIDIA/nccl#1185)",
        diagnosis_id=_INT,
    ),
    KnownIssue(
        id="bootstrap-reorder-mismatch",
        summary="packet reordering caused bootstrap mismatch",
        symptom="init fails or hangs",
        affected_from=None,
        fixed_in="2.21.5",
        source=_notes("2.21.5-1"),
        diagnosis_id=_INT,
    ),
    KnownIssue(
        id="crossnic-inconsistent-hang",
        summary="hang when crossNic differs between ranks",
        symptom="collectives hang",
        affected_from=None,
        fixed_in="2.21.5",
        source=_notes("2.21.5-1"),
        diagnosis_id=_HANG,
    ),
    KnownIssue(
        id="heterogeneous-nodes-hang",
        summary="hangs when nodes have different CPU types or architectures",
        symptom="collectives hang across mixed nodes",
        affected_from=None,
        fixed_in="2.26.2",
        source=_notes("2.22.3-1") + ", " + _notes("2.24.3-1") + ", " + _notes("2.26.2-1"),
        diagnosis_id=_HANG,
        condition="nodes with different CPUs or architectures",
    ),
    KnownIssue(
        id="numa-minus-one-crash",
        summary="crash when NUMA ids are -1",
        symptom="segfault at init (common in VMs)",
        affected_from=None,
        fixed_in="2.23.4",
        source=_notes("2.23.4-1"),
        diagnosis_id=_INT,
    ),
    KnownIssue(
        id="ib-uninitialized-crash",
        summary="crash in IB code from uninitialized fields",
        symptom="segfault in NET/IB",
        affected_from=None,
        fixed_in="2.24.3",
        source=_notes("2.24.3-1"),
        diagnosis_id=_INT,
    ),
    KnownIssue(
        id="cumem-host-docker",
        summary="cuMem host allocations fail without NUMA support",
        symptom="init errors in containers (cuMem host enabled since 2.24 with CUDA 12.6+)",
        affected_from="2.24.3",
        fixed_in="2.26.3",
        source=_notes("2.26.3-1"),
        diagnosis_id="nccl.shm",
        condition="Docker without --cap-add SYS_NICE",
        workaround="NCCL_CUMEM_HOST_ENABLE=0 or docker --cap-add SYS_NICE",
    ),
    KnownIssue(
        id="split-shared-connect-hang",
        summary="hang in connection setup of grouped communicators sharing resources",
        symptom="init of split communicators hangs",
        affected_from=None,
        fixed_in="2.26.2",
        source=_notes("2.26.2-1"),
        diagnosis_id=_HANG,
    ),
    KnownIssue(
        id="abort-progress-spin",
        summary="ncclCommAbort hung with the progress thread spinning",
        symptom="abort after an error never returns",
        affected_from=None,
        fixed_in="2.26.2",
        source=_notes("2.26.2-1"),
        diagnosis_id=_HANG,
    ),
    KnownIssue(
        id="net-plugin-test-error-hang",
        summary="hang when a network plugin's test() fails",
        symptom="hang instead of an error",
        affected_from=None,
        fixed_in="2.26.2",
        source=_notes("2.26.2-1"),
        diagnosis_id=_HANG,
    ),
    KnownIssue(
        id="nonblocking-226-hang",
        summary="random hangs with non-blocking communicators on NCCL 2.26",
        symptom="init or first collective hangs (torch 2.7.0 turned non-blocking on with "
        "device_id)",
        affected_from="2.26.2",
        fixed_in=None,
        affected_through="2.26.6",
        source="pytorch/pytorch#153960, pytorch/pytorch#154055",
        diagnosis_id=_HANG,
        condition="non-blocking communicators (TORCH_NCCL_USE_COMM_NONBLOCKING=1, or torch "
        "2.7.0 with init_process_group(device_id=...))",
        workaround="TORCH_NCCL_USE_COMM_NONBLOCKING=0, or torch 2.7.1",
    ),
    KnownIssue(
        id="commsplit-memory-corruption",
        summary="memory corruption in ncclCommSplit",
        symptom="crashes after splitting with shared resources",
        affected_from=None,
        fixed_in="2.27.3",
        source=_notes("2.27.3-1"),
        diagnosis_id=_INT,
        condition="split with resource sharing into a smaller NVLink domain",
    ),
    KnownIssue(
        id="proxy-ordering-hang-scale",
        summary="main/proxy thread ordering hang at large scale",
        symptom="hangs at large scale",
        affected_from="2.28.3",
        fixed_in="2.28.9",
        source=_notes("2.28.9-1"),
        diagnosis_id=_HANG,
    ),
    KnownIssue(
        id="gb200-cx8-nogdr-hang",
        summary="hang on GB200/GB300 with ConnectX-8 when GDR is off",
        symptom="collectives hang",
        affected_from=None,
        fixed_in="2.29.2",
        source=_notes("2.29.2-1"),
        diagnosis_id=_HANG,
        condition="GB200/GB300 with ConnectX-8 and GPUDirect RDMA disabled",
    ),
    KnownIssue(
        id="arm-cas-hang",
        summary="hang on ARM from a weak compare-and-swap failure",
        symptom="hangs on ARM hosts",
        affected_from="2.29.2",
        fixed_in="2.29.3",
        source=_notes("2.29.3-1"),
        diagnosis_id=_HANG,
        condition="ARM (aarch64) hosts",
    ),
)


def known_issues(version: str) -> tuple[KnownIssue, ...]:
    """The known issues that affect NCCL ``version`` (any form :func:`parse_version` reads)."""
    if parse_version(version) is None:
        return ()
    return tuple(issue for issue in KNOWN_ISSUES if issue.affects(version))


TORCH_NCCL: dict[str, str] = {
    "2.0.1": "2.14.3",
    "2.1.0": "2.18.1",
    "2.1.2": "2.18.1",
    "2.2.0": "2.19.3",
    "2.2.2": "2.19.3",
    "2.3.0": "2.20.5",
    "2.3.1": "2.20.5",
    "2.4.0": "2.20.5",
    "2.4.1": "2.20.5",
    "2.5.0": "2.21.5",
    "2.5.1": "2.21.5",
    "2.6.0": "2.21.5",
    "2.7.0": "2.26.2",
    "2.7.1": "2.26.2",
    "2.8.0": "2.27.3",
    "2.9.0": "2.27.5",
    "2.9.1": "2.27.5",
    "2.10.0": "2.27.5",
    "2.11.0": "2.28.9",
}
"""NCCL pinned by the default PyPI torch wheel for Linux x86_64 (cu11 for 2.0, cu12 for
2.1-2.10, cu13 for 2.11), from the wheels' metadata. Other builds (conda, other CUDA
variants, NGC containers) may ship another NCCL."""


def bundled_nccl(torch_version: str) -> str | None:
    """The NCCL the default Linux x86_64 wheel of ``torch_version`` pins (``2.5.1+cu124`` ok)."""
    if not isinstance(torch_version, str):
        return None
    base = torch_version.strip().split("+", 1)[0]
    return TORCH_NCCL.get(base)
