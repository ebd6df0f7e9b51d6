"""A watchdog timeout at the group's first collective while a progress bar ran for most of the
timeout: a rank was at long work of its own (a rank-0-only dataset map) and the others waited,
so the hang is the application's, not a transport that never connected. A bar that ran briefly
leaves the first-collective doubt standing."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import critical_ids, diagnose_text


def _log(elapsed: str) -> str:
    return (
        "rank0 在跑 tokenizer，其他 7 个卡就不动了，然后 30 分钟左右全部报错：\n\n"
        "Running tokenizer on dataset (num_proc=16):  37%|███▋      | 1480000/4000000 "
        f"[{elapsed}<50:12, 836.54 examples/s]\n"
        "[E ProcessGroupNCCL.cpp:475] [Rank 4] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran "
        "for 1800559 milliseconds before timing out.\n"
        "[E ProcessGroupNCCL.cpp:475] [Rank 2] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran "
        "for 1800601 milliseconds before timing out.\n"
    )


def test_a_bar_that_ran_most_of_the_timeout_is_a_busy_rank(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _log("29:51"))
    assert critical_ids(report) == ["app.hang"]
    [hang] = report.findings
    assert "a progress bar had run 29:51 when the others timed out" in hang.summary
    assert "may never have connected" not in hang.summary
    assert hang.fix[0].startswith("Do the long single-rank work")
    assert any("29:51<50:12" in c.text for c in hang.evidence)


def test_a_bar_that_ran_briefly_leaves_the_first_collective_open(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _log("02:10"))
    assert "app.hang" not in critical_ids(report)
    assert all("a progress bar had run" not in f.summary for f in report.findings)
