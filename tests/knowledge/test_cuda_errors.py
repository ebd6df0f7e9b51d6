"""CUDA error codes: numbers, names, messages, stickiness, diagnosis mapping."""

from __future__ import annotations

import pytest

from nccl_doctor.knowledge.cuda_errors import ERRORS, CudaError, by_code, by_message, by_name
from tests.knowledge._catalogue import catalogue_ids


def _get(code: int) -> CudaError:
    err = by_code(code)
    assert err is not None, code
    return err


@pytest.mark.parametrize(
    ("code", "name", "message"),
    [
        (2, "cudaErrorMemoryAllocation", "out of memory"),
        (3, "cudaErrorInitializationError", "initialization error"),
        (
            35,
            "cudaErrorInsufficientDriver",
            "CUDA driver version is insufficient for CUDA runtime version",
        ),
        (46, "cudaErrorDevicesUnavailable", "CUDA-capable device(s) is/are busy or unavailable"),
        (100, "cudaErrorNoDevice", "no CUDA-capable device is detected"),
        (101, "cudaErrorInvalidDevice", "invalid device ordinal"),
        (
            217,
            "cudaErrorPeerAccessUnsupported",
            "peer access is not supported between these two devices",
        ),
        (
            220,
            "cudaErrorNvlinkUncorrectable",
            "uncorrectable NVLink error detected during the execution",
        ),
        (700, "cudaErrorIllegalAddress", "an illegal memory access was encountered"),
        (710, "cudaErrorAssert", "device-side assert triggered"),
        (716, "cudaErrorMisalignedAddress", "misaligned address"),
        (719, "cudaErrorLaunchFailure", "unspecified launch failure"),
        (802, "cudaErrorSystemNotReady", "system not yet initialized"),
        (
            803,
            "cudaErrorSystemDriverMismatch",
            "system has unsupported display driver / cuda driver combination",
        ),
        (
            804,
            "cudaErrorCompatNotSupportedOnDevice",
            "forward compatibility was attempted on non supported HW",
        ),
        (999, "cudaErrorUnknown", "unknown error"),
    ],
)
def test_known_codes(code: int, name: str, message: str) -> None:
    err = _get(code)
    assert err.name == name
    assert err.message == message


def test_driver_names() -> None:
    assert _get(700).driver_name == "CUDA_ERROR_ILLEGAL_ADDRESS"
    assert _get(0).driver_name == "CUDA_SUCCESS"
    assert _get(209).driver_name == "CUDA_ERROR_NO_BINARY_FOR_GPU"
    assert _get(35).driver_name is None  # runtime only
    assert _get(202).name is None  # driver only
    assert by_name("CUDA_ERROR_UNKNOWN") is _get(999)
    assert by_name("cudaerrorillegaladdress") is _get(700)
    assert by_name("nope") is None


def test_sticky_errors() -> None:
    sticky = {e.code for e in ERRORS if e.sticky}
    assert {700, 710, 714, 715, 716, 717, 718, 719} <= sticky
    assert 2 not in sticky
    assert 999 not in sticky


def test_diagnosis_mapping() -> None:
    assert _get(2).diagnosis_id == "gpu.oom"
    assert _get(35).diagnosis_id == "driver.cuda_mismatch"
    assert _get(46).diagnosis_id == "gpu.compute_mode"
    assert _get(100).diagnosis_id == "cuda.device_visibility"
    assert _get(101).diagnosis_id == "cuda.device_visibility"
    assert _get(217).diagnosis_id == "nccl.p2p"
    assert _get(700).diagnosis_id == "cuda.illegal_access"
    assert _get(710).diagnosis_id == "cuda.device_assert"
    assert _get(802).diagnosis_id == "gpu.fabric_manager"
    assert _get(999).diagnosis_id == "cuda.unknown_error"
    assert "nvidia_uvm" in _get(999).hint


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("out of memory", 2),
        ("'unknown error'", 999),
        ("NCCL WARN Cuda failure 'out of memory'", 2),
        ("transport/nvls.cc:154 NCCL WARN Cuda failure 999 'unknown error'", 999),
        ("RuntimeError: CUDA error: an illegal memory access was encountered", 700),
        ("RuntimeError: CUDA error: device-side assert triggered", 710),
        ("CUDA error: all CUDA-capable devices are busy or unavailable", 46),
        ("cudaGetDeviceCount: CUDA driver version is insufficient for CUDA runtime version", 35),
        ("Cuda failure 802 'system not yet initialized'", 802),
        ("CUDA error: misaligned address", 716),
    ],
)
def test_by_message(text: str, code: int) -> None:
    err = by_message(text)
    assert err is not None
    assert err.code == code


def test_by_message_declines() -> None:
    assert by_message("") is None
    assert by_message("no error") is None
    assert by_message("everything is fine") is None
    assert by_message(None) is None  # type: ignore[arg-type]


def test_lookup_junk() -> None:
    for junk in ("", "abc", "-3", True, None, 12345678, "9" * 20):
        assert by_code(junk) is None  # type: ignore[arg-type]
    assert by_code("700") is _get(700)


def test_table_integrity() -> None:
    codes = [e.code for e in ERRORS]
    assert len(codes) == len(set(codes))
    names = [n for e in ERRORS for n in (e.name, e.driver_name) if n]
    assert len(names) == len(set(names))
    assert all(e.name or e.driver_name for e in ERRORS)


def test_diagnosis_ids_are_in_the_catalogue() -> None:
    ids = catalogue_ids()
    if ids is None:
        pytest.skip("shared/spec/diagnoses.md is not present")
    assert {e.diagnosis_id for e in ERRORS if e.diagnosis_id} <= ids
