"""The launch and app rules read their words through signs: what each sign decides, end to end.

Each test runs the whole pipeline on a small piece of realistic evidence and
checks the value a sign's captures (or its line intersections) put in the
finding: the store port from each way a launch names it, NCCL's own
"Address already in use" left to NCCL's rules, a fingerprint's fields, a
collective right under a rank check (and not one further down), the
store-barrier progress line, a multi-node launch that places its nodes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.messages import (
    fingerprint_fields,
    launch_phase,
    peer_gone,
    timed_out,
    torchrun_log_file,
    watchdog_teardown,
)
from nccl_doctor.facts.run import PythonTraceback
from nccl_doctor.facts.store import Facts
from nccl_doctor.facts.text import TextLine
from nccl_doctor.findings import Finding
from nccl_doctor.pipeline import diagnose_paths
from nccl_doctor.signs.launch import ADDRESS_IN_USE


def _findings(tmp_path: Path, text: str, rule_id: str) -> list[Finding]:
    path = tmp_path / "evidence.txt"
    path.write_text(text, encoding="utf-8")
    report = diagnose_paths([str(path)])
    return [f for f in report.findings if f.id == rule_id]


@pytest.mark.parametrize(
    ("launch", "port"),
    [
        ("torchrun --master_port=29511 train.py", 29511),
        ("torchrun --rdzv-endpoint node1:29512 train.py", 29512),
        ("python train.py --init_method=tcp://10.0.0.1:29513", 29513),
        ("MASTER_PORT=29514 torchrun train.py", 29514),
        ("accelerate launch --main_process_port 29515 train.py", 29515),
    ],
)
def test_the_store_port_is_read_from_each_way_a_launch_names_it(
    tmp_path: Path, launch: str, port: int
) -> None:
    found = _findings(
        tmp_path, f"$ {launch}\nRuntimeError: Address already in use\n", "launch.port_in_use"
    )
    assert [f.summary for f in found] == [
        f"The c10d store could not bind port {port}: Address already in use (errno 98)."
    ]


def test_nccls_own_address_in_use_is_not_the_stores() -> None:
    lines = [
        "node1:1234:1234 [0] misc/socket.cc:567 NCCL WARN Call to bind failed : EADDRINUSE",
        "node1:1234:1234 [0] c10d/socket.cpp:567 bind failed : Address already in use",
    ]
    facts = Facts(TextLine(cite=Cite("log", i, t), text=t) for i, t in enumerate(lines, 1))
    assert [h.cite.line for h in facts.seen(ADDRESS_IN_USE)] == [2]


def test_a_fingerprint_mismatch_names_each_ranks_collective(tmp_path: Path) -> None:
    text = (
        "RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running "
        "collective: CollectiveFingerPrint(SequenceNumber=12, OpType=ALLREDUCE, "
        "TensorShape=[1024], TensorDtypes=Float, TensorDeviceTypes=TensorOptions(dtype=float)), "
        "but Rank 1 is running collective: CollectiveFingerPrint(SequenceNumber=12, "
        "OpType=BROADCAST, TensorShape=[4], TensorDtypes=Long).\n"
        "Rank 1 is running inconsistent collective: CollectiveFingerPrint(OpType=BROADCAST, "
        "TensorShape=[4], TensorDtypes=Long, TensorDeviceTypes=TensorOptions(dtype=long))\n"
    )
    found = _findings(tmp_path, text, "app.collective_mismatch")
    assert [f.summary for f in found] == [
        (
            "Ranks issued different collectives (PyTorch's debug wrapper compared them): rank 0 "
            "ran SequenceNumber=12, OpType=ALLREDUCE, TensorShape=[1024], TensorDtypes=Float; "
            "rank 1 ran OpType=BROADCAST, TensorShape=[4], TensorDtypes=Long."
        )
    ]


@pytest.mark.parametrize(("between", "fires"), [(1, True), (2, True), (3, False)])
def test_a_collective_counts_as_guarded_only_right_under_the_rank_check(
    tmp_path: Path, between: int, fires: bool
) -> None:
    body = [f"    step_{i}()" for i in range(between - 1)]
    code = ["```", "if rank == 0:", *body, "    dist.barrier()", "```"]
    text = "\n".join([*code, "The training hangs forever after the first epoch.", ""])
    found = _findings(tmp_path, text, "app.hang")
    if not fires:
        assert found == []
        return
    assert [f.summary for f in found] == [
        (
            "The job hangs and the code guards a collective by the rank ('if rank == 0:' then "
            "'dist.barrier()'): if the other ranks are elsewhere (or have exited), this rank "
            "waits in it forever."
        )
    ]


def test_a_hang_at_initialisation_is_not_a_guarded_collective(tmp_path: Path) -> None:
    text = "```\nif rank == 0:\n    dist.barrier()\n```\nThe job hangs at init_process_group.\n"
    assert _findings(tmp_path, text, "app.hang") == []
    found = _findings(tmp_path, text, "launch.rendezvous")
    assert [f.confidence.value for f in found] == ["low"]


_BARRIER_SUMMARY = (
    "Rendezvous did not complete after 1800 s: 2/4 ranks joined (store key "
    "store_based_barrier_key:1)"
)


@pytest.mark.parametrize(
    ("verb", "confidence"), [("Waiting in", "medium"), ("Timed out in", "high")]
)
def test_the_store_barriers_progress_line_is_only_a_medium_sign(
    tmp_path: Path, verb: str, confidence: str
) -> None:
    text = (
        f"[W socket.cpp:436] [c10d] {verb} store based barrier on rank: 0, for key: "
        "store_based_barrier_key:1 (world_size=4, worker_count=2, timeout=0:30:00)\n"
    )
    found = _findings(tmp_path, text, "launch.rendezvous")
    assert [(f.confidence.value, f.summary.split(";")[0]) for f in found] == [
        (confidence, _BARRIER_SUMMARY)
    ]


@pytest.mark.parametrize(
    ("flags", "fires"),
    [("--nnodes=2", True), ("--nnodes=2 --node_rank=1", False), ("--nnodes=1:2", False)],
)
def test_a_multi_node_launch_must_place_its_nodes(tmp_path: Path, flags: str, fires: bool) -> None:
    text = f"python -m torch.distributed.launch --nproc_per_node=8 {flags} train.py\n"
    found = _findings(tmp_path, text, "launch.rendezvous")
    assert [f.summary.split(":")[0] for f in found] == (
        ["The launch asks for 2 nodes but gives no --node_rank (and no c10d rendezvous endpoint)"]
        if fires
        else []
    )


@pytest.mark.parametrize(
    ("before", "env", "command", "summary"),
    [
        # the launcher reads NODE_RANK: RANK=1 leaves the second node at node rank 0
        (
            "",
            "NNODES=2 RANK=1",
            "llamafactory-cli train examples/train_lora/llama3_lora_sft.yaml",
            (
                "The launch sets NNODES=2 but no NODE_RANK (RANK=1 is set, but the launcher takes "
                "the node rank from NODE_RANK): every node starts as node rank 0"
            ),
        ),
        (
            "",
            "NNODES=2",
            "swift sft --model Qwen/Qwen2-7B",
            "The launch sets NNODES=2 but no NODE_RANK: every node starts",
        ),
        ("", "NNODES=2 NODE_RANK=1", "llamafactory-cli train x.yaml", None),
        ("", "NNODES=1 RANK=0", "llamafactory-cli train x.yaml", None),
        # exported before the command: the launcher sees it
        ("export NODE_RANK=1\n", "NNODES=2", "llamafactory-cli train x.yaml", None),
        # a script of the user's own may compute the node rank itself
        ("", "NNODES=2 RANK=1", "bash run_multinode.sh", None),
    ],
)
def test_a_multi_node_launch_by_environment_must_give_the_node_rank(
    tmp_path: Path, before: str, env: str, command: str, summary: str | None
) -> None:
    """llamafactory-cli and ms-swift build torchrun's flags from NNODES and NODE_RANK."""
    text = (
        f"{before}FORCE_TORCHRUN=1 {env} MASTER_ADDR=10.0.0.1 MASTER_PORT=29500 "
        f"NPROC_PER_NODE=8 {command}\n"
    )
    found = _findings(tmp_path, text, "launch.rendezvous")
    assert [f.summary.startswith(summary) for f in found] == ([] if summary is None else [True])


