"""The Xid table: lookups of the codes rules rely on, and table integrity."""

from __future__ import annotations

import pytest

from nccl_doctor.knowledge.xid import XIDS, XidInfo, xid_info
from tests.knowledge._catalogue import catalogue_ids

REQUIRED = (
    8, 13, 31, 32, 38, 43, 44, 45, 48, 54, 56, 57, 58, 59, 61, 62, 63, 64, 68, 69, 74, 79, 92,
    94, 95, 109, 110, 119, 120, 121, 122, 123, 124, 136, 140, 143, 144, 145, 146, 147, 148,
    149, 150, 154, 155, 156, 157, 158,
)  # fmt: skip


def _get(code: int) -> XidInfo:
    info = xid_info(code)
    assert info is not None, code
    return info


def test_fallen_off_the_bus_is_gpu_lost() -> None:
    info = xid_info(79)
    assert info is not None
    assert info.diagnosis_id == "gpu.lost"
    assert info.severity == "critical"
    assert info.likely_cause == "hardware"
    assert info.mnemonic == "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS"
    assert info.nvidia_action == "RESTART_BM"
    assert "reboot" in info.action


@pytest.mark.parametrize("code", [48, 63, 64, 92, 94, 95, 140])
def test_memory_xids_are_ecc(code: int) -> None:
    info = xid_info(code)
    assert info is not None
    assert info.diagnosis_id == "gpu.ecc"
    assert info.likely_cause == "memory"


def test_ecc_severities() -> None:
    assert _get(48).severity == "critical"
    assert _get(95).severity == "critical"
    assert _get(94).severity == "warning"
    assert _get(63).severity == "warning"
    assert _get(64).nvidia_action == "RESET_GPU"


@pytest.mark.parametrize("code", [13, 31, 43])
def test_application_xids(code: int) -> None:
    info = xid_info(code)
    assert info is not None
    assert info.diagnosis_id == "gpu.xid"
    assert info.likely_cause == "application"
    assert info.severity == "warning"


@pytest.mark.parametrize("code", [119, 120])
def test_gsp_xids(code: int) -> None:
    info = xid_info(code)
    assert info is not None
    assert (info.diagnosis_id, info.likely_cause, info.severity) == ("gpu.xid", "gsp", "critical")
    assert info.nvidia_action == "RESET_GPU"


@pytest.mark.parametrize("code", [74, 136, 144, 145, 146, 147, 148, 149, 150, 155])
def test_nvlink_xids(code: int) -> None:
    info = xid_info(code)
    assert info is not None
    assert info.diagnosis_id == "gpu.nvlink"
    assert info.likely_cause == "nvlink"


def test_names_and_buckets_from_the_catalog() -> None:
    assert _get(31).name == "GPU memory page fault"
    assert _get(31).nvidia_investigation == "WORKFLOW_XID_31"
    assert _get(109).name == "Context Switch Timeout Error"
    assert _get(154).severity == "info"
    assert _get(54).diagnosis_id == "gpu.thermal_power"
    assert _get(58).name == "Unstable video memory interface detected"
    assert _get(41).name == "Copy Engine Exception"


def test_lookup_accepts_text_and_rejects_junk() -> None:
    assert xid_info("79") is xid_info(79)
    assert xid_info(" 48 ") is xid_info(48)
    for junk in ("", "x", "-1", "79.0", "1" * 50, True, None, 10**9, 0, 5, 91):
        assert xid_info(junk) is None  # type: ignore[arg-type]


@pytest.mark.parametrize("code", REQUIRED)
def test_required_codes_present(code: int) -> None:
    assert isinstance(xid_info(code), XidInfo)


def test_table_integrity() -> None:
    assert len(XIDS) >= 150
    for code, info in XIDS.items():
        assert code == info.code
        assert info.name
        assert info.meaning
        assert info.action
        assert info.severity in ("critical", "warning", "info")
    mnemonics = [i.mnemonic for i in XIDS.values() if i.mnemonic]
    assert len(mnemonics) == len(set(mnemonics))


def test_diagnosis_ids_are_in_the_catalogue() -> None:
    ids = catalogue_ids()
    if ids is None:
        pytest.skip("shared/spec/diagnoses.md is not present")
    assert "gpu.lost" in ids
    assert {i.diagnosis_id for i in XIDS.values()} <= ids
