"""nccl-tests that died of a segfault before its first row, its gdb frames in NCCL's own
functions: it crashed inside NCCL (nccl.internal), it did not hang on the P2P path. The same
run without the crash, no row printed, is still P2P's stall."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import critical_ids, diagnose_text

_RUN = (
    "$ ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 4\n"
    "# nThread 1 nGpus 4 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 "
    "agg iters: 1 validation: 1 graph: 0\n"
    "#\n"
    "# Using devices\n"
    "#  Rank  0 Group  0 Pid 211734 on gpu-vm-07 device  0 [0x1a] NVIDIA L20\n"
    "#  Rank  1 Group  0 Pid 211734 on gpu-vm-07 device  1 [0x1b] NVIDIA L20\n"
    "#  Rank  2 Group  0 Pid 211734 on gpu-vm-07 device  2 [0x3d] NVIDIA L20\n"
    "#  Rank  3 Group  0 Pid 211734 on gpu-vm-07 device  3 [0x3e] NVIDIA L20\n"
)
_CRASH = (
    "Segmentation fault (core dumped)\n\n"
    "(gdb) bt\n"
    "#0  0x00007fffe8f3c2a1 in ncclTopoSearchRecGpu (system=0x7fff8c001b40, "
    "graph=0x7fffe3ffa8d0) at graph/search.cc:489\n"
    "#1  0x00007fffe8f3f7e2 in ncclTopoCompute (system=0x7fff8c001b40, graph=0x7fffe3ffa8d0) at "
    "graph/search.cc:1043\n"
)


def test_a_segfault_in_ncclcode_before_the_first_row_is_an_nccl_crash(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _RUN + _CRASH + "For now we're stuck on an old torch.\n")
    assert critical_ids(report) == ["nccl.internal"]
    assert report.findings[0].summary.startswith("A process running NCCL died from a segfault")
    assert report.findings[0].confidence.value == "medium"


def test_the_same_run_that_sits_there_is_still_the_p2p_path(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _RUN + "It just sits there, stuck, no row ever printed.\n")
    assert [f.id for f in report.findings] == ["nccl.p2p"]
