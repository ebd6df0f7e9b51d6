"""Where a timed-out collective was issued: the flight recorder's stack the watchdog prints.

``Stack trace of the failed collective:`` then ``#i function from file:line``, innermost
first (ProcessGroupNCCL's printTraceback; torch 2.4 and later with the flight recorder on).
The real one-GPU capture (tests/fixtures/captured/watchdog-h200) prints it; the two-rank log
below follows its lines, with the frames a rank-0-only barrier would have. A dump keeps the
same stack per entry (``frames``, innermost first), read for the operations not completed.
"""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.flight import FlightEntry
from nccl_doctor.facts.stacks import CollectiveTrace, issued_at
from nccl_doctor.parse.torchrun import TorchrunParser
from nccl_doctor.pipeline import diagnose_paths, facts_of
from tests.hang._fr_json_build import dump_of, dumps
from tests.helpers import of_type, parse_stream

CAPTURE = Path(__file__).resolve().parents[1] / "fixtures" / "captured" / "watchdog-h200"
_SITE = "/usr/local/lib/python3.11/site-packages/torch/distributed"


def _head(rank: int, ms: int) -> str:
    return f"[rank{rank}]:[E1206 04:12:{ms:02d}.245823595 ProcessGroupNCCL.cpp:733] "


def _timeout(rank: int, op: str, seq: int) -> str:
    return (
        f"[rank{rank}]:[E1206 04:12:01.597585454 ProcessGroupNCCL.cpp:689] [Rank {rank}] "
        f"Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, "
        "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600081 milliseconds before "
        "timing out.\n"
    )


#: rank 0 entered a barrier inside rank-0-only checkpoint code; rank 1 went on to the next
#: step's all-reduce: both time out, each in its own collective
_TWO_RANKS = (
    _timeout(0, "BARRIER", 41)
    + _timeout(1, "ALLREDUCE", 41)
    + _head(0, 5)
    + "Stack trace of the failed collective: \n"
    + f"#0 barrier from {_SITE}/distributed_c10d.py:4551\n"
    + f"#1 wrapper from {_SITE}/c10d_logger.py:83\n"
    + "#2 save_checkpoint from /home/ml/proj/ckpt.py:88\n"
    + "#3 train from /home/ml/proj/train.py:140\n"
    + "#4 <module> from /home/ml/proj/train.py:201\n"
    + "\n"
    + _head(1, 5)
    + "Stack trace of the failed collective: \n"
    + f"#0 all_reduce from {_SITE}/distributed_c10d.py:2806\n"
    + f"#1 wrapper from {_SITE}/c10d_logger.py:83\n"
    + "#2 reduce_loss from /home/ml/proj/train.py:77\n"
    + "#3 train from /home/ml/proj/train.py:133\n"
    + "#4 <module> from /home/ml/proj/train.py:201\n"
    + "\n"
    + "[rank0]:[E1206 04:12:05.245921552 ProcessGroupNCCL.cpp:2636] [PG ID 0 PG GUID "
    "0(default_pg) Rank 0] First PG on this rank to signal dumping.\n"
)


def test_the_stack_is_read_outermost_first_and_ends_at_the_first_other_line() -> None:
    traces = of_type(parse_stream(TorchrunParser(), _TWO_RANKS), CollectiveTrace)
    assert [(t.rank, t.cite.line, len(t.frames)) for t in traces] == [(0, 3, 5), (1, 10, 5)]
    assert traces[0].frames[0] == ("/home/ml/proj/train.py", 201, "<module>")
    assert traces[0].frames[-1] == (f"{_SITE}/distributed_c10d.py", 4551, "barrier")
    assert [issued_at(t.frames) for t in traces] == [
        ("/home/ml/proj/ckpt.py", 88, "save_checkpoint"),
        ("/home/ml/proj/train.py", 77, "reduce_loss"),
    ]