def test_unused_parameters_are_named_per_rank(tmp_path: Path) -> None:
    text = (
        "RuntimeError: Expected to have finished reduction in the prior iteration before "
        "starting a new one.\n"
        "Parameters which did not receive grad for rank 3: head.weight, head.bias\n"
        "Parameter indices which did not receive grad for rank 3: 10 11\n"
    )
    found = _findings(tmp_path, text, "app.unused_params")
    assert [(f.subjects.ranks, f.summary.split("loss")[1]) for f in found] == [
        ((3,), "; on rank 3 no gradient reached head.weight, head.bias (parameter indices 10 11).")
    ]


def _traceback(message: str, *more: str) -> PythonTraceback:
    return PythonTraceback(
        cite=Cite("log", 1, "Traceback"), exc_type="RuntimeError", exc_name="RuntimeError",
        message=message,
        message_lines=more,
    )  # fmt: skip


def test_a_rank_error_is_classified_by_what_it_says() -> None:
    assert launch_phase("torch.distributed.DistStoreError: Timed out after 901 seconds")
    assert not launch_phase("CUDA error: an illegal memory access was encountered")
    assert peer_gone("Connection reset by peer")
    assert not peer_gone("Connection refused")
    assert watchdog_teardown("Timed out waiting 1800000ms for recv operation to complete")
    assert not watchdog_teardown("NCCL error: unhandled system error")
    assert timed_out(_traceback("NCCL communicator was aborted", "Watchdog timed out"))
    assert not timed_out(_traceback("CUDA out of memory"))
    assert fingerprint_fields("OpType=BROADCAST, TensorShape=[4, 2], TensorDtypes=Long") == (
        ("OpType", "BROADCAST"),
        ("TensorShape", "[4, 2]"),
        ("TensorDtypes", "Long"),
    )
    assert torchrun_log_file("/runs/job/attempt_0/3/stderr.log")
    assert not torchrun_log_file("/runs/job/rank3/stderr.log")


