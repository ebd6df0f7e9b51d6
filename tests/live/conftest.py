"""Fixtures of the live tests."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest

from tests.live import fake_nvml


@pytest.fixture
def fake() -> Iterator[ModuleType]:
    """The fake pynvml; the scenario is reset afterwards."""
    yield fake_nvml
    fake_nvml.use("")
