"""ProcessGroupNCCL's desync report (TraceUtils.h) read into one DesyncReport per report."""

from __future__ import annotations

from nccl_doctor.facts.run import DesyncReport
from nccl_doctor.parse.torchrun import TorchrunParser
from tests.helpers import of_type, parse_stream

_PG = (
    "[rank0]:[E1205 10:41:12.345778901 ProcessGroupNCCL.cpp:1598] "
    "[PG ID 0 PG GUID 0(default_pg) Rank 0]"
)


def _reports(text: str) -> list[DesyncReport]:
    return of_type(parse_stream(TorchrunParser(), text), DesyncReport)


def test_ranks_that_never_joined() -> None:
    (report,) = _reports(
        f"{_PG}\n"
        "[rank0]:\t - [0] Timeout at collective: ALLREDUCE, #5\n"
        "[rank0]:\t - To our best knowledge, ranks [1, 3] are the lagging ranks that caused "
        "this timeout. They never joined any collectives\n"
        "[rank0]:[E1205 10:41:12.355678901 ProcessGroupNCCL.cpp:1674] next message\n"
    )
    assert (report.rank, report.op, report.seq) == (0, "ALLREDUCE", 5)
    assert report.never_joined == (1, 3)
    assert (report.lag_seq, report.unfinished, report.not_next, report.snapshot) == (
        None,
        (),
        (),
        (),
    )
    assert report.cite.line == 2


def test_lagging_ranks_and_the_snapshot() -> None:
    (report,) = _reports(
        "\t - [0] Timeout at collective: ALLREDUCE, #41208\n"
        "\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync "
        "are:\n"
        "\t   - [4] joined but didn't finish collective #41207 (count from 1)\n"
        "\t     [2] finished collective #41207, but didn't join collective #41208 (count from 1)\n"
        "\t - Snapshot of ranks' latest states:\n"
        "\t   #41207 started ranks:\n"
        "\t     [4] started ALLREDUCE\n"
        "\t   #41207 finished ranks:\n"
        "\t     [2] finished ALLREDUCE\n"
        "\t   #41208 started ranks:\n"
        "\t     [0, 1, 3] started ALLREDUCE\n"
    )
    assert report.rank == 0  # no prefix: the rank the report names
    assert (report.lag_seq, report.unfinished, report.not_next) == (41207, (4,), (2,))
    assert report.snapshot == (
        (41207, "started", "ALLREDUCE", (4,)),
        (41207, "finished", "ALLREDUCE", (2,)),
        (41208, "started", "ALLREDUCE", (0, 1, 3)),
    )


def test_each_ranks_report_is_its_own() -> None:
    reports = _reports(
        "[rank0]:\t - [0] Timeout at collective: BROADCAST, #12\n"
        "[rank2]:\t - [2] Timeout at collective: ALLREDUCE, #12\n"
        "[rank0]:\t   - [0, 1, 2, 3] joined but didn't finish collective #12 (count from 1)\n"
        "[rank2]:\t   - [0, 1, 2, 3] joined but didn't finish collective #12 (count from 1)\n"
        "[rank0]:\t - Snapshot of ranks' latest states:\n"
        "[rank0]:\t   #12 started ranks:\n"
        "[rank0]:\t     [0] started BROADCAST\n"
        "[rank0]:\t     [1, 2, 3] started ALLREDUCE\n"
    )
    by_rank = {r.rank: r for r in reports}
    assert sorted(by_rank) == [0, 2]
    assert by_rank[0].snapshot == (
        (12, "started", "BROADCAST", (0,)),
        (12, "started", "ALLREDUCE", (1, 2, 3)),
    )
    assert by_rank[2].snapshot == ()
    assert by_rank[2].unfinished == (0, 1, 2, 3)


def test_a_second_timeout_starts_a_second_report() -> None:
    reports = _reports(
        "\t - [0] Timeout at collective: ALLREDUCE, #5\n"
        "\t - To our best knowledge, ranks [3] are the lagging ranks that caused this timeout. "
        "They never joined any collectives\n"
        "\t - [0] Timeout at collective: ALLGATHER, #9\n"
        "\t - To our best knowledge, ranks [1] are the lagging ranks that caused this timeout. "
        "They never joined any collectives\n"
    )
    assert [(r.op, r.seq, r.never_joined) for r in reports] == [
        ("ALLREDUCE", 5, (3,)),
        ("ALLGATHER", 9, (1,)),
    ]


def test_a_row_outside_a_snapshot_heading_and_a_huge_snapshot_stay_bounded() -> None:
    rows = "".join(f"\t     [{i}] started ALLREDUCE\n" for i in range(500))
    (report,) = _reports(
        "\t - [0] Timeout at collective: ALLREDUCE, #7\n"
        "\t     [5] started BROADCAST\n"  # no '#N started ranks:' heading yet: not kept
        "\t - Snapshot of ranks' latest states:\n"
        "\t   #7 started ranks:\n" + rows
    )
    assert len(report.snapshot) == 64
    assert report.snapshot[0] == (7, "started", "ALLREDUCE", (0,))


def test_a_line_that_only_mentions_the_words_makes_no_report() -> None:
    assert _reports("we saw 'Timeout at collective: ' in the docs and nothing else\n") == []
