"""A one-line Python print of torch's versions and the line it printed: the NCCL (torch, CUDA)
that machine's torch runs, on the machine its prompt names; two machines printing two NCCL
releases are a job of mixed NCCL. A print inside a script, or an output that is not what the
print prints, is nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.software import VersionPrint
from nccl_doctor.facts.versions import versions_of
from nccl_doctor.pipeline import facts_of
from tests.helpers import critical_ids, diagnose_text

_CHECK = (
    '{host}$ docker run --rm reg/train:latest python -c "import torch;print(torch.__version__, '
    'torch.cuda.nccl.version())"\n'
    "{out}\n"
)


def _prints(tmp_path: Path, text: str) -> list[VersionPrint]:
    path = tmp_path / "r.txt"
    path.write_text(text, encoding="utf-8")
    return list(facts_of(read_paths([str(path)])).of(VersionPrint))


def test_a_print_and_its_output_are_that_machines_versions(tmp_path: Path) -> None:
    text = _CHECK.format(host="gpu-h03", out="2.2.2+cu121 (2, 19, 3)")
    [printed] = _prints(tmp_path, text)
    assert (printed.host, printed.torch_version, printed.nccl_version) == (
        "gpu-h03",
        "2.2.2+cu121",
        "2.19.3",
    )
    assert printed.cite.line == 2
    path = tmp_path / "r.txt"
    assert dict(versions_of(facts_of(read_paths([str(path)]))))["nccl"] == "2.19.3"


@pytest.mark.parametrize(
    ("command", "out", "nccl"),
    [
        ("(base) ana@node2:~$ python -c 'import torch; print(torch.cuda.nccl.version())'", "2708",
         "2.7.8"),
        ("$ python3 -c 'import torch; print(torch.cuda.nccl.version())'", "21003", "2.10.3"),
        (("[ops@gpu7 ~]$ python -c 'import torch as t; import torch; print(torch.version.cuda, "
         "torch.cuda.nccl.version())'"), "12.1 (2, 18, 1)", "2.18.1"),
        (">>> torch.cuda.nccl.version()", "(2, 21, 5)", "2.21.5"),
        (">>> print(torch.__version__, torch.cuda.nccl.version())", "2.4.0+cu124 (2, 20, 5)",
         "2.20.5"),
    ],
)  # fmt: skip
def test_the_number_older_releases_print_and_other_prompts(
    tmp_path: Path, command: str, out: str, nccl: str
) -> None:
    [printed] = _prints(tmp_path, f"{command}\n{out}\n")
    assert printed.nccl_version == nccl


def test_two_machines_printing_two_releases_are_mixed_nccl(tmp_path: Path) -> None:
    error = (
        "[rank0]: ncclInternalError: Internal check failed.\n"
        "[rank0]: Last error:\n"
        "[rank0]: ncclSocketInit: connecting to address with family 0 is neither AF_INET(2) nor "
        "AF_INET6(10)\n"
    )
    text = (
        error
        + _CHECK.format(host="gpu-h03", out="2.2.2+cu121 (2, 19, 3)")
        + _CHECK.format(host="gpu-h12", out="2.4.0+cu124 (2, 21, 5)")
    )
    report = diagnose_text(tmp_path, text)
    assert critical_ids(report) == ["nccl.version_mismatch"]
    assert "2.19.3 on gpu-h03; 2.21.5 on gpu-h12" in report.findings[0].summary
    same = (
        error
        + _CHECK.format(host="gpu-h03", out="2.2.2+cu121 (2, 19, 3)")
        + _CHECK.format(host="gpu-h12", out="2.2.2+cu121 (2, 19, 3)")
    )
    assert "nccl.version_mismatch" not in critical_ids(diagnose_text(tmp_path, same))


@pytest.mark.parametrize(
    "text",
    [
        # a print inside a script: the next line is more code
        "print(torch.__version__, torch.cuda.nccl.version())\nx = torch.randn((32, 128))\n",
        # the output is not what the print prints (an error instead)
        (
            "$ python -c 'import torch; print(torch.cuda.nccl.version())'\n"
            "AttributeError: module 'torch.cuda' has no attribute 'nccl'\n"
        ),
        # a sentence that quotes the command, its value told in it
        (
            'When I input `python -c "import torch;print(torch.cuda.nccl.version())"` in Terminal, '
            "I can see (2, 10, 3).\n(2, 10, 3)\n"
        ),
        # a print of something else beside the version
        (
            "$ python -c 'import torch; print(torch.cuda.device_count(), "
            "torch.cuda.nccl.version())'\n"
            "8 (2, 19, 3)\n"
        ),
    ],
)
def test_a_print_in_a_script_or_another_output_is_nothing(tmp_path: Path, text: str) -> None:
    assert _prints(tmp_path, text) == []
