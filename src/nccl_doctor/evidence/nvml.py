"""NVML, read in a child process under a deadline: the only home of ``pynvml``.

:func:`read_nvml` runs ``python -m nccl_doctor.evidence.nvml`` and gives up
on it after the timeout (``NVML did not answer within 5 s``), so a driver
that never returns never hangs the tool. The child calls :func:`collect`,
which turns everything into a JSON-ready snapshot: every field read is
guarded (not supported, no permission, a function the driver lacks: the
field is ``None``); an ``Unknown Error`` field is listed in the GPU's
``errors``; a lost GPU is marked ``lost``. Whole-library failures (library
not found, driver not loaded, driver/library version mismatch, another init
failure, no devices) are the snapshot's ``outcome``.
"""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import sys
from collections.abc import Callable
from contextlib import suppress
from types import ModuleType
from typing import Any

from nccl_doctor.evidence.host_live import process_details
from nccl_doctor.evidence.live import DEFAULT_TIMEOUT_S, run_command

Snapshot = dict[str, Any]

# NVML return codes (nvml.h), used where the bindings lack the constant.
_CODES = {
    "NO_PERMISSION": 4,
    "DRIVER_NOT_LOADED": 9,
    "LIBRARY_NOT_FOUND": 12,
    "FUNCTION_NOT_FOUND": 13,
    "GPU_IS_LOST": 15,
    "LIB_RM_VERSION_MISMATCH": 18,
    "UNKNOWN": 999,
}
_INIT_OUTCOMES = {
    "LIBRARY_NOT_FOUND": "library_not_found",
    "DRIVER_NOT_LOADED": "driver_not_loaded",
    "LIB_RM_VERSION_MISMATCH": "version_mismatch",
    "NO_PERMISSION": "no_permission",
}
#: clock event reason bits (nvml.h) and their nvidia-smi XML names
REASON_BITS = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clocks_setting"),
)
_COMPUTE_MODES = {0: "Default", 1: "Exclusive_Thread", 2: "Prohibited", 3: "Exclusive_Process"}
_FABRIC_STATES = {0: "Not Supported", 1: "Not Started", 2: "In Progress", 3: "Completed"}
_NVLINK_COUNTERS = ((0, "Replay Errors"), (1, "Recovery Errors"), (2, "CRC Errors"))
_NVLINK_MAX = 18
_NOT_AVAILABLE = (1 << 64) - 1
_NO_INSTANCE = 0xFFFFFFFF
_MIB = 1024 * 1024


def _code(nv: ModuleType, name: str) -> int:
    return int(getattr(nv, f"NVML_ERROR_{name}", _CODES[name]))


def _text(value: object) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _message(exc: BaseException) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__


class _Calls:
    """Guarded NVML calls of one GPU: every failure becomes ``None``."""

    def __init__(self, nv: ModuleType) -> None:
        self.nv = nv
        self.lost = False
        self.lost_message = ""
        self.errors: list[str] = []

    def __call__(self, field: str, fn: str, *args: object) -> Any:
        func: Callable[..., Any] | None = getattr(self.nv, fn, None)
        if func is None:
            return None
        try:
            return func(*args)
        except Exception as exc:  # noqa: BLE001 -- every NVMLError subclass, ctypes errors
            code = getattr(exc, "value", None)
            if code == _code(self.nv, "GPU_IS_LOST"):
                self.lost, self.lost_message = True, _message(exc)
            elif code == _code(self.nv, "UNKNOWN"):
                self.errors.append(field)
            return None


def _mib(value: object) -> int | None:
    if not isinstance(value, int) or value == _NOT_AVAILABLE or value < 0:
        return None
    return value // _MIB


