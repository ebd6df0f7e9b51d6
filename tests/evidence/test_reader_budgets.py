"""One read's sources share what it may cost: a thousand small logs cost what one large does.

The informational lines of each kind (NCCL's per-communicator INFO chatter,
PyTorch's per-process-group option lists) are read up to one budget for the
whole read; past it, a source reads only what says who its processes are (the
first communicator init line of each); free text is kept from the first MiBs
of small sources in all; NCCL's INFO lines are never decoded as free text.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from nccl_doctor.evidence import anchors, budgets, chunks, reader
from nccl_doctor.facts.nccl import NcclCommInit, NcclWarn
from nccl_doctor.facts.run import PgInitOptions
from nccl_doctor.facts.text import TextLine
from tests.helpers import decoded_lines

if TYPE_CHECKING:
    import pytest


def _init(rank: int, i: int) -> str:
    """One communicator init line of ``rank`` (an informational line of nccl-log)."""
    return (
        f"node{rank // 8}:{1000 + rank}:{1000 + rank + i % 2} [{rank % 8}] NCCL INFO "
        f"ncclCommInitRank comm 0x{0x55D000 + i:x} rank {rank % 8} nranks 8 cudaDev {rank % 8} "
        f"nvmlDev {rank % 8} busId 18000 commId 0x{i:x} - Init START"
    )


def _rank_file(folder: Path, rank: int, inits: int, *, warn: bool = False) -> Path:
    lines = [_init(rank, i) for i in range(inits)]
    if warn:
        lines.append(
            f"node{rank // 8}:{1000 + rank}:{1001 + rank} [{rank % 8}] init.cc:934 NCCL WARN "
            "Duplicate GPU detected : rank 2 and rank 3 both on CUDA device 3a000"
        )
    path = folder / f"rank{rank}.log"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_per_rank_files_share_the_informational_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(budgets, "INFO_BUDGET", 60)
    monkeypatch.setattr(budgets, "INFO_FLOOR", 5)
    for rank in range(5):
        _rank_file(tmp_path, rank, 40, warn=rank == 4)
    result = reader.read_paths([str(tmp_path)])
    inits = [f for f in result.facts if isinstance(f, NcclCommInit)]
    per_source = {
        name: sum(1 for f in inits if f.cite.source.endswith(name))
        for name in ("rank0.log", "rank1.log", "rank2.log", "rank3.log", "rank4.log")
    }
    # the first file reads all of its 40; the second what the read has left (20); the rest
    # only their process's first init line (of its first 5: the floor), whatever its thread
    assert per_source == {
        "rank0.log": 40,
        "rank1.log": 20,
        "rank2.log": 1,
        "rank3.log": 1,
        "rank4.log": 1,
    }
    assert {(f.rank, f.cite.line) for f in inits if f.cite.source.endswith("rank3.log")} == {(3, 1)}
    # warnings are read in full past every budget
    (warn,) = [f for f in result.facts if isinstance(f, NcclWarn)]
    assert warn.cite.source.endswith("rank4.log")
    assert warn.cite.line == 41
    notes = [(Path(n.source).name, n.message) for n in result.notes]
    assert notes == [
        (
            "rank1.log",
            (
                "nccl-log: read the first 20 informational lines (to line 20); later ones of that "
                "kind were skipped, warnings and errors were not"
            ),
        ),
        (
            "(all inputs)",
            (
                "nccl-log: 3 more source(s) read none of its informational lines (the 60 lines of "
                "the whole read were spent) but the first of each process holding cudaDev; "
                "warnings and errors were read in full"
            ),
        ),
    ]


def test_one_source_keeps_its_whole_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(budgets, "INFO_BUDGET", 60)
    monkeypatch.setattr(budgets, "INFO_FLOOR", 5)
    path = _rank_file(tmp_path, 0, 100)
    result = reader.read_paths([str(path)])
    assert sum(isinstance(f, NcclCommInit) for f in result.facts) == 60
    assert [n.message for n in result.notes] == [
        (
            "nccl-log: read the first 60 informational lines (to line 60); later ones of that kind "
            "were skipped, warnings and errors were not"
        )
    ]


def _options(rank: int, pg: int) -> str:
    return (
        f"[rank{rank}]:[I1106 01:00:05.123456789 ProcessGroupNCCL.cpp:905] [PG ID {pg} PG GUID "
        f"{pg}(tp) Rank {rank}] ProcessGroupNCCL initialization options: size: 8, global rank: "
        f"{rank}, TIMEOUT(ms): 600000, USE_HIGH_PRIORITY_STREAM: 0, SPLIT_FROM: 0, SPLIT_COLOR: 1, "
        f"PG Name: {pg}"
    )


def _environments(rank: int, pg: int) -> str:
    return (
        f"[rank{rank}]:[I1106 01:00:05.123456789 ProcessGroupNCCL.cpp:914] [PG ID {pg} PG GUID "
        f"{pg}(tp) Rank {rank}] ProcessGroupNCCL environments: NCCL version: 2.21.5, "
        "TORCH_NCCL_ASYNC_ERROR_HANDLING: 3, TORCH_NCCL_DUMP_ON_TIMEOUT: 0"
    )


def test_process_group_option_lists_are_informational(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every rank prints two per process group: 800,000 lines in a large job, read to a budget.

    Their ``NCCL version: 2.21.5`` is not NCCL's banner (``NCCL version 2.21.5+cuda12.4``),
    so past the budget they are not even decoded.
    """
    monkeypatch.setattr(budgets, "INFO_BUDGET", 50)
    lines = [
        line
        for pg in range(30)
        for rank in range(8)
        for line in (_options(rank, pg), _environments(rank, pg))
    ]
    lines.append(
        "[rank3]:[E1106 03:22:44.495420420 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
        "Timeout(ms)=600000) ran for 600013 milliseconds before timing out."
    )
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(chunks, "CHUNK_BYTES", 4096)  # the budget ends before the last chunks
    monkeypatch.setattr(budgets, "TEXT_MAX_BYTES", 1000)  # a large log: not read as free text
    seen = decoded_lines(monkeypatch)
    result = reader.read_paths([str(path)])
    options = [f for f in result.facts if isinstance(f, PgInitOptions)]
    assert len(options) == 25
    assert (options[0].global_rank, options[0].size, options[0].pg_name) == (0, 8, "0")
    assert any(type(f).__name__ == "CollectiveTimeout" for f in result.facts)
    assert [n.message for n in result.notes] == [
        (
            "torchrun: read the first 50 informational lines (to line 50); later ones of that "
            "kind were skipped, warnings and errors were not"
        ),
        (  # the environment lines name TORCH_ variables: 50 of them spend env's budget too
            "env: read the first 50 informational lines (to line 100); later ones of that kind "
            "were skipped, warnings and errors were not"
        ),
    ]
    # torchrun's 50 lines, then env's (the environment lines) to 100, then only the watchdog
    assert seen == [*range(1, 51), *range(52, 101, 2), 481]


