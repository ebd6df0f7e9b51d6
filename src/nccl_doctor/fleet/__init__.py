"""Fleet memory: every result recorded per node and GPU, and read back over time.

:func:`open_store` opens the history (SQLite in the user's data folder by
default, PostgreSQL by URL: :mod:`nccl_doctor.fleet.db`); :class:`Store`
records JSON reports and answers the history's questions. This package sits
beside the renderers: it reads reports (their JSON), never rules. What only
reading needs (:mod:`nccl_doctor.fleet.read`) loads when first used, so that
recording stays cheap. Beside the store: ``--against`` references
(:mod:`nccl_doctor.fleet.against`) and the scheduler's actions
(:mod:`nccl_doctor.fleet.actions`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nccl_doctor.fleet.db import FleetError
    from nccl_doctor.fleet.read import StoredFinding, StoredGpu, StoredRun
    from nccl_doctor.fleet.store import Store, open_store

_READ = ("StoredFinding", "StoredGpu", "StoredRun")
_STORE = ("Store", "open_store")


def __getattr__(name: str) -> Any:
    # each loaded when first used: the command line's options (fleet.cli) need none of them
    if name in _READ:
        from nccl_doctor.fleet import read  # noqa: PLC0415

        return getattr(read, name)
    if name in _STORE:
        from nccl_doctor.fleet import store  # noqa: PLC0415

        return getattr(store, name)
    if name == "FleetError":
        from nccl_doctor.fleet import db  # noqa: PLC0415

        return db.FleetError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["FleetError", "Store", "StoredFinding", "StoredGpu", "StoredRun", "open_store"]
