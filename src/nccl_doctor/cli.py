"""The command line: argv -> library calls -> output and exit code. No logic here.

Exit codes: 0 ran and found nothing at ``--fail-on`` (default: nothing
critical), 1 findings at ``--fail-on``, 2 could not run (with a one-line
``error:`` and a hint on stderr), 3 ran and found nothing at ``--fail-on`` but
could not check part of what it must (verdict ``incomplete``: a live check that
could not read the GPUs). The options the reporting commands share
(width, colour, verbosity, the exit gate) are in :mod:`nccl_doctor.cli_output`.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import os
import sys
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from nccl_doctor import __version__
from nccl_doctor.cli_output import (
    EXIT_CODES,
    GATE_EXIT_CODES,
    add_gate_options,
    add_terminal_options,
    exit_code,
    text_width,
    use_color,
)
from nccl_doctor.errors import DoctorError, EvidenceError, UsageError

if TYPE_CHECKING:
    from nccl_doctor.evidence.reader import ReadResult
    from nccl_doctor.fleet.cli import Recorder
    from nccl_doctor.render.history_chart import History
    from nccl_doctor.report import Report

EXIT_OK, EXIT_CRITICAL, EXIT_USAGE = 0, 1, 2
#: The longest per-read deadline ``check``/``capture`` accept, in seconds.
MAX_TIMEOUT_S = 600.0
RAW = argparse.RawDescriptionHelpFormatter

PURPOSE = (
    "Name the root cause of a failed or hung distributed PyTorch/NCCL job: from its logs and "
    "tool output, from the live node, or by testing the GPUs."
)
ROOT_EPILOG = f"""\
examples:
  nccl-doctor diagnose train.log nvidia-smi.txt
  nccl-doctor diagnose logs/ --format html -o report.html
  nccl-doctor check --fail-on warning
  nccl-doctor run -- torchrun --nproc-per-node 8 train.py
  nccl-doctor explain cudaErrorUnknown
  nccl-doctor nodes                      # is it this node again? (the fleet history)

{EXIT_CODES}
`nccl-doctor COMMAND --help` shows a command's options and examples.
Docs: README.md, docs/diagnoses.md (the ids), docs/json-report.md, docs/design.md."""

_DIAGNOSE_EPILOG = f"""\
EVIDENCE is anything `parse` reads: log files of any number of ranks, folders (recursively),
.tar/.tgz/.zip bundles, a run folder of `nccl-doctor run`, or - for stdin. The kind of each
file is recognised from its content, never its name.

examples:
  nccl-doctor diagnose train.log
  nccl-doctor diagnose logs/ nvidia-smi.txt dmesg.txt
  cat rank*.log | nccl-doctor diagnose -
  nccl-doctor diagnose bundle.tgz --format json -o report.json
  nccl-doctor diagnose logs/ --format markdown > issue.md   # redacted, pseudonymised
  nccl-doctor diagnose logs/ --fail-on warning --quiet      # a CI gate
  nccl-doctor diagnose failed/ --against good.json          # what changed since a good run
  nccl-doctor diagnose node17-logs/ --record --node node17  # keep it in the fleet history

{EXIT_CODES}"""

_CHECK_EPILOG = f"""\
Reads NVML (in a child process with a deadline), kernel modules and device nodes, the
kernel log's NVIDIA lines, RDMA ports, /dev/shm and limits, versions, and every NCCL_*,
TORCH_NCCL_* and CUDA_* variable, then diagnoses them with the same rules as `diagnose`.

examples:
  nccl-doctor check
  nccl-doctor check -o node.tgz          # also keep what was read, as a bundle
  nccl-doctor check --format json --exit-zero
  nccl-doctor check --gate                          # a node verdict for a Slurm prolog
  nccl-doctor check --gate --from node17.tgz        # the verdict of a saved bundle
  nccl-doctor check --record             # keep the result in the fleet history

{EXIT_CODES}

{GATE_EXIT_CODES}"""

_CAPTURE_EPILOG = """\
examples:
  nccl-doctor capture -o node17.tgz
  nccl-doctor diagnose node17.tgz        # on any machine: the report `check` gave

exit codes:
  0  saved
  2  could not save (one-line error: and hint: on stderr)"""

_PARSE_EPILOG = """\
examples:
  nccl-doctor parse train.log
  nccl-doctor parse logs/ --format json -o facts.json

