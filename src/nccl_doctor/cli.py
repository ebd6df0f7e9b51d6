"""The command line: argv -> library calls -> output and exit code. No logic here.

Exit codes: 0 ran and found nothing critical, 1 critical findings, 2 could not
run (with a one-line ``error:`` and a hint on stderr).
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from nccl_doctor import __version__
from nccl_doctor.errors import DoctorError, EvidenceError, UsageError

if TYPE_CHECKING:
    from nccl_doctor.evidence.reader import ReadResult

EXIT_OK, EXIT_CRITICAL, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"error: {message} (hint: run `{self.prog} --help`)\n")
        raise SystemExit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    root = _Parser(prog="nccl-doctor", description=__doc__.splitlines()[0] if __doc__ else None)
    root.add_argument("--version", action="version", version=f"nccl-doctor {__version__}")
    sub = root.add_subparsers(dest="command", parser_class=_Parser)
    parse = sub.add_parser("parse", help="show what the evidence says, section by section")
    parse.add_argument(
        "paths", nargs="+", metavar="PATH", help="files, folders, archives, or - for stdin"
    )
    parse.add_argument("--format", choices=("text", "json"), default="text")
    diagnose = sub.add_parser("diagnose", help="name the root cause, the cascade and the fix")
    diagnose.add_argument(
        "paths", nargs="+", metavar="EVIDENCE", help="files, folders, archives, or - for stdin"
    )
    diagnose.add_argument("--format", choices=("text", "json", "markdown", "html"), default="text")
    diagnose.add_argument(
        "-o", "--output", metavar="PATH", help="write the report to PATH instead of stdout"
    )
    diagnose.add_argument(
        "--color", choices=("auto", "always", "never"), default="auto", help="terminal colours"
    )
    check = sub.add_parser("check", help="read this node live (NVML, kernel, RDMA...) and diagnose")
    check.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    check.add_argument("--timeout", type=float, default=5.0, metavar="S", help="deadline per read")
    check.add_argument(
        "--color", choices=("auto", "always", "never"), default="auto", help="terminal colours"
    )
    check.add_argument("-o", "--output", metavar="BUNDLE", help="also save the capture here")
    capture = sub.add_parser("capture", help="save this node's live state as a bundle")
    capture.add_argument("-o", "--output", required=True, metavar="BUNDLE", help="a .tgz or folder")
    capture.add_argument(
        "--timeout", type=float, default=5.0, metavar="S", help="deadline per read"
    )
    sub.add_parser("rules", help="list the diagnosis catalogue")
    from nccl_doctor.run import cli as run_cli  # noqa: PLC0415 -- keeps --help fast

    run_cli.add_parser(sub)
    from nccl_doctor.probe import cli as probe_cli  # noqa: PLC0415 -- keeps --help fast

    probe_cli.add_parser(sub)
    explain = sub.add_parser("explain", help="print what a diagnosis id means and how to fix it")
    explain.add_argument("rule_id", metavar="ID", help="a catalogue id, e.g. gpu.contention")
    return root


def _read(paths: Sequence[str]) -> ReadResult:
    """Read the evidence, or raise the one-line error that says why none was usable."""
    from nccl_doctor.evidence.reader import UNKNOWN, read_paths  # noqa: PLC0415 -- fast --help

    result = read_paths(paths)
    if not result.sources:
        reasons = "; ".join(f"{n.source}: {n.message}" for n in result.notes) or "nothing given"
        raise EvidenceError(
            f"no readable evidence ({reasons})",
            "give log files, folders or archives, or - for stdin",
        )
    if not result.sections:
        names = ", ".join(s.source for s in result.sources[:3])
        why = "; ".join(f"{n.source}: {n.message}" for n in result.notes if n.message != UNKNOWN)
        raise EvidenceError(
            f"no known evidence kind in {names}" + (f" ({why})" if why else ""),
            "pass logs, tracebacks, nvidia-smi/ibstatus/topo output or collect_env text",
        )
    return result


def _cmd_parse(args: argparse.Namespace) -> int:
    from nccl_doctor.render.parsed import parsed_json, parsed_text  # noqa: PLC0415

    result = _read(args.paths)
    if args.format == "json":
        sys.stdout.write(json.dumps(parsed_json(result), ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(parsed_text(result) + "\n")
    return EXIT_OK


def _cmd_diagnose(args: argparse.Namespace) -> int:
    from nccl_doctor.pipeline import diagnose_with_facts  # noqa: PLC0415
    from nccl_doctor.render import render_report  # noqa: PLC0415

    result = _read(args.paths)
    report, facts = diagnose_with_facts(result)
    to_file = args.output is not None
    color = not to_file and (
        args.color == "always" or (args.color == "auto" and sys.stdout.isatty())
    )
    shown = facts if args.format == "html" else None
    rendered = render_report(report, args.format, color=color, facts=shown)
    _emit(rendered, args.output)
    critical = any(f.severity.value == "critical" for f in report.findings)
    return EXIT_CRITICAL if critical else EXIT_OK


def _emit(rendered: str, output: str | None) -> None:
    """The rendered report to stdout, or to a file (said on stderr)."""
    if output is None:
        sys.stdout.write(rendered)
        return
    try:
        Path(output).write_text(rendered, encoding="utf-8")
    except OSError as exc:
        raise UsageError(
            f"cannot write {output}: {exc.strerror or exc}", "choose a writable path"
        ) from exc
    sys.stderr.write(f"wrote {output}\n")


def _cmd_check(args: argparse.Namespace) -> int:
    from nccl_doctor import live_check  # noqa: PLC0415
    from nccl_doctor.render import render_report  # noqa: PLC0415

    if args.timeout <= 0:
        raise UsageError("--timeout must be positive", "for example --timeout 5")
    report, cap = live_check.check(
        timeout_s=args.timeout, nvml_module=live_check.nvml_module_name(), keep=args.output
    )
    if line := live_check.headline(cap.snapshot):
        sys.stderr.write(line + "\n")
    color = args.color == "always" or (args.color == "auto" and sys.stdout.isatty())
    sys.stdout.write(render_report(report, args.format, color=color))
    critical = any(f.severity.value == "critical" for f in report.findings)
    return EXIT_CRITICAL if critical else EXIT_OK


def _cmd_capture(args: argparse.Namespace) -> int:
    from nccl_doctor import live_check  # noqa: PLC0415

    if args.timeout <= 0:
        raise UsageError("--timeout must be positive", "for example --timeout 5")
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
    from nccl_doctor.rules import CATALOGUE, get_rule  # noqa: PLC0415

    loaded = get_rule(args.rule_id)
    if loaded is None:
        close = difflib.get_close_matches(args.rule_id, CATALOGUE, n=1)
        hint = f"did you mean {close[0]}?" if close else "`nccl-doctor rules` lists the ids"
        raise UsageError(f"no diagnosis {args.rule_id!r}", hint)
    rule = loaded.rule
    head = f"{rule.id} — {rule.title} (default severity: {rule.severity.value})"
    sys.stdout.write(f"{head}\n\n{loaded.doc}\n")
    return EXIT_OK


def _cmd_run(args: argparse.Namespace) -> int:
    from nccl_doctor.run import cli as run_cli  # noqa: PLC0415

    return run_cli.cmd(args)


def _cmd_probe(args: argparse.Namespace) -> int:
    from nccl_doctor.probe import cli as probe_cli  # noqa: PLC0415

    return probe_cli.cmd(args)


_COMMANDS = {
    "parse": _cmd_parse,
    "diagnose": _cmd_diagnose,
    "check": _cmd_check,
    "capture": _cmd_capture,
    "rules": _cmd_rules,
    "explain": _cmd_explain,
    "run": _cmd_run,
    "probe": _cmd_probe,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
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
