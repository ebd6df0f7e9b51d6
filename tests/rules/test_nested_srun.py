"""srun starting several tasks per node, each running torchrun with its own workers: a failure
beside it (a closed rendezvous) makes it the cause; without one it is a warning; an srun line's
own --ntasks-per-node=1 is one launcher per node, no nesting."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import critical_ids, diagnose_text

_SCRIPT = (
    "#!/bin/bash\n"
    "#SBATCH -N 2\n"
    "#SBATCH --ntasks-per-node=8\n"
    "#SBATCH --gres=gpu:8\n"
    "export MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)\n"
    "srun {own}torchrun --nnodes 2 --nproc_per_node 8 --rdzv_backend c10d "
    "--rdzv_endpoint $MASTER_ADDR:29511 train.py\n"
)
_FAILED = (
    "torch.distributed.elastic.rendezvous.api.RendezvousClosedError\n"
    "[rank3]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 3] Heartbeat monitor timed out! Process "
    "will be terminated after dumping debug info. workMetaList_.size()=0\n"
)


def _nested(tmp_path: Path, text: str) -> str | None:
    report = diagnose_text(tmp_path, text)
    found = [f for f in report.findings if f.id == "launch.duplicate_launch"]
    return found[0].severity.value if found else None


def test_a_nested_srun_launch_beside_a_failure_is_the_cause(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _SCRIPT.format(own="") + _FAILED)
    assert critical_ids(report)[0] == "launch.duplicate_launch"


def test_a_nested_srun_launch_alone_is_a_warning(tmp_path: Path) -> None:
    assert _nested(tmp_path, _SCRIPT.format(own="")) == "warning"


def test_one_task_per_node_on_the_srun_line_is_no_nesting(tmp_path: Path) -> None:
    text = _SCRIPT.format(own="--ntasks-per-node=1 ") + _FAILED
    assert _nested(tmp_path, text) is None


def test_a_nested_srun_launch_said_to_hang_is_the_cause(tmp_path: Path) -> None:
    """The sets of workers wait for a world none of them completes: the hang is the nesting's."""
    said = "The banner is printed 16 times and then it hangs in the rendezvous.\n"
    report = diagnose_text(tmp_path, _SCRIPT.format(own="") + said)
    assert critical_ids(report)[0] == "launch.duplicate_launch"
    # running fine, said in words, is no failure
    fine = "The banner is printed 16 times and training runs.\n"
    assert _nested(tmp_path, _SCRIPT.format(own="") + fine) == "warning"
