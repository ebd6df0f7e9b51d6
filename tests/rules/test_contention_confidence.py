"""gpu.contention's confidence follows how far the evidence ties the processes to the failure."""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.pipeline import diagnose_paths

_INIT = (
    "node1:{pid}:{pid} [{r}] NCCL INFO ncclCommInitRankConfig comm 0x189cb7e{r} rank {r} "
    "nranks 2 cudaDev {r} nvmlDev {r} busId {r}b000 commId 0xe9eee1fe35cc6108 - Init START\n"
)
_LOG = (
    _INIT.format(pid=2200, r=0)
    + _INIT.format(pid=2201, r=1)
    + "[rank1]: Traceback (most recent call last):\n"
    '[rank1]:   File "/work/train.py", line 40, in <module>\n'
    "[rank1]: torch.distributed.DistBackendError: NCCL error in: "
    "/pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:77, unhandled cuda error (run with "
    "NCCL_DEBUG=INFO for details), NCCL version 2.26.2\n"
)
_SMI = (
    "+-----------------------------------------------------------------------------------------+\n"
    "| Processes:                                                                              |\n"
    "|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |\n"
    "|        ID   ID                                                               Usage      |\n"
    "|=========================================================================================|\n"
    "|    0   N/A  N/A            2200      C   python                                 1200MiB |\n"
    "|    1   N/A  N/A            2201      C   python                                 1200MiB |\n"
    "|    1   N/A  N/A          694989      C   tritonserver                          36392MiB |\n"
    "{extra}"
    "+-----------------------------------------------------------------------------------------+\n"
)
_CROWDED_0 = (
    "|    0   N/A  N/A          1775815     C   python3.10                            55824MiB |\n"
)


def _contention(tmp_path: Path, extra: str) -> dict[str, object]:
    (tmp_path / "train.log").write_text(_LOG, encoding="utf-8")
    (tmp_path / "nvidia-smi.txt").write_text(_SMI.format(extra=extra), encoding="utf-8")
    report = diagnose_paths([str(tmp_path)])
    assert report.top(1) == ["gpu.contention"]
    finding = report.findings[0]
    return {"confidence": finding.confidence.value, "detail": finding.detail}


def test_high_when_the_failing_ranks_gpu_is_read_and_the_only_crowded_one(
    tmp_path: Path,
) -> None:
    got = _contention(tmp_path, "")
    assert got == {"confidence": "high", "detail": ()}


def test_medium_when_a_more_crowded_gpu_did_not_fail_first(tmp_path: Path) -> None:
    got = _contention(tmp_path, _CROWDED_0)
    assert got["confidence"] == "medium"
    doubt = (
        "rank 0 on GPU 0 shared it with more (55824 MiB held by other processes) and did not "
        "fail first: the crowding alone does not explain why rank 1 failed"
    )
    assert got["detail"] == (doubt,)
