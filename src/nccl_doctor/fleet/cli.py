"""``history``, ``nodes`` and the recording options of ``diagnose``/``check``/``probe``/``run``.

``cli.py`` wires these in. Recording opens the database before the work, so
a bad ``--db`` fails at once (exit 2, one line); a write that fails after
the work is a warning and the command's own exit code stands. Under ``run``,
where recording is on by default, nothing about the history ever changes
the job's outcome.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import textwrap
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, TextIO

from nccl_doctor.cli_output import text_width
from nccl_doctor.errors import UsageError
from nccl_doctor.fleet.names import ENV, KINDS

if TYPE_CHECKING:
    from nccl_doctor.fleet.db import FleetError
    from nccl_doctor.fleet.store import Store

#: Scheduler variables that name the job, in the order they are looked for.
JOB_VARIABLES = ("SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "FLUX_JOB_ID", "JOB_ID")
_SINCE = re.compile(r"^(\d+)\s*([smhdw])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
DB_HELP = (
    f"history database: postgresql://user@host/db, sqlite:////path or a file "
    f"(default: {ENV}, else ~/.local/share/nccl-doctor/history.db)"
)
RAW = argparse.RawDescriptionHelpFormatter

HISTORY_EPILOG = """\
examples:
  nccl-doctor history                       # the latest 20 results
  nccl-doctor history --node node05 --since 7d
  nccl-doctor history --gpu GPU-8a47641b-dff6-f09f-618c-c3eb58fb430d
  nccl-doctor history --job 812345 --format json
  nccl-doctor history --id 42               # one run in full (JSON: with its report)

exit codes:
  0  listed (also when nothing matches)
  2  could not read the history (one-line error: and hint: on stderr)"""

NODES_EPILOG = """\
A node or GPU is flagged in a run when a critical or warning finding names it; a failure is
a run where a critical finding does. Drift compares probe figures with the node's own past
and with the same GPU model across the fleet; counters are what moved during `run` jobs.

examples:
  nccl-doctor nodes
  nccl-doctor nodes --suspects              # only the nodes and GPUs worth a look
  nccl-doctor nodes --node node05 --format json
  NCCL_DOCTOR_DB=postgresql://doctor@db/fleet nccl-doctor nodes

exit codes:
  0  shown
  2  could not read the history (one-line error: and hint: on stderr)"""


def scheduler_job(environ: Mapping[str, str] | None = None) -> str | None:
    """The scheduler's job id (Slurm, PBS, LSF, Flux, SGE), with a Slurm array task."""
    env = os.environ if environ is None else environ
    for name in JOB_VARIABLES:
        if value := env.get(name, "").strip():
            task = env.get("SLURM_ARRAY_TASK_ID", "").strip()
            return f"{value}_{task}" if name == "SLURM_JOB_ID" and task else value
    return None


def add_record_options(
    parser: argparse.ArgumentParser, *, default_on: bool = False, node: bool = False
) -> None:
    """``--record`` (or ``--no-record``), ``--db``, ``--job`` and (``node``) ``--node``."""
    if default_on:
        parser.add_argument(
            "--no-record",
            dest="record",
            action="store_false",
            help="do not keep the result in the fleet history (kept by default; docs/fleet.md)",
        )
    else:
        parser.add_argument(
            "--record",
            action="store_true",
            help="keep the result in the fleet history (`nccl-doctor history`, docs/fleet.md)",
        )
    parser.add_argument("--db", metavar="URL", help=DB_HELP)
    parser.add_argument(
        "--job",
        metavar="ID",
        help="the job id to record (default: SLURM_JOB_ID, PBS_JOBID... where set"
        + (")" if not default_on else "; else the run folder's name)"),
    )
    if node:
        parser.add_argument(
            "--node",
            metavar="NAME",
            help="record the evidence as this node's where it names no host",
        )


