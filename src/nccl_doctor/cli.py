"""The command line: argv -> library calls -> output and exit code. No logic here.

Exit codes: 0 ran and found nothing critical, 1 critical findings, 2 could not
run (with a one-line ``error:`` and a hint on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from nccl_doctor import __version__
from nccl_doctor.errors import DoctorError, EvidenceError

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
    return root


def _cmd_parse(args: argparse.Namespace) -> int:
    from nccl_doctor.evidence.reader import read_paths  # noqa: PLC0415 -- keeps --help fast
    from nccl_doctor.render.parsed import parsed_json, parsed_text  # noqa: PLC0415

    result = read_paths(args.paths)
    if not result.sources:
        reasons = "; ".join(f"{n.source}: {n.message}" for n in result.notes) or "nothing given"
        raise EvidenceError(
            f"no readable evidence ({reasons})",
            "give log files, folders or archives, or - for stdin",
        )
    if not result.sections:
        names = ", ".join(s.source for s in result.sources[:3])
        raise EvidenceError(
            f"no known evidence kind in {names}",
            "pass logs, tracebacks, nvidia-smi/ibstatus/topo output or collect_env text",
        )
    if args.format == "json":
        sys.stdout.write(json.dumps(parsed_json(result), ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(parsed_text(result) + "\n")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        return _cmd_parse(args)
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