def _processes(call: _Calls, handle: object) -> list[dict[str, Any]] | None:
    found = call("processes", "nvmlDeviceGetComputeRunningProcesses", handle)
    if found is None:
        return None
    procs = []
    for proc in found:
        pid = getattr(proc, "pid", None)
        if not isinstance(pid, int):
            continue
        gi, ci = getattr(proc, "gpuInstanceId", None), getattr(proc, "computeInstanceId", None)
        procs.append(
            {
                "pid": pid,
                "used_memory_mib": _mib(getattr(proc, "usedGpuMemory", None)),
                "gpu_instance_id": gi if isinstance(gi, int) and gi != _NO_INSTANCE else None,
                "compute_instance_id": ci if isinstance(ci, int) and ci != _NO_INSTANCE else None,
                **process_details(pid),
            }
        )
    return procs


def _nvlinks(call: _Calls, handle: object) -> list[dict[str, Any]]:
    speed = None
    field_id = getattr(call.nv, "NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON", None)
    if field_id is not None:
        values = call("nvlink_speed", "nvmlDeviceGetFieldValues", handle, [field_id])
        if values and getattr(values[0], "nvmlReturn", 1) == 0:
            speed = getattr(getattr(values[0], "value", None), "uiVal", None)
    links = []
    for link in range(_NVLINK_MAX):
        state = call("nvlink", "nvmlDeviceGetNvLinkState", handle, link)
        if state is None:
            break
        errors = {}
        for counter, label in _NVLINK_COUNTERS:
            count = call("nvlink", "nvmlDeviceGetNvLinkErrorCounter", handle, link, counter)
            if isinstance(count, int):
                errors[label] = count
        links.append({"link": link, "active": bool(state), "speed_mbps": speed, "errors": errors})
    return links


def _fabric(call: _Calls, handle: object) -> tuple[str | None, str | None]:
    nv = call.nv
    info: Any = None
    if hasattr(nv, "c_nvmlGpuFabricInfoV_t") and hasattr(nv, "nvmlDeviceGetGpuFabricInfoV"):
        info = nv.c_nvmlGpuFabricInfoV_t()
        info.version = getattr(nv, "nvmlGpuFabricInfo_v2", 0)
        if call("fabric_state", "nvmlDeviceGetGpuFabricInfoV", handle, ctypes.byref(info)) is None:
            info = None
    if info is None and hasattr(nv, "c_nvmlGpuFabricInfo_t"):
        info = nv.c_nvmlGpuFabricInfo_t()
        if call("fabric_state", "nvmlDeviceGetGpuFabricInfo", handle, ctypes.byref(info)) is None:
            info = None
    if info is None:
        return None, None
    state = _FABRIC_STATES.get(int(info.state))
    if state in (None, "Not Supported"):
        return None, None
    status = int(info.status)
    text = "Success" if status == 0 else call("fabric_status", "nvmlErrorString", status)
    return state, _text(text) if text is not None else None


def _mig_devices(call: _Calls, handle: object) -> list[dict[str, Any]]:
    count = call("mig_devices", "nvmlDeviceGetMaxMigDeviceCount", handle)
    out = []
    for index in range(count if isinstance(count, int) else 0):
        mig = call("mig_devices", "nvmlDeviceGetMigDeviceHandleByIndex", handle, index)
        if mig is None:
            continue
        memory = call("mig_devices", "nvmlDeviceGetMemoryInfo", mig)
        out.append(
            {
                "index": index,
                "gpu_instance_id": call("mig_devices", "nvmlDeviceGetGpuInstanceId", mig),
                "compute_instance_id": call("mig_devices", "nvmlDeviceGetComputeInstanceId", mig),
                "memory_total_mib": _mib(getattr(memory, "total", None)),
                "memory_used_mib": _mib(getattr(memory, "used", None)),
            }
        )
    return out


def _pair(value: object) -> tuple[Any, Any]:
    if isinstance(value, list | tuple) and len(value) >= 2:
        return value[0], value[1]
    return None, None


def _on(value: object) -> bool | None:
    return bool(value) if isinstance(value, int) else None


