"""The signs the rules read, one table per rule family.

Each module declares its signs with :func:`nccl_doctor.facts.signs.sign`:
an id (``<table>.<name>``), the pattern, and what it tells a rule. Rules
import the sign objects and ask the facts store for their hits
(``facts.seen(SHM_ERROR)``); no module under ``rules/`` holds a pattern or
scans text (``tests/test_rules_read_no_text.py``). Importing this package
imports every table, so :func:`nccl_doctor.facts.signs.registered` lists
them all.
"""

from __future__ import annotations

from nccl_doctor.signs import app, common, context, cuda, driver, gpu, host, launch, nccl, net

__all__ = [
    "app",
    "common",
    "context",
    "cuda",
    "driver",
    "gpu",
    "host",
    "launch",
    "nccl",
    "net",
]