def test_free_text_is_kept_from_the_first_small_sources_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(budgets, "TEXT_TOTAL_BYTES", 3000)
    for i in range(4):
        (tmp_path / f"notes{i}.txt").write_text(f"the job hangs on node {i}\n" + "x" * 1200 + "\n")
    result = reader.read_paths([str(tmp_path)])
    kept = sorted(Path(f.cite.source).name for f in result.facts if isinstance(f, TextLine))
    # 1,200 bytes and more each: the first two fit in 3,000 bytes, the others are not free text
    assert kept == ["notes0.txt", "notes0.txt", "notes1.txt", "notes1.txt"]
    assert [(Path(n.source).name, n.message) for n in result.notes] == [
        ("notes2.txt", "no known evidence kind recognised"),
        ("notes3.txt", "no known evidence kind recognised"),
        (
            "(all inputs)",
            (
                "free text: 2 small source(s) past the first 3000 bytes of free text were read for "
                "known evidence only (lines no parser claims were not kept)"
            ),
        ),
    ]


def test_free_text_never_decodes_nccl_info_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small log of NCCL INFO is read as free text, but its INFO lines are passed undecoded."""
    monkeypatch.setattr(budgets, "INFO_BUDGET", 2)
    lines = [
        _init(0, 0),
        _init(0, 1),  # the informational budget: 2 lines
        "the loss went to nan here",
        "node0:1000:1000 [0] NCCL INFO Setting affinity for GPU 0 to ffffffff,00000000",
        "node0:1000:1000 [0] NCCL INFO P2P Chunksize set to 131072",
        "[default0]:node0:1000:1000 [0] NCCL INFO Trees [0] 1/-1/-1->0->-1",
    ]
    path = tmp_path / "rank0.log"
    path.write_text("\n".join(lines) + "\n")
    seen = decoded_lines(monkeypatch)
    result = reader.read_paths([str(path)])
    # 4 and 5 are NCCL's own INFO lines: skipped undecoded; 6 has a launcher's prefix before
    # NCCL's, so it is decoded (and then dropped, as every NCCL INFO line of free text is)
    assert seen == [1, 2, 3, 6]
    (text,) = [f for f in result.facts if isinstance(f, TextLine)]
    assert (text.text, text.cite.line) == ("the loss went to nan here", 3)


def test_a_node_log_past_the_budget_reads_each_process_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node's log interleaves its eight ranks: past the budget, the first init line of each
    of them is read (rank, device, bus id), and none of their later communicators'."""
    monkeypatch.setattr(budgets, "INFO_BUDGET", 10)
    _rank_file(tmp_path, 0, 10)  # spends the budget
    node = [_init(rank, i) for i in range(3) for rank in range(8, 16)]
    (tmp_path / "z-node1.log").write_text("\n".join(node) + "\n")
    seen = decoded_lines(monkeypatch)
    result = reader.read_paths([str(tmp_path)])
    inits = [f for f in result.facts if isinstance(f, NcclCommInit)]
    later = [(f.rank, f.cite.line) for f in inits if f.cite.source.endswith("z-node1.log")]
    assert later == [(rank % 8, rank - 7) for rank in range(8, 16)]
    # of its first 16 (INFO_FLOOR) lines holding cudaDev, the first of each process: 8
    assert seen == [*range(1, 11), *range(1, 9)]