def _gpu(nv: ModuleType, index: int) -> dict[str, Any]:
    call = _Calls(nv)
    handle = call("handle", "nvmlDeviceGetHandleByIndex", index)
    gpu: dict[str, Any] = {"index": index}
    if handle is None:
        gpu.update(lost=call.lost, message=call.lost_message or "no handle", errors=call.errors)
        return gpu
    pci = call("bus_id", "nvmlDeviceGetPciInfo", handle)
    memory = call("memory", "nvmlDeviceGetMemoryInfo", handle)
    util = call("utilization", "nvmlDeviceGetUtilizationRates", handle)
    mig, mig_pending = _pair(call("mig_mode", "nvmlDeviceGetMigMode", handle))
    ecc, ecc_pending = _pair(call("ecc_mode", "nvmlDeviceGetEccMode", handle))
    remap = call("remapped_rows", "nvmlDeviceGetRemappedRows", handle)
    reasons = call("clocks_event_reasons", "nvmlDeviceGetCurrentClocksEventReasons", handle)
    if reasons is None:
        reasons = call("clocks_event_reasons", "nvmlDeviceGetCurrentClocksThrottleReasons", handle)
    power = call("power_draw", "nvmlDeviceGetPowerUsage", handle)
    limit = call("power_limit", "nvmlDeviceGetEnforcedPowerLimit", handle)
    mode = call("compute_mode", "nvmlDeviceGetComputeMode", handle)
    name = call("name", "nvmlDeviceGetName", handle)
    uuid = call("uuid", "nvmlDeviceGetUUID", handle)
    serial = call("serial", "nvmlDeviceGetSerial", handle)
    gpu.update(
        name=_text(name) if name is not None else None,
        uuid=_text(uuid) if uuid is not None else None,
        serial=_text(serial) if serial is not None else None,
        bus_id=_text(pci.busId) if pci is not None else None,
        memory_total_mib=_mib(getattr(memory, "total", None)),
        memory_used_mib=_mib(getattr(memory, "used", None)),
        utilization_gpu_pct=getattr(util, "gpu", None),
        utilization_memory_pct=getattr(util, "memory", None),
        processes=_processes(call, handle),
        compute_mode=_COMPUTE_MODES.get(mode) if isinstance(mode, int) else None,
        mig_mode=_on(mig),
        mig_mode_pending=_on(mig_pending),
        persistence_mode=_on(call("persistence_mode", "nvmlDeviceGetPersistenceMode", handle)),
        ecc_mode=_on(ecc),
        ecc_mode_pending=_on(ecc_pending),
        temperature_c=call("temperature", "nvmlDeviceGetTemperature", handle, 0),
        power_draw_w=power / 1000 if isinstance(power, int | float) else None,
        power_limit_w=limit / 1000 if isinstance(limit, int | float) else None,
        pcie_gen_current=call("pcie", "nvmlDeviceGetCurrPcieLinkGeneration", handle),
        pcie_gen_max=call("pcie", "nvmlDeviceGetMaxPcieLinkGeneration", handle),
        pcie_gen_device_max=call("pcie", "nvmlDeviceGetGpuMaxPcieLinkGeneration", handle),
        pcie_width_current=call("pcie", "nvmlDeviceGetCurrPcieLinkWidth", handle),
        pcie_width_max=call("pcie", "nvmlDeviceGetMaxPcieLinkWidth", handle),
        pcie_replays=call("pcie_replays", "nvmlDeviceGetPcieReplayCounter", handle),
        clocks_event_reasons=(
            [n for bit, n in REASON_BITS if reasons & bit] if isinstance(reasons, int) else None
        ),
        retired_pages_pending=_on(
            call("retired_pages", "nvmlDeviceGetRetiredPagesPendingStatus", handle)
        ),
        remapped_rows=list(remap) if isinstance(remap, list | tuple) and len(remap) >= 4 else None,
        nvlinks=_nvlinks(call, handle),
        mig_devices=_mig_devices(call, handle) if mig else [],
    )
    for scope, counter in (("volatile", 0), ("aggregate", 1)):
        for kind, error_type in (("corrected", 0), ("uncorrected", 1)):
            field = f"ecc_{scope}_{kind}"
            gpu[field] = call(field, "nvmlDeviceGetTotalEccErrors", handle, error_type, counter)
    for cause, field in ((0, "retired_pages_single_bit"), (1, "retired_pages_double_bit")):
        pages = call(field, "nvmlDeviceGetRetiredPages", handle, cause)
        gpu[field] = len(pages) if isinstance(pages, list | tuple) else None
    gpu["fabric_state"], gpu["fabric_status"] = _fabric(call, handle)
    gpu.update(lost=call.lost, message=call.lost_message, errors=sorted(set(call.errors)))
    return gpu


