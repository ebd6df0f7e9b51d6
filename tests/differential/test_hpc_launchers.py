"""What Slurm and Open MPI say about a job's processes, read as their sources print it.

``srun`` and ``slurmstepd`` (SchedMD/slurm), ``mpirun`` (Open MPI's ORTE and PRRTE) print
why a job's processes ended: a signal, the memory cgroup's OOM killer, the scheduler's time
limit or preemption, or notices of MPI's own transports that change nothing for NCCL. The
catalogue rows ``slurm.*`` and ``openmpi.*`` hold their messages; every case runs the whole
pipeline on a job's output.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.report import Report
from tests.differential.test_runs_anyway import MPI_LINES
from tests.helpers import diagnose_text

SRUN = "+ srun --nodes=2 --ntasks-per-node=8 --gpus-per-node=8 python -u train.py\n"
STEPS = "[rank0]: epoch 2 step 4100 loss 2.0113\n[rank0]: epoch 2 step 4200 loss 1.9870\n"


def _report(tmp_path: Path, tail: str, head: str = SRUN + STEPS) -> Report:
    return diagnose_text(tmp_path, head + tail)


def test_a_time_limit_reads_as_a_job_that_stopped_making_progress(tmp_path: Path) -> None:
    report = _report(
        tmp_path,
        "slurmstepd: error: *** JOB 998877 ON gpu-a-12 CANCELLED AT 2024-05-02T10:11:12 DUE TO "
        "TIME LIMIT ***\n"
        "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n",
    )
    assert report.hypotheses[0].symptom == (
        "the scheduler ended the job at its time limit, with no error of its own"
    )
    assert [h.id for h in report.hypotheses[:2]] == ["app.hang", "nccl.p2p"]
    assert "slurm.stepd.cancelled_time_limit" in report.hypotheses[0].for_[0]
    assert not any(f.severity.value == "critical" for f in report.findings)


def test_a_preempted_job_is_told_apart_from_a_failure(tmp_path: Path) -> None:
    report = _report(
        tmp_path,
        "slurmstepd: error: *** STEP 88123.0 ON gpu-a-12 CANCELLED AT 2024-06-11T03:00:01 DUE "
        "TO PREEMPTION ***\n"
        "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"
        "srun: error: gpu-a-12: tasks 0-7: Terminated\n",
    )
    assert report.hypotheses == ()
    assert report.findings == ()
    assert [n.signature for n in report.notices] == ["slurm.stepd.cancelled_preemption"]


def test_a_job_cancelled_by_scancel_is_a_notice_and_no_failure(tmp_path: Path) -> None:
    report = _report(
        tmp_path,
        "slurmstepd: error: *** JOB 4417023 ON gpu-r07 CANCELLED AT 2024-06-18T15:44:09 ***\n"
        "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"
        "srun: error: gpu-r07: task 0: Exited with exit code 1\n",
    )
    assert "slurm.stepd.cancelled" in [n.signature for n in report.notices]
    assert not any(f.severity.value == "critical" for f in report.findings)


def test_a_node_failure_points_at_the_node_not_the_network(tmp_path: Path) -> None:
    report = _report(
        tmp_path,
        "srun: error: Node failure on gpu-a-13\n"
        "slurmstepd: error: *** STEP 77.0 ON gpu-a-12 CANCELLED AT 2024-06-11T03:00:01 DUE TO "
        "NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***\n",
    )
    assert report.hypotheses[0].symptom == (
        "the scheduler or the launcher lost a node of the job (it crashed, hung or left the "
        "network)"
    )
    # a GPU fault first (Llama 3's interruptions: GPU 58.7%, host 2.9%), then the host
    assert report.hypotheses[0].id == "gpu.xid"
    assert {"gpu.ecc", "gpu.lost"} <= {h.id for h in report.hypotheses[:4]}


def test_openib_notices_above_a_finished_run_open_no_differential(tmp_path: Path) -> None:
    report = _report(
        tmp_path,
        "[1,0]<stdout>:Epoch 10/10 loss 0.41\n[1,0]<stdout>:Training finished.\n",
        head="$ horovodrun -np 8 -H localhost:8 python train.py\n"
        "WARNING: There was an error initializing an OpenFabrics device.\n\n"
        "  Local host:   gpu01\n  Local device: mlx5_0\n"
        "By default, for Open MPI 4.0 and later, infiniband ports on a device\n"
        "are not used by default.  The intent is to use UCX for these devices.\n",
    )
    assert report.hypotheses == ()
    assert [n.signature for n in report.notices] == ["openmpi.btl_openib.device_init_error"]


_BORDER = "-" * 74 + "\n"
#: ORTE's mpirun (Open MPI <= 4.1) prints the sentence whole; PRRTE's prterun (Open MPI 5)
#: breaks it before 'signal' (help-prun.txt, proc-aborted-strsignal)
_SIGNAL_ENDS = {
    "orte": "Primary job  terminated normally, but 1 process returned\n"
    "a non-zero exit code. Per user-direction, the job has been aborted.\n"
    "mpirun noticed that process rank 5 with PID 0 on node gpu02 exited on signal 7 "
    "(Bus error).\n",
    "prrte": _BORDER + "prterun noticed that process rank 5 with PID 0 on node gpu02 exited on\n"
    "signal 7 (Bus error).\n" + _BORDER,
}


@pytest.mark.parametrize("launcher", sorted(_SIGNAL_ENDS))
def test_mpirun_names_the_rank_a_signal_ended_and_its_class(tmp_path: Path, launcher: str) -> None:
    report = _report(
        tmp_path,
        _SIGNAL_ENDS[launcher],
        head="$ mpirun -np 8 python train.py\n[1,0]<stdout>:step 300 loss 3.1\n",
    )
    assert report.first_failure is not None
    assert report.first_failure.rank == 5
    # a rank's SIGBUS with no error of its own: NCCL's /dev/shm segment first
    assert report.findings[0].id == "nccl.shm"
    assert report.hypotheses[0].symptom.startswith("a rank died of a bus error (SIGBUS)")


def test_prrte_exit_with_no_signal_line_stays_a_plain_exit(tmp_path: Path) -> None:
    report = _report(
        tmp_path,
        "prterun noticed that process rank 5 with PID 0 on node gpu02 exited on\n" + _BORDER,
        head="$ mpirun -np 8 python train.py\n[1,0]<stdout>:step 300 loss 3.1\n",
    )
    assert report.first_failure is not None
    assert report.first_failure.rank == 5
    # no signal read: no class of its own, but never an empty report
    assert "nccl.shm" not in [f.id for f in report.findings]
    assert report.hypotheses[0].id == "launch.rank_crash"
    assert "openmpi.run.proc_aborted" in report.hypotheses[0].for_[0]


def test_vader_cma_refusals_are_notices_not_failures(tmp_path: Path) -> None:
    report = _report(
        tmp_path,
        MPI_LINES + "[1,0]<stdout>:Epoch 10/10 loss 0.41\n",
        head="$ mpirun -np 8 -bind-to none -x NCCL_DEBUG=INFO python train.py\n",
    )
    assert report.findings == ()
    assert report.hypotheses == ()
    assert [n.signature for n in report.notices] == ["openmpi.btl_vader.cma_read_failed"]


def test_vader_cma_refusals_hide_no_failure_after_them(tmp_path: Path) -> None:
    report = _report(
        tmp_path,
        MPI_LINES + "[1,3]<stderr>:RuntimeError: CUDA error: an illegal memory access was "
        "encountered\n",
        head="$ mpirun -np 8 python train.py\n",
    )
    assert report.findings[0].id == "cuda.illegal_access"
    assert [n.signature for n in report.notices] == ["openmpi.btl_vader.cma_read_failed"]
