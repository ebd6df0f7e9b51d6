"""What ``nccl-doctor run`` prepares before the job starts: the run folder and the environment.

Only diagnostics that cost little are turned on, and never over the user's
own settings: NCCL warnings to one file per process, the PyTorch flight
recorder with a dump on timeout, torchelastic error files.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from nccl_doctor.errors import UsageError
from nccl_doctor.evidence.envfile import env_file
from nccl_doctor.evidence.live import run_command
from nccl_doctor.redact import redact_data, safe_line

#: The launchers the wrapper knows by name (anything else still runs).
LAUNCHERS = {
    "torchrun": "torchrun",
    "torch.distributed.run": "torchrun",
    "torch.distributed.launch": "torchrun",
    "srun": "srun",
    "deepspeed": "deepspeed",
    "accelerate": "accelerate",
    "python": "python",
}
#: Default parent of run folders.
RUNS_DIR = "nccl-doctor-runs"


def launcher_of(cmd: Sequence[str]) -> str | None:
    """Which launcher ``cmd`` starts: ``torchrun``, ``srun``, ``python`` ... or ``None``."""
    if not cmd:
        return None
    name = Path(cmd[0]).name
    if name == "env":  # env VAR=value ... CMD: the launcher is CMD's
        rest = list(cmd[1:])
        while rest and (rest[0].startswith("-") or "=" in rest[0]):
            rest.pop(0)
        return launcher_of(rest)
    if name.startswith("python"):
        if "-m" in cmd[1:]:
            module = cmd[cmd.index("-m") + 1] if cmd.index("-m") + 1 < len(cmd) else ""
            return LAUNCHERS.get(module, "python")
        return "python"
    return LAUNCHERS.get(name)


def default_run_dir(now: float | None = None) -> Path:
    """``./nccl-doctor-runs/<timestamp>-<pid>``."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    return Path(RUNS_DIR) / f"{stamp}-{os.getpid()}"


#: The file whose exclusive creation claims a run folder for one run.
CONSOLE_LOG = "console.log"