def test_the_recorder_switched_off_prints_no_stack() -> None:
    text = (
        _head(0, 5) + "Stack trace of the failed collective not found, potentially because "
        "FlightRecorder is disabled. You can enable it by setting TORCH_NCCL_TRACE_BUFFER_SIZE "
        "to a non-zero value.\n#0 not a frame of it\n"
    )
    assert of_type(parse_stream(TorchrunParser(), text), CollectiveTrace) == []


def test_a_collective_issued_inside_torch_names_the_jobs_innermost_frame() -> None:
    text = (
        _head(2, 5) + "Stack trace of the failed collective: \n"
        "#0 backward from /usr/lib/python3/dist-packages/torch/autograd/__init__.py:347\n"
        "#1 backward from /usr/lib/python3/dist-packages/torch/_tensor.py:626\n"
        "#2 step from /srv/job/loop.py:52\n"
        "#3 <module> from /srv/job/loop.py:90\n"
    )
    (trace,) = of_type(parse_stream(TorchrunParser(), text), CollectiveTrace)
    assert issued_at(trace.frames) == ("/srv/job/loop.py", 52, "step")


def test_the_real_timeout_names_the_line_that_issued_the_collective() -> None:
    report = diagnose_paths([str(CAPTURE / "eager")])
    top = report.findings[0]
    assert top.id == "app.hang"
    assert "; rank 0 issued it at gpu/watchdog.py:31 in <module>." in top.summary
    assert any(c.line == 4 and c.source.endswith("eager/console.log") for c in top.evidence)


def test_ranks_that_issued_their_collectives_from_different_code_are_told(
    tmp_path: Path,
) -> None:
    log = tmp_path / "train.log"
    log.write_text(_TWO_RANKS)
    report = diagnose_paths([str(log)])
    top = report.findings[0]
    # a barrier on rank 0 and an all-reduce on rank 1 under one SeqNum: a mismatch, and the
    # hang it explains; both name where each rank asked for its collective
    assert top.id == "app.collective_mismatch"
    sites = (
        "the ranks issued their timed-out collectives from different code (rank 0 at "
        "proj/ckpt.py:88 in save_checkpoint, rank 1 at proj/train.py:77 in reduce_loss)"
    )
    assert sites in top.summary
    assert [c.line for c in top.evidence] == [1, 2, 3, 10]
    ((_, kids),) = report.folded
    assert [k.id for k in kids] == ["app.hang"]
    assert sites in kids[0].summary