def collect(nv: ModuleType) -> Snapshot:
    """Everything NVML tells, as a JSON-ready snapshot (never raises)."""
    try:
        nv.nvmlInit()
    except Exception as exc:  # noqa: BLE001 -- NVMLError of any code, OSError of a broken lib
        code = getattr(exc, "value", None)
        outcome = next(
            (o for name, o in _INIT_OUTCOMES.items() if code == _code(nv, name)), "init_failed"
        )
        return {"outcome": outcome, "message": _message(exc), "gpus": []}
    try:
        call = _Calls(nv)
        driver = call("driver_version", "nvmlSystemGetDriverVersion")
        nvml_version = call("nvml_version", "nvmlSystemGetNVMLVersion")
        cuda = call("cuda_version", "nvmlSystemGetCudaDriverVersion")
        count = call("gpu_count", "nvmlDeviceGetCount")
        snap: Snapshot = {
            "outcome": "ok",
            "message": "",
            "driver_version": _text(driver) if driver is not None else None,
            "nvml_version": _text(nvml_version) if nvml_version is not None else None,
            "cuda_driver_version": (
                f"{cuda // 1000}.{cuda % 1000 // 10}" if isinstance(cuda, int) else None
            ),
            "gpu_count": count,
            "gpus": [_gpu(nv, i) for i in range(count if isinstance(count, int) else 0)],
        }
        if count == 0:
            snap.update(outcome="no_devices", message="No devices were found")
        return snap
    finally:
        with suppress(Exception):  # shutting down is best effort
            nv.nvmlShutdown()


def _load(module: str) -> ModuleType | Snapshot:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        return {"outcome": "not_installed", "message": f"cannot import {module}: {exc}", "gpus": []}


def read_nvml(
    timeout_s: float = DEFAULT_TIMEOUT_S,
    *,
    module: str = "pynvml",
    env: dict[str, str] | None = None,
) -> Snapshot:
    """The NVML snapshot from a child process, or the outcome that says why there is none."""
    argv = [sys.executable, "-m", "nccl_doctor.evidence.nvml", "--module", module]
    done = run_command(
        argv, timeout_s, env=env if env is not None else dict(os.environ), what="nvml"
    )
    base: Snapshot = {"gpus": [], "elapsed_s": round(done.elapsed_s, 4), "timeout_s": timeout_s}
    if done.status == "timeout":
        return {
            **base,
            "outcome": "timeout",
            "message": f"NVML did not answer within {timeout_s:g} s",
        }
    try:
        snap = json.loads(done.text)
    except ValueError:
        snap = None
    if not isinstance(snap, dict) or "outcome" not in snap:
        why = done.message or "no snapshot on its output"
        return {**base, "outcome": "crashed", "message": f"the NVML reader failed: {why}"}
    return {**snap, **base, "gpus": snap.get("gpus", [])}


def main(argv: list[str] | None = None) -> int:
    """The child: print the snapshot as one JSON document."""
    args = sys.argv[1:] if argv is None else argv
    module = args[args.index("--module") + 1] if "--module" in args[:-1] else "pynvml"
    loaded = _load(module)
    snap = loaded if isinstance(loaded, dict) else collect(loaded)
    sys.stdout.write(json.dumps(snap) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
