"""``nccl-doctor probe``: the argument parser and the command (cli.py wires them in).

Exit codes as ``diagnose``: 0 nothing critical, 1 a critical finding or a
failed probe step, 2 could not run (no GPU, GPUs in use without ``--force``,
bad arguments).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

from nccl_doctor.cli_output import add_gate_options, exit_code
from nccl_doctor.errors import UsageError
from nccl_doctor.extras import install_hint

EXIT_OK, EXIT_CRITICAL, EXIT_USAGE = 0, 1, 2
EPILOG = """\
examples:
  nccl-doctor probe                       # all GPUs, about a minute on 8
  nccl-doctor probe --gpus 0,1 --full -o probe.json
  nccl-doctor probe --device cpu          # a gloo self-test, no GPU needed
  torchrun --nnodes 2 --nproc-per-node 1 ... -m nccl_doctor.probe
  nccl-doctor probe --full --record       # keep the figures: `nccl-doctor nodes` shows drift

exit codes:
  0  every step passed; no finding at or above --fail-on
  1  a probe step failed, or findings at or above --fail-on (never with --exit-zero)
  2  could not run: no GPU, GPUs in use without --force, bad arguments"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``probe`` to the subcommands."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "probe",
        help="actively test GPUs, P2P and NCCL collectives, each step under a watchdog",
        description=textwrap.fill(
            "Test this node's GPUs through your own torch: a checked kernel and host/device "
            "bandwidth per GPU, the P2P matrix, then NCCL collectives over a size sweep with "
            "every value checked; a failure is isolated by transport and by GPU. Under "
            "torchrun or srun it tests many nodes (docs/probe.md).",
            width=88,
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", dest="mode", action="store_const", const="quick",
                      help="a short sweep, about a minute on 8 GPUs (default)")  # fmt: skip
    mode.add_argument("--full", dest="mode", action="store_const", const="full",
                      help="more sizes, both P2P directions, longer runs")  # fmt: skip
    p.set_defaults(mode="quick")
    p.add_argument("--gpus", metavar="0,1,...", help="CUDA ordinals to probe (default: all)")
    p.add_argument("--timeout", type=float, default=30.0, metavar="S",
                   help="deadline per step; a step past it is killed, reported hung")  # fmt: skip
    p.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    p.add_argument("--force", action="store_true", help="probe GPUs that other processes use")
    p.add_argument(
        "-o", "--output", dest="out", metavar="RESULT.json", help="save the result (evidence)"
    )
    p.add_argument("--out", dest="out", help=argparse.SUPPRESS)  # the old spelling
    p.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto",
                   help="cpu: a gloo self-test on virtual devices (CI)")  # fmt: skip
    p.add_argument("--no-isolate", dest="isolate", action="store_false",
                   help="do not rerun failing collectives to isolate the cause")  # fmt: skip
    p.add_argument("--inject", help=argparse.SUPPRESS)
    add_gate_options(p)
    from nccl_doctor.fleet.cli import add_record_options  # noqa: PLC0415

    add_record_options(p)
    return p


def _devices(spec: str | None, count: int) -> list[int]:
    if not spec:
        return list(range(count))
    try:
        devs = [int(x) for x in spec.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"--gpus {spec!r} is not a list of ordinals", "e.g. --gpus 0,1") from None
    if not devs or len(set(devs)) != len(devs) or any(not 0 <= d < count for d in devs):
        raise UsageError(f"--gpus {spec!r}: {count} devices are visible", "e.g. --gpus 0,1")
    return devs


def options(args: argparse.Namespace) -> Any:
    """The runner options of the arguments; raises UsageError when the probe cannot run."""
    from nccl_doctor.probe.gpus import busy_gpus, cuda_gpus  # noqa: PLC0415 -- loads torch
    from nccl_doctor.probe.runner import Options  # noqa: PLC0415

    if importlib.util.find_spec("torch") is None:
        raise UsageError(
            "the probe tests NCCL through your own torch, and this Python has none",
            f"run it in your job's environment, or {install_hint('probe')}",
        )
    if args.timeout <= 0:
        raise UsageError("--timeout must be positive", "for example --timeout 30")
    kind = args.device
    gpus = cuda_gpus() if kind != "cpu" else []
    if kind == "auto":
        kind = "cuda" if gpus else "cpu"
        if not gpus:
            raise UsageError("no CUDA GPU is visible", "--device cpu runs the gloo self-test")
    if kind == "cuda" and not gpus:
        raise UsageError("no CUDA GPU is visible", "check nvidia-smi and CUDA_VISIBLE_DEVICES")
    devices = _devices(args.gpus, len(gpus) if kind == "cuda" else 8)
    if kind == "cpu" and not args.gpus:
        devices = [0, 1]
    if kind == "cuda" and not args.force:
        busy = busy_gpus([g for g in gpus if g["index"] in devices])
        if busy:
            used = "; ".join(f"GPU {i}: pid {', '.join(map(str, p))}" for i, p in busy.items())
            raise UsageError(f"GPUs in use by other processes ({used})",
                             "stop them, choose --gpus, or pass --force")  # fmt: skip
    return Options(mode=args.mode, devices=devices, kind=kind, timeout_s=args.timeout,
                   inject=args.inject, isolate=args.isolate)  # fmt: skip


