"""The driver's messages the catalogue lacked: NVML's return codes by the name NVIDIA's go-nvml
prints (the container toolkit, the Kubernetes device plugin, dcgm-exporter), each with the class
and ids of the same code's nvmlErrorString text.

A name a CUDA driver error ends in (``CUDA_ERROR_UNKNOWN``) is NVML's only after ``NVML_`` or
``NVML: ``; a query the GPU does not offer (``ERROR_NOT_SUPPORTED``) stays silent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.differential.signatures import signature_of
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
