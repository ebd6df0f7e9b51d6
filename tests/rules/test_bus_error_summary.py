"""torchelastic's summary of workers a SIGBUS ended says 'Signal 7 (SIGBUS) received by PID N'
in its traceback field: that is no error of the worker's own, so the bare bus error reads as
/dev/shm (nccl.shm), not as a rank that died first of its own error. A worker whose traceback
holds its error keeps it."""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.run import ChildFailure
from tests.helpers import child_failed, critical_ids, diagnose_text

_LAUNCH = "CUDA_VISIBLE_DEVICES=0,1,2,3 torchrun --nproc_per_node=4 finetune.py\n"


def test_a_bus_error_with_only_the_signal_reads_as_shared_memory(tmp_path: Path) -> None:
    text = _LAUNCH + child_failed(0, -7, "Signal 7 (SIGBUS) received by PID 3111")
    assert critical_ids(diagnose_text(tmp_path, text))[0] == "nccl.shm"


def test_a_bus_error_with_its_own_error_is_that_error(tmp_path: Path) -> None:
    own = "OSError: [Errno 28] No space left on device: '/data/cache/shard-0001.arrow'"
    report = diagnose_text(tmp_path, _LAUNCH + child_failed(0, -7, own))
    assert "nccl.shm" not in critical_ids(report)


@pytest.mark.parametrize(
    ("traceback", "own"),
    [
        ("Signal 7 (SIGBUS) received by PID 3111", None),
        ("To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html", None),
        (None, None),
        (
            "RuntimeError: CUDA error: an illegal memory access",
            "RuntimeError: CUDA error: an illegal memory access",
        ),
    ],
)
def test_a_workers_own_error(traceback: str | None, own: str | None) -> None:
    child = ChildFailure(cite=Cite("s", 1, "exitcode : -7"), traceback=traceback)
    assert child.own_error == own
