"""Real one-GPU NCCL failures (tests/fixtures/captured/zoo-h200): what the parsers read."""

from __future__ import annotations

from nccl_doctor.evidence.reader import ReadResult, read_paths
from nccl_doctor.facts.gpu import GpuProcess
from nccl_doctor.facts.nccl import NcclVersion
from nccl_doctor.facts.run import (
    ChildFailure,
    CudaError,
    CudaOutOfMemory,
    DistributedError,
    NcclErrorReport,
    PythonTraceback,
)
from tests.helpers import FIXTURES

ZOO = FIXTURES / "captured" / "zoo-h200"


def _read(name: str) -> ReadResult:
    return read_paths([str(ZOO / name)])


def test_duplicate_gpu_is_read_for_both_ranks() -> None:
    facts = _read("duplicate_gpu.log").facts
    dup = [f for f in facts if isinstance(f, DistributedError) and f.category == "duplicate_gpu"]
    assert sorted((f.rank, f.peer_rank) for f in dup) == [(0, 1), (1, 0)]
    roots = [(f.rank, f.exitcode) for f in facts if isinstance(f, ChildFailure) and f.root_cause]
    assert roots == [(0, 1)]


def test_device_assert_inside_nccl_error() -> None:
    facts = _read("device_assert.log").facts
    kinds = {(f.kind, f.error) for f in facts if isinstance(f, CudaError)}
    assert ("device_assert", "device-side assert triggered") in kinds
    (report,) = [f for f in facts if isinstance(f, NcclErrorReport)]
    assert (report.result_name, report.nccl_version) == ("ncclUnhandledCudaError", "2.28.9")


def test_invalid_ordinal_and_no_gpus() -> None:
    ordinal = [f.error for f in _read("invalid_ordinal.log").facts if isinstance(f, CudaError)]
    assert "invalid device ordinal" in ordinal
    no_gpus = [f for f in _read("no_gpus.log").facts if isinstance(f, DistributedError)]
    assert [f.category for f in no_gpus] == ["no_gpus"]


def test_bad_socket_ifname_surfaces_as_invalid_usage() -> None:
    facts = _read("bad_ifname.log").facts
    tracebacks = [f for f in facts if isinstance(f, PythonTraceback)]
    # the rank's own error, then the launcher's ChildFailedError after it
    assert [(t.rank, t.exc_name) for t in tracebacks] == [
        (0, "DistBackendError"),
        (None, "ChildFailedError"),
    ]
    assert "invalid usage" in tracebacks[0].message
    assert "Bootstrap : no socket interface found" in tracebacks[0].message_lines


def test_oom_names_the_other_process_and_nvidia_smi_agrees() -> None:
    (oom,) = [f for f in _read("oom_foreign.log").facts if isinstance(f, CudaOutOfMemory)]
    assert (oom.rank, oom.tried_mib, oom.gpu_index) == (0, 40960.0, 0)
    assert [pid for pid, _ in oom.other_processes] == [707]
    smi = [f for f in _read("oom_foreign.nvidia-smi.txt").facts if isinstance(f, GpuProcess)]
    assert [(p.pid, p.name, p.memory_used_mib) for p in smi] == [(707, "python", None)]


def test_misspelt_and_invalid_nccl_variables_leave_no_trace_in_the_log() -> None:
    result = _read("env_typo.log")
    versions = {f.version for f in result.facts if isinstance(f, NcclVersion)}
    assert versions == {"2.28.9"}
    raw = (ZOO / "env_typo.log").read_text()
    assert "NCCL_SOCKET_IFNAMES" not in raw
    assert "Bogus" not in raw