exit codes:
  0  read fine
  2  nothing usable was given (one-line error: and hint: on stderr)"""

_EXPLAIN_EPILOG = """\
TERM is one of:
  a diagnosis id        gpu.contention, cuda.unknown_error (`nccl-doctor rules` lists them)
  a CUDA error          999, cuda 30, cudaErrorUnknown, CUDA_ERROR_UNKNOWN, "unknown error"
  an Xid                xid 79
  an NCCL result        ncclRemoteError, nccl 6, "remote process exited"
A bare number is read as every kind that has it; prefix cuda, nccl or xid to pick one.
CUDA numbers before CUDA 10.1 differ (30 was unknown error, now 999): both are shown.

examples:
  nccl-doctor explain gpu.contention
  nccl-doctor explain 999
  nccl-doctor explain xid 79

exit codes:
  0  explained
  2  nothing known by that name (the hint names the closest)"""


def _desc(text: str) -> str:
    """A description paragraph, wrapped (the raw formatter keeps the epilogs' layout)."""
    return textwrap.fill(text, width=88)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"error: {message} (hint: run `{self.prog} --help`)\n")
        raise SystemExit(EXIT_USAGE)


def _formats(parser: argparse.ArgumentParser, choices: tuple[str, ...]) -> None:
    parser.add_argument(
        "--format", choices=choices, default="text", help="output format (default: text)"
    )


