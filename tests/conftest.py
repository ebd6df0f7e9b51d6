"""Session-wide: the fleet history of every test goes to a temporary folder.

``nccl-doctor run`` records each run by default; tests that run it (as a
process or in-process) must never write the developer's own history
(``~/.local/share/nccl-doctor``) nor a database ``NCCL_DOCTOR_DB`` names.

Under CI (``CI`` set) the property tests draw the same examples every run
(Hypothesis' ``derandomize``): a run that passed once passes again, and a
parser's edge case is found on a developer's machine, where the examples
change each run, not as a flaky CI failure.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import TYPE_CHECKING

from hypothesis import settings

if TYPE_CHECKING:
    import pytest

settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

_DATA: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    """Point XDG_DATA_HOME at a fresh folder and forget NCCL_DOCTOR_DB, for children too."""
    folder = tempfile.mkdtemp(prefix="nccl-doctor-test-data-")
    _DATA.append(folder)
    os.environ["XDG_DATA_HOME"] = folder
    os.environ.pop("NCCL_DOCTOR_DB", None)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove that folder."""
    for folder in _DATA:
        shutil.rmtree(folder, ignore_errors=True)
