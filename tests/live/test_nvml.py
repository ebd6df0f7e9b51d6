"""The NVML reader: every field guarded, whole-library failures and the deadline as outcomes."""

from __future__ import annotations

import os
import time
from types import ModuleType

import pytest

from nccl_doctor.evidence.nvml import collect, read_nvml
from tests.live._support import FAKE, child_env


def test_ok_reads_every_field(fake: ModuleType) -> None:
    fake.use("ok")
    snap = collect(fake)
    assert snap["outcome"] == "ok"
    assert snap["driver_version"] == "580.159.04"
    assert snap["cuda_driver_version"] == "13.0"
    gpu0, gpu1 = snap["gpus"]
    assert gpu0["bus_id"] == "00000000:3B:00.0"
    assert gpu0["memory_total_mib"] == 143771
    assert gpu0["memory_used_mib"] == 70000
    assert gpu0["compute_mode"] == "Exclusive_Process"
    assert gpu0["ecc_volatile_corrected"] == 12
    assert gpu0["ecc_aggregate_uncorrected"] == 7
    assert gpu0["retired_pages_double_bit"] == 2
    assert gpu0["retired_pages_single_bit"] == 0
    assert gpu0["retired_pages_pending"] is True
    assert gpu0["remapped_rows"] == [2, 1, 1, 0]
    assert gpu0["clocks_event_reasons"] == ["sw_power_cap", "hw_slowdown"]
    assert gpu0["power_draw_w"] == pytest.approx(512.345)
    assert (gpu0["pcie_gen_current"], gpu0["pcie_width_current"]) == (4, 8)
    me, other = gpu0["processes"]
    assert me["pid"] == os.getpid()
    assert me["used_memory_mib"] == 60000
    assert me["comm"]
    assert me["cmdline"]
    assert me["uid"] == os.getuid()
    assert other == {
        "pid": 4_000_000,
        "used_memory_mib": None,
        "gpu_instance_id": None,
        "compute_instance_id": None,
        "comm": None,
        "cmdline": None,
        "uid": None,
    }
    assert gpu1["mig_mode"] is True
    assert [(m["gpu_instance_id"], m["memory_used_mib"]) for m in gpu1["mig_devices"]] == [
        (3, 100),
        (4, 200),
    ]
    assert [link["active"] for link in gpu1["nvlinks"]] == [True, True, True, False]
    assert gpu1["nvlinks"][1]["errors"]["Replay Errors"] == 148
    assert gpu1["nvlinks"][0]["speed_mbytes_s"] == 26562
    assert (gpu1["fabric_state"], gpu1["fabric_status"]) == ("Completed", "Success")
    assert gpu0["fabric_state"] is None  # Not Supported reads as absent
    assert gpu0["errors"] == []
    assert gpu0["lost"] is False


def test_not_supported_fields_are_none(fake: ModuleType) -> None:
    fake.use("not_supported")
    (gpu,) = collect(fake)["gpus"]
    for key in (
        "utilization_gpu_pct",
        "processes",
        "mig_mode",
        "ecc_mode",
        "ecc_volatile_uncorrected",
        "retired_pages_single_bit",
        "remapped_rows",
        "clocks_event_reasons",
        "power_draw_w",
        "pcie_gen_current",
        "temperature_c",
        "fabric_state",
    ):
        assert gpu[key] is None, key
    assert gpu["nvlinks"] == []
    assert gpu["errors"] == ["temperature"]  # Unknown Error is kept as such
    assert gpu["memory_total_mib"] == 143771


@pytest.mark.parametrize(
    ("scenario", "outcome", "message"),
    [
        ("lib_not_found", "library_not_found", "NVML Shared Library Not Found"),
        ("driver_not_loaded", "driver_not_loaded", "Driver Not Loaded"),
        ("mismatch", "version_mismatch", "Driver/library version mismatch"),
        ("init_fail", "init_failed", "Unknown Error"),
        ("no_devices", "no_devices", "No devices were found"),
    ],
)
def test_library_failures_are_outcomes(
    fake: ModuleType, scenario: str, outcome: str, message: str
) -> None:
    fake.use(scenario)
    snap = collect(fake)
    assert (snap["outcome"], snap["message"]) == (outcome, message)
    assert snap["gpus"] == []


def test_lost_gpu_is_marked(fake: ModuleType) -> None:
    fake.use("lost")
    snap = collect(fake)
    assert snap["outcome"] == "ok"
    assert snap["gpus"][0]["lost"] is False
    assert snap["gpus"][1] == {
        "index": 1,
        "lost": True,
        "message": "GPU is lost",
        "errors": [],
    }


def test_child_process_reads_the_fake() -> None:
    snap = read_nvml(10.0, module=FAKE, env=child_env("ok"))
    assert snap["outcome"] == "ok"
    assert [g["bus_id"] for g in snap["gpus"]] == ["00000000:3B:00.0", "00000000:86:00.0"]


def test_missing_bindings_are_an_outcome() -> None:
    snap = read_nvml(10.0, module="no_such_nvml_module", env=child_env("ok"))
    assert snap["outcome"] == "not_installed"


def test_call_that_never_returns_is_abandoned() -> None:
    start = time.monotonic()
    snap = read_nvml(1.5, module=FAKE, env=child_env("hang"))
    elapsed = time.monotonic() - start
    assert snap["outcome"] == "timeout"
    assert snap["message"] == "NVML did not answer within 1.5 s"
    assert elapsed < 6.0
