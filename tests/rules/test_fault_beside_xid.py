"""A kernel fault the watchdog reports ('unspecified launch failure') beside an Xid: where the
Xid table reads it as a critical fault not of the application (109, a context switch that
never finished), the GPU is the cause and the fault follows; an application's Xid (13, a
graphics engine exception from a bad kernel) leaves the fault first."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import critical_ids, diagnose_text

_FAULT = (
    "[rank5]:[E307 02:14:16.372618411 ProcessGroupNCCL.cpp:1895] [PG ID 0 PG GUID 0(default_pg) "
    "Rank 5] Process group watchdog thread terminated with exception: CUDA error: unspecified "
    "launch failure\n"
)
_XID = (
    "[Fri Mar  7 02:14:09 2025] NVRM: Xid (PCI:0000:ab:00): {code}, pid=912244, "
    "name=pt_main_thread, Ch 00000008{tail}\n"
)


@pytest.mark.parametrize(
    ("code", "tail", "first"),
    [
        (109, ", errorString CTX SWITCH TIMEOUT, Info 0x1c04c", "gpu.xid"),
        (13, ", Graphics Exception: ESR 0x404600=0x80000002", "cuda.illegal_access"),
    ],
)
def test_the_xid_decides_whether_the_gpu_or_the_kernel_faulted(
    tmp_path: Path, code: int, tail: str, first: str
) -> None:
    text = "```\n" + _XID.format(code=code, tail=tail) + _FAULT + "```\n"
    assert critical_ids(diagnose_text(tmp_path, text))[0] == first