def _timeout(text: str) -> float:
    """``--timeout``: a finite number of seconds, above 0 and at most :data:`MAX_TIMEOUT_S`."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or not 0 < value <= MAX_TIMEOUT_S:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number of seconds above 0 and at most {MAX_TIMEOUT_S:g}"
            " (for example --timeout 5)"
        )
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    root = _Parser(
        prog="nccl-doctor", description=_desc(PURPOSE), epilog=ROOT_EPILOG, formatter_class=RAW
    )
    root.add_argument("--version", action="version", version=f"nccl-doctor {__version__}")
    sub = root.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")
    diagnose = sub.add_parser(
        "diagnose",
        help="name the root cause, the cascade and the fix",
        description=_desc(
            "Name the root cause of a failed or hung job from the evidence you have: "
            "the first failure across ranks, the cascade it explains, the evidence lines, the fix."
        ),
        epilog=_DIAGNOSE_EPILOG,
        formatter_class=RAW,
    )
    diagnose.add_argument(
        "paths", nargs="+", metavar="EVIDENCE", help="files, folders, archives, or - for stdin"
    )
    _formats(diagnose, ("text", "json", "markdown", "html"))
    diagnose.add_argument(
        "-o", "--output", metavar="PATH", help="write the report to PATH instead of stdout"
    )
    add_terminal_options(diagnose)
    add_gate_options(diagnose)
    check = sub.add_parser(
        "check",
        help="read this node live (NVML, kernel, RDMA...) and diagnose",
        description=_desc("Read this node live and diagnose it with the same rules as `diagnose`."),
        epilog=_CHECK_EPILOG,
        formatter_class=RAW,
    )
    diagnose.add_argument(
        "--against",
        metavar="REF",
        help="also show what changed against a reference run: a JSON report of "
        "`diagnose --format json`, last-good, or a run id of the history store",
    )
    diagnose.add_argument(
        "--keep-names",
        action="store_true",
        help="markdown/html: keep real host names, addresses and users (pseudonymised by default)",
    )
    diagnose.add_argument(
        "--pseudonym-key",
        metavar="FILE",
        help="markdown/html: write the pseudonym -> real name map to FILE (JSON, mode 0600)",
    )
    from nccl_doctor.fleet import cli as fleet_cli  # noqa: PLC0415 -- keeps --help fast

    fleet_cli.add_record_options(diagnose, node=True)
    _formats(check, ("text", "json", "markdown"))
    check.set_defaults(format=None)  # text, or json under --gate
    check.add_argument(
        "--timeout", type=_timeout, default=5.0, metavar="S", help="deadline per read"
    )
    check.add_argument(
        "-o", "--output", metavar="BUNDLE", help="also save what was read, as a bundle"
    )
    add_terminal_options(check)
    add_gate_options(check)
    from nccl_doctor.gate import cli as gate_cli  # noqa: PLC0415 -- keeps --help fast

    gate_cli.add_check_options(check)
    fleet_cli.add_record_options(check)
    capture = sub.add_parser(
        "capture",
        help="save this node's live state as a bundle",
        description=_desc(
            "Save what `check` reads (redacted) as a bundle that `diagnose` replays."
        ),
        epilog=_CAPTURE_EPILOG,
        formatter_class=RAW,
    )
    capture.add_argument("-o", "--output", required=True, metavar="BUNDLE", help="a .tgz or folder")
    capture.add_argument(
        "--timeout", type=_timeout, default=5.0, metavar="S", help="deadline per read"
    )
    parse = sub.add_parser(
        "parse",
        help="show what the evidence says, section by section",
        description=_desc(
            "Show what each piece of evidence says: its kind, its sections, and the "
            "typed facts read from it with the line each came from."
        ),
        epilog=_PARSE_EPILOG,
        formatter_class=RAW,
    )
    parse.add_argument(
        "paths", nargs="+", metavar="PATH", help="files, folders, archives, or - for stdin"
    )
    _formats(parse, ("text", "json"))
    parse.add_argument("-o", "--output", metavar="PATH", help="write to PATH instead of stdout")
    sub.add_parser(
        "rules",
        help="list the diagnosis catalogue",
        description=_desc("List the diagnosis catalogue: id, default severity, title."),
        epilog="example:\n  nccl-doctor rules | grep ^gpu\n\nexit codes:\n  0  listed",
        formatter_class=RAW,
    )
    from nccl_doctor.run import cli as run_cli  # noqa: PLC0415 -- keeps --help fast

    run_cli.add_parser(sub)
    from nccl_doctor.probe import cli as probe_cli  # noqa: PLC0415 -- keeps --help fast

    probe_cli.add_parser(sub)
    gate_cli.add_parser(sub)
    fleet_cli.add_parsers(sub)
    explain = sub.add_parser(
        "explain",
        help="what a diagnosis id, CUDA error, Xid or NCCL result means",
        description=_desc(
            "Print what a diagnosis id, a CUDA error, an Xid or an NCCL result means, "
            "and which diagnosis ids it points to."
        ),
        epilog=_EXPLAIN_EPILOG,
        formatter_class=RAW,
    )
    explain.add_argument(
        "rule_id", nargs="+", metavar="TERM", help="e.g. gpu.contention, 999, xid 79"
    )
    return root


def _read(paths: Sequence[str], *, line_totals: bool = False) -> ReadResult:
    """Read the evidence, or raise the one-line error that says why none was usable
    (``line_totals``: see ``read_paths``; only ``parse`` shows them)."""
    from nccl_doctor.evidence.own_output import (  # noqa: PLC0415 -- fast --help
        GIVE_EVIDENCE,
        is_own_note,
    )
    from nccl_doctor.evidence.reader import UNKNOWN, read_paths  # noqa: PLC0415 -- fast --help

    gc.freeze()  # what was imported lives as long as the process (see _paced_collector)
    result = read_paths(paths, line_totals=line_totals)
    # what was given was nccl-doctor's own output: say what to give instead
    ours = any(is_own_note(n.message) for n in result.notes)
    if not result.sources:
        reasons = "; ".join(f"{n.source}: {n.message}" for n in result.notes) or "nothing given"
        raise EvidenceError(
            f"no readable evidence ({reasons})",
            GIVE_EVIDENCE if ours else "give log files, folders or archives, or - for stdin",
        )
    if not result.sections:
        names = ", ".join(s.source for s in result.sources[:3])
        why = "; ".join(f"{n.source}: {n.message}" for n in result.notes if n.message != UNKNOWN)
        raise EvidenceError(
            f"no known evidence kind in {names}" + (f" ({why})" if why else ""),
            GIVE_EVIDENCE
            if ours
            else "pass logs, tracebacks, nvidia-smi/ibstatus/topo output or collect_env text",
        )
    return result


def _cmd_parse(args: argparse.Namespace) -> int:
    from nccl_doctor.render.parsed import parsed_json, parsed_text  # noqa: PLC0415

    result = _read(args.paths, line_totals=True)
    if args.format == "json":
        _emit(json.dumps(parsed_json(result), ensure_ascii=False) + "\n", args.output)
    else:
        _emit(parsed_text(result) + "\n", args.output)
    return EXIT_OK


def _cmd_diagnose(args: argparse.Namespace) -> int:
    from nccl_doctor.pipeline import diagnose_with_facts  # noqa: PLC0415
    from nccl_doctor.render import pseudonyms, render_report  # noqa: PLC0415

    if args.pseudonym_key and (args.keep_names or args.format not in ("markdown", "html")):
        raise UsageError(
            "--pseudonym-key needs pseudonymised output",
            "use it with --format markdown or html, without --keep-names",
        )
    recorder = _recorder(args)
    reference = None
    if args.against is not None:
        from nccl_doctor.fleet import against  # noqa: PLC0415

        if not against.in_store(args.against):
            reference = against.load_report(args.against)  # a bad REF fails before the reading
    result = _read(args.paths)
    report, facts = diagnose_with_facts(result)
    if args.against is not None:
        reference = reference or against.resolve(
            args.against, hosts=against.nodes_of(report), job=args.job, db=args.db
        )
        report = against.compared(report, reference)
    run_id = _record(recorder, "diagnose", report, args, job=args.job, node=args.node)
    to_file = args.output is not None
    color = not to_file and use_color(args.color, sys.stdout)
    width = (args.width or 80) if to_file else text_width(args.width, sys.stdout)
    shown = facts if args.format == "html" else None
    history = None
    if args.format == "html":
        history = _history_picture(report, args.db, run_id, args.node)
    names = pseudonyms(report)
    if args.node:
        names.host(args.node)  # named on the command line, hidden like the evidence's hosts
    rendered = render_report(
        report,
        args.format,
        color=color,
        width=width,
        facts=shown,
        verbosity=args.verbosity,
        names=names,
        keep_names=args.keep_names,
        history=history,
    )
    _emit(rendered, args.output, quiet=args.verbosity < 0)
    if args.pseudonym_key:
        _write_private(args.pseudonym_key, json.dumps(names.key(), indent=1) + "\n")
    return exit_code(report, args)


def _recorder(args: argparse.Namespace) -> Recorder | None:
    """The history, opened before the work when ``--record`` asks for it (a bad --db: exit 2)."""
    if not args.record:
        return None
    from nccl_doctor.fleet.cli import Recorder  # noqa: PLC0415

    return Recorder(args, strict=True)


def _record(
    recorder: Recorder | None,
    kind: str,
    report: Report,
    args: argparse.Namespace,
    *,
    job: str | None,
    node: str | None = None,
) -> int | None:
    """Record the report (redacted JSON); its run id, or ``None`` (a failure is a warning)."""
    if recorder is None:
        return None
    from nccl_doctor.redact import scrub  # noqa: PLC0415
    from nccl_doctor.render.report_json import report_json  # noqa: PLC0415

    try:
        quiet = args.verbosity < 0
        return recorder.record(kind, report_json(report, scrub), job=job, node=node, quiet=quiet)
    finally:
        recorder.close()


def _history_picture(
    report: Report, url: str | None, current: int | None, node: str | None
) -> History | None:
    """The HTML report's node/GPU history, when the history has runs of its nodes or GPUs.

    It only reads: a default history that does not exist is not created, and
    a history that cannot be read costs the picture, said on stderr.
    """
    from nccl_doctor.fleet.db import FleetError  # noqa: PLC0415
    from nccl_doctor.fleet.picture import history_picture  # noqa: PLC0415

    try:
        return history_picture(report.inventory, url, current=current, node=node)
    except FleetError as exc:
        sys.stderr.write(f"note: no history picture: {exc.message}\n")
        return None


def _emit(rendered: str, output: str | None, *, quiet: bool = False) -> None:
    """The rendered report to stdout, or to a file (said on stderr unless ``quiet``)."""
    if output is None:
        sys.stdout.write(rendered)
        return
    try:
        Path(output).write_text(rendered, encoding="utf-8")
    except OSError as exc:
        raise UsageError(
            f"cannot write {output}: {exc.strerror or exc}", "choose a writable path"
        ) from exc
    if not quiet:
        sys.stderr.write(f"wrote {output}\n")


def _write_private(path: str, text: str) -> None:
    """``text`` to ``path``, readable by its owner only (mode 0600, also when it existed)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            os.fchmod(out.fileno(), 0o600)
            out.write(text)
    except OSError as exc:
        raise UsageError(
            f"cannot write {path}: {exc.strerror or exc}", "choose a writable path"
        ) from exc
    sys.stderr.write(f"wrote {path} (private: it maps the pseudonyms back to real names)\n")


