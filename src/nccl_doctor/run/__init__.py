"""``nccl-doctor run``: wrap a launch command, keep its evidence, diagnose a failure."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nccl_doctor.run.runner import run

__all__ = ["run"]


def __getattr__(name: str) -> Any:
    """``run`` on first use: the CLI imports ``nccl_doctor.run.cli`` for every command, and the
    runner (subprocesses, signals, watchers) is for ``nccl-doctor run`` alone."""
    if name == "run":
        from nccl_doctor.run.runner import run  # noqa: PLC0415

        return run
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
