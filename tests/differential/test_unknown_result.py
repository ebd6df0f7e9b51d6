"""A result code its reader does not know says two NCCL builds met in one process.

NCCL's ``ncclGetErrorString`` prints "unknown result code" and PyTorch's
``getNcclErrorDetailStr`` "Unknown NCCL error!" from their ``default:`` branch: the code came
from a libnccl other than the one the reader was compiled with.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import diagnose_text


@pytest.mark.parametrize(
    "text",
    [
        (
            "mpirun -n 2 python run.py --engine_dir /tmp/engine\n"
            "Failed, NCCL error /src/cpp/plugins/ncclPlugin/allreducePlugin.cpp:183 "
            "'unknown result code'\n"
        ),
        (
            "Traceback (most recent call last):\n"
            '  File "train.py", line 40, in <module>\n'
            "    dist.all_reduce(t)\n"
            "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
            "ProcessGroupNCCL.cpp:1970, Unknown NCCL error!, NCCL version 2.21.5\n"
        ),
    ],
)
def test_a_code_the_reader_does_not_know_leads_with_two_nccl_builds(
    tmp_path: Path, text: str
) -> None:
    report = diagnose_text(tmp_path, text)
    assert report.top(1) == ["nccl.version_mismatch"]
    assert "nccl.result.unknown" in report.hypotheses[0].for_[0]


def test_an_unknown_result_of_another_library_is_not_nccls(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        "Traceback (most recent call last):\n"
        "RuntimeError: cuDNN returned an unknown result code while planning the convolution\n",
    )
    assert report.top(1) != ["nccl.version_mismatch"]
    assert not any("nccl.result.unknown" in r for h in report.hypotheses for r in h.for_)