class Recorder:
    """Records one command's report; opened before the work so that a bad ``--db`` fails first.

    ``strict``: a database that cannot be opened is the command's error
    (exit 2). Otherwise (``run``) it is a warning and nothing is recorded.
    """

    def __init__(self, args: argparse.Namespace, *, strict: bool, err: TextIO | None = None):
        self.err = err if err is not None else sys.stderr
        self.store: Store | None = None
        self.prefix = "" if strict else "nccl-doctor run: "
        if not getattr(args, "record", False):
            return
        from nccl_doctor.fleet.db import FleetError  # noqa: PLC0415 -- building the parser: none
        from nccl_doctor.fleet.store import open_store  # noqa: PLC0415

        try:
            self.store = open_store(getattr(args, "db", None))
        except FleetError as exc:
            if strict:
                raise
            self._warn(exc)

    def _warn(self, exc: FleetError) -> None:
        hint = f" (hint: {exc.hint})" if exc.hint else ""
        self.err.write(f"{self.prefix}warning: not recorded: {exc.message}{hint}\n")

    def record(
        self,
        kind: str,
        report: dict[str, Any],
        *,
        job: str | None = None,
        node: str | None = None,
        quiet: bool = False,
    ) -> int | None:
        """Record ``report``; its run id, or ``None`` (said on stderr) when it could not be."""
        if self.store is None:
            return None
        from nccl_doctor.fleet.db import FleetError  # noqa: PLC0415

        try:
            run_id = self.store.record(kind, report, job=job, node=node)
        except FleetError as exc:
            self._warn(exc)
            return None
        if not quiet:
            hosts = (report.get("inventory") or {}).get("hosts")
            alone = "" if hosts or node else " (the evidence names no host: --node NAME gives one)"
            shown = self.store.target.shown
            self.err.write(f"{self.prefix}recorded as run {run_id} in {shown}{alone}\n")
        return run_id

    def close(self) -> None:
        """Close the database."""
        if self.store is not None:
            self.store.close()
            self.store = None


def since(text: str, now: datetime | None = None) -> datetime:
    """``--since``: ``30m``, ``24h``, ``7d``, ``2w``, or an ISO date or time (UTC unless said)."""
    now = now or datetime.now(timezone.utc)
    value = text.strip()
    if m := _SINCE.match(value.lower()):
        return now - timedelta(seconds=int(m[1]) * _UNITS[m[2]])
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a duration or a date (for example 7d, 24h or 2026-01-31)"
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 10_000:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from 1 to 10000")
    return value


def add_parsers(sub: Any) -> None:
    """Add ``history`` and ``nodes`` to the subcommands."""
    history = sub.add_parser(
        "history",
        help="recent recorded results, by node, GPU, job or id",
        description=textwrap.fill(
            "List the results recorded in the fleet history (diagnose/check/probe --record, "
            "and every `run`), newest first, filtered by node, GPU, finding, job, kind or time.",
            width=88,
        ),
        epilog=HISTORY_EPILOG,
        formatter_class=RAW,
    )
    history.add_argument("--node", metavar="NAME", help="runs on this node")
    history.add_argument(
        "--gpu", metavar="GPU", help="runs with this GPU: UUID, serial, bus id or NODE:INDEX"
    )
    history.add_argument("--id", type=int, metavar="N", help="this run, in full")
    history.add_argument("--job", metavar="ID", help="runs of this job")
    history.add_argument("--kind", choices=KINDS, help="runs of this command")
    history.add_argument(
        "--finding", metavar="ID", help="runs with this finding id (or prefix: gpu.)"
    )
    history.add_argument(
        "--since", type=since, metavar="WHEN", help="recorded since: 7d, 24h, or a date"
    )
    history.add_argument(
        "--limit", type=_positive, default=20, metavar="N", help="at most N runs (default 20)"
    )
    history.add_argument("--format", choices=("text", "json"), default="text")
    history.add_argument("--db", metavar="URL", help=DB_HELP)
    nodes = sub.add_parser(
        "nodes",
        help="per node and GPU: failures, last findings, trend, drift, counters",
        description=textwrap.fill(
            "Summarise the fleet history per node and per GPU: runs, failures, the last "
            "findings, the trend, bandwidth drift against its own past and its GPU model, and "
            "the error counters that moved during jobs. Suspects come first.",
            width=88,
        ),
        epilog=NODES_EPILOG,
        formatter_class=RAW,
    )
    nodes.add_argument("--node", metavar="NAME", help="only this node (and its GPUs)")
    nodes.add_argument("--gpu", metavar="GPU", help="only this GPU (key, UUID, serial, bus id)")
    nodes.add_argument("--suspects", action="store_true", help="only those worth a look")
    nodes.add_argument(
        "--all", action="store_true", help="text: every GPU (default: those with something to say)"
    )
    nodes.add_argument(
        "--window",
        type=_positive,
        default=50,
        metavar="N",
        help="each node's and GPU's newest N runs (default 50)",
    )
    nodes.add_argument("--format", choices=("text", "json"), default="text")
    nodes.add_argument("--db", metavar="URL", help=DB_HELP)


