"""Rules: facts -> findings, one module per id of the diagnosis catalogue.

``CATALOGUE`` lists the ids in the order of ``docs/diagnoses.md``, which is
generated from these modules' ``RULE`` and docstrings
(``scripts/gen_diagnoses.py``); tests keep this list, the rule files, their
docs and that page identical.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import Protocol, cast

from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Finding
from nccl_doctor.rules.base import Rule

CATALOGUE: tuple[str, ...] = (
    "gpu.contention",
    "gpu.oom",
    "gpu.xid",
    "gpu.ecc",
    "gpu.lost",
    "gpu.pcie_degraded",
    "gpu.nvlink",
    "gpu.thermal_power",
    "gpu.mig",
    "gpu.compute_mode",
    "gpu.fabric_manager",
    "driver.cuda_mismatch",
    "driver.version_mismatch",
    "driver.uvm",
    "driver.container",
    "driver.wsl",
    "cuda.device_assert",
    "cuda.illegal_access",
    "cuda.unknown_error",
    "cuda.device_visibility",
    "nccl.duplicate_gpu",
    "nccl.p2p",
    "nccl.nvls",
    "nccl.host_identity",
    "nccl.shm",
    "nccl.version_mismatch",
    "nccl.env",
    "nccl.internal",
    "net.socket_interface",
    "net.unreachable",
    "net.ib_link",
    "net.ib_config",
    "net.ib_transport",
    "net.gdr",
    "launch.port_in_use",
    "launch.rendezvous",
    "launch.duplicate_launch",
    "launch.rank_crash",
    "app.param_mismatch",
    "app.collective_mismatch",
    "app.hang",
    "app.unused_params",
    "host.resources",
)


class _Check(Protocol):
    def __call__(self, facts: Facts) -> object: ...


@dataclass(frozen=True, slots=True)
class LoadedRule:
    """A rule module, loaded: its metadata, its doc, its check."""

    rule: Rule
    doc: str
    module: ModuleType

    def check(self, facts: Facts) -> list[Finding]:
        """Run the rule's check over the facts."""
        result = cast("_Check", self.module.check)(facts)
        return list(cast("list[Finding]", result))


def module_name(rule_id: str) -> str:
    """``gpu.contention`` -> ``nccl_doctor.rules.gpu.contention``."""
    return f"{__name__}.{rule_id}"


@cache
def load_rules() -> tuple[LoadedRule, ...]:
    """Import every rule of the catalogue, in catalogue order."""
    loaded = []
    for rule_id in CATALOGUE:
        module = importlib.import_module(module_name(rule_id))
        rule = module.RULE
        if not isinstance(rule, Rule) or rule.id != rule_id:
            msg = f"{module.__name__}.RULE must be Rule(id={rule_id!r})"
            raise TypeError(msg)
        loaded.append(LoadedRule(rule, (module.__doc__ or "").strip(), module))
    return tuple(loaded)


def get_rule(rule_id: str) -> LoadedRule | None:
    """The loaded rule of ``rule_id``, or ``None`` when the id is not in the catalogue."""
    return next((r for r in load_rules() if r.rule.id == rule_id), None)