def test_past_the_budget_option_lists_are_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PyTorch's option lists are informational like the rest: no floor per file."""
    monkeypatch.setattr(budgets, "INFO_BUDGET", 12)
    for rank in range(4):
        lines = [
            line.removeprefix(f"[rank{rank}]:")
            for pg in range(5)
            for line in (_options(rank, pg), _environments(rank, pg))
        ]
        (tmp_path / f"rank{rank}.log").write_text("\n".join(lines) + "\n")
    result = reader.read_paths([str(tmp_path)])
    options = [f for f in result.facts if isinstance(f, PgInitOptions)]
    # rank 0 reads its 10 lines (5 option lists), rank 1 the 2 left (one list), the others none
    assert [(o.rank, o.pg_name) for o in options] == [
        *((0, str(pg)) for pg in range(5)),
        (1, "0"),
    ]
    assert [n.message for n in result.notes if n.source == "(all inputs)"] == [
        (
            "torchrun: 2 more source(s) read none of its informational lines (the 12 lines of "
            "the whole read were spent); warnings and errors were read in full"
        ),
        (  # the environments lines name TORCH_ variables: 5 a file, 12 for the read
            "env: 1 more source(s) read none of its informational lines (the 12 lines of the "
            "whole read were spent); warnings and errors were read in full"
        ),
    ]


def test_a_small_source_keeps_no_informational_line_past_its_budget_as_free_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small log is read line by line for free text; the option lists and variable lines
    past their budgets are skipped as in a large one, but a sentence naming a variable stays."""
    monkeypatch.setattr(budgets, "INFO_BUDGET", 5)
    options = [
        f"[I1106 01:00:{k:02d}.000000 ProcessGroupNCCL.cpp:905] [PG ID {k} PG GUID {k}(tp) "
        f"Rank 1] ProcessGroupNCCL initialization options: size: 8, global rank: 1, "
        f"TIMEOUT(ms): 600000, USE_HIGH_PRIORITY_STREAM: 0, SPLIT_FROM: 0, PG Name: {k}"
        for k in range(20)
    ]
    variables = [f"NCCL_VAR_{k}=value{k}" for k in range(20)]
    sentence = "It works when I set NCCL_P2P_DISABLE=1 on every node"
    path = tmp_path / "rank1.log"
    path.write_text("\n".join([*options, *variables, sentence]) + "\n")
    result = reader.read_paths([str(path)])
    texts = [f.text for f in result.facts if isinstance(f, TextLine)]
    assert sum(isinstance(f, PgInitOptions) for f in result.facts) == 5
    assert not [t for t in texts if "initialization options" in t or t.startswith("NCCL_VAR_")]
    assert texts == [sentence]


def test_sources_past_the_budget_share_one_pattern_of_spent_anchors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small source past a budget skips that kind's lines undecoded with one pattern of its
    anchors: built once for the read, not once a file."""
    monkeypatch.setattr(budgets, "INFO_BUDGET", 10)
    for rank in range(6):
        _rank_file(tmp_path, rank, 12)
    anchors.any_of.cache_clear()
    reader.read_paths([str(tmp_path)])
    # rank0 spends nccl-log's budget at its line 10; ranks 1-5 begin past it: the same anchors
    info = anchors.any_of.cache_info()
    assert (info.misses, info.hits) == (1, 5)
