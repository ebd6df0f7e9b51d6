"""Messages of the libraries around the job: a data loader's dead worker, a framework that
found no libnccl, a CUDA driver error by its name in parentheses. Each fires on the line its
source prints, and stays silent on a near miss. The whole pipeline runs on each."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import critical_ids, diagnose_text

_diagnose = diagnose_text
_critical = critical_ids


def test_a_data_loader_worker_killed_by_sigkill_is_host_memory(tmp_path: Path) -> None:
    report = _diagnose(
        tmp_path,
        "after in progressing second epoch then, I got a error messge like below\n"
        "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed.\n",
    )
    assert report.top(2) == ["host.resources", "launch.rank_crash"]
    assert report.hypotheses[0].symptom == "the kernel's OOM killer ended a process"


def test_a_data_loader_worker_interrupted_is_no_host_memory(tmp_path: Path) -> None:
    # Ctrl-C reaches the workers first: SIGINT, not the OOM killer
    report = _diagnose(
        tmp_path, "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Interrupt.\n"
    )
    assert "host.resources" not in report.top(1)


def test_a_data_loader_bus_error_is_its_shared_memory(tmp_path: Path) -> None:
    report = _diagnose(
        tmp_path,
        "ERROR: Unexpected bus error encountered in worker. This might be caused by"
        " insufficient shared memory (shm).\n",
    )
    assert report.top(2) == ["host.resources", "nccl.shm"]


def test_a_framework_without_a_loadable_libnccl_is_the_nccl_install(tmp_path: Path) -> None:
    report = _diagnose(
        tmp_path,
        "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Failed to execute XLA Runtime"
        " executable: run time error: custom call 'xla.gpu.all_reduce' failed:\n"
        "external/xla/xla/service/gpu/nccl_utils.cc:133: NCCL operation ncclGetUniqueId(&id)"
        " failed: Unable to load NCCL library. Multi-GPU collectives will not be supported.\n",
    )
    assert report.top(1) == ["nccl.version_mismatch"]
    assert report.hypotheses[0].symptom == "a shared library could not be loaded"


def test_a_loaded_libnccl_is_no_missing_library(tmp_path: Path) -> None:
    report = _diagnose(tmp_path, "NCCL version 2.21.5+cuda12.4\nTraining finished.\n")
    assert report.hypotheses == ()


def test_a_cuda_driver_error_named_in_parentheses_is_that_error(tmp_path: Path) -> None:
    # NVHPC's OpenACC runtime prints the driver API's name in parentheses, then its message
    report = _diagnose(
        tmp_path,
        "Accelerator Fatal Error: call to cuCtxCreate returned error 214\n"
        "(CUDA_ERROR_ECC_UNCORRECTABLE): uncorrectable ECC error encountered\n",
    )
    assert report.top(1) == ["gpu.ecc"]
    assert _critical(report) == ["gpu.ecc"]


def test_a_cuda_driver_errors_name_in_code_is_no_error(tmp_path: Path) -> None:
    report = _diagnose(
        tmp_path,
        "```c\nswitch (status) {\n"
        "  case CUDA_ERROR_ECC_UNCORRECTABLE: return retire(dev);\n}\n```\n",
    )
    assert _critical(report) == []
    assert "gpu.ecc" not in report.top(3)


def test_a_catalogued_nccl_warn_without_a_failure_word_is_a_failure(tmp_path: Path) -> None:
    # NCCL >= 2.26 returns ncclSystemError after this WARN: its build predates the GPU
    report = diagnose_text(
        tmp_path,
        "GENOA-06:4766:4780 [0] enqueue.cc:69 NCCL WARN cudaArch 1200 ncclMaxSharedMem 82240"
        " exceeds device/fn maxSharedMem 79856\n",
    )
    assert report.top(1) == ["nccl.internal"]
    assert report.hypotheses[0].symptom == "NCCL reported a system error (ncclSystemError)"


def test_a_catalogued_nccl_warn_that_ends_no_call_is_no_failure(tmp_path: Path) -> None:
    # NCCL prints it and goes on with the other interfaces
    report = diagnose_text(
        tmp_path,
        "node1:4766:4780 [0] NCCL WARN no device found matching NCCL_OOB_NET_IFNAME=ib9,"
        " ignoring\nnode1:4766:4780 [0] NCCL INFO Init COMPLETE\n",
    )
    assert report.hypotheses == ()


def test_a_driver_mismatch_said_inside_a_container_in_chinese_is_the_container(
    tmp_path: Path,
) -> None:
    # "running in a container"
    report = diagnose_text(
        tmp_path,
        "在容器里运行训练脚本时报错：\n"
        "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda"
        " functions before calling NumCudaDevices() that might have already set an error?"
        " Error 803: system has unsupported display driver / cuda driver combination\n",
    )
    assert report.top(1) == ["driver.container"]