def _claim(folder: Path) -> int:
    """Create ``console.log`` with O_EXCL (atomic against a concurrent run): its fd."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
    return os.open(folder / CONSOLE_LOG, flags, 0o644)


def claim_run_dir(run_dir: str | Path | None) -> tuple[Path, int]:
    """The run folder, claimed for this run alone, and its open ``console.log``.

    ``--dir D``: created if missing; an existing folder must be empty. Two runs
    never share a folder: the claim is the exclusive creation of
    ``console.log``, so of two concurrent runs into one folder exactly one
    starts and the other stops with an error. Without ``--dir`` each run gets
    a fresh ``nccl-doctor-runs/<timestamp>-<pid>`` (a suffix if taken).
    """
    hint = "give a new --dir, or leave --dir out to get a fresh timestamped folder"
    if run_dir is None:
        base = default_run_dir()
        try:
            base.parent.mkdir(parents=True, exist_ok=True)
            for n in range(1000):
                folder = base if n == 0 else base.with_name(f"{base.name}-{n}")
                try:
                    folder.mkdir()
                except FileExistsError:
                    continue
                return folder, _claim(folder)
        except OSError as exc:
            raise UsageError(
                f"cannot create a run folder under {base.parent}: {exc.strerror or exc}",
                "pick a writable place with --dir",
            ) from exc
        raise UsageError(f"no free run folder name under {base.parent}", hint)
    folder = Path(run_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = _claim(folder)
    except FileExistsError as exc:
        raise UsageError(
            f"{folder} already holds a run (or another run is starting there)", hint
        ) from exc
    except OSError as exc:
        raise UsageError(
            f"cannot use {folder} as the run folder: {exc.strerror or exc}",
            "pick a writable --dir",
        ) from exc
    others = sorted(p.name for p in folder.iterdir() if p.name != CONSOLE_LOG)
    if others:
        os.close(fd)
        (folder / CONSOLE_LOG).unlink(missing_ok=True)
        shown = ", ".join(others[:3]) + (" ..." if len(others) > 3 else "")
        raise UsageError(f"{folder} is not empty ({shown}); a run needs a folder of its own", hint)
    return folder, fd


#: The first torch whose flight recorder reads TORCH_FR_BUFFER_SIZE and whose dump
#: writer reads TORCH_FR_DUMP_TEMP_FILE (the TORCH_NCCL_* names became deprecated
#: aliases that print a warning on every rank when set).
FR_NEW_NAMES = (2, 8)
#: The first torch whose ProcessGroupNCCL gates its dumps on a default buffer of 2000:
#: before it, it reads only TORCH_NCCL_TRACE_BUFFER_SIZE (default 0) and dumps nothing
#: without it.
PG_DEFAULT_BUFFER = (2, 11)
#: The prefix of the flight-recorder dump files in the run folder (``fr_rank<N>``).
FR_PREFIX = "fr_rank"
_VERSION = re.compile(r"^(\d{1,4})\.(\d{1,4})")


def torch_version_tuple(text: str | None) -> tuple[int, int] | None:
    """``(major, minor)`` of a torch version string (``2.11.0+cu130``), else ``None``."""
    m = _VERSION.match(text.strip()) if text else None
    return (int(m.group(1)), int(m.group(2))) if m else None


def flight_recorder_env(folder: str, torch: tuple[int, int] | None) -> dict[str, str]:
    """The flight-recorder switches for the job's torch (``None``: not known).

    The new names (``TORCH_FR_*``) always; an old name only where the job's
    torch needs it: ``TORCH_NCCL_TRACE_BUFFER_SIZE`` before 2.11 (it gates
    ProcessGroupNCCL's dumps), ``TORCH_NCCL_DEBUG_INFO_TEMP_FILE`` before 2.8.
    On an unknown torch both old names are set too: a deprecation warning is
    a smaller loss than a dump that never lands in the run folder.
    ``TORCH_NCCL_DUMP_ON_TIMEOUT`` was not renamed.
    """
    env = {
        "TORCH_FR_BUFFER_SIZE": "2000",
        "TORCH_FR_DUMP_TEMP_FILE": f"{folder}/{FR_PREFIX}",
        "TORCH_NCCL_DUMP_ON_TIMEOUT": "1",
    }
    if torch is None or torch < PG_DEFAULT_BUFFER:
        env["TORCH_NCCL_TRACE_BUFFER_SIZE"] = "2000"
    if torch is None or torch < FR_NEW_NAMES:
        env["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"] = f"{folder}/{FR_PREFIX}"
    return env


def diagnostic_env(run_dir: Path, torch: tuple[int, int] | None = None) -> dict[str, str]:
    """The variables the wrapper sets where the user has not (flight recorder: see above).

    They are recorded in the run's MANIFEST.json, not in its environment
    files, so the diagnosis judges the user's settings, not the wrapper's.
    """
    folder = str(run_dir.resolve())
    return {
        "NCCL_DEBUG": "WARN",
        "NCCL_DEBUG_FILE": f"{folder}/nccl.%h.%p.log",
        **flight_recorder_env(folder, torch),
        "TORCHELASTIC_ERROR_FILE": f"{folder}/error.json",
    }


def child_env(
    run_dir: Path, base: Mapping[str, str], torch: tuple[int, int] | None = None
) -> tuple[dict[str, str], dict[str, str]]:
    """The job's environment and the variables the wrapper added to it."""
    added = {k: v for k, v in diagnostic_env(run_dir, torch).items() if k not in base}
    return {**base, **added}, added


_PYTHON = re.compile(r"^python(?:\d+(?:\.\d+)?)?$")
#: Reads torch's version from package metadata in the job's interpreter (no torch import).
_ASK = "import importlib.metadata as m\ntry:\n print(m.version('torch'))\nexcept Exception:\n pass"


def job_python(cmd: Sequence[str], path: str | None) -> str | None:
    """The Python interpreter the job runs: a ``python`` in CMD, or the shebang of its script.

    ``torchrun``, ``deepspeed``, ``accelerate`` are console scripts whose
    first line names their interpreter; launchers in front (``srun -N 2``)
    are skipped. ``None`` when no argument before the script leads to one.
    """
    for arg in cmd[:32]:
        if arg.startswith("-") or "=" in arg:
            continue
        found = shutil.which(arg, path=path)
        if found is None:
            if arg.endswith(".py"):
                return None
            continue
        if _PYTHON.match(Path(found).name):
            return found
        shebang = _shebang(Path(found))
        if shebang:
            return shebang
    return None


def _shebang(script: Path) -> str | None:
    try:
        with script.open("rb") as handle:
            head = handle.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if words and Path(words[0]).name == "env":
        words = [w for w in words[1:] if not w.startswith("-")]
        found = shutil.which(words[0]) if words else None
        words = [found] if found else []
    if words and _PYTHON.match(Path(words[0]).name):
        return words[0]
    return None


def job_torch(
    cmd: Sequence[str], env: Mapping[str, str], timeout_s: float = 10.0
) -> tuple[str | None, str | None]:
    """``(interpreter, torch version)`` of the job from package metadata; ``None``: unknown."""
    python = job_python(cmd, env.get("PATH"))
    if python is None:
        return None, None
    out = run_command([python, "-c", _ASK], timeout_s, env=env, what="torch version")
    version = out.text.strip().splitlines()[-1] if out.ok and out.text.strip() else None
    return python, version


def command_text(cmd: Sequence[str]) -> str:
    """The command as a shell line, secrets redacted."""
    return safe_line(shlex.join(cmd))


def env_text(env: Mapping[str, str]) -> str:
    """``NAME=value`` lines, sorted, secrets redacted, forged lines impossible (``envfile``)."""
    return env_file(env)


#: The first line of a run's MANIFEST.json, by which diagnose recognises it.
MANIFEST_HEAD = '{"nccl_doctor_run": 1,'


def write_manifest(path: Path, data: Mapping[str, Any]) -> None:
    """The run's MANIFEST.json: a marker first line, then one key per line (each cited).

    Every string in it is redacted (:func:`redact_data`): the folder is made to be shared.
    """
    lines = [MANIFEST_HEAD]
    items = sorted(redact_data(dict(data)).items())
    for i, (key, value) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        lines.append(f" {json.dumps(key)}: {json.dumps(value, sort_keys=True)}{comma}")
    lines.append("}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
