"""``python -m nccl_doctor.probe``: the probe entry for torchrun and srun (same options)."""

from __future__ import annotations

import argparse
import sys

from nccl_doctor.errors import DoctorError
from nccl_doctor.probe.cli import EXIT_USAGE, add_parser, cmd


def main(argv: list[str] | None = None) -> int:
    """Parse the probe's options and run it."""
    root = argparse.ArgumentParser(prog="python -m nccl_doctor.probe")
    sub = root.add_subparsers(dest="command")
    add_parser(sub)
    args = root.parse_args(["probe", *(sys.argv[1:] if argv is None else argv)])
    try:
        return cmd(args)
    except DoctorError as exc:
        hint = f" (hint: {exc.hint})" if exc.hint else ""
        sys.stderr.write(f"error: {exc.message}{hint}\n")
        return EXIT_USAGE


if __name__ == "__main__":
    raise SystemExit(main())
