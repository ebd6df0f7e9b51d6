"""Which unfenced lines read as a person's sentence and which as machine output."""

from __future__ import annotations

import pytest

from nccl_doctor.facts.store import is_prose


@pytest.mark.parametrize(
    ("line", "prose"),
    [
        # an issue's title that names NCCL's error in words is the reporter's sentence
        ("NCCL error while instantiating DistributedModelParallel", True),
        ("NCCL failure when the second node joins the job", True),
        # NCCL's and its bindings' own lines
        ("NCCL error in: /opt/conda/torch/lib/c10d/ProcessGroupNCCL.cpp:825, invalid usage", False),
        ("NCCL Error 2: unhandled system error", False),
        ("NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)", False),
        ("NCCL version 2.21.5+cuda12.4", False),
        ("NCCL WARN Cuda failure 'out of memory'", False),
        ("NCCL failure common.cu:1030 'unhandled cuda error'", False),
    ],
)
def test_nccl_words_in_a_sentence_are_prose(line: str, prose: bool) -> None:
    assert is_prose(line) is prose