_FOOTER = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : {bw} \n#\n"


@pytest.mark.parametrize(("footers", "fires"), [(("3.94145", "3.94156"), True), (("7.5",), False)])
def test_nccl_tests_printing_a_result_per_process_ran_each_alone(
    tmp_path: Path, footers: tuple[str, ...], fires: bool
) -> None:
    """Built without MPI, each of mpirun's processes runs the test alone and prints a footer."""
    log = tmp_path / "run.txt"
    log.write_text(
        "$ mpirun -H 10.0.0.1,10.0.0.2 -np 2 ./all_reduce_perf -b 8 -e 128M -f 2 -g 2\n"
        + "".join(_FOOTER.format(bw=bw) for bw in footers),
        encoding="utf-8",
    )
    found = {f.id: f for f in diagnose_paths([str(log)]).findings}
    assert ("launch.duplicate_launch" in found) is fires
    if fires:
        dup = found["launch.duplicate_launch"]
        assert dup.summary.startswith("One launch of 2 processes of all_reduce_perf printed 2")
        assert [c.line for c in dup.evidence] == [1, 3, 6]


@pytest.mark.parametrize(
    ("ranks", "fires"),
    [
        ((0, 0, 1, 1, 2, 2, 3, 3), True),  # two nodes both numbered 0..3
        ((0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7), False),  # a restart: all again
        ((0, 1, 2, 3), False),  # one node's log of a two-node job
        ((0, 1, 2, 3, 0, 1, 2, 3), False),  # one node's log, the job requeued: all of it again
        ((1, 0, 3, 2, 0, 1, 2, 3, 2, 0), False),  # its order varies, the last attempt cut short
    ],
)
def test_lightning_ranks_announced_twice_and_never(
    tmp_path: Path, ranks: tuple[int, ...], fires: bool
) -> None:
    log = tmp_path / "slurm.out"
    log.write_text(
        "".join(f"initializing ddp: GLOBAL_RANK: {r}, MEMBER: {r + 1}/8\n" for r in ranks),
        encoding="utf-8",
    )
    found = {f.id: f for f in diagnose_paths([str(log)]).findings}
    assert ("launch.duplicate_launch" in found) is fires
    if fires:
        assert (
            "rank(s) 0, 1, 2, 3 twice and 4 rank(s) never"
            in found["launch.duplicate_launch"].summary
        )


