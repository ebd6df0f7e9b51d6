"""PyTorch's own messages through the whole diagnosis: each opens the class of its mechanism.

Before these messages were catalogued, each of these logs fell back to the
place the traceback failed (CUDA's initialisation) or to the catch-all class.
"""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.pipeline import diagnose_paths
from nccl_doctor.report import Report

GLOO = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 30, in <module>\n'
    '    dist.init_process_group(backend="gloo")\n'
    "RuntimeError: Gloo connectFullMesh failed with "
    "[../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error\n"
)
RELAYED = (
    "[E ProcessGroupNCCL.cpp:828] [Rank 2] NCCL watchdog thread terminated with exception: CUDA "
    "error: an illegal memory access was encountered\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, so the "
    "stacktrace below might be incorrect.\n"
)


def _report(tmp_path: Path, text: str) -> Report:
    path = tmp_path / "log.txt"
    path.write_text(text)
    return diagnose_paths([str(path)])


def test_gloos_full_mesh_failure_is_a_connection_between_ranks(tmp_path: Path) -> None:
    report = _report(tmp_path, GLOO)
    assert report.hypotheses[0].symptom.startswith("a TCP connection between ranks")
    assert [h.id for h in report.hypotheses][:2] == ["net.unreachable", "net.socket_interface"]
    assert report.hypotheses[0].for_[0].startswith("the message is torch.gloo.full_mesh_failed")


def test_the_watchdogs_exception_is_read_as_the_cuda_error_it_carries(tmp_path: Path) -> None:
    report = _report(tmp_path, RELAYED)
    symptoms = {h.symptom for h in report.hypotheses}
    assert symptoms == {"a kernel or the GPU faulted (a sticky CUDA error: the context is lost)"}