def _cmd_check(args: argparse.Namespace) -> int:
    from nccl_doctor import live_check  # noqa: PLC0415
    from nccl_doctor.gate import cli as gate_cli  # noqa: PLC0415
    from nccl_doctor.render import render_report  # noqa: PLC0415

    if args.gate:
        return gate_cli.cmd_check_gate(args)
    gate_cli.gate_only_options(args)
    recorder = _recorder(args)
    report, cap = live_check.check(
        timeout_s=args.timeout, nvml_module=live_check.nvml_module_name(), keep=args.output
    )
    if line := live_check.headline(cap.snapshot):  # a caveat, so kept under --quiet too
        sys.stderr.write(line + "\n")
    color = use_color(args.color, sys.stdout)
    width = text_width(args.width, sys.stdout)
    fmt = args.format or "text"
    sys.stdout.write(render_report(report, fmt, color=color, width=width, verbosity=args.verbosity))
    from nccl_doctor.fleet.cli import scheduler_job  # noqa: PLC0415

    _record(recorder, "check", report, args, job=args.job or scheduler_job())
    return exit_code(report, args)


def _cmd_capture(args: argparse.Namespace) -> int:
    from nccl_doctor import live_check  # noqa: PLC0415

    path = live_check.save(args.output, args.timeout, live_check.nvml_module_name())
    sys.stderr.write(f"wrote {path}\n")
    return EXIT_OK


