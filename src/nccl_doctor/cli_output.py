"""How the commands write to the terminal, and the exit code of their findings.

The options every reporting command shares live here, so ``diagnose``,
``check`` and ``probe`` spell them, and decide them, alike:

- the exit gate: ``--fail-on critical|warning`` and ``--exit-zero``;
- the width: ``--width N``, else ``COLUMNS``, else the terminal's, else 80;
- colour: ``--color always|never`` wins; with ``auto``, ``NO_COLOR`` turns it
  off, ``FORCE_COLOR`` on (in that order, as CPython's own ``_colorize``
  does; each counts when set and not empty), ``TERM=dumb`` off, else
  colour when writing to a terminal;
- ``-q/--quiet`` and ``-v/--verbose``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from nccl_doctor.report import Report

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INCOMPLETE = 0, 1, 2, 3
MIN_WIDTH, MAX_WIDTH, DEFAULT_WIDTH = 40, 1000, 80
#: Severities that fail the gate, by ``--fail-on``.
FAIL_ON = {"critical": frozenset({"critical"}), "warning": frozenset({"critical", "warning"})}

EXIT_CODES = """\
exit codes:
  0  ran; no finding at or above --fail-on (default: no critical finding)
  1  ran; findings at or above --fail-on (never with --exit-zero)
  2  could not run: bad arguments, no usable evidence (one-line error: and hint: on stderr)
  3  ran; nothing at --fail-on, but part could not be checked (verdict incomplete: a live
     check that could not read the GPUs; never with --exit-zero)"""

GATE_EXIT_CODES = """\
exit codes with --gate:
  0  the node may take jobs: no check at --gate-fail-on (UNKNOWN too, unless --gate-fail-unknown)
  1  the node must not take jobs (a Slurm prolog that exits non-zero drains the node)
  2  could not run (one-line error: and hint: on stderr)"""


class _Stream(Protocol):
    def isatty(self) -> bool: ...
    def fileno(self) -> int: ...


def _width(text: str) -> int:
    """``--width``: an integer column count, within reason."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of columns") from None
    if not MIN_WIDTH <= value <= MAX_WIDTH:
        raise argparse.ArgumentTypeError(f"{value} is not within {MIN_WIDTH}..{MAX_WIDTH}")
    return value


def add_gate_options(parser: argparse.ArgumentParser) -> None:
    """``--fail-on`` and ``--exit-zero``: when findings make the exit code 1."""
    parser.add_argument(
        "--fail-on",
        choices=tuple(FAIL_ON),
        default="critical",
        help="exit 1 when a finding is at least this severe (default: critical)",
    )
    parser.add_argument(
        "--exit-zero",
        action="store_true",
        help="exit 0 whatever the findings (2 still means it could not run)",
    )


def add_terminal_options(parser: argparse.ArgumentParser, *, color: bool = True) -> None:
    """``--width``, ``-q``/``-v`` and (unless ``color=False``) ``--color``."""
    parser.add_argument(
        "--width",
        type=_width,
        metavar="N",
        help=f"text width in columns (default: COLUMNS, the terminal's, or {DEFAULT_WIDTH})",
    )
    loud = parser.add_mutually_exclusive_group()
    loud.add_argument(
        "-q",
        "--quiet",
        dest="verbosity",
        action="store_const",
        const=-1,
        default=0,
        help="text: the verdict and one line per finding; no 'wrote FILE' note",
    )
    loud.add_argument(
        "-v",
        "--verbose",
        dest="verbosity",
        action="store_const",
        const=1,
        help="text: every evidence line, whole (not cut to the width)",
    )
    if color:
        parser.add_argument(
            "--color",
            choices=("auto", "always", "never"),
            default="auto",
            help="terminal colours (auto: NO_COLOR, FORCE_COLOR, then whether a terminal)",
        )


def exit_code(report: Report, args: argparse.Namespace) -> int:
    """1 when a finding reaches ``--fail-on``, 3 for an incomplete check, else 0.

    ``--exit-zero`` gives 0 for both.
    """
    if getattr(args, "exit_zero", False):
        return EXIT_OK
    failing = FAIL_ON[getattr(args, "fail_on", "critical")]
    if any(f.severity.value in failing for f in report.findings):
        return EXIT_FINDINGS
    return EXIT_INCOMPLETE if report.verdict.value == "incomplete" else EXIT_OK


def _clamp(value: int) -> int:
    return max(MIN_WIDTH, min(MAX_WIDTH, value))


def text_width(requested: int | None, stream: _Stream, env: Mapping[str, str] | None = None) -> int:
    """``--width``, else ``COLUMNS``, else the width of the terminal ``stream`` is, else 80."""
    if requested is not None:
        return requested
    env = os.environ if env is None else env
    columns = env.get("COLUMNS", "").strip()
    if columns.isascii() and columns.isdigit() and int(columns) > 0:
        return _clamp(int(columns))
    try:
        if stream.isatty():
            return _clamp(os.get_terminal_size(stream.fileno()).columns)
    except (OSError, ValueError, AttributeError):
        pass  # not a real terminal (a pipe, a file, a test's capture)
    return DEFAULT_WIDTH


def use_color(choice: str, stream: _Stream, env: Mapping[str, str] | None = None) -> bool:
    """Whether to colour text written to ``stream`` (see the module docstring)."""
    if choice != "auto":
        return choice == "always"
    env = os.environ if env is None else env
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR"):
        return True
    if env.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (ValueError, AttributeError):
        return False
