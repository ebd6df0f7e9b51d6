"""A failure that comes and goes with a version weighs for an NCCL bug or a second NCCL.

Only a version of the NCCL stack counts (NCCL, torch, CUDA, the driver): "it works with
transformers 4.30" is that program's own change.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import diagnose_text

_WHY = "it comes and goes with a library version"
_FAILS = "Training on 2 nodes fails with ncclInternalError: Internal check failed.\n"


def _reasons(tmp_path: Path, said: str) -> list[str]:
    report = diagnose_text(tmp_path, _FAILS + said)
    return [r for h in report.hypotheses for r in h.for_]


@pytest.mark.parametrize(
    "said",
    [
        "With NCCL 2.18.1 it works, the newer one fails.\n",
        "Everything worked fine with torch 2.1.0.\n",
        "It started after upgrading the driver.\n",
        # another NCCL build fixed it
        "pip install nvidia-nccl-cu12 is ok.\n",
        "After the updates I rebuilt NCCL, and it all works.\n",
        # a version found free of it
        "The crash is not reproducible with NCCL 2.31.2.\n",
        "- Working NCCL runtime tested: 2.31.2+cuda12.9\n",
        "It doesn't happen on torch 2.6.0.\n",
    ],
)
def test_a_version_of_the_nccl_stack_counts(tmp_path: Path, said: str) -> None:
    assert any(_WHY in r for r in _reasons(tmp_path, said))


@pytest.mark.parametrize(
    "said",
    [
        "It works fine with transformers 4.30.2, I only changed the model.\n",
        "On vLLM 0.4.2 everything works without this error.\n",
        # nccl-tests built and run: a benchmark that works, not a build that fixed the job
        "I installed nccl-tests and all_reduce_perf works on each node.\n",
        "It does not happen with vLLM 0.5.1.\n",
        "It is not reproducible with 2 GPUs on one node.\n",
        # a program no list names: its name stands right before the number
        "fairseq 0.9.0: works well\n",
        "I ran the same code with aphrodite v0.6.5 with llama and it worked.\n",
        "Inference fails while FP8 works on TensorRT-LLM 0.21.c-rc0 with 8x RTX 6000D\n",
        # a count, not a version
        "2 million samples run fine, but above 2.3 million it fails.\n",
    ],
)
def test_another_programs_version_does_not(tmp_path: Path, said: str) -> None:
    assert not any(_WHY in r for r in _reasons(tmp_path, said))
