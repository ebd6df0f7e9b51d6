"""Fleet memory: every result recorded per node and GPU, and read back over time.

:func:`open_store` opens the history (SQLite in the user's data folder by
default, PostgreSQL by URL: :mod:`nccl_doctor.fleet.db`); :class:`Store`
records JSON reports and answers the history's questions. This package sits
beside the renderers: it reads reports (their JSON), never rules.
"""

from __future__ import annotations

from nccl_doctor.fleet.db import FleetError
from nccl_doctor.fleet.store import Store, StoredFinding, StoredGpu, StoredRun, open_store

__all__ = ["FleetError", "Store", "StoredFinding", "StoredGpu", "StoredRun", "open_store"]
