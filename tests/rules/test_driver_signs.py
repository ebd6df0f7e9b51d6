"""The driver rules read signs (``signs/driver.py``) and version helpers (``facts/driver.py``).

The table's captures and the helpers are checked on real lines; then each
path of the driver rules that reads a sign runs through the whole pipeline on
realistic evidence, so what a sign tells the rule (a code from the words of
the line, a ``tool:`` prefix, a ``[rankN]`` prefix, a ``--gpus`` flag, a WSL
kernel) shows in the finding.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from nccl_doctor.facts.driver import parse_cuda, parse_version, torch_cuda_tag, wsl_kernel
from nccl_doctor.facts.signs import Sign
from nccl_doctor.findings import Finding
from nccl_doctor.pipeline import diagnose_paths
from nccl_doctor.signs import driver as signs

CASES = Path(__file__).parent.parent / "cases" / "driver"
COLLECT_ENV = (CASES / "cuda_mismatch/torch-cu126-on-driver-470/collect_env.txt").read_text()


# -- the table -------------------------------------------------------------


def test_an_upgrade_line_gives_the_package_moved_and_both_versions() -> None:
    line = (
        "Upgrade: libnvidia-compute-535:amd64 (535.161.07-0ubuntu0.22.04.1, "
        "535.171.04-0ubuntu0.22.04.1), nvidia-utils-535:amd64 (535.161.07, 535.171.04)"
    )
    keyword = signs.UPGRADE.regex.search(line)
    move = signs.PACKAGE_MOVE.regex.search(line)
    assert keyword is not None
    assert move is not None
    assert keyword.end() == len("Upgrade: ") == move.start()
    assert (move["package"], move["old"], move["new"]) == (
        "libnvidia-compute-535",
        "535.161.07",
        "535.171.04",
    )


@pytest.mark.parametrize(
    ("sign", "line", "field", "value"),
    [
        (
            signs.DEV_LISTED,
            "crw-rw-rw- 1 root root 195, 255 Mar  4 08:01 /dev/nvidiactl",
            "node",
            "nvidiactl",
        ),
        (signs.LSMOD_NVIDIA, "nvidia_uvm           1642496  0", "module", "nvidia_uvm"),
        (
            signs.PACKAGE_VERSION,
            "ii  libnvidia-compute-525:amd64  525.147.05-0ubuntu1  amd64  NVIDIA libcompute",
            "version",
            "525.147.05",
        ),
        (
            signs.MODULE_VERSION,
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  520.61.05  Thu Sep 29 05:30:25 UTC",
            "version",
            "520.61.05",
        ),
        (signs.NVML_VERSION, "NVML library version: 535.183", "version", "535.183"),
        (
            signs.NEED_CUDA,
            (
                "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4, "
                "please update your driver to a newer version"
            ),
            "cuda",
            "12.4",
        ),
        (
            signs.CUDA_DRIVER_VERSION,
            "node1:77:77 [0] NCCL INFO cudaDriverVersion 12020",
            "version",
            "12020",
        ),
        (
            signs.FOUND_VERSION,
            "driver on your system is too old (found version 11040).",
            "version",
            "11040",
        ),
        (signs.RANK_PREFIX, "[rank12]: RuntimeError: Found no NVIDIA driver", "rank", "12"),
        (
            signs.WSL_KERNEL,
            "Linux version 5.15.153.1-microsoft-standard-WSL2 (root@...)",
            "version",
            "5.15.153.1",
        ),
        (signs.PROSE_DRIVER, "my driver version is 470.82 on Ubuntu", "version", "470.82"),
        (signs.PROSE_CUDA, "with CUDA 12.1 installed", "version", "12.1"),
    ],
)
def test_a_sign_captures_its_field_from_a_real_line(
    sign: Sign, line: str, field: str, value: str
) -> None:
    match = sign.regex.search(line)
    assert match is not None
    assert match[field] == value


def test_case_sensitive_signs_keep_their_case() -> None:
    assert signs.STUB_LIBRARY.regex.search("cuInit returned CUDA_ERROR_STUB_LIBRARY")
    assert not signs.STUB_LIBRARY.regex.search("cuinit returned cuda_error_stub_library")
    assert not signs.GPU_FLAGS.regex.search("docker run --GPUS all img")
    assert not signs.RANK_PREFIX.regex.search("[RANK1]: error")
    # the CDI library's own casing (container-device-interface pkg/cdi/cache.go)
    assert signs.CDI_UNRESOLVED.regex.search("unresolvable CDI devices nvidia.com/gpu=all")
    assert not signs.CDI_UNRESOLVED.regex.search("unresolvable cdi devices listed in the docs")


def test_every_driver_sign_is_read_by_a_driver_rule() -> None:
    table = {s.id for s in vars(signs).values() if isinstance(s, Sign)}
    read = {
        s.id
        for name in ("_common", "container", "cuda_mismatch", "uvm", "version_mismatch", "wsl")
        for s in vars(importlib.import_module(f"nccl_doctor.rules.driver.{name}")).values()
        if isinstance(s, Sign)
    }
    assert len(table) == 40
    # (the rules read a common sign too: the words of a hang)
    assert table <= read


# -- the version helpers ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [("535.104.05", (535, 104, 5)), (" 470.82 ", (470, 82)), ("525", (525,)), ("v535", None)],
)
def test_parse_version(text: str, expected: tuple[int, ...] | None) -> None:
    assert parse_version(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("12.1", (12, 1)),
        ("12.1.105", (12, 1)),
        ("cu121", (12, 1)),
        ("CU118", (11, 8)),
        ("12010", (12, 1)),
        ("9000", (9, 0)),
        ("N/A", None),
        (None, None),
    ],
)
def test_parse_cuda(text: str | None, expected: tuple[int, int] | None) -> None:
    assert parse_cuda(text) == expected


def test_the_torch_cuda_tag_and_the_wsl_kernel_come_from_typed_fields() -> None:
    assert torch_cuda_tag("2.4.0+cu124") == "cu124"
    assert torch_cuda_tag("2.4.0") is None
    assert (
        wsl_kernel("Linux-5.10.16.3-microsoft-standard-WSL2-x86_64-with-glibc2.35") == "5.10.16.3"
    )
    assert wsl_kernel("Linux-6.8.0-106-generic-x86_64-with-glibc2.35") is None


# -- the rules, through the pipeline ---------------------------------------


def _driver(tmp_path: Path, files: dict[str, str]) -> list[Finding]:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    report = diagnose_paths([str(tmp_path)])
    return [f for f in report.findings if f.id.startswith("driver.")]


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (
            "E0612 10:01:02.123456 4242 cuda_utils.cc:88] cuInit: COMPAT_NOT_SUPPORTED_ON_DEVICE",
            804,
        ),
        (
            (
                "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: "
                "CUDA_ERROR_UNSUPPORTED_PTX_VERSION: the provided PTX was compiled with an "
                "unsupported toolchain"
            ),
            222,
        ),
    ],
)
def test_the_words_of_the_line_give_the_cuda_code(tmp_path: Path, line: str, code: int) -> None:
    (finding,) = _driver(tmp_path, {"app.log": line + "\n"})
    assert finding.id == "driver.cuda_mismatch"
    assert finding.summary.startswith(f"CUDA failed with error {code} ")
    assert [e.text for e in finding.evidence] == [line]


@pytest.mark.parametrize(
    ("line", "severity", "confidence"),
    [
        (
            "myapp: cudaErrorInsufficientDriver returned by cudaSetDevice on the second GPU",
            "critical",
            "high",
        ),
        (
            "Our code then reports cudaErrorInsufficientDriver when it starts up on the node",
            "warning",
            "low",
        ),
    ],
)
def test_a_tool_prefix_makes_a_sentence_machine_output(
    tmp_path: Path, line: str, severity: str, confidence: str
) -> None:
    (finding,) = _driver(tmp_path, {"notes.txt": line + "\n"})
    # told in a sentence, the error is the reporter's account, not a line CUDA printed
    told = "CUDA failed with" if severity == "critical" else "The reporter tells of CUDA's"
    assert finding.summary == (
        f"{told} error 35 'CUDA driver version is insufficient for CUDA runtime version'"
    )
    assert (finding.severity.value, finding.confidence.value) == (severity, confidence)


def test_the_torch_wheels_cuda_tag_is_compared_with_the_driver(tmp_path: Path) -> None:
    env = COLLECT_ENV.replace("2.9.1+cu126", "2.4.0+cu124").replace(
        "CUDA used to build PyTorch: 12.6", "CUDA used to build PyTorch: Could not collect"
    )
    (finding,) = _driver(tmp_path, {"collect_env.txt": env})
    assert finding.summary == (
        "PyTorch 2.4.0+cu124 needs a driver for CUDA 12.4, but the driver supports only up to "
        "CUDA 11.4; CUDA is not available"
    )


_RUN = "$ docker run {flags}--rm -it nvcr.io/nvidia/pytorch:24.05-py3 torchrun train.py\n"
_NO_DRIVER = (
    "[rank1]: RuntimeError: Found no NVIDIA driver on your system. Please check that you have an "
    "NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx\n"
    "[rank0]: libcuda.so.1: cannot open shared object file: No such file or directory\n"
)


@pytest.mark.parametrize(
    ("flags", "why"),
    [
        ("", "the docker run command has no --gpus flag"),
        ("--gpus all ", "the GPUs and driver libraries were not passed into the container"),
    ],
)
def test_a_docker_run_without_gpus_and_the_ranks_of_prefixed_lines(
    tmp_path: Path, flags: str, why: str
) -> None:
    (finding,) = _driver(tmp_path, {"session.txt": _RUN.format(flags=flags) + _NO_DRIVER})
    assert finding.id == "driver.container"
    assert finding.summary.endswith(why)
    assert finding.subjects.ranks == (0, 1)  # rank 0 only from its line's [rank0] prefix


def test_the_stub_library_sign_is_case_sensitive_in_the_pipeline(tmp_path: Path) -> None:
    run = "$ docker run --gpus all img python -c 'import torch'\n"
    (finding,) = _driver(tmp_path, {"a.txt": run + "cuInit returned CUDA_ERROR_STUB_LIBRARY\n"})
    assert finding.summary.startswith("CUDA loaded the toolkit's link stub instead of the real")
    (tmp_path / "lower").mkdir()
    lower = run + "cuinit returned cuda_error_stub_library\n"
    assert _driver(tmp_path / "lower", {"a.txt": lower}) == []


def test_an_old_wsl_kernel_from_collect_envs_platform(tmp_path: Path) -> None:
    env = (
        COLLECT_ENV.replace("6.8.0-106-generic", "5.10.16.3-microsoft-standard-WSL2")
        .replace("470.82.01", "560.94")
        .replace("Is CUDA available: False", "Is CUDA available: True")
    )
    (finding,) = _driver(tmp_path, {"collect_env.txt": env})
    assert finding.summary == "WSL kernel 5.10.16.3 is older than the 5.10.43.3 CUDA on WSL needs"
    assert finding.severity.value == "warning"


def test_a_p2p_failure_under_a_wsl_kernel_from_uname(tmp_path: Path) -> None:
    warn = (
        "host:1234:1250 [1] transport/p2p.cc:275 NCCL WARN Cuda failure 'operation not supported'"
    )
    files = {
        "uname.txt": "$ uname -r\n5.15.153.1-microsoft-standard-WSL2\n",
        "train.log": warn + "\n",
    }
    (finding,) = _driver(tmp_path, files)
    assert finding.summary.startswith(
        "NCCL failed on a peer-to-peer/IPC/shared-memory path under WSL kernel 5.15.153.1"
    )
    assert [e.text for e in finding.evidence] == [warn, "5.15.153.1-microsoft-standard-WSL2"]


@pytest.mark.parametrize(
    ("files", "confidence"),
    [
        ({"uname.txt": "$ uname -r\n5.15.153.1-microsoft-standard-WSL2\n"}, "high"),
        ({"notes.txt": "I am running this under WSL2 on my laptop with one GPU\n"}, "low"),
    ],
)
def test_wsl_printed_by_a_tool_is_surer_than_wsl_in_words(
    tmp_path: Path, files: dict[str, str], confidence: str
) -> None:
    (finding,) = _driver(tmp_path, files)
    assert finding.id == "driver.wsl"
    assert finding.confidence.value == confidence


def test_the_nvml_library_version_line_names_the_user_space_side(tmp_path: Path) -> None:
    files = {
        "smi.txt": "$ nvidia-smi\nFailed to initialize NVML: Driver/library version mismatch\n",
        "dmesg.txt": (
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.129.03  Thu Oct 19 18:56:32 2023\n"
        ),
        "log.txt": "[nvml] NVML library version: 535.183\n",
    }
    (finding,) = _driver(tmp_path, files)
    assert finding.summary == (
        "'Failed to initialize NVML: Driver/library version mismatch': the loaded kernel module "
        "is 535.129.03 but the NVML library is 535.183"
    )


_HISTORY = (CASES / "version_mismatch/unattended-upgrade-no-driver/issue.txt").read_text()


_MOVE = "libnvidia-common-460:amd64 (460.73.01-0ubuntu0.20.04.1, 460.80-0ubuntu0.20.04.2)"


@pytest.mark.parametrize(
    ("line", "summary"),
    [
        (
            f"Upgrade: {_MOVE}",
            (
                "'NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver' "
                "after an unattended upgrade moved libnvidia-common-460 from 460.73.01 to 460.80: "
                "the libraries no longer match the loaded kernel module"
            ),
        ),
        (f"Remove: {_MOVE}", None),  # a package removed, not moved: no upgrade line
        (f"Remove: {_MOVE} Installed: 0", None),  # the keyword comes after the package
    ],
)
def test_a_move_counts_only_after_an_upgrade_keyword(
    tmp_path: Path, line: str, summary: str | None
) -> None:
    text = _HISTORY.replace(f"Upgrade: {_MOVE}", line)
    assert line in text
    found = _driver(tmp_path, {"issue.txt": text})
    assert [f.summary for f in found] == ([summary] if summary else [])


_NCCL_CUDA = "8470dd07de42:174:239 [0] {file} NCCL WARN Cuda failure '{error}'\n"


def test_nccls_own_cuda_failure_for_an_older_driver_is_the_driver(tmp_path: Path) -> None:
    """NCCL built with a newer toolkit calls an API the driver lacks (cudaErrorCallRequires-
    NewerDriver, 36): its WARN names the error, and the invalid ordinal after it follows."""
    log = tmp_path / "nccl.log"
    log.write_text(
        _NCCL_CUDA.format(
            file="enqueue.cc:802", error="API call is not supported in the installed CUDA driver"
        )
        + _NCCL_CUDA.format(file="init.cc:895", error="invalid device ordinal"),
        encoding="utf-8",
    )
    report = diagnose_paths([str(log)])
    assert report.findings[0].id == "driver.cuda_mismatch"
    assert "error 36" in report.findings[0].summary
    folded = {kid.id for _, kids in report.folded for kid in kids}
    assert "cuda.device_visibility" in folded


def test_nccls_invalid_ordinal_alone_is_not_the_driver(tmp_path: Path) -> None:
    log = tmp_path / "nccl.log"
    log.write_text(
        _NCCL_CUDA.format(file="init.cc:895", error="invalid device ordinal"), encoding="utf-8"
    )
    ids = [f.id for f in diagnose_paths([str(log)]).findings]
    assert ids == ["cuda.device_visibility"]
