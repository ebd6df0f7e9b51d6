"""What the fleet's command-line options name before any history is opened: the variable
that names the database, the kinds of run recorded and the taints a plan may set. Kept apart
from :mod:`.db`, :mod:`.store` and :mod:`.actions`, so that building the command line loads
none of them (nor ``sqlite3``)."""

from __future__ import annotations

#: The environment variable naming the history database.
ENV = "NCCL_DOCTOR_DB"
#: The commands whose results are recorded.
KINDS = ("diagnose", "check", "probe", "run")
#: The Kubernetes taint effects a drain plan may set (``gate plan --taint-effect``).
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
