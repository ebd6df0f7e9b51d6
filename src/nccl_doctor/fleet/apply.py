"""``gate plan --apply``: run the plan's commands, each resolved on PATH, never through a shell.

Every tool a target needs (``scontrol`` for Slurm, ``kubectl`` for
Kubernetes) is found before anything runs: a missing one is a one-line
error and nothing is changed. Each command runs under a deadline through the
one runner of commands (:func:`nccl_doctor.evidence.live.run_command`); its
exit status and last error line are reported.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass

from nccl_doctor.errors import UsageError
from nccl_doctor.evidence.live import run_command
from nccl_doctor.fleet.actions import Command, Plan

TOOLS = {"slurm": "scontrol", "k8s": "kubectl"}


@dataclass(frozen=True, slots=True)
class Ran:
    """What one command did: its exit status (``None``: it did not run to the end) and words."""

    command: Command
    tool: str
    returncode: int | None
    message: str

    @property
    def ok(self) -> bool:
        """Whether the command exited 0."""
        return self.returncode == 0


def resolve(plan: Plan, targets: frozenset[str], path: str | None = None) -> dict[str, str]:
    """The full path of each tool the plan's commands for ``targets`` need."""
    found: dict[str, str] = {}
    for target in sorted({c.target for c in plan.commands if c.target in targets}):
        tool = TOOLS[target]
        where = shutil.which(tool, path=path)
        if where is None:
            other = " or ".join(sorted(set(TOOLS) - {target}))
            raise UsageError(
                f"{tool} is not on PATH; nothing was applied",
                f"run where {tool} works, or apply only --target {other}",
            )
        found[target] = where
    return found


def apply(
    plan: Plan, targets: frozenset[str], *, path: str | None = None, timeout_s: float = 30.0
) -> list[Ran]:
    """Run the plan's commands for ``targets``, in order; every one runs, whatever the last did."""
    tools = resolve(plan, targets, path)
    ran: list[Ran] = []
    for command in plan.commands:
        if command.target not in targets:
            continue
        tool = tools[command.target]
        outcome = run_command([tool, *command.argv[1:]], timeout_s, what=command.line)
        ran.append(Ran(command, tool, outcome.returncode, outcome.message))
    return ran
