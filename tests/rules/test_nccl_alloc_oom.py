"""NCCL's own allocation refused: its WARN ``Cuda failure 'out of memory'`` before the
ncclUnhandledCudaError it returns is the job's GPU memory spent (a JAX process that
preallocates 98% leaves NCCL none), not a notice; NCCL's INFO-level line of the same words
(an error it ignores) stays one; beside the bootstrap's remote allocator (2.8-2.11), whose
size came off a connection, it is NCCL's bug, not the job's memory."""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.facts.catalogue import harmless_lead
from tests.helpers import critical_ids, diagnose_text

_JAX = (
    "export XLA_PYTHON_CLIENT_MEM_FRACTION=.98\n"
    "ws-3090:88412:88873 [0] NCCL INFO comm 0x7f2c3c0c6a50 rank 0 nranks 2 cudaDev 0 nvmlDev 0 "
    "busId 1000 commId 0x4b1dce07a2f1e39c - Init START\n"
    "ws-3090:88412:88873 [0] include/alloc.h:103 NCCL WARN Cuda failure 'out of memory'\n"
    "ws-3090:88412:88873 [0] NCCL INFO include/alloc.h:110 -> 1\n"
    "ws-3090:88412:88873 [0] NCCL INFO init.cc:1406 -> 1\n"
    "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: external/xla/xla/service/gpu/"
    "nccl_utils.cc:297: NCCL operation ncclCommInitRank(&comm, nranks, id, rank) failed: "
    "unhandled cuda error (run with NCCL_DEBUG=INFO for details)\n"
)
_REMOTE = (
    "node0:39:298 [0] include/socket.h:423 NCCL WARN Net : Connection closed by remote peer "
    "10.0.0.4<52638>\n"
    "node0:39:298 [0] bootstrap.cc:279 NCCL WARN [Rem Allocator] Allocation failed (segment 0, "
    "fd 130)\n"
    "node0:39:298 [0] include/alloc.h:48 NCCL WARN Cuda failure 'out of memory'\n"
    "node0:39:298 [0] NCCL INFO bootstrap.cc:231 -> 1\n"
)


def test_nccls_allocation_refused_is_the_jobs_memory(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _JAX)
    assert critical_ids(report) == ["gpu.oom"]
    assert "XLA_PYTHON_CLIENT_MEM_FRACTION=0.8" in report.findings[0].fix[0]
    assert report.notices == ()


def test_the_info_line_of_the_same_words_is_still_a_notice() -> None:
    info = "node0:39:298 [0] NCCL INFO Cuda failure 'out of memory'"
    warn = "node0:39:298 [0] include/alloc.h:103 NCCL WARN Cuda failure 'out of memory'"
    lead = harmless_lead(info)
    assert lead is not None
    assert lead.level == "info"
    assert harmless_lead(warn) is None


def test_the_remote_allocators_out_of_memory_is_not_the_jobs(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _REMOTE)
    assert "gpu.oom" not in critical_ids(report)
    assert "nccl.internal" in [h.id for h in report.hypotheses]
