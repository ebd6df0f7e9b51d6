"""Signs read by the launch rules (``rules/launch``) and by who-started-the-ranks."""

from __future__ import annotations

from nccl_doctor.facts.signs import sign

# -- which launcher started the ranks ------------------------------------------------------
ELASTIC_LOGGER = sign(
    "launch.elastic_logger",
    r"torch/distributed/(?:run|elastic/)\S{0,200}?\.py:\d{1,6}\]",
    "a log line of torchrun's elastic agent (its logger names torch/distributed/run.py ...)",
)
SLURM_LINE = sign(
    "launch.slurm_line",
    r"(?:^|\s)srun: |slurmstepd",
    "a line Slurm's srun or slurmstepd printed: srun started the ranks",
)
TORCHRUN_NAMED = sign(
    "launch.torchrun_named",
    r"\btorchrun\b|torch\.distributed\.(?:launch|run)\b",
    "torchrun (or torch.distributed.launch/run) is named: a command line or its usage",
)
DEEPSPEED_COMMAND = sign(
    "launch.deepspeed_command",
    r"\bdeepspeed\b.{0,40}--(?:num_gpus|hostfile|include)",
    "a deepspeed launcher command line (with its --num_gpus/--hostfile/--include)",
)
DEEPSPEED_EXIT = sign(
    "launch.deepspeed_exit",
    r"exits with return code\s{0,20}=\s{0,20}(?P<code>-?\d{1,6})",
    "DeepSpeed's launcher reporting a worker's exit code (its wrapped line may hold only this)",
)
LOCAL_RANK_ARG = sign(
    "launch.local_rank_arg",
    r"--local[_-]rank[= '\",]{1,10}(?P<local>\d{1,6})",
    "a worker's --local_rank argument on a launcher's command line",
)
