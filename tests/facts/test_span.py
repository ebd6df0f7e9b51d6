"""The node span has one reader (facts/span.py): the net rules, the world size and the
differential's node count all take it from there, so they cannot disagree."""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.differential.context import context_of
from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.job import world
from nccl_doctor.facts.span import launched, span_of
from nccl_doctor.facts.store import Facts
from nccl_doctor.pipeline import facts_of


def _facts(tmp_path: Path, text: str) -> Facts:
    path = tmp_path / "job.log"
    path.write_text(text, encoding="utf-8")
    return facts_of(read_paths([str(path)]))


_LAYOUT = (
    "{host}:2101:2190 [0] NCCL INFO comm 0x55d1c3a0 rank {rank} nRanks 32 nNodes {nodes} "
    "localRanks 8 localRank 0 MNNVL 0\n"
)


@pytest.mark.parametrize(
    ("text", "multi", "machine", "count", "why"),
    [
        (_LAYOUT.format(host="gpu-a", rank=0, nodes=4), True, True, 4, "NCCL reports nNodes 4"),
        (
            _LAYOUT.format(host="gpu-a", rank=0, nodes=1)
            + _LAYOUT.format(host="gpu-b", rank=8, nodes=1),
            True,
            True,
            2,
            "ranks run on 2 hosts (gpu-a, gpu-b)",
        ),
        (
            "$ torchrun --nnodes=2 --nproc-per-node=8 --node-rank=0 train.py\n",
            True,
            True,
            2,
            "launched with --nnodes 2",
        ),
        # an elastic range: several nodes may join, how many is not stated
        (
            "$ torchrun --nnodes=1:4 --nproc-per-node=8 --rdzv-backend=c10d train.py\n",
            True,
            True,
            None,
            "launched with --nnodes 4",
        ),
        (
            "$ mpirun -np 16 -H node1:8,node2:8 ./all_reduce_perf -b 8 -e 1G\n",
            True,
            True,
            2,
            "mpirun lists several hosts",
        ),
        (
            "$ torchrun --standalone --nproc-per-node=4 train.py\n",
            False,
            True,
            1,
            "launched with --standalone",
        ),
        (
            "$ torchrun --nproc-per-node=4 train.py\n",
            False,
            True,
            1,
            "launched with --nproc-per-node only (one node)",
        ),
        # the node count comes from a variable: no number, and no single node either
        (
            (
                "TRUN_ARGS+=(--nnodes=${SLURM_NNODES:-1} --node-rank=${SLURM_NODEID:-0} "
                "--nproc-per-node=gpu)\n"
            ),
            None,
            False,
            None,
            "the node count is not shown",
        ),
        (
            "Training on a single node with 8 GPUs hangs at the first allreduce.\n",
            False,
            False,
            1,
            "the report says 'single node'",
        ),
    ],
)
def test_the_span_and_its_count(
    tmp_path: Path, text: str, multi: bool | None, machine: bool, count: int | None, why: str
) -> None:
    span = span_of(_facts(tmp_path, text))
    assert (span.multi, span.machine, span.count, span.why) == (multi, machine, count, why)


@pytest.mark.parametrize(
    ("said", "multi"),
    [
        ("Two HGX H100 nodes, 8x ConnectX-7 each; single-node numbers are unchanged.", True),
        ("Our 2-node step time went from 1.41 s to 1.85 s.", True),
        ("nccl-tests across both nodes confirm it.", True),
        # one node of eight GPUs named by model: no second node
        ("A single 8x H100 SXM node; single-node runs are fine.", False),
        ("The box has 8 H100 GPUs in one server.", False),
    ],
)
def test_words_for_several_nodes_with_models_between(
    tmp_path: Path, said: str, multi: bool
) -> None:
    assert span_of(_facts(tmp_path, said + "\n")).multi is multi


def test_the_world_size_multiplies_by_the_same_node_count(tmp_path: Path) -> None:
    facts = _facts(tmp_path, "$ torchrun --nnodes 3 --nproc_per_node 8 train.py\n")
    assert launched(facts) is not None
    assert (world(facts).size, world(facts).how) == (24, "launcher")
    assert context_of(facts).nodes == 3


_TEST_HEADER = (
    "#  Rank  0 Group  0 Pid  41120 on  gpu-a-01 device  0 [0x18] NVIDIA H100 80GB HBM3\n"
    "#  Rank  1 Group  0 Pid  41121 on  gpu-a-01 device  1 [0x2a] NVIDIA H100 80GB HBM3\n"
)


@pytest.mark.parametrize(
    ("launch", "size"),
    [
        ("mpirun -np 128 -npernode 8 ./build/all_reduce_perf -b 8 -e 8G -g 1\n", 128),
        ("mpirun -np 4 ./build/all_reduce_perf -b 8 -e 8G -t 2 -g 2\n", 16),
        ("./build/all_reduce_perf -b 8 -e 8G -g 8\n", 8),
        ("mpirun --hostfile hosts ./build/all_reduce_perf -b 8 -g 1\n", 2),
    ],
)
def test_an_nccl_tests_launch_sizes_the_world_its_cut_header_does_not(
    tmp_path: Path, launch: str, size: int
) -> None:
    """The header lists one line per rank; a paste cut after two says nothing of the rest."""
    assert world(_facts(tmp_path, launch + _TEST_HEADER)).size == size


@pytest.mark.parametrize(
    "line",
    [
        "$ torchrun --nnodes=1:4 --nproc-per-node=8 train.py\n",
        "$ torchrun --nnodes=$NNODES --nproc-per-node=8 train.py\n",
    ],
)
def test_no_world_size_where_the_node_count_is_not_a_number(tmp_path: Path, line: str) -> None:
    facts = _facts(tmp_path, line)
    assert world(facts).size is None
    assert context_of(facts).nodes is None


def test_a_spawned_job_is_one_node_for_the_differential_too(tmp_path: Path) -> None:
    facts = _facts(
        tmp_path,
        "torch.multiprocessing.spawn.ProcessRaisedException: \n\n"
        "-- Process 1 terminated with the following error:\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/train.py", line 12, in run\n'
        "    dist.all_reduce(t)\n"
        "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:219, "
        "unhandled system error, NCCL version 2.14.3\n",
    )
    span = span_of(facts)
    assert (span.multi, span.count) == (False, 1)
    assert context_of(facts).nodes == 1


@pytest.mark.parametrize(
    ("said", "multi"),
    [
        ("标题：双机 16 卡训练初始化后卡住，单机 8 卡正常\n", True),
        ("两台服务器跨节点训练，NCCL 报错\n", True),
        ("k8s 上两个 pod 跨节点训练\n", True),
        ("单机 8 卡训练，第一个 allreduce 卡住\n", False),
        ("一台机器 8 张卡，显卡在跑别的任务\n", None),
    ],
)
def test_chinese_words_for_the_node_count(tmp_path: Path, said: str, multi: bool | None) -> None:
    span = span_of(_facts(tmp_path, said))
    assert span.multi is multi
    assert span.said is (multi is not None)
