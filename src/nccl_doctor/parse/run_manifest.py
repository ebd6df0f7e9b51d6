"""The ``run-manifest`` kind: the MANIFEST.json of an ``nccl-doctor run`` folder.

It starts with ``{"nccl_doctor_run": 1,`` and holds one key per line. What it
adds to the job's own output is how the job ended: the exit status the
wrapper saw, as a :class:`~nccl_doctor.facts.run.WorkerExit` of source
``wrapper`` cited at the ``exit_code`` line, so a failed job with no error
line is still a failure (inconclusive, not healthy).
"""

from __future__ import annotations

import json
import signal
from collections.abc import Sequence

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.run import WorkerExit
from nccl_doctor.parse._values import cite
from nccl_doctor.parse.base import BlockParser

_HEAD = '{"nccl_doctor_run"'


class RunManifestParser(BlockParser):
    """Parses the MANIFEST.json an ``nccl-doctor run`` writes."""

    kind = "run-manifest"
    anchors = (_HEAD,)
    max_lines = 500

    def starts(self, line: Line) -> bool:
        """The ``{"nccl_doctor_run": 1,`` first line."""
        return line.text.startswith(_HEAD)

    def accepts(self, line: Line, block: Sequence[Line]) -> bool:
        """Every line up to the closing ``}``."""
        return bool(block) and block[-1].text.rstrip() != "}"

    def parse(self, block: Sequence[Line]) -> list[Fact]:
        """The job's exit, when it did not end with status 0."""
        try:
            data = json.loads("\n".join(line.text for line in block))
        except (ValueError, RecursionError):
            return []
        code = data.get("exit_code") if isinstance(data, dict) else None
        if not isinstance(code, int) or isinstance(code, bool) or code == 0:
            return []
        at = next((ln for ln in block if ln.text.lstrip().startswith('"exit_code"')), block[0])
        number = code - 128 if 128 < code < 128 + 65 else None
        name = None
        if number is not None:
            try:
                name = signal.Signals(number).name
            except ValueError:
                name = None
        return [
            WorkerExit(
                cite=cite(at),
                source="wrapper",
                exitcode=code,
                signal_number=number if name else None,
                signal_name=name,
                binary=str(data.get("launcher")) if data.get("launcher") else None,
            )
        ]
