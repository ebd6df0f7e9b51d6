"""How many ranks share a node, from the launch where NCCL's own layout lines are absent.

torchrun's --nproc-per-node (the deepspeed launcher's --num_gpus, srun's --ntasks-per-node,
mpirun's -npernode or --map-by ppr:N:node) starts that many workers on each node. One worker a
node gives NCCL no peer on its node: neither its shared-memory nor its peer-to-peer transport
is set up, so neither can be why it failed. Every diagnosis case runs the whole pipeline.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.span import launched_per_node
from nccl_doctor.pipeline import facts_of
from tests.helpers import diagnose_text

_FAILED = (
    "I am running two nodes, each in a Docker container (nvcr.io/nvidia/pytorch:22.04-py3).\n"
    "```\n"
    "RuntimeError: NCCL error in: /opt/pytorch/pytorch/torch/csrc/distributed/c10d/"
    "ProcessGroupNCCL.cpp:1229, unhandled system error, NCCL version 2.12.10\n"
    "ncclSystemError: System call (socket, malloc, munmap, etc) failed.\n"
    "```\n"
    "torchrun --nnodes=2 --nproc_per_node={n} --rdzv_backend=c10d --rdzv_endpoint=node1 "
    "train.py\n"
)


def _hypotheses(tmp_path: Path, text: str) -> list[str]:
    return [h.id for h in diagnose_text(tmp_path, text).hypotheses]


def test_one_worker_a_node_leaves_shared_memory_and_p2p_out(tmp_path: Path) -> None:
    one = _hypotheses(tmp_path, _FAILED.format(n=1))
    eight = _hypotheses(tmp_path, _FAILED.format(n=8))
    assert eight[0] == "nccl.shm"
    assert one[0] == "net.socket_interface"
    assert one.index("nccl.shm") > eight.index("nccl.shm")
    assert "nccl.p2p" not in one


@pytest.mark.parametrize(
    ("launch", "per_node"),
    [
        ("torchrun --nnodes 2 --nproc-per-node=4 train.py", 4),
        ("deepspeed --num_gpus=8 train.py", 8),
        ("srun --ntasks-per-node=2 python train.py", 2),
        ("mpirun -np 16 -npernode 8 ./all_reduce_perf", 8),
        ("mpirun --map-by ppr:4:node python train.py", 4),
        # a variable or a word is no count; two launches that disagree say nothing
        ("torchrun --nproc_per_node=gpu train.py", None),
        ("torchrun --nproc_per_node=$NGPUS train.py", None),
        ("torchrun --nproc_per_node=2 a.py\ntorchrun --nproc_per_node=4 b.py", None),
    ],
)
def test_the_workers_a_launch_starts_on_each_node(
    tmp_path: Path, launch: str, per_node: int | None
) -> None:
    path = tmp_path / "launch.txt"
    path.write_text(launch + "\n")
    assert launched_per_node(facts_of(read_paths([str(path)]))) == per_node
