"""Helpers of the live tests: where the fake NVML is, and a child environment that finds it."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FAKE = "tests.live.fake_nvml"


def child_env(scenario: str) -> dict[str, str]:
    """os.environ for an NVML child that imports the fake under ``scenario``."""
    path = os.environ.get("PYTHONPATH", "")
    return {
        **os.environ,
        "PYTHONPATH": f"{REPO}{os.pathsep}{path}" if path else str(REPO),
        "FAKE_NVML_SCENARIO": scenario,
    }
