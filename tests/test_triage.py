"""Triage: the first failure across ranks, the launcher correction, folding, order."""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.facts.base import Cite
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.pipeline import diagnose_paths
from nccl_doctor.report import FirstFailure
from nccl_doctor.triage import fold, order

FIXTURES = Path(__file__).parent / "fixtures" / "triage"


def _first(tmp_path: Path, text: str, name: str = "run.log") -> FirstFailure:
    """The first failure of one log of ``text``."""
    log = tmp_path / name
    log.write_text(text, encoding="utf-8")
    first = diagnose_paths([str(log)]).first_failure
    assert first is not None
    return first


def _finding(rule_id: str, severity: Severity, **kw: object) -> Finding:
    return Finding(
        id=rule_id,
        severity=severity,
        confidence=kw.pop("confidence", Confidence.HIGH),  # type: ignore[arg-type]
        title=rule_id,
        summary=f"{rule_id} summary",
        fix=("do it",),
        evidence=(Cite("log", 1, "x"),),
        **kw,  # type: ignore[arg-type]
    )


def test_first_failure_corrects_the_launcher() -> None:
    report = diagnose_paths([str(FIXTURES / "illegal-access-rank1-launcher-blames-rank0.log")])
    first = report.first_failure
    assert first is not None
    assert (first.rank, first.cite.line) == (1, 1)
    assert first.time == "12-02 10:00:01.100000"
    assert "illegal memory access" in first.message
    # rank 0 said its peer exited before its watchdog's own error: all of rank 0's is cascade
    assert any(
        "names rank 0" in n and "rank 0's is its consequence" in n for n in report.coverage.notes
    )
    assert report.top(1) == ["cuda.illegal_access"]


def test_first_failure_by_time_corrects_the_launcher(tmp_path: Path) -> None:
    """Two ranks with errors of their own: the earlier one is first, whatever the launcher
    names."""
    log = tmp_path / "run.log"
    log.write_text(
        "".join(
            f"[rank{r}]:[E1202 10:00:0{t}.100000 220{r} torch/csrc/distributed/c10d/"
            f"ProcessGroupNCCL.cpp:1800] [PG ID 0 PG GUID 0(default_pg) Rank {r}] Process group "
            "watchdog thread terminated with exception: CUDA error: an illegal memory access "
            "was encountered\n"
            for r, t in ((0, 3), (1, 1))
        )
        + (FIXTURES / "illegal-access-rank1-launcher-blames-rank0.log")
        .read_text(encoding="utf-8")
        .split("W1202 10:00:04", 1)[1]
        .split("\n", 1)[1],  # the same launcher: its summary's Root Cause names rank 0
        encoding="utf-8",
    )
    report = diagnose_paths([str(log)])
    assert report.first_failure is not None
    assert (report.first_failure.rank, report.first_failure.cite.line) == (1, 2)
    assert any("names rank 0" in n and "rank 1 failed first" in n for n in report.coverage.notes)


def test_without_timestamps_the_launchers_root_rank_is_taken(tmp_path: Path) -> None:
    first = _first(
        tmp_path,
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "train.py", line 9, in <module>\n'
        "[rank0]: RuntimeError: Connection reset by peer\n"
        "[rank3]: Traceback (most recent call last):\n"
        '[rank3]:   File "train.py", line 12, in <module>\n'
        "[rank3]: ValueError: batch 17 has no labels\n"
        "Root Cause (first observed failure):\n"
        "[0]:\n"
        "  time      : 2024-12-02_10:00:05\n"
        "  host      : node1\n"
        "  rank      : 3 (local_rank: 3)\n"
        "  exitcode  : 1 (pid: 2203)\n"
        "  error_file: <N/A>\n",
    )
    assert first.rank == 3
    assert "batch 17" in first.message


def test_cascade_lines_are_not_the_first_failure(tmp_path: Path) -> None:
    first = _first(
        tmp_path,
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "train.py", line 9, in <module>\n'
        "[rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] "
        "Connection closed by peer [10.1.1.2]:5001\n"
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "train.py", line 12, in <module>\n'
        "[rank1]: KeyError: 'labels'\n",
    )
    assert first.rank == 1


_STORE_GET = (
    "This may indicate a possible application crash on rank 0 or a network set up issue.[7] "
    "is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value "
    "store by key '0', but store->get('0') got error: Socket Timeout\n"
)


def test_a_title_that_quotes_the_error_is_not_the_first_failure(tmp_path: Path) -> None:
    """The reporter's title and its translation name the error; c10d's line below proves it."""
    first = _first(
        tmp_path,
        "Title: 训练数据过多时报错Socket Timeout\n"
        "(Socket Timeout error when the training data is too large)\n\n"
        "It fails at the 'Running tokenizer on train dataset' step with:\n" + _STORE_GET,
        "issue.txt",
    )
    assert first.cite.line == 5


def test_a_ranks_line_is_a_failure_though_another_rank_repeats_it(tmp_path: Path) -> None:
    """Two ranks print the same c10d error: the earlier one stays the first failure."""
    log = tmp_path / "run.log"
    log.write_text(f"[rank3]: {_STORE_GET}[rank7]: {_STORE_GET}", encoding="utf-8")
    first = diagnose_paths([str(log)]).first_failure
    assert first is not None
    assert (first.rank, first.cite.line) == (3, 1)


def test_fold_puts_the_explained_finding_under_its_cause() -> None:
    cause = _finding("cuda.device_assert", Severity.CRITICAL, explains=("app.hang",))
    hang = _finding("app.hang", Severity.CRITICAL, confidence=Confidence.MEDIUM)
    standing, folded = fold(order([hang, cause], None))
    assert [f.id for f in standing] == ["cuda.device_assert"]
    assert standing[0].explains == ("app.hang",)
    assert [f.id for f in folded["cuda.device_assert"]] == ["app.hang"]


