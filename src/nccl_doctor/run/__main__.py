"""``python -m nccl_doctor.run [--dir D] -- CMD``: the run subcommand on its own."""

from __future__ import annotations

import argparse
import sys

from nccl_doctor.errors import DoctorError
from nccl_doctor.run.cli import add_parser, cmd


def main(argv: list[str] | None = None) -> int:
    """Parse ``run``'s arguments and run the job."""
    root = argparse.ArgumentParser(prog="nccl-doctor")
    add_parser(root.add_subparsers(dest="command"))
    args = root.parse_args(["run", *(sys.argv[1:] if argv is None else argv)])
    try:
        return cmd(args)
    except DoctorError as exc:
        hint = f" (hint: {exc.hint})" if exc.hint else ""
        sys.stderr.write(f"error: {exc.message}{hint}\n")
        return 2


if __name__ == "__main__":
    sys.exit(main())