_HEADER = (
    "# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 "
    "iters: 20 agg iters: 1 validation: 1 graph: 0\n"
    "#\n"
    "# Using devices\n"
    "#  Rank  0 Group  0 Pid  40001 on      node1 device  0 [0x07] NVIDIA A100-SXM4-80GB\n"
    "#  Rank  {second} Group  0 Pid  40002 on      node1 device  1 [0x0b] NVIDIA A100-SXM4-80GB\n"
    "#\n"
)


@pytest.mark.parametrize(("second", "fires"), [("1", False), ("0", True)])
def test_nccl_tests_whose_header_numbers_every_rank_ran_together(
    tmp_path: Path, second: str, fires: bool
) -> None:
    """A loop that ran an MPI build twice prints two footers after one command line; each
    header's Rank lines 0 and 1 show the processes formed one world. Two 'Rank 0' lines are
    the processes each alone."""
    log = tmp_path / "run.txt"
    log.write_text(
        "$ for i in 1 2; do mpirun -np 2 ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 1; done\n"
        + (_HEADER.format(second=second) + _FOOTER.format(bw="40.1")) * 2,
        encoding="utf-8",
    )
    found = {f.id for f in diagnose_paths([str(log)]).findings}
    assert ("launch.duplicate_launch" in found) is fires


def test_lightning_ranks_announced_by_two_nodes_files_are_two_launches(tmp_path: Path) -> None:
    """Each node's own Slurm file numbers its processes 0..3: one attempt each, two launches."""
    for node in ("node1", "node2"):
        (tmp_path / f"slurm-42-{node}.out").write_text(
            "".join(f"initializing ddp: GLOBAL_RANK: {r}, MEMBER: {r + 1}/8\n" for r in range(4)),
            encoding="utf-8",
        )
    found = {f.id: f for f in diagnose_paths([str(tmp_path)]).findings}
    assert "rank(s) 0, 1, 2, 3 twice" in found["launch.duplicate_launch"].summary


@pytest.mark.parametrize(
    ("lines", "fires"),
    [
        # srun -l's task prefixes: tasks 0 and 1 (two nodes) both claim ranks 1..3; the paste
        # keeps six of the world's eight announcements
        (("0: 1", "0: 3", "0: 2", "1: 2", "1: 1", "1: 3"), True),
        # one task announcing its ranks again (a restart), the paste cut short: one origin
        (("0: 1", "0: 3", "0: 2", "0: 2", "0: 1", "0: 3"), False),
        # each task its own ranks, part of the world shown: nothing claimed twice
        (("0: 1", "0: 3", "0: 2", "1: 5", "1: 4", "1: 6"), False),
    ],
)
def test_lightning_ranks_claimed_by_two_srun_tasks_in_a_partial_paste(
    tmp_path: Path, lines: tuple[str, ...], fires: bool
) -> None:
    """A rank announced by two srun tasks is two processes, however much of the log was kept."""
    log = tmp_path / "slurm.out"
    log.write_text(
        "".join(
            f"{task}: Initializing distributed: GLOBAL_RANK: {r}, MEMBER: {int(r) + 1}/8\n"
            for task, r in (line.split(": ") for line in lines)
        ),
        encoding="utf-8",
    )
    found = {f.id: f for f in diagnose_paths([str(log)]).findings}
    assert ("launch.duplicate_launch" in found) is fires
    if fires:
        assert found["launch.duplicate_launch"].summary.startswith(
            "6 processes announced ranks of a world of 8: rank(s) 1, 2, 3 twice and 5 not shown"
        )