def test_a_warning_does_not_swallow_a_critical_finding() -> None:
    env = _finding("nccl.env", Severity.WARNING, explains=("nccl.p2p",))
    p2p = _finding("nccl.p2p", Severity.CRITICAL)
    standing, folded = fold(order([env, p2p], None))
    assert [f.id for f in standing] == ["nccl.p2p", "nccl.env"]
    assert folded == {}
    assert standing[1].explains == ()


def test_order_puts_causes_before_context_and_high_before_medium() -> None:
    info = _finding("net.ib_link", Severity.INFO, cause=False)
    medium = _finding("launch.rank_crash", Severity.CRITICAL, confidence=Confidence.MEDIUM)
    high = _finding("gpu.xid", Severity.CRITICAL)
    context = _finding("nccl.env", Severity.CRITICAL, cause=False)
    assert [f.id for f in order([info, context, medium, high], None)] == [
        "gpu.xid",
        "launch.rank_crash",
        "nccl.env",
        "net.ib_link",
    ]


def test_a_symptom_placed_above_its_cause_still_folds() -> None:
    hang = _finding("app.hang", Severity.CRITICAL)
    p2p = _finding(
        "nccl.p2p", Severity.CRITICAL, confidence=Confidence.MEDIUM, explains=("app.hang",)
    )
    crash = _finding("launch.rank_crash", Severity.CRITICAL, explains=("app.hang",))
    standing, folded = fold(order([hang, p2p], None))
    assert [f.id for f in standing] == ["nccl.p2p"]
    assert [f.id for f in folded["nccl.p2p"]] == ["app.hang"]
    # chains fold to their top: contention explains the crash, which explains the hang
    contention = _finding("gpu.contention", Severity.CRITICAL, explains=("launch.rank_crash",))
    standing, folded = fold(order([hang, crash, contention], None))
    assert [f.id for f in standing] == ["gpu.contention"]
    assert sorted(f.id for f in folded["gpu.contention"]) == ["app.hang", "launch.rank_crash"]


_WATCHDOG = (
    "[rank{r}]:[E1202 10:10:0{s}.100000000 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=120, OpType=ALLREDUCE, NumelIn=1, "
    "NumelOut=1, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.\n"
)


def test_a_timed_watchdog_timeout_does_not_beat_an_untimed_oom(tmp_path: Path) -> None:
    # a Slurm log: only the watchdog lines carry timestamps; rank 3's OOM came first
    log = tmp_path / "slurm-4242.out"
    log.write_text(
        "[rank3]: Traceback (most recent call last):\n"
        '[rank3]:   File "train.py", line 88, in <module>\n'
        "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
        "GPU 3 has a total capacity of 79.15 GiB of which 1.02 GiB is free.\n"
        + _WATCHDOG.format(r=0, s=1)
        + _WATCHDOG.format(r=1, s=2)
        + "srun: error: node1: task 3: Exited with exit code 1\n",
        encoding="utf-8",
    )
    report = diagnose_paths([str(log)])
    first = report.first_failure
    assert first is not None
    assert (first.rank, first.cite.line, first.time) == (3, 3, None)
    assert "out of memory" in first.message
    assert report.top(1) == ["gpu.oom"]


def test_the_watchdog_is_first_when_it_is_the_only_failure(tmp_path: Path) -> None:
    log = tmp_path / "slurm.out"
    log.write_text(_WATCHDOG.format(r=1, s=2) + _WATCHDOG.format(r=0, s=1), encoding="utf-8")
    first = diagnose_paths([str(log)]).first_failure
    assert first is not None
    assert (first.rank, first.time) == (0, "12-02 10:10:01.100000000")


def test_an_untimed_error_is_not_ordered_after_a_timed_one(tmp_path: Path) -> None:
    # two real errors, one with a timestamp: time cannot order them, log order does
    log = tmp_path / "run.log"
    log.write_text(
        "[rank2]: Traceback (most recent call last):\n"
        '[rank2]:   File "train.py", line 12, in <module>\n'
        "[rank2]: KeyError: 'labels'\n"
        "[rank0]:[E1202 10:00:01.100000 2201 ProcessGroupNCCL.cpp:1800] [PG ID 0 PG GUID "
        "0(default_pg) Rank 0] Process group watchdog thread terminated with exception: "
        "CUDA error: an illegal memory access was encountered\n",
        encoding="utf-8",
    )
    report = diagnose_paths([str(log)])
    first = report.first_failure
    assert first is not None
    assert first.rank == 2
    assert any(
        "ranks 0, 2 failed with no timestamps on one clock" in n
        and "rank 2 is taken as the first by the order of the logs" in n
        for n in report.coverage.notes
    ), report.coverage.notes


def test_horovods_older_shutdown_text_is_the_cascade(tmp_path: Path) -> None:
    """Before v0.20 Horovod said 'This has been caused by an exception on one of the rank': the
    rank that raised is the first failure, not the survivors' shutdown printed first."""
    first = _first(
        tmp_path,
        "[1]<stderr>:AbortedError (see above for traceback): Horovod has been "
        "shut down. This has been caused by an exception on one of the rank or an attempt to "
        "allreduce, allgather or broadcast a tensor after one of the ranks has finished "
        "execution.\n"
        "[2]<stderr>:RuntimeError: CUDA error: invalid device ordinal\n",
    )
    assert first.cite.line == 2
