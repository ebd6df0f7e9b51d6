# ruff: noqa: N802, N801, N816 -- the fake keeps pynvml's names
"""A fake ``pynvml``: the same names and signatures, driven by a scenario.

The scenario comes from ``FAKE_NVML_SCENARIO`` (so the NVML child process of
``read_nvml`` can import this module by name) or from :func:`use`:

* ``ok`` — two GPUs: GPU 0 with two compute processes, ECC errors, a
  degraded PCIe link and throttle reasons; GPU 1 in MIG mode with two MIG
  devices, four NVLinks (one inactive, replay errors) and fabric Completed.
* ``not_supported`` — one GPU whose every optional query raises NotSupported
  (or NoPermission / FunctionNotFound), and an ``Unknown Error`` temperature.
* ``lib_not_found``, ``driver_not_loaded``, ``mismatch``, ``init_fail`` —
  ``nvmlInit`` fails with that code.
* ``lost`` — GPU 0 fine, GPU 1's handle lookup says GPU is lost.
* ``no_devices`` — init works, no GPU.
* ``hang`` — ``nvmlDeviceGetCount`` never returns.

``FAKE_NVML_BUMP=N`` adds N to GPU 0's ECC counts and GPU 1's NVLink replay
errors: a second read of a node whose counters moved.
"""

from __future__ import annotations

import ctypes
import os
import time
from types import SimpleNamespace
from typing import Any

NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18
NVML_ERROR_UNKNOWN = 999
NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON = 90
nvmlGpuFabricInfo_v2 = 0x2000024

_MESSAGES = {
    3: "Not Supported",
    4: "Insufficient Permissions",
    9: "Driver Not Loaded",
    12: "NVML Shared Library Not Found",
    13: "Function Not Found",
    15: "GPU is lost",
    18: "Driver/library version mismatch",
    999: "Unknown Error",
}
_GIB = 1024**3
_MIB = 1024**2

_state: dict[str, str] = {}


class NVMLError(Exception):
    """What pynvml raises: ``value`` is the NVML return code."""

    def __init__(self, value: int) -> None:
        super().__init__(_MESSAGES.get(value, f"error {value}"))
        self.value = value


def use(scenario: str) -> None:
    """Pick the scenario for in-process use."""
    _state["scenario"] = scenario


def scenario() -> str:
    return _state.get("scenario") or os.environ.get("FAKE_NVML_SCENARIO", "ok")


def nvmlInit() -> None:
    codes = {
        "lib_not_found": NVML_ERROR_LIBRARY_NOT_FOUND,
        "driver_not_loaded": NVML_ERROR_DRIVER_NOT_LOADED,
        "mismatch": NVML_ERROR_LIB_RM_VERSION_MISMATCH,
        "init_fail": NVML_ERROR_UNKNOWN,
    }
    if scenario() in codes:
        raise NVMLError(codes[scenario()])


def nvmlShutdown() -> None:
    return None


def nvmlErrorString(code: int) -> str:
    return _MESSAGES.get(code, "Unknown Error")


def nvmlSystemGetDriverVersion() -> str:
    return "580.159.04"


def nvmlSystemGetNVMLVersion() -> str:
    return "13.580.159.04"


def nvmlSystemGetCudaDriverVersion() -> int:
    return 13000


def nvmlDeviceGetCount() -> int:
    if scenario() == "hang":
        time.sleep(3600)
    return {"no_devices": 0, "not_supported": 1}.get(scenario(), 2)


_BUS = ("00000000:3B:00.0", "00000000:86:00.0")


def nvmlDeviceGetHandleByIndex(index: int) -> Any:
    if scenario() == "lost" and index == 1:
        raise NVMLError(NVML_ERROR_GPU_IS_LOST)
    return SimpleNamespace(index=index, mig=None)


def _limited(handle: Any, code: int = NVML_ERROR_NOT_SUPPORTED) -> None:
    if scenario() == "not_supported":
        raise NVMLError(code)


def nvmlDeviceGetName(handle: Any) -> str:
    return "NVIDIA H200"


def nvmlDeviceGetUUID(handle: Any) -> str:
    return f"GPU-0000000{handle.index}-1111-2222-3333-444444444444"


def nvmlDeviceGetSerial(handle: Any) -> str:
    _limited(handle)
    return f"16524230{handle.index:05d}"


def _bump() -> int:
    """``FAKE_NVML_BUMP``: added to GPU 0's ECC and GPU 1's NVLink error counters (a later read)."""
    return int(os.environ.get("FAKE_NVML_BUMP", "0"))


def nvmlDeviceGetPciInfo(handle: Any) -> Any:
    return SimpleNamespace(busId=_BUS[handle.index].encode())


def nvmlDeviceGetMemoryInfo(handle: Any) -> Any:
    if handle.mig is not None:
        return SimpleNamespace(total=20 * _GIB, used=(handle.mig + 1) * 100 * _MIB)
    return SimpleNamespace(total=143771 * _MIB, used=(70000 + handle.index) * _MIB)


def nvmlDeviceGetUtilizationRates(handle: Any) -> Any:
    _limited(handle, NVML_ERROR_NO_PERMISSION)
    return SimpleNamespace(gpu=97, memory=41)


