"""The rung of the repair ladder for a finding, from what its own evidence shows.

A finding names its id; the facts it cites say more: which Xid, whether a row
remap is pending or has failed, what NVML's recovery action is. Those are the
*mechanisms* (keys of :data:`~nccl_doctor.knowledge.repair_ladder.MECHANISMS`).
The rung of a finding is the biggest step among its mechanisms' rungs, else
its Xids' NVIDIA buckets, else its id's row; the table is in
:mod:`nccl_doctor.knowledge.repair_ladder`.
"""

from __future__ import annotations

from dataclasses import dataclass

from nccl_doctor.facts.gpu import Gpu
from nccl_doctor.facts.host import KernelGpuMessage, XidEvent
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Finding
from nccl_doctor.knowledge.repair_ladder import (
    BY_ID,
    JOB,
    MECHANISMS,
    XID_BUCKETS,
    XID_CAUSES,
    Rung,
)
from nccl_doctor.knowledge.xid import xid_info

#: The Gpu fields that show a memory mechanism, and its key; read for gpu.ecc findings only.
_ECC_FIELDS = (
    ("remapped_rows_failure", "ecc:remap_failed"),
    ("remapped_rows_pending", "ecc:remap_pending"),
    ("retired_pages_pending", "ecc:retire_pending"),
    ("ecc_volatile_uncorrected", "ecc:volatile_uncorrectable"),
)
#: Findings about a GPU's state whose cited GPU may carry NVML's reset/recovery flags.
_STATE_IDS = frozenset({"gpu.lost", "gpu.ecc", "gpu.xid", "gpu.nvlink"})
_GSP = frozenset({"gsp_timeout", "gsp_heartbeat_timeout", "gsp_error"})


@dataclass(frozen=True, slots=True)
class Choice:
    """The rung chosen for a finding and the key that chose it (``xid:79``, ``gpu.ecc``)."""

    rung: Rung
    basis: str


def _recovery(action: str) -> str | None:
    """NVML's recovery action text (``Reset``, ``Drain and Reset``...) as a mechanism key."""
    text = action.strip().lower()
    if text in ("", "n/a"):
        return None
    for words, key in (
        ("drain and reset", "nvml:drain_and_reset"),
        ("drain p2p", "nvml:drain_p2p"),
        ("reboot", "nvml:reboot"),
        ("reset", "nvml:reset"),
        ("none", "nvml:none"),
    ):
        if words in text:
            return key
    return None


def _gpu_keys(finding: Finding, gpu: Gpu, cited: set[tuple[str, int]]) -> list[str]:
    keys: list[str] = []
    if finding.id == "gpu.ecc":
        for field, key in _ECC_FIELDS:
            at = gpu.cite_of(field)
            if getattr(gpu, field) and (at.source, at.line) in cited:
                keys.append(key)
    if gpu.reset_required:
        keys.append("gpu:reset_required")
    if gpu.recovery_action and (action := _recovery(gpu.recovery_action)):
        keys.append(action)
    return keys


def mechanisms(finding: Finding, facts: Facts | None) -> list[str]:
    """The mechanism keys the finding's cited evidence shows, in evidence order."""
    if facts is None:
        return []
    cited = {(c.source, c.line) for c in finding.evidence}
    keys: list[str] = []
    for event in facts.of(XidEvent):
        if (event.cite.source, event.cite.line) in cited:
            codes = (event.xid, event.caused_by_xid)
            keys.extend(f"xid:{code}" for code in codes if code is not None)
    for message in facts.of(KernelGpuMessage):
        if (message.cite.source, message.cite.line) in cited:
            if message.kind == "fallen_off_bus":
                keys.append("kernel:fallen_off_bus")
            elif message.kind in _GSP:
                keys.append("kernel:gsp")
    if finding.id in _STATE_IDS:
        for gpu in facts.of(Gpu):
            if (gpu.cite.source, gpu.cite.line) in cited:
                keys.extend(_gpu_keys(finding, gpu, cited))
    return list(dict.fromkeys(keys))


def _rung_of(key: str) -> Rung | None:
    if key in MECHANISMS:
        return MECHANISMS[key]
    if key.startswith("xid:") and (info := xid_info(key[4:])):
        if info.nvidia_action in XID_BUCKETS:
            return XID_BUCKETS[info.nvidia_action]
        return XID_CAUSES.get(info.likely_cause)
    return None


def choose(finding: Finding, facts: Facts | None) -> Choice:
    """The rung for ``finding``: the biggest step its mechanisms ask for, else its id's."""
    found = [(rung, key) for key in mechanisms(finding, facts) if (rung := _rung_of(key))]
    if found:
        rung, key = max(found, key=lambda pair: (pair[0].step, pair[0].then or 0))
        default = BY_ID.get(finding.id)
        if default is not None and default.status and not rung.status:
            rung = Rung(rung.step, rung.reason, rung.then, default.status)
        return Choice(rung, key)
    if finding.id in BY_ID:
        return Choice(BY_ID[finding.id], finding.id)
    return Choice(JOB, "job")