def _cmd_rules(_: argparse.Namespace) -> int:
    from nccl_doctor.rules import load_rules  # noqa: PLC0415

    for loaded in load_rules():
        rule = loaded.rule
        sys.stdout.write(f"{rule.id:26} {rule.severity.value:8} {rule.title}\n")
    return EXIT_OK


def _cmd_explain(args: argparse.Namespace) -> int:
    from nccl_doctor.explain import explain_code, rule_text, unknown  # noqa: PLC0415
    from nccl_doctor.rules import CATALOGUE, get_rule  # noqa: PLC0415

    term = " ".join(args.rule_id)
    loaded = get_rule(term.strip())
    if loaded is None:
        text = explain_code(term, width=text_width(None, sys.stdout))
        if text is None:
            raise unknown(term, CATALOGUE)
        sys.stdout.write(text)
        return EXIT_OK
    sys.stdout.write(rule_text(loaded))
    return EXIT_OK


def _cmd_run(args: argparse.Namespace) -> int:
    from nccl_doctor.run import cli as run_cli  # noqa: PLC0415

    return run_cli.cmd(args)


def _cmd_gate(args: argparse.Namespace) -> int:
    from nccl_doctor.gate import cli as gate_cli  # noqa: PLC0415

    return gate_cli.cmd(args)


def _cmd_probe(args: argparse.Namespace) -> int:
    from nccl_doctor.probe import cli as probe_cli  # noqa: PLC0415

    return probe_cli.cmd(args)


def _cmd_history(args: argparse.Namespace) -> int:
    from nccl_doctor.fleet import cli as fleet_cli  # noqa: PLC0415

    return fleet_cli.cmd_history(args)


def _cmd_nodes(args: argparse.Namespace) -> int:
    from nccl_doctor.fleet import cli as fleet_cli  # noqa: PLC0415

    return fleet_cli.cmd_nodes(args)


_COMMANDS = {
    "parse": _cmd_parse,
    "diagnose": _cmd_diagnose,
    "check": _cmd_check,
    "capture": _cmd_capture,
    "rules": _cmd_rules,
    "explain": _cmd_explain,
    "run": _cmd_run,
    "probe": _cmd_probe,
    "gate": _cmd_gate,
    "history": _cmd_history,
    "nodes": _cmd_nodes,
}


#: Allocations between two collections of the young generation while a command reads
#: evidence (the interpreter's default is 700).
_GC_YOUNG = 50_000


@contextlib.contextmanager
def _paced_collector() -> Iterator[None]:
    """The cyclic collector paced for a command: its young generation collected less often
    (the modules a command imports and the facts a read makes are long-lived, hardly any of
    them cyclic garbage), what was imported before a read not walked again (``gc.freeze``,
    in :func:`_read`): ~20 ms of a 1 s diagnosis. As it was afterwards (for a caller in the
    same process)."""
    threshold = gc.get_threshold()
    gc.set_threshold(_GC_YOUNG, *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    with _paced_collector():  # from the parser's imports on (~40 young collections, ~3 ms)
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        return _COMMANDS[args.command](args)
    except DoctorError as exc:
        hint = f" (hint: {exc.hint})" if exc.hint else ""
        sys.stderr.write(f"error: {exc.message}{hint}\n")
        return EXIT_USAGE
    except BrokenPipeError:
        return EXIT_OK
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted\n")
        return EXIT_USAGE
    except Exception as exc:  # noqa: BLE001 -- the last line of defence: never a traceback
        sys.stderr.write(
            f"error: internal error ({type(exc).__name__}: {exc}) "
            "(hint: this is a bug in nccl-doctor; please report it with the input)\n"
        )
        return EXIT_USAGE
