"""The driver's messages the catalogue lacked: NVML's return codes by the name NVIDIA's go-nvml
prints (the container toolkit, the Kubernetes device plugin, dcgm-exporter), each with the class
and ids of the same code's nvmlErrorString text.

A name a CUDA driver error ends in (``CUDA_ERROR_UNKNOWN``) is NVML's only after ``NVML_`` or
``NVML: ``; a query the GPU does not offer (``ERROR_NOT_SUPPORTED``) stays silent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.facts.catalogue import signature_of
from nccl_doctor.knowledge.signatures import by_id
from nccl_doctor.pipeline import diagnose_paths
from nccl_doctor.report import Report
from tests.knowledge._signature_lines import assert_reads_as


def _report(tmp_path: Path, text: str) -> Report:
    path = tmp_path / "log.txt"
    path.write_text(text, encoding="utf-8")
    return diagnose_paths([str(path)])


NVML_NAMES = [
    (
        (
            "E1204 05:40:01.223470       1 main.go:132] Failed to initialize NVML: "
            "ERROR_LIBRARY_NOT_FOUND."
        ),
        "driver.nvml.library_not_found_name",
        "library_missing",
    ),
    (
        "error initializing NVML: ERROR_LIB_RM_VERSION_MISMATCH",
        "driver.nvml.lib_rm_version_mismatch_name",
        "driver_error",
    ),
    (
        "failed to get device handle at index 3: ERROR_GPU_IS_LOST",
        "driver.nvml.gpu_is_lost_name",
        "xid",
    ),
    ("nvmlInit returned NVML_ERROR_DRIVER_NOT_LOADED", "driver.nvml.driver_not_loaded_name",
     "driver_error"),
    ("Failed to initialize NVML: ERROR_UNKNOWN", "driver.nvml.unknown_name", "driver_error"),
]  # fmt: skip


@pytest.mark.parametrize(("line", "ident", "symptom"), NVML_NAMES)
def test_nvml_codes_by_name_read_as_the_codes_text(line: str, ident: str, symptom: str) -> None:
    assert_reads_as(line, ident, symptom, {})
    text = by_id()[ident.removesuffix("_name")]  # the same code's nvmlErrorString entry
    sig = signature_of(line)
    assert sig is not None
    assert (sig.symptom, sig.hint_ids, sig.result) == (text.symptom, text.hint_ids, text.result)


def test_the_device_plugin_without_nvml_points_at_the_container(tmp_path: Path) -> None:
    report = _report(
        tmp_path,
        "I1204 05:40:01.123456       1 main.go:123] Starting FS watcher.\n"
        "E1204 05:40:01.223470       1 main.go:132] Failed to initialize NVML: "
        "ERROR_LIBRARY_NOT_FOUND.\n",
    )
    first = report.hypotheses[0]
    assert first.id == "driver.container"
    assert "driver.nvml.library_not_found_name" in first.for_[0]


def test_cudas_names_and_unsupported_queries_are_not_nvmls() -> None:
    assert signature_of("RuntimeError: CUDA driver error: CUDA_ERROR_UNKNOWN") is None
    assert signature_of("cuInit returned CUDA_ERROR_OPERATING_SYSTEM") is None
    # a monitoring query the GPU does not offer: never the job's failure
    assert signature_of("failed to get power usage: NVML: ERROR_NOT_SUPPORTED") is None
    assert signature_of("Ignoring error getting device memory: ERROR_NOT_SUPPORTED") is None


# --- NVSwitch SXids (the kernel log) and the fabric manager's own log ----------------------------

SWITCH_LINES = [
    (
        (
            "[ 9123.456] nvidia-nvswitch3: SXid (PCI:0000:c5:00.0): 20034, Fatal, Link 46 "
            "LTSSM Fault Up"
        ),
        "driver.nvswitch.sxid_fatal",
        "xid",
        {"switch": "3", "pci": "0000:c5:00.0", "sxid": "20034"},
    ),
    (
        (
            "nv-fabricmanager[104230]: fabric manager NVIDIA GPU driver interface version "
            "550.127.05 don't match with driver version 550.120. Please update with matching "
            "NVIDIA driver package."
        ),
        "driver.fm.driver_mismatch",
        "cuda_driver",
        {"fm_version": "550.127.05", "driver_version": "550.120"},
    ),
    (
        (
            "[Sep 08 2025 23:21:50] [ERROR] detected number of NVSwitches don't match with any "
            "supported system topology, aborting fabric manager"
        ),
        "driver.fm.topology_mismatch",
        "cuda_driver",
        {},
    ),
    (
        (
            "[Jul 23 2024 07:53:55] [ERROR] [tid 841] detected NVSwitch fatal error 20034 on "
            "fid 0 on NVSwitch pci bus id 00000000:86:00.0 physical id 3 port 33"
        ),
        "driver.fm.nvswitch_fatal",
        "xid",
        {"sxid": "20034"},
    ),
]


@pytest.mark.parametrize(("line", "ident", "symptom", "fields"), SWITCH_LINES)
def test_switch_and_fabric_manager_lines_read_as_their_message(
    line: str, ident: str, symptom: str, fields: dict[str, str]
) -> None:
    assert_reads_as(line, ident, symptom, fields)


def test_a_fatal_sxid_points_at_nvlink_and_a_non_fatal_one_at_nothing() -> None:
    fatal = signature_of(
        "nvidia-nvswitch0: SXid (PCI:0000:88:00.0): 24007, Fatal, Link 12 sourcetrack TCEN0 "
        "crumbstore ECC DBE Error"
    )
    assert fatal is not None
    assert fatal.hint_ids == ("gpu.nvlink",)
    for severity in ("Non-fatal", "Correctable"):
        line = f"nvidia-nvswitch1: SXid (PCI:0000:88:00.0): 12028, {severity}, Link 32 egress error"
        assert signature_of(line) is None, line  # harmless: never a failure by itself
    assert by_id()["driver.nvswitch.sxid_nonfatal"].symptom == "info"


def test_a_fabric_manager_topology_mismatch_ranks_the_fabric_manager_first(tmp_path: Path) -> None:
    report = _report(
        tmp_path,
        "[Sep 08 2025 23:21:50] [ERROR] detected number of NVSwitches don't match with any "
        "supported system topology, aborting fabric manager\n",
    )
    first = report.hypotheses[0]
    assert first.id == "gpu.fabric_manager"
    assert "driver.fm.topology_mismatch" in first.for_[0]
    assert "gpu.nvlink" in [h.id for h in report.hypotheses[:3]]


def test_a_healthy_fabric_manager_start_opens_no_class(tmp_path: Path) -> None:
    assert (
        signature_of(
            "nv-fabricmanager[1120]: Successfully configured all the available NVSwitches to route "
            "GPU NVLink traffic. NVLink Peer-to-Peer support will be enabled once the GPUs are "
            "successfully registered with the NVLink fabric."
        )
        is None
    )
    assert (
        signature_of(
            "nv-fabricmanager[4177]: request to query NVSwitch device information from NVSwitch "
            "driver failed with error:WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]"
        )
        is None
    )
    report = _report(
        tmp_path,
        "Jan 05 14:45:26 node7 nv-fabricmanager[1120]: Connected to 1 node.\n"
        "Jan 05 14:45:28 node7 nv-fabricmanager[1120]: Successfully configured all the available "
        "NVSwitches to route GPU NVLink traffic. NVLink Peer-to-Peer support will be enabled once "
        "the GPUs are successfully registered with the NVLink fabric.\n",
    )
    assert report.hypotheses == ()
    assert all(f.severity.value != "critical" for f in report.findings)