def _render(render_report: Any, report_: Any, fmt: str) -> str:
    """The report; without rich (the text renderer's library) JSON or Markdown still work."""
    try:
        return str(render_report(report_, fmt, color=False))
    except ImportError:
        from nccl_doctor.redact import redact  # noqa: PLC0415
        from nccl_doctor.render.markdown import report_markdown  # noqa: PLC0415
        from nccl_doctor.render.report_json import report_json  # noqa: PLC0415

        if fmt == "json":
            return json.dumps(report_json(report_, redact), ensure_ascii=False, indent=1) + "\n"
        if fmt == "text":
            sys.stderr.write("probe: rich is not installed; the report follows as Markdown\n")
        return str(report_markdown(report_, redact))


def report(result: dict[str, Any], args: argparse.Namespace, recorder: Any = None) -> int:
    """Save the result, diagnose it, print the summary and the report; the exit code.

    ``recorder`` (a :class:`nccl_doctor.fleet.cli.Recorder`) keeps the report in the history.
    """
    from nccl_doctor.pipeline import diagnose_paths  # noqa: PLC0415
    from nccl_doctor.probe.result import write_result  # noqa: PLC0415
    from nccl_doctor.render import render_report  # noqa: PLC0415
    from nccl_doctor.render.probe_progress import summary_text  # noqa: PLC0415

    if args.out:
        path = write_result(result, args.out)
        sys.stderr.write(f"wrote {path}\n")
    else:
        fd, name = tempfile.mkstemp(prefix="nccl-doctor-probe-", suffix=".json")
        os.close(fd)
        path = write_result(result, name)
    report_ = diagnose_paths([str(path)])
    if not args.out:
        Path(path).unlink(missing_ok=True)
    if args.format == "text":
        sys.stdout.write(summary_text(result) + "\n")
    else:
        sys.stderr.write(summary_text(result))
    sys.stdout.write(_render(render_report, report_, args.format))
    if recorder is not None:
        _record(recorder, report_, args)
    if getattr(args, "exit_zero", False):
        return EXIT_OK
    failed = not result["summary"].get("ok", False)
    return EXIT_CRITICAL if failed else exit_code(report_, args)


def _record(recorder: Any, report_: Any, args: argparse.Namespace) -> None:
    from nccl_doctor.fleet.cli import scheduler_job  # noqa: PLC0415
    from nccl_doctor.redact import scrub  # noqa: PLC0415
    from nccl_doctor.render.report_json import report_json  # noqa: PLC0415

    try:
        recorder.record("probe", report_json(report_, scrub), job=args.job or scheduler_job())
    finally:
        recorder.close()


def cmd(args: argparse.Namespace) -> int:
    """Run ``nccl-doctor probe``: this node, or many nodes under torchrun/srun."""
    from nccl_doctor.fleet.cli import Recorder  # noqa: PLC0415
    from nccl_doctor.probe.distributed import detect, run_distributed  # noqa: PLC0415
    from nccl_doctor.probe.runner import Runner, WorkerStartError  # noqa: PLC0415
    from nccl_doctor.render.probe_progress import make_progress  # noqa: PLC0415

    world = detect()
    if world is not None and world.world > 1:
        args.device = "cuda" if args.device == "auto" else args.device
        args.force = True if world.local_rank else args.force
    opts = options(args)
    leader = world is None or world.rank == 0
    recorder = Recorder(args, strict=True) if leader and getattr(args, "record", False) else None
    progress = make_progress(world is None or world.rank == 0)
    opts.progress = progress
    abandoned = False

    def finish(result: dict[str, Any]) -> int:
        nonlocal abandoned
        progress.close()
        abandoned = bool(result.get("abandoned_workers"))
        return report(result, args, recorder)

    try:
        if world is not None and world.world > 1:
            code = run_distributed(world, opts, finish)
        else:
            code = finish(Runner(opts).run())
    except WorkerStartError as exc:
        raise UsageError(
            f"probe workers could not start ({str(exc)[:600]})",
            "run it as `nccl-doctor probe` or `python -m nccl_doctor.probe`",
        ) from None
    finally:
        progress.close()
    if abandoned:
        sys.stdout.flush()
        sys.stderr.write("probe: workers stuck in the driver were abandoned; exiting now\n")
        sys.stderr.flush()
        os._exit(code)
    return code
