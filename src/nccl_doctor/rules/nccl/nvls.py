"""NVLink SHARP (NVLS, NVSwitch multicast) setup failed.

What it means
-------------
On NVSwitch systems (HGX H100/H200/B200, GB200) NCCL 2.17+ offloads
all-reduce to the switches with multicast objects (NVLS). Creating or binding
that multicast memory failed: ``Failed to bind NVLink SHARP (NVLS) Multicast
memory of size N : CUDA error 401``, or a ``Cuda failure`` WARN raised from
``transport/nvls.cc``. The driver could not map multicast memory, which almost
always means the NVSwitch fabric is not in a usable state (Fabric Manager not
running, partition/fabric state not completed, a GPU or switch that needs a
reset) rather than a bug of the job.

Why it matters
--------------
Communicator setup fails with ``unhandled cuda error`` before training starts,
on every job of the machine, until the fabric is repaired or NVLS is turned
off. Some releases (2.17) could also hang with NVLS.

Evidence
--------
NCCL WARNs of ``transport/nvls.cc``; the ``Failed to bind NVLink SHARP``
message (also quoted in PyTorch's ``Last error:``); CUDA 401/999/801 in NVLS
setup; a reporter saying ``NCCL_NVLS_ENABLE=0`` fixed it.

Fix
---
Check the fabric: ``nvidia-smi -q | grep -A3 Fabric`` must show ``State:
Completed`` and ``Status: Success``; ``systemctl status nvidia-fabricmanager``
must be active with the driver's exact version. Restart Fabric Manager or reset
the GPUs/reboot the node. Run with ``NCCL_NVLS_ENABLE=0`` as a workaround and
remove it once the fabric is healthy.
"""

from __future__ import annotations

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.catalogue import points_to
from nccl_doctor.facts.nccl import NcclEvent, NcclWarn, error_chains
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.rules._probe import isolated_transport
from nccl_doctor.rules.base import Rule, first_distinct
from nccl_doctor.rules.nccl._common import machine, seen_in_order, text_of, warn_text
from nccl_doctor.signs.nccl import CUDA_ERROR_QUOTED, NVLS_FAILED
from nccl_doctor.signs.settings import settings_that_worked

RULE = Rule(
    id="nccl.nvls",
    title="NVLink SHARP (NVLS) multicast setup failed",
    severity=Severity.CRITICAL,
    explains=("cuda.unknown_error", "launch.rank_crash", "app.hang"),
)


def check(facts: Facts) -> list[Finding]:
    """Fire on NVLS multicast failures."""
    if probe := _probe(facts):
        return probe
    evidence: list[Cite | Fact] = []
    detail = ""
    for event in facts.of(NcclEvent):
        if event.event == "nvls-bind-failed":
            evidence.append(event)
            info = dict(event.detail)
            if info.get("cuda_error_code"):
                detail = f"CUDA error {info['cuda_error_code']} '{info.get('cuda_error') or ''}'"
    for warn in facts.of(NcclWarn):
        if (warn.file or "").endswith("nvls.cc") or points_to(warn.message, "nccl.nvls"):
            evidence.append(warn)
            if not detail and warn.cuda_error_code is not None:
                detail = f"CUDA error {warn.cuda_error_code} '{warn.cuda_error or ''}'"
    evidence += [c for c in error_chains(facts) if any(f[0].endswith("nvls.cc") for f in c.frames)]
    evidence.extend(h.cite for h in machine(facts, NVLS_FAILED))
    worked = [
        w.cite
        for w in settings_that_worked(facts)
        if w.name == "NCCL_NVLS_ENABLE" and w.value == "0"
    ][:1]
    fix = [
        (
            "Check the NVSwitch fabric: nvidia-smi -q | grep -A3 Fabric must show State "
            "Completed / Status Success on every GPU"
        ),
        (
            "Check Fabric Manager: systemctl status nvidia-fabricmanager (running, same version "
            "as the driver); restart it, or reset the GPUs / reboot the node"
        ),
        (
            "Until the fabric is repaired, run with NCCL_NVLS_ENABLE=0 (NVLS off; slower "
            "all-reduce but it runs); remove it once nvidia-smi shows the fabric healthy"
        ),
    ]
    if evidence:
        cites = first_distinct(evidence, 3)
        if not detail:
            quoted = next(seen_in_order(facts, CUDA_ERROR_QUOTED, cites), None)
            detail = f"CUDA error {quoted.match['code']} '{quoted.match['name']}'" if quoted else ""
        text = detail or warn_text(text_of(cites[0]))[:120]
        return [
            RULE.finding(
                summary=f"NCCL could not set up NVLink SHARP multicast memory ({text}); "
                "the NVSwitch fabric/Fabric Manager is not in a usable state",
                fix=fix,
                evidence=[*cites, *worked],
                ranks=[c.rank for c in cites if isinstance(c, Fact) and c.rank is not None],
                hosts=[c.host for c in cites if isinstance(c, Fact) and c.host],
            )
        ]
    if worked:
        return [
            RULE.finding(
                summary="The job works with NVLink SHARP off (NCCL_NVLS_ENABLE=0): NVLS "
                "multicast on this system is broken",
                fix=fix,
                evidence=worked,
                severity=Severity.WARNING,
                confidence=Confidence.LOW,
            )
        ]
    return []


def _probe(facts: Facts) -> list[Finding]:
    """A probe run whose transport isolation named this transport."""
    return isolated_transport(
        RULE,
        facts,
        "NVLS",
        "NVLink SHARP (NVLS)",
        [
            (
                "Check the fabric manager and NVSwitch state (systemctl "
                "status nvidia-fabricmanager, nvidia-smi -q | grep -i fabric)"
            ),
            "Until fixed, NCCL_NVLS_ENABLE=0 keeps jobs running",
        ],
    )