def test_without_the_stack_the_summary_names_no_call_site(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(
        _timeout(0, "ALLREDUCE", 41)
        + _timeout(1, "ALLREDUCE", 41)
        + _head(0, 5)
        + "Stack trace of the failed collective not found, potentially because "
        "FlightRecorder is disabled. You can enable it by setting TORCH_NCCL_TRACE_BUFFER_SIZE "
        "to a non-zero value.\n"
    )
    top = diagnose_paths([str(log)]).findings[0]
    assert top.id == "app.hang"
    assert "issued" not in top.summary


def _frames(*frames: tuple[str, str, int]) -> list[dict[str, object]]:
    """A dump's ``frames``: innermost first, ``{name, filename, line}`` each."""
    return [{"name": n, "filename": f, "line": line} for n, f, line in frames]


def _dumps(tmp_path: Path) -> Path:
    """Two ranks' JSON dumps: seq 1 completed on both; under seq 2 rank 0 waits in a barrier
    issued from checkpoint code, rank 1 in an all-reduce issued from its training step."""
    done = [("0", 1, "all_reduce", "completed")]
    stacks = {
        0: _frames(
            ("barrier", f"{_SITE}/distributed_c10d.py", 4551),
            ("save_checkpoint", "/home/ml/proj/ckpt.py", 88),
            ("<module>", "/home/ml/proj/train.py", 201),
        ),
        1: _frames(
            ("all_reduce", f"{_SITE}/distributed_c10d.py", 2806),
            ("reduce_loss", "/home/ml/proj/train.py", 77),
            ("<module>", "/home/ml/proj/train.py", 201),
        ),
    }
    for rank, op in ((0, "barrier"), (1, "all_reduce")):
        dump = dump_of(rank, {"0": ("default_pg", [0, 1])}, [*done, ("0", 2, op, "scheduled")])
        for entry in dump["entries"]:  # the completed one keeps a stack too: never read
            entry["frames"] = stacks[rank]
        (tmp_path / f"nccl_trace_rank_{rank}.json").write_text(dumps(dump))
    return tmp_path


def test_a_dump_keeps_the_stack_of_what_did_not_complete_only(tmp_path: Path) -> None:
    facts = facts_of(read_paths([str(_dumps(tmp_path) / "nccl_trace_rank_0.json")]))
    entries = facts.of(FlightEntry)
    assert [(e.seq, e.state, len(e.frames)) for e in entries] == [
        (1, "completed", 0),
        (2, "scheduled", 3),
    ]
    assert issued_at(entries[1].frames) == ("/home/ml/proj/ckpt.py", 88, "save_checkpoint")


def test_dumps_that_disagree_name_where_each_rank_issued_its_collective(tmp_path: Path) -> None:
    top = diagnose_paths([str(_dumps(tmp_path))]).findings[0]
    assert top.id == "app.collective_mismatch"
    assert "rank(s) 0 ran barrier seq 2" in top.summary
    assert ", issued at proj/ckpt.py:88 in save_checkpoint;" in top.summary
    assert ", issued at proj/train.py:77 in reduce_loss." in top.summary


def test_without_the_printed_stack_the_real_dump_names_the_line(tmp_path: Path) -> None:
    lazy = CAPTURE / "lazy"
    kept = [
        line
        for line in (lazy / "console.log").read_text().splitlines(keepends=True)
        if "Stack trace of the failed collective" not in line and not line.startswith("#")
    ]
    (tmp_path / "console.log").write_text("".join(kept))
    (tmp_path / "fr_rank0").write_bytes((lazy / "fr_rank0").read_bytes())
    top = diagnose_paths([str(tmp_path)]).findings[0]
    assert top.id == "app.hang"
    assert "; rank 0 issued it at gpu/watchdog.py:31 in <module>." in top.summary
    assert any(c.source.endswith("fr_rank0") and c.line == 2 for c in top.evidence)


def test_two_groups_timing_out_on_one_rank_are_not_two_places(tmp_path: Path) -> None:
    head = _head(0, 5) + "Stack trace of the failed collective: \n"
    log = tmp_path / "train.log"
    log.write_text(
        _timeout(0, "ALLREDUCE", 41)
        + head
        + f"#0 all_reduce from {_SITE}/distributed_c10d.py:2806\n"
        + "#1 step from /home/ml/proj/train.py:77\n"
        + "\n"
        + head
        + f"#0 all_gather from {_SITE}/distributed_c10d.py:3701\n"
        + "#1 gather_metrics from /home/ml/proj/train.py:95\n"
    )
    top = diagnose_paths([str(log)]).findings[0]
    assert top.id == "app.hang"
    assert "; rank 0 issued it at proj/train.py:77 in step" in top.summary
    assert "different code" not in top.summary


REAL = Path(__file__).resolve().parents[1] / "fixtures" / "captured" / "fr-stack-h100"


def test_the_real_stack_names_the_helper_that_issued_the_collective() -> None:
    (trace,) = of_type(
        parse_stream(TorchrunParser(), (REAL / "plain.log").read_text()), CollectiveTrace
    )
    assert [f[2] for f in trace.frames] == [
        "<module>",
        "train_step",
        "reduce_loss",
        "wrapper",
        "all_reduce",
    ]
    top = diagnose_paths([str(REAL / "plain.log")]).findings[0]
    assert top.id == "app.hang"
    assert "; rank 0 issued it at gpu/ddp_watchdog.py:42 in reduce_loss" in top.summary


def test_the_real_timeout_without_the_recorder_names_no_call_site() -> None:
    top = diagnose_paths([str(REAL / "no_recorder.log")]).findings[0]
    assert top.id == "app.hang"
    assert "ALLREDUCE SeqNum=5" in top.summary
    assert "issued" not in top.summary