def nvmlDeviceGetComputeRunningProcesses(handle: Any) -> list[Any]:
    _limited(handle)
    if handle.index != 0:
        return []
    return [
        SimpleNamespace(
            pid=os.getpid(),
            usedGpuMemory=60000 * _MIB,
            gpuInstanceId=0xFFFFFFFF,
            computeInstanceId=0xFFFFFFFF,
        ),
        SimpleNamespace(
            pid=4_000_000,
            usedGpuMemory=None,
            gpuInstanceId=0xFFFFFFFF,
            computeInstanceId=0xFFFFFFFF,
        ),
    ]


def nvmlDeviceGetComputeMode(handle: Any) -> int:
    return 3 if handle.index == 0 else 0


def nvmlDeviceGetMigMode(handle: Any) -> list[int]:
    _limited(handle)
    return [1, 1] if handle.index == 1 else [0, 1]


def nvmlDeviceGetPersistenceMode(handle: Any) -> int:
    return 1


def nvmlDeviceGetEccMode(handle: Any) -> list[int]:
    _limited(handle)
    return [1, 1]


def nvmlDeviceGetTotalEccErrors(handle: Any, error_type: int, counter: int) -> int:
    _limited(handle)
    if handle.index != 0:
        return 0
    counts = {(0, 0): 12, (1, 0): 3, (0, 1): 120, (1, 1): 7}
    return counts[(error_type, counter)] + _bump()


def nvmlDeviceGetRetiredPages(handle: Any, cause: int) -> list[int]:
    _limited(handle)
    return [0x1000, 0x2000] if cause == 1 and handle.index == 0 else []


def nvmlDeviceGetRetiredPagesPendingStatus(handle: Any) -> int:
    _limited(handle)
    return 1 if handle.index == 0 else 0


def nvmlDeviceGetRemappedRows(handle: Any) -> tuple[int, int, int, int]:
    _limited(handle)
    return (2, 1, 1, 0) if handle.index == 0 else (0, 0, 0, 0)


def nvmlDeviceGetCurrentClocksEventReasons(handle: Any) -> int:
    _limited(handle, NVML_ERROR_FUNCTION_NOT_FOUND)
    return 0x4 | 0x8 if handle.index == 0 else 0x1


def nvmlDeviceGetTemperature(handle: Any, sensor: int) -> int:
    if scenario() == "not_supported":
        raise NVMLError(NVML_ERROR_UNKNOWN)
    return 71


def nvmlDeviceGetPowerUsage(handle: Any) -> int:
    _limited(handle)
    return 512345


def nvmlDeviceGetEnforcedPowerLimit(handle: Any) -> int:
    _limited(handle)
    return 700000


def nvmlDeviceGetCurrPcieLinkGeneration(handle: Any) -> int:
    _limited(handle)
    return 4 if handle.index == 0 else 5


def nvmlDeviceGetMaxPcieLinkGeneration(handle: Any) -> int:
    _limited(handle)
    return 5


def nvmlDeviceGetGpuMaxPcieLinkGeneration(handle: Any) -> int:
    _limited(handle)
    return 5


def nvmlDeviceGetCurrPcieLinkWidth(handle: Any) -> int:
    _limited(handle)
    return 8 if handle.index == 0 else 16


def nvmlDeviceGetMaxPcieLinkWidth(handle: Any) -> int:
    _limited(handle)
    return 16


def nvmlDeviceGetPcieReplayCounter(handle: Any) -> int:
    _limited(handle)
    return 5 if handle.index == 0 else 0


def nvmlDeviceGetFieldValues(handle: Any, fields: list[int]) -> list[Any]:
    _limited(handle)
    return [SimpleNamespace(nvmlReturn=0, value=SimpleNamespace(uiVal=26562)) for _ in fields]


def nvmlDeviceGetNvLinkState(handle: Any, link: int) -> int:
    _limited(handle)
    if handle.index != 1 or link >= 4:
        raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
    return 0 if link == 3 else 1


def nvmlDeviceGetNvLinkErrorCounter(handle: Any, link: int, counter: int) -> int:
    return 148 + _bump() if (link, counter) == (1, 0) else 0


class c_nvmlGpuFabricInfoV_t(ctypes.Structure):
    _fields_ = (
        ("version", ctypes.c_uint),
        ("clusterUuid", ctypes.c_ubyte * 16),
        ("status", ctypes.c_uint),
        ("cliqueId", ctypes.c_uint),
        ("state", ctypes.c_uint),
        ("healthMask", ctypes.c_uint),
    )


def nvmlDeviceGetGpuFabricInfoV(handle: Any, ref: Any) -> int:
    """Like the C call: fills the structure ``ref`` points to (a ``ctypes.byref``)."""
    _limited(handle)
    info = ref._obj
    assert info.version == nvmlGpuFabricInfo_v2
    info.state, info.status = (3, 0) if handle.index == 1 else (0, 0)
    return 0


def nvmlDeviceGetMaxMigDeviceCount(handle: Any) -> int:
    return 7


def nvmlDeviceGetMigDeviceHandleByIndex(handle: Any, index: int) -> Any:
    if index >= 2:
        raise NVMLError(6)
    return SimpleNamespace(index=handle.index, mig=index)


def nvmlDeviceGetGpuInstanceId(handle: Any) -> int:
    return 3 + handle.mig


def nvmlDeviceGetComputeInstanceId(handle: Any) -> int:
    return 0
