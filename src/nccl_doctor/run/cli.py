"""The ``run`` subcommand: ``nccl-doctor run [--dir D] [--format F] -- CMD...``.

Kept beside the runner so ``cli.py`` only wires it in (``add_parser`` and
``cmd``). The exit code is the job's own, not the diagnosis's.
"""

from __future__ import annotations

import argparse
import math
import textwrap
from typing import Any

from nccl_doctor.errors import UsageError

#: Default of ``--grace`` (the runner's own default).
GRACE_S = 10.0
EPILOG = """\
Variables you set yourself (NCCL_DEBUG, TORCH_NCCL_*...) are kept. The run folder keeps
every rank's output, the environment, the command and node snapshots; `nccl-doctor
diagnose DIR` reads it again later.

examples:
  nccl-doctor run -- torchrun --nproc-per-node 8 train.py --lr 3e-4
  nccl-doctor run --dir runs/try1 -- srun -N 2 python train.py
  nccl-doctor run --format json -- python -m torch.distributed.run ... train.py
  nccl-doctor run --stall 60 --on-hang kill -- torchrun --nproc-per-node 8 train.py
  nccl-doctor run --db postgresql://doctor@db/fleet -- srun -N 8 python train.py

fleet history: every run is recorded (job: SLURM_JOB_ID etc., else the run folder's name)
with the counters that moved on the node during the job; `nccl-doctor nodes` and
`nccl-doctor history` read it. --no-record turns it off; a history that cannot be written
is a warning, never the job's failure.

pre-mortem: after --stall S seconds without output the wrapper dumps every rank's Python
stacks (py-spy, else faulthandler through a signal: the job gets a sitecustomize in front
of PYTHONPATH), asks NCCL ranks for a flight-recorder dump, runs ncclras and nvidia-smi,
writes it all to hang-<n>/ and prints where each rank is and the diagnosis - while the
job still hangs.

exit codes:
  the job's own status (0 when it succeeded; the diagnosis does not change it)
  2  could not start (no command, bad arguments; one-line error: and hint: on stderr)"""
#: The longest ``--grace`` accepted, in seconds.
MAX_GRACE_S = 3600.0
#: Default of ``--stall`` (the pre-mortem's own default, well under a 10-minute watchdog).
STALL_S = 120.0
#: The longest ``--stall`` accepted: a day.
MAX_STALL_S = 86400.0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``run`` to the subcommands; returns its parser."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "run",
        help="run a launch command (torchrun, srun, python ...) with diagnostics on",
        description=textwrap.fill(
            "Run CMD with cheap diagnostics on (NCCL warnings to files, the flight recorder, "
            "elastic error files), keep its output in a run folder and diagnose a failure. "
            "Exits with CMD's status.",
            width=88,
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--dir",
        metavar="D",
        help="run folder, new or empty: a folder that holds anything is refused "
        "(default ./nccl-doctor-runs/<timestamp>-<pid>)",
    )
    parser.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    parser.add_argument(
        "--grace",
        type=float,
        default=GRACE_S,
        metavar="S",
        help="seconds between SIGTERM and SIGKILL: for a forwarded SIGINT/SIGTERM, and for "
        "processes the job leaves running when it exits",
    )
    parser.add_argument(
        "--no-snapshot", action="store_true", help="skip the node snapshots before and after"
    )
    parser.add_argument(
        "--stall",
        type=float,
        default=STALL_S,
        metavar="S",
        help="seconds without output from the job (console, per-rank NCCL files) after which "
        "the pre-mortem captures every rank's Python stacks, the flight recorder, ncclras and "
        "nvidia-smi into hang-<n>/ and prints the diagnosis while the job still hangs; "
        f"0 turns it off (default {STALL_S:g})",
    )
    parser.add_argument(
        "--on-hang",
        choices=("wait", "kill"),
        default="wait",
        help="after a pre-mortem that shows a hang: leave the job alone (wait, the default) "
        "or end it (kill: SIGTERM, SIGKILL after --grace)",
    )
    from nccl_doctor.fleet.cli import add_record_options  # noqa: PLC0415

    add_record_options(parser, default_on=True)
    parser.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- CMD", help="the command")
    return parser


def cmd(args: argparse.Namespace) -> int:
    """Run the job; its exit status is the return value."""
    from nccl_doctor.run.history import RunHistory  # noqa: PLC0415
    from nccl_doctor.run.runner import run  # noqa: PLC0415 -- keeps --help fast

    argv = list(args.argv)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise UsageError("no command to run", "nccl-doctor run -- torchrun ... train.py")
    if not math.isfinite(args.grace) or not 0 <= args.grace <= MAX_GRACE_S:
        raise UsageError(
            f"--grace must be a number of seconds from 0 to {MAX_GRACE_S:g}, not {args.grace:g}",
            "for example --grace 10",
        )
    if not math.isfinite(args.stall) or not 0 <= args.stall <= MAX_STALL_S:
        raise UsageError(
            f"--stall must be a number of seconds from 0 to {MAX_STALL_S:g}, not {args.stall:g}",
            "for example --stall 120 (0 turns the pre-mortem off)",
        )
    return run(
        argv,
        args.dir,
        fmt=args.format,
        grace_s=args.grace,
        snapshots=not args.no_snapshot,
        stall_s=args.stall,
        on_hang=args.on_hang,
        history=RunHistory(args.db, args.job) if args.record else None,
    )
