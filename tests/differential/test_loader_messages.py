"""The dynamic loader's 'undefined symbol' (glibc's dl-lookup.c, dlerror()): which library is
older or other than its caller needs, read from the symbol's name."""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.report import Verdict
from tests.helpers import diagnose_text


def _leads(tmp_path: Path, line: str, symptom: str, first: str, because: str) -> None:
    """The line alone opens ``symptom`` (its label's start) and ranks ``first`` first, for a
    reason naming ``because`` (a catalogue id's start)."""
    lead = diagnose_text(tmp_path, line + "\n").hypotheses[0]
    assert lead.symptom.startswith(symptom)
    assert lead.id == first
    assert any(because in why for why in lead.for_)


@pytest.mark.parametrize(
    ("line", "first"),
    [
        # torch's libtorch_cuda needs an NCCL function the libnccl found first lacks
        (
            (
                "ImportError: /opt/conda/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so: "
                "undefined symbol: ncclCommRegister"
            ),
            "nccl.version_mismatch",
        ),
        # a driver API function: libcuda older than the CUDA the code was built for
        (
            (
                "python: symbol lookup error: /usr/lib/python3/dist-packages/triton/backends/"
                "nvidia/lib/libcuda_utils.so: undefined symbol: cuTensorMapEncodeTiled"
            ),
            "driver.cuda_mismatch",
        ),
        # cuSPARSE from one CUDA build, nvJitLink from another
        (
            (
                "ImportError: /usr/local/lib/python3.10/dist-packages/nvidia/cusparse/lib/"
                "libcusparse.so.12: undefined symbol: __nvJitLinkComplete_12_4, version "
                "libnvJitLink.so.12"
            ),
            "nccl.version_mismatch",
        ),
        # the reporter's title, without the loader's colon
        ("Title: undefined symbol ncclCommRegister\nthe error occurs", "nccl.version_mismatch"),
    ],
)
def test_an_undefined_symbol_names_the_library_build_that_lacks_it(
    tmp_path: Path, line: str, first: str
) -> None:
    _leads(tmp_path, line, "a shared library could not be loaded", first, "system.ld.undefined_")


def test_torchvisions_image_extension_warning_in_a_healthy_run_is_no_failure(
    tmp_path: Path,
) -> None:
    report = diagnose_text(
        tmp_path,
        "/usr/lib/python3/dist-packages/torchvision/io/image.py:13: UserWarning: Failed to load "
        "image Python extension: '/usr/lib/python3/dist-packages/torchvision/image.so: undefined "
        "symbol: _ZN3c1017RegisterOperatorsD1Ev'If you don't plan on using image functionality "
        "from `torchvision.io`, you can ignore this warning.\n"
        "  warn(\n"
        "Epoch 1/10 loss 0.53\n"
        "Epoch 2/10 loss 0.41\n",
    )
    assert report.hypotheses == ()
    assert report.findings == ()
    assert report.verdict is not Verdict.FAILED


def test_the_words_apart_are_no_loader_message(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, "the variable was undefined, so the symbol table failed\n")
    assert all(h.symptom != "a shared library could not be loaded" for h in report.hypotheses)


@pytest.mark.parametrize(
    ("line", "symptom"),
    [
        # the DataLoader's own report of a worker that died without a Python error
        (
            "RuntimeError: DataLoader worker (pid(s) 29841, 29842) exited unexpectedly",
            "a system call hit a host limit",
        ),
        # bash's report of a command SIGKILL ended, in a batch script and interactively
        (
            (
                "/var/spool/slurmd/job4121/slurm_script: line 20: 48213 Killed"
                "                  python train.py --config cfg.yaml"
            ),
            "a rank was killed",
        ),
        ("[1]+  Killed                  python train.py", "a rank was killed"),
    ],
)
def test_a_worker_the_host_ended_points_at_the_hosts_limits(
    tmp_path: Path, line: str, symptom: str
) -> None:
    _leads(tmp_path, line, symptom, "host.resources", "")


def test_the_word_killed_in_a_programs_output_is_no_shell_report(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path, "Epoch 3: 12 Killed birds in the dataset\nEpoch 4: loss 0.31\n"
    )
    assert report.hypotheses == ()
