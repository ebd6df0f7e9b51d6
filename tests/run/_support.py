"""Running ``nccl-doctor run`` as a real process, the way a user does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def wrapper_argv(run_dir: Path, cmd: Sequence[str], *opts: str) -> list[str]:
    """``python -m nccl_doctor.run --dir D [opts] -- CMD``."""
    return [sys.executable, "-m", "nccl_doctor.run", "--dir", str(run_dir), *opts, "--", *cmd]


def env(**extra: str) -> dict[str, str]:
    """This environment with the checkout importable and ``extra`` set."""
    out = {**os.environ, **extra}
    out["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT), out.get("PYTHONPATH", "")])
    return out


def start(
    run_dir: Path, cmd: Sequence[str], tmp: Path, *opts: str, **extra: str
) -> tuple[subprocess.Popen[bytes], Path, Path]:
    """Start the wrapper with stdout and stderr to files; returns it and the two files."""
    out, err = tmp / "wrapper.out", tmp / "wrapper.err"
    with out.open("wb") as o, err.open("wb") as e:
        proc = subprocess.Popen(
            wrapper_argv(run_dir, cmd, *opts), stdout=o, stderr=e, env=env(**extra)
        )
    return proc, out, err


def manifest(run_dir: Path) -> dict[str, Any]:
    """The run folder's MANIFEST.json."""
    data: dict[str, Any] = json.loads((run_dir / "MANIFEST.json").read_text())
    return data


def report_json(stderr_text: str) -> dict[str, Any]:
    """The JSON report the wrapper printed to stderr between its own lines."""
    start = stderr_text.index("\n{") + 1
    end = stderr_text.rindex("\n}") + 2
    data: dict[str, Any] = json.loads(stderr_text[start:end])
    return data
