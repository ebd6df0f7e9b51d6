"""Which flight-recorder variables ``run`` sets, by the job's torch (read without importing it)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from nccl_doctor.run.setup import (
    child_env,
    flight_recorder_env,
    job_python,
    job_torch,
    launcher_of,
    torch_version_tuple,
)

OLD = ("TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE")


@pytest.mark.parametrize(
    ("version", "old"),
    [
        ("2.13.0+cpu", ()),
        ("2.11.0+cu130", ()),  # the captured H200 job warned about both old names
        ("2.10.1", ("TORCH_NCCL_TRACE_BUFFER_SIZE",)),  # ProcessGroupNCCL still gates on it
        ("2.6.0", OLD),
        (None, OLD),  # unknown: a warning costs less than a dump that never lands
    ],
)
def test_new_names_always_old_only_where_torch_needs_them(
    version: str | None, old: tuple[str, ...]
) -> None:
    env = flight_recorder_env("/runs/x", torch_version_tuple(version))
    assert env["TORCH_FR_BUFFER_SIZE"] == "2000"
    assert env["TORCH_FR_DUMP_TEMP_FILE"] == "/runs/x/fr_rank"
    assert env["TORCH_NCCL_DUMP_ON_TIMEOUT"] == "1"  # never renamed
    assert tuple(k for k in OLD if k in env) == old


def test_user_settings_win(tmp_path: Path) -> None:
    env, added = child_env(tmp_path, {"TORCH_FR_BUFFER_SIZE": "50"}, (2, 13))
    assert env["TORCH_FR_BUFFER_SIZE"] == "50"
    assert "TORCH_FR_BUFFER_SIZE" not in added


def _script(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_job_python_follows_launcher_shebangs(tmp_path: Path) -> None:
    python = _script(tmp_path / "python3.12", "#!/bin/sh\n")
    _script(tmp_path / "torchrun", f"#!{python}\nimport sys\n")
    _script(tmp_path / "srun", '#!/bin/sh\nexec "$@"\n')
    path = str(tmp_path)
    assert job_python(["torchrun", "--nproc-per-node", "8", "t.py"], path) == str(python)
    assert job_python(["srun", "-N", "2", "python3.12", "t.py"], path) == str(python)
    assert job_python(["t.py"], path) is None


def test_job_torch_reads_the_metadata_of_this_interpreter() -> None:
    torch = pytest.importorskip("torch")
    import sys

    python, version = job_torch([sys.executable, "train.py"], os.environ)
    assert python == sys.executable
    assert version == torch.__version__


def test_launcher_is_seen_through_env() -> None:
    assert launcher_of(["env", "-i", "WD_TIMEOUT_S=60", "torchrun", "w.py"]) == "torchrun"
    assert launcher_of(["env"]) is None
