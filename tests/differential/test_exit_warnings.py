"""What torch prints at an exit that skipped destroy_process_group is a notice, never a cause.

ProcessGroupNCCL's destructor (2.4-2.5), NCCLComm's (2.6+) and the CUDA IPC
producer's teardown (CudaIPCTypes.cpp) warn at most clean exits of HF
Trainer, vLLM and scripts; after a crash they are the teardown's echo.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import critical_ids, diagnose_text

_WARNINGS = (
    "[rank0]:[W1007 09:55:53.400347903 ProcessGroupNCCL.cpp:1250] Warning: WARNING: process "
    "group has NOT been destroyed before we destruct ProcessGroupNCCL. On normal program exit, "
    "the application should call destroy_process_group to ensure that any pending NCCL "
    "operations have finished in this process. In rare cases this process can exit before this "
    "point and block the progress of another member of the process group. This constraint has "
    "always been present,  but this warning has only been added since PyTorch 2.4 (function "
    "operator())\n"
    "[rank2]:[W1205 10:11:12.345678901 NCCLUtils.cpp:210] Warning: WARNING: NCCL communicator "
    "hasn't been destroyed. This may cause memory leaks. To avoid the risk, you can call "
    "`destroy_process_group` during normal exit or `_abort_process_group` when handling "
    "failures. (function ~NCCLComm)\n"
    "[rank0]:[W925 12:12:17.096459736 CudaIPCTypes.cpp:16] Producer process has been terminated "
    "before all shared CUDA tensors released. See Note [Sharing CUDA tensors]\n"
)


def test_a_clean_exit_with_the_warnings_has_no_failure(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        "{'train_runtime': 812.4, 'epoch': 3.0}\n100%|##########| 1500/1500 [13:32<00:00]\n"
        + _WARNINGS,
    )
    assert list(report.findings) == []
    assert list(report.hypotheses) == []
    assert report.first_failure is None
    assert {n.signature for n in report.notices} >= {
        "torch.pgnccl.pg_not_destroyed",
        "torch.nccl.comm_not_destroyed",
    }


def test_after_a_crash_they_stay_the_teardown(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        "Traceback (most recent call last):\n"
        '  File "/work/train.py", line 77, in <module>\n'
        "    loss = model(batch)\n"
        "KeyError: 'input_ids'\n" + _WARNINGS,
    )
    assert report.first_failure is not None
    assert report.first_failure.message == "KeyError: 'input_ids'"
    assert report.hypotheses[0].id == "launch.rank_crash"
    assert critical_ids(report) == []
