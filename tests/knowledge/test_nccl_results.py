"""ncclResult_t codes: numbers, names, printed messages, message matching."""

from __future__ import annotations

import pytest

from nccl_doctor.knowledge.nccl_results import RESULTS, from_message, result
from tests.knowledge._catalogue import catalogue_ids


def test_codes_and_names() -> None:
    names = {r.code: r.name for r in RESULTS}
    assert names == {
        0: "ncclSuccess",
        1: "ncclUnhandledCudaError",
        2: "ncclSystemError",
        3: "ncclInternalError",
        4: "ncclInvalidArgument",
        5: "ncclInvalidUsage",
        6: "ncclRemoteError",
        7: "ncclInProgress",
        8: "ncclTimeout",
    }


def test_lookup_by_number_and_name() -> None:
    assert result(6) is result("ncclRemoteError")
    assert result("2") is result("NCCLSYSTEMERROR")
    assert result(6).since_version == "2.13.4"  # type: ignore[union-attr]
    for junk in (9, -1, "", "nccl", True, None, "99999"):
        assert result(junk) is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (
            (
                "NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269, "
                "unhandled cuda error, NCCL version 2.10.3"
            ),
            1,
        ),
        (
            (
                "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
                "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3"
            ),
            1,
        ),
        ("RuntimeError: NCCL error: unhandled system error, NCCL version 2.7.8", 2),
        (
            (
                "ncclSystemError: System call (e.g. socket, malloc) or external library call "
                "failed or device error."
            ),
            2,
        ),
        ("NCCL error: internal error - please report this issue to the NCCL developers", 3),
        ("ncclInvalidUsage: This usually reflects invalid usage of NCCL library.", 5),
        (
            (
                "Process group watchdog thread terminated with exception: NCCL error: remote "
                "process exited or there was a network error, NCCL version 2.20.5"
            ),
            6,
        ),
        (
            (
                "ncclRemoteError: A call failed possibly due to a network error or a remote "
                "process exiting prematurely."
            ),
            6,
        ),
    ],
)
def test_from_message(line: str, code: int) -> None:
    found = from_message(line)
    assert found is not None
    assert found.code == code


def test_from_message_declines_generic_text() -> None:
    assert from_message("Watchdog caught collective operation timeout") is None
    assert from_message("no error") is None
    assert from_message("") is None


def test_torch_detail_is_prefixed_by_name() -> None:
    for r in RESULTS:
        if r.torch_detail:
            assert r.torch_detail.startswith(r.name + ":")


def test_diagnosis_ids_are_in_the_catalogue() -> None:
    ids = catalogue_ids()
    if ids is None:
        pytest.skip("shared/spec/diagnoses.md is not present")
    assert {r.diagnosis_id for r in RESULTS if r.diagnosis_id} <= ids
