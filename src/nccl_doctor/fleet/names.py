"""What the fleet's command-line options name before any history is opened: the variable
that names the database and the kinds of run recorded. Kept apart from :mod:`.db` and
:mod:`.store`, so that building the command line loads neither (nor ``sqlite3``)."""

from __future__ import annotations

#: The environment variable naming the history database.
ENV = "NCCL_DOCTOR_DB"
#: The commands whose results are recorded.
KINDS = ("diagnose", "check", "probe", "run")
