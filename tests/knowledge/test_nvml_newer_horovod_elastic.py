"""NVML's return codes newer than DCGM's string table (27-29) and Horovod's elastic host
changes: each read by the catalogue as its own message, and a near line that is not.

NVML 27-29 have no open nvmlErrorString text: pynvml's exception class and the C name are
what a log holds. Horovod's elastic driver blacklists a failing host and tells the workers
that hosts changed (``HostsUpdatedInterrupt``): the job goes on, so these are ``info``.
"""

from __future__ import annotations

import pytest

from nccl_doctor.facts.catalogue import harmless_message, signature_of
from nccl_doctor.knowledge.signatures import by_id
from tests.knowledge._signature_lines import assert_reads_as

READS = [
    (
        "pynvml.nvml.NVMLError_GpuNotFound: GPU Not Found",
        "driver.nvml.gpu_not_found",
        "driver_error",
    ),
    ("pynvml.NVMLError_NotReady: Not Ready", "driver.nvml.not_ready", "driver_error"),
    (
        "dcgm_nvml.NVMLError_InvalidState: Invalid State",
        "driver.nvml.invalid_state",
        "driver_error",
    ),
    (
        "E1204 05:40:01.223470       1 main.go:132] nvmlInit_v2 returned NVML_ERROR_GPU_NOT_FOUND",
        "driver.nvml.gpu_not_found_name",
        "driver_error",
    ),
    (
        "nvmlInit returned NVML_ERROR_NOT_READY",
        "driver.nvml.not_ready_name",
        "driver_error",
    ),
    (
        "2024-03-01 10:11:12,345 INFO blacklist failing host: worker-3",
        "horovod.elastic.blacklist_host",
        "info",
    ),
    (
        "WARNING:root:host registers state FAILURE but is already blacklisted, ignoring: worker-3",
        "horovod.elastic.blacklisted_host_registers",
        "info",
    ),
    (
        "ERROR:root:failed to activate new hosts -> stop running",
        "horovod.elastic.activate_hosts_failed",
        "failure",
    ),
    (
        "[1,0]<stderr>:horovod.common.exceptions.HostsUpdatedInterrupt: True",
        "horovod.elastic.hosts_updated_interrupt",
        "info",
    ),
]

NEAR_MISSES = [
    # CUDA's own "not ready" (an asynchronous query's answer) is no NVML code
    "CUDA_ERROR_NOT_READY",
    "cudaErrorNotReady: device not ready",
    # a host the driver only mentions, blacklisted by no one
    "2024-03-01 10:11:12,345 INFO wait for available slots: 4",
    "HostsUpdated",
]


@pytest.mark.parametrize(("line", "ident", "symptom"), READS)
def test_the_line_reads_as_its_message(line: str, ident: str, symptom: str) -> None:
    if symptom != "info":
        assert_reads_as(line, ident, symptom, {})
        return
    # a message of no failure is read as harmless, never as the failure of the run
    assert signature_of(line) is None
    sig = harmless_message(line)
    assert sig is not None, line
    assert (sig.id, sig.symptom) == (ident, symptom)


@pytest.mark.parametrize("line", NEAR_MISSES)
def test_a_near_line_is_not_read_as_one(line: str) -> None:
    for sig in (signature_of(line), harmless_message(line)):
        assert sig is None or not sig.id.startswith(("driver.nvml.", "horovod.elastic."))


def test_the_newer_codes_by_name_share_their_class_entrys_class_and_ids() -> None:
    entries = by_id()
    for short in ("not_ready", "gpu_not_found", "invalid_state"):
        by_class, by_name = entries[f"driver.nvml.{short}"], entries[f"driver.nvml.{short}_name"]
        assert (by_class.symptom, by_class.hint_ids, by_class.result) == (
            by_name.symptom,
            by_name.hint_ids,
            by_name.result,
        )


def test_not_ready_points_at_the_fabric_manager_first() -> None:
    assert by_id()["driver.nvml.not_ready"].hint_ids[0] == "gpu.fabric_manager"
