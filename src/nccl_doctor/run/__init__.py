"""``nccl-doctor run``: wrap a launch command, keep its evidence, diagnose a failure."""

from __future__ import annotations

from nccl_doctor.run.runner import run

__all__ = ["run"]