def _reader(url: str | None) -> Store:
    from nccl_doctor.fleet.db import FleetError, resolve  # noqa: PLC0415
    from nccl_doctor.fleet.store import open_store  # noqa: PLC0415

    try:
        return open_store(url, create=False)
    except FleetError as exc:
        if resolve(url).engine == "sqlite" and exc.message.startswith("no history database"):
            raise FleetError(
                exc.message, "record results first: `nccl-doctor run ...`, or --record"
            ) from None
        raise


def cmd_history(args: argparse.Namespace) -> int:
    """``nccl-doctor history``."""
    from nccl_doctor.fleet.views import history_text, run_json, run_text  # noqa: PLC0415

    with _reader(args.db) as store:
        where = store.target.shown
        runs = store.runs(
            node=args.node,
            gpu=args.gpu,
            finding=args.finding,
            job=args.job,
            kind=args.kind,
            since=args.since,
            limit=args.limit,
            run_id=args.id,
        )
    if args.id is not None and not runs:
        raise UsageError(
            f"no run {args.id} matches in the history ({where})",
            "`nccl-doctor history` lists the runs and their ids",
        )
    if args.format == "json":
        full = args.id is not None
        data = {"history": where, "runs": [run_json(r, report=full) for r in runs]}
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=1) + "\n")
    elif args.id is not None:
        sys.stdout.write(run_text(runs[0], where))
    else:
        sys.stdout.write(history_text(runs, where, text_width(None, sys.stdout)))
    return 0


def _matches_gpu(identity: Mapping[str, Any], key: str | None, wanted: str) -> bool:
    from nccl_doctor.fleet.extract import norm_bus  # noqa: PLC0415

    names = {key, identity.get("uuid"), identity.get("serial"), identity.get("bus_id")}
    if identity.get("node") is not None and identity.get("index") is not None:
        names.add(f"{identity['node']}:{identity['index']}")
    return wanted in names or (":" in wanted and norm_bus(wanted) in names)


def cmd_nodes(args: argparse.Namespace) -> int:
    """``nccl-doctor nodes``."""
    from nccl_doctor.fleet.views import nodes_text, summary_json  # noqa: PLC0415

    with _reader(args.db) as store:
        where = store.target.shown
        nodes = store.node_summaries(window=args.window)
        gpus = store.gpu_summaries(window=args.window)
    if args.node:
        nodes = [s for s in nodes if s.node == args.node]
        gpus = [s for s in gpus if s.node == args.node]
    if args.gpu:
        gpus = [s for s in gpus if _matches_gpu(s.identity, s.gpu, args.gpu)]
        nodes = [s for s in nodes if s.node in {g.node for g in gpus}]
    if args.suspects:
        nodes = [s for s in nodes if s.suspect]
        gpus = [s for s in gpus if s.suspect]
    if args.format == "json":
        data = {
            "history": where,
            "window": args.window,
            "nodes": [summary_json(s) for s in nodes],
            "gpus": [summary_json(s) for s in gpus],
        }
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=1) + "\n")
    else:
        width = text_width(None, sys.stdout)
        sys.stdout.write(nodes_text(nodes, gpus, where, args.window, width, every_gpu=args.all))
    return 0
