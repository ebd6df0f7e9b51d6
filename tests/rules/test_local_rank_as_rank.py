"""launch.duplicate_launch: the global rank taken from the local rank on a multi-node job, in
code read from the environment or in the reporter's words; silent on one node, and where the
rank is the launcher's own RANK."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import critical_ids, diagnose_text

_TWO_NODES = (
    "Two desktops, each with 2x RTX 3080; on each I run torchrun --nnodes=2 --node_rank=$N "
    "--nproc_per_node=2 --master_addr=10.0.0.5 --master_port=29400 train.py and it hangs "
    "after init.\n"
)


@pytest.mark.parametrize(
    "said",
    [
        "dist.init_process_group('nccl', rank=int(os.environ['LOCAL_RANK']), world_size=4)\n",
        (
            "I read LOCAL_RANK from the environment, call torch.cuda.set_device with it, and then "
            "call init_process_group with backend nccl, rank equal to that local rank and "
            "world_size 4.\n"
        ),
        # an mp.spawn worker's index on its node as the rank
        "dist.init_process_group('nccl', world_size=4, rank=local_gpu_index)\n",
    ],
)
def test_the_local_rank_as_the_global_rank_on_two_nodes(tmp_path: Path, said: str) -> None:
    report = diagnose_text(tmp_path, _TWO_NODES + said)
    assert critical_ids(report)[:1] == ["launch.duplicate_launch"]
    assert "on a 2-node job" in report.findings[0].summary


@pytest.mark.parametrize(
    "said",
    [
        "dist.init_process_group('nccl', rank=int(os.environ['RANK']), world_size=4)\n",
        "I call init_process_group with rank equal to the global RANK the launcher sets.\n",
        # the GPU index only picks the device
        "torch.cuda.set_device(local_gpu_index); dist.init_process_group('nccl', rank=rank)\n",
    ],
)
def test_the_launchers_own_rank_is_no_duplicate(tmp_path: Path, said: str) -> None:
    report = diagnose_text(tmp_path, _TWO_NODES + said)
    assert "launch.duplicate_launch" not in [f.id for f in report.findings]


def test_the_local_rank_as_the_rank_on_one_node_is_fine(tmp_path: Path) -> None:
    one = "torchrun --standalone --nproc_per_node=2 train.py hangs after init.\n"
    said = "dist.init_process_group('nccl', rank=int(os.environ['LOCAL_RANK']), world_size=2)\n"
    report = diagnose_text(tmp_path, one + said)
    assert "launch.duplicate_launch" not in [f.id for f in report.findings]
