"""A CUDA error opens the class of its family, however the wrapper printed it.

The family comes from the error's row in CUDA's enum
(:func:`nccl_doctor.knowledge.cuda_errors.symptom_class`), read by number,
message or name: PyTorch's ``CUDA error: X``, NCCL's ``Cuda failure N 'X'``,
THC's ``cuda runtime error (N)``, and the names CuPy, Numba, TensorFlow and
JAX print (``cudaErrorNoDevice: ...``, ``failed call to cuInit: CUDA_ERROR_UNKNOWN``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.differential import lead_symptom
from nccl_doctor.evidence.lines import Line
from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.failures import failures_of
from nccl_doctor.facts.run import CudaError
from nccl_doctor.knowledge import cuda_errors
from nccl_doctor.parse._cuda import cuda_facts
from nccl_doctor.pipeline import diagnose_paths, facts_of
from nccl_doctor.triage import differential_order, first_failure

TF_CUINIT = (
    "2019-04-11 09:12:31.101318: I tensorflow/core/platform/cpu_feature_guard.cc:141] Your CPU "
    "supports instructions that this TensorFlow binary was not compiled to use: AVX2 FMA\n"
    "2019-04-11 09:12:31.116571: E tensorflow/stream_executor/cuda/cuda_driver.cc:300] failed "
    "call to cuInit: CUDA_ERROR_UNKNOWN: unknown error\n"
    "2019-04-11 09:12:31.116629: I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:161] "
    "retrieving CUDA diagnostic information for host: gpu-node-3\n"
)
CUPY_NO_DEVICE = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 12, in <module>\n'
    "    x = cp.zeros(10)\n"
    '  File "cupy/_creation/basic.py", line 211, in zeros\n'
    "cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorNoDevice: no CUDA-capable "
    "device is detected\n"
)
THC_ORDINAL = (
    "THCudaCheck FAIL file=/pytorch/torch/csrc/cuda/Module.cpp line=59 error=101 : invalid "
    "device ordinal\n"
    "Traceback (most recent call last):\n"
    '  File "train.py", line 40, in <module>\n'
    "    torch.cuda.set_device(args.local_rank)\n"
    "RuntimeError: cuda runtime error (101) : invalid device ordinal at "
    "/pytorch/torch/csrc/cuda/Module.cpp:59\n"
)
ILLEGAL = (
    "[rank1]: Traceback (most recent call last):\n"
    '[rank1]:   File "train.py", line 88, in <module>\n'
    "[rank1]:     loss.backward()\n"
    "[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
    "[rank1]: CUDA kernel errors might be asynchronously reported at some other API call, so "
    "the stacktrace below might be incorrect.\n"
)
DRIVER_803 = (
    "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions "
    "before calling NumCudaDevices() that might have already set an error? Error 803: system "
    "has unsupported display driver / cuda driver combination\n"
)


def _lead(tmp_path: Path, text: str) -> tuple[str, tuple[str, ...]]:
    path = tmp_path / "log.txt"
    path.write_text(text)
    facts = facts_of(read_paths([str(path)]))
    failure, _ = first_failure(facts)
    lead = lead_symptom(facts, differential_order(failures_of(facts), failure))
    assert lead is not None
    return lead.cls, lead.hints


@pytest.mark.parametrize(
    ("text", "cls", "hints"),
    [
        (TF_CUINIT, "cuda_unknown", ()),  # the class itself names the unknown error
        (CUPY_NO_DEVICE, "cuda_device", ("cuda.device_visibility",)),
        (THC_ORDINAL, "cuda_device", ("cuda.device_visibility",)),
        (ILLEGAL, "cuda_fault", ("cuda.illegal_access",)),
        (DRIVER_803, "cuda_driver", ("driver.version_mismatch",)),
    ],
)
def test_a_cuda_error_opens_its_familys_class(
    tmp_path: Path, text: str, cls: str, hints: tuple[str, ...]
) -> None:
    assert _lead(tmp_path, text) == (cls, hints)


def test_the_unknown_error_by_its_driver_name_ranks_the_unknown_errors_causes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tf.log"
    path.write_text(TF_CUINIT)
    report = diagnose_paths([str(path)])
    assert report.top(1) == ["cuda.unknown_error"]
    assert [h.id for h in report.hypotheses][:2] == ["driver.uvm", "gpu.contention"]
    assert report.hypotheses[0].symptom.startswith("CUDA returned its unknown error")


def test_a_device_error_is_followed_by_the_device_family_not_kernel_faults(
    tmp_path: Path,
) -> None:
    path = tmp_path / "cupy.log"
    path.write_text(CUPY_NO_DEVICE)
    ids = diagnose_paths([str(path)]).top(3)
    assert ids[0] == "cuda.device_visibility"
    assert "cuda.illegal_access" not in ids
    assert set(ids[1:]) <= {"gpu.mig", "gpu.compute_mode", "driver.container"}


def _line(text: str) -> list[CudaError]:
    facts = cuda_facts(Line("log.txt", 1, text, text), text, None)
    return [f for f in facts if isinstance(f, CudaError)]


def test_a_named_error_becomes_a_fact_with_its_number_and_message() -> None:
    (fact,) = _line("CUDA_ERROR_ECC_UNCORRECTABLE: uncorrectable ECC error encountered")
    assert (fact.kind, fact.code, fact.error) == (
        "named",
        214,
        "uncorrectable ecc error encountered",
    )
    (fact,) = _line("transform: failed to synchronize: cudaErrorAssert: device-side assert")
    assert (fact.kind, fact.code) == ("named", 710)


@pytest.mark.parametrize(
    "text",
    [
        "    if (status == cudaErrorNotReady) continue;",  # code comparing a status
        "cudaStreamQuery returns cudaErrorNotReady until the kernel is done",  # prose, no failure
        "result: cudaSuccess",
        "cudaErrorNoSuchThing: not an error CUDA has",
        "    case cudaErrorMemoryAllocation:",  # a switch over statuses
        "cudaDeviceEnablePeerAccess returned cudaErrorPeerAccessAlreadyEnabled, ignoring",
        "cudaStreamQuery returned CUDA_ERROR_NOT_READY, polling again",  # a status, no failure
        "  return cudaErrorNotSupported;  // fallback",
        "static cudaError_t check(cudaError_t e) { return e; } // cudaErrorInvalidValue",
    ],
)
def test_a_name_that_reports_no_error_stays_silent(text: str) -> None:
    assert _line(text) == []


def test_every_error_with_a_diagnosis_has_a_family_whose_priors_name_it() -> None:
    from nccl_doctor.differential.priors import PRIORS

    for err in cuda_errors.ERRORS:
        cls = cuda_errors.symptom_class(err)
        assert cls in PRIORS, err.name
        if err.diagnosis_id and cls not in ("cuda_unknown", "gpu_oom"):
            named = {p.id for p in PRIORS[cls]}
            assert err.diagnosis_id in named or cls == "cuda_error", (err.name, cls)


H200 = Path(__file__).resolve().parents[1] / "fixtures" / "captured" / "cuda-errors-h200"


@pytest.mark.parametrize(
    ("capture", "finding", "cls", "alternatives"),
    [
        (
            "invalid_ordinal.txt",
            "cuda.device_visibility",
            "cuda_device",
            ["gpu.compute_mode", "gpu.mig"],
        ),
        (
            "device_assert.txt",
            "cuda.device_assert",
            "cuda_assert",
            ["cuda.illegal_access"],
        ),
    ],
)
def test_real_cuda_errors_on_the_h200_open_their_family(
    capture: str, finding: str, cls: str, alternatives: list[str]
) -> None:
    report = diagnose_paths([str(H200 / capture)])
    assert report.findings[0].id == finding
    assert [h.id for h in report.hypotheses] == alternatives
    facts = facts_of(read_paths([str(H200 / capture)]))
    failure, _ = first_failure(facts)
    lead = lead_symptom(facts, differential_order(failures_of(facts), failure))
    assert lead is not None
    assert lead.cls == cls


#: vLLM's worker on NCCL 2.18.1 with its custom all-reduce (CUDA IPC buffers): a call refused.
NCCL_INVALID_ARGUMENT = (
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
    "ProcessGroupNCCL.cpp:1333, unhandled cuda error (run with NCCL_DEBUG=INFO for details), "
    "NCCL version 2.18.1\n"
    "ncclUnhandledCudaError: Call to CUDA function failed.\n"
    "Last error:\n"
    "Cuda failure 'invalid argument'\n"
)


def test_a_refused_cuda_call_inside_nccl_is_not_a_kernel_fault(tmp_path: Path) -> None:
    """A CUDA call refused (not sticky) is the call's own problem: an NCCL bug, NVLS set-up,
    a peer's handle; no kernel faulted, so a fault's causes do not lead."""
    path = tmp_path / "vllm.log"
    path.write_text(NCCL_INVALID_ARGUMENT)
    report = diagnose_paths([str(path)])
    assert report.hypotheses[0].symptom.startswith("a CUDA call failed")
    ids = report.top(3)
    assert ids[0] == "nccl.internal"
    assert not {"cuda.illegal_access", "cuda.device_assert", "gpu.xid"} & set(ids)


def test_a_sticky_fault_inside_nccl_keeps_the_faults_causes(tmp_path: Path) -> None:
    path = tmp_path / "fault.log"
    path.write_text(
        NCCL_INVALID_ARGUMENT.replace(
            "invalid argument", "an illegal memory access was encountered"
        )
    )
    report = diagnose_paths([str(path)])
    assert report.hypotheses[0].symptom.startswith("a kernel or the GPU faulted")
    assert set(report.top(2)) == {"gpu.ecc", "cuda.illegal_access"}
