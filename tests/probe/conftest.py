"""The probe tests run real worker processes on the CPU with gloo; skip without torch."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("torch")
os.environ.setdefault("PYTHONWARNINGS", "ignore")


def cpu_options(devices: int, **kw: object) -> object:
    """Runner options for ``devices`` virtual CPU devices with a short deadline."""
    from nccl_doctor.probe.runner import Options

    kw.setdefault("timeout_s", 20.0)
    return Options(kind="cpu", devices=list(range(devices)), **kw)  # type: ignore[arg-type]
