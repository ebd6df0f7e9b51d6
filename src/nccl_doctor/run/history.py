"""Recording a ``run`` in the fleet history (on by default; ``--no-record`` turns it off).

The history is opened once before the job, only to say at once when it
cannot be (the job then runs unrecorded), and again after it to record the
diagnosis of the run folder. Nothing here can change the job's exit status
or stop its output: every failure is one line on stderr.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from nccl_doctor.run.tee import note

if TYPE_CHECKING:
    from nccl_doctor.report import Report


class RunHistory:
    """Where a run is recorded, and under which job id."""

    def __init__(self, db: str | None = None, job: str | None = None) -> None:
        self.db, self.job = db, job
        self.on = True
        self.shown = ""

    def _warn(self, err: TextIO, what: str, exc: Exception) -> None:
        message = getattr(exc, "message", str(exc))
        hint = getattr(exc, "hint", "")
        note(err, f"warning: {what}: {message}" + (f" (hint: {hint})" if hint else ""))

    def check(self, err: TextIO) -> None:
        """Open the history once now; when it cannot be, say so and record nothing later."""
        from nccl_doctor.fleet import FleetError, open_store  # noqa: PLC0415

        try:
            with open_store(self.db) as store:
                self.shown = store.target.shown
        except FleetError as exc:
            self.on = False
            self._warn(err, "this run will not be recorded", exc)

    def record(self, report: Report, folder: Path, err: TextIO) -> int | None:
        """Record the run folder's diagnosis; its run id, or ``None`` (said on stderr)."""
        if not self.on:
            return None
        from nccl_doctor.fleet import FleetError, open_store  # noqa: PLC0415
        from nccl_doctor.fleet.cli import scheduler_job  # noqa: PLC0415
        from nccl_doctor.redact import scrub  # noqa: PLC0415
        from nccl_doctor.render.report_json import report_json  # noqa: PLC0415

        job = self.job or scheduler_job() or folder.name
        try:
            with open_store(self.db) as store:
                run_id = store.record("run", report_json(report, scrub), job=job)
                self.shown = store.target.shown
        except FleetError as exc:
            self._warn(err, "not recorded", exc)
            return None
        note(err, f"recorded as run {run_id} (job {job}) in {self.shown}")
        return run_id
