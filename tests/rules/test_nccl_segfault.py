"""A process that dies of a segfault the kernel places inside libnccl ('segfault at ... error 4
in libnccl.so.2[...]') is NCCL's crash; the same line in another library is no NCCL crash. A
release retold of the environment the job ran in before ('my old venv ... NCCL version
2.20.5+cuda12.4') is a before and after, not a second release beside the running one."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import critical_ids, diagnose_text

_RUN = (
    "NCCL version 2.21.5+cuda12.4\n"
    "vm-2xa100:8494:8621 [0] NCCL INFO ncclCommInitRank comm 0x5599d2f0a1c0 rank 0 nranks 2 "
    "cudaDev 0 nvmlDev 0 busId 7000 commId 0x8a1f36c2d47e9b05 - Init START\n"
    "Fatal Python error: Segmentation fault\n"
    "E0203 16:41:09.117000 8431 site-packages/torch/distributed/elastic/multiprocessing/api.py:"
    "869] failed (exitcode: -11) local_rank: 0 (pid: 8494) of binary: /home/u/venv/bin/python\n"
    "[ 5120.335871] pt_main_thread[8621]: segfault at 18 ip 00007f8a4e2d1d3a sp 00007f8a2bffd9d0 "
    "error 4 in {lib}[7f8a4de00000+10a7b000] likely on CPU 3 (core 3, socket 0)\n"
)
_BEFORE = (
    "If I go back to my old venv (torch 2.3.1, its log says NCCL version 2.20.5+cuda12.4) the "
    "same script works.\n"
)


def test_a_segfault_the_kernel_places_in_libnccl_is_ncclss(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _RUN.format(lib="libnccl.so.2") + _BEFORE)
    assert critical_ids(report) == ["nccl.internal"]
    assert report.findings[0].summary.startswith(
        "A process running NCCL 2.21.5 died from a segfault"
    )
    assert "nccl.version_mismatch" not in [f.id for f in report.findings]


def test_a_segfault_in_another_library_is_no_nccl_crash(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _RUN.format(lib="libc.so.6"))
    assert "nccl.internal" not in critical_ids(report)
