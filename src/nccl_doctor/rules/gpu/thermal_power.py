"""GPU clocks are held down by temperature or power.

What it means
-------------
nvidia-smi's clock event (throttle) reasons say why the clocks are below
their maximum. ``HW Slowdown``, ``HW Thermal Slowdown``, ``HW Power Brake
Slowdown`` and ``SW Thermal Slowdown`` mean the board is too hot or its
power supply asserted a brake; the GPU then runs at a fraction of its speed.
``SW Power Cap`` under load only means the GPU reached its power limit,
which is normal. A GPU at or above its slowdown temperature, or the driver's
Xid 54 (auxiliary power not connected), tell the same story.

Why it matters
--------------
In a synchronous job every collective waits for the slowest rank: one hot
or power-braked GPU slows all of them, and looks like a straggler or a
near-timeout hang. A GPU that keeps overheating shuts itself down and falls
off the bus (``gpu.lost``).

Evidence
--------
Active clock event reasons and the temperatures in ``-q``/XML
(``GPU Current Temp`` vs ``GPU Slowdown Temp``), the table's temperature,
Xid 54/162-165. Warnings: slow, not stopped.

Fix
---
Check airflow and fans (passively cooled cards need chassis airflow), the
data-centre inlet temperature, and the power cables / PSU; read
``nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER`` under load and the BMC
logs. ``HW Power Brake`` points at the PSU or the power-brake signal of the
chassis. Do not raise power limits to hide it.
"""

from __future__ import annotations

from nccl_doctor.facts.gpu import Gpu
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.rules.base import Rule
from nccl_doctor.rules.gpu._common import (
    first_of_each,
    gpu_key,
    gpu_name,
    prose_hits,
    unique_gpus,
    xid_summary,
    xids_for,
)
from nccl_doctor.signs.gpu import SAID_OVERHEAT, SLOWDOWN_ACTIVE

RULE = Rule(
    id="gpu.thermal_power",
    title="GPU throttled by temperature or power",
    severity=Severity.WARNING,
    explains=("app.hang",),
)

_BAD = {
    "hw_slowdown": "HW Slowdown",
    "hw_thermal_slowdown": "HW Thermal Slowdown",
    "hw_power_brake_slowdown": "HW Power Brake Slowdown",
    "sw_thermal_slowdown": "SW Thermal Slowdown",
}
#: Below this a "slowdown" figure is a T.Limit margin (Hopper prints -2 C), not a temperature.
_REAL_LIMIT_C = 40
_FIX = [
    "Check airflow, fans and inlet temperature; passively cooled cards need chassis airflow",
    "Check the GPU's power cables and the PSU (HW Power Brake points at the chassis power)",
    "Read nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER under load and the BMC/IPMI logs",
    "Move the job off the GPU until it runs at full clocks; do not raise power limits to hide it",
]


def _gpu(gpu: Gpu) -> list[str]:
    what = [_BAD[r] for r in gpu.clocks_event_reasons or () if r in _BAD]
    if (
        gpu.temperature_c is not None
        and gpu.temperature_slowdown_c
        and gpu.temperature_slowdown_c > _REAL_LIMIT_C
        and gpu.temperature_c >= gpu.temperature_slowdown_c
    ):
        what.append(
            f"{gpu.temperature_c} C, at or over its slowdown {gpu.temperature_slowdown_c} C"
        )
    return what


def check(facts: Facts) -> list[Finding]:
    """Throttle reasons, temperatures over slowdown, power Xids; words as a last resort."""
    findings = []
    for gpu in unique_gpus(facts):
        what = _gpu(gpu)
        if not what:
            continue
        temp = f" at {gpu.temperature_c} C" if gpu.temperature_c is not None else ""
        power = (
            f", {gpu.power_draw_w:.0f} W of {gpu.power_limit_w:.0f} W"
            if gpu.power_draw_w is not None and gpu.power_limit_w
            else ""
        )
        findings.append(
            RULE.finding(
                summary=f"{' '.join(filter(None, (gpu_name(gpu), gpu.name)))}: {', '.join(what)}"
                f"{temp}{power}",
                fix=_FIX,
                evidence=[gpu, gpu.cite_of("clocks_event_reasons"), gpu.cite_of("temperature_c")],
                gpus=[gpu_key(gpu)],
                hosts=[gpu.host] if gpu.host else [],
            )
        )
    events = xids_for(facts, RULE.id)
    if events:
        critical = any(i.severity == "critical" for _, i in events)
        findings.append(
            RULE.finding(
                summary=f"{xid_summary(events)}: {events[0][1].meaning}",
                fix=[events[0][1].action, *_FIX],
                evidence=first_of_each(events),
                severity=Severity.CRITICAL if critical else Severity.WARNING,
                gpus=[e.bus_id for e, _ in events if e.bus_id],
            )
        )
    if not findings and (active := facts.seen(SLOWDOWN_ACTIVE, prose=False)):
        # a pasted piece of -q: the reasons are the GPU's, whose header was left out
        reasons = sorted({h.match["reason"] for h in active})
        findings.append(
            RULE.finding(
                summary=(
                    f"nvidia-smi -q shows {', '.join(reasons)} active: the clocks are held "
                    "down in hardware (power brake or temperature), and every collective waits "
                    "for that GPU"
                ),
                fix=_FIX,
                evidence=[h.cite for h in active[:3]],
                confidence=Confidence.MEDIUM,
            )
        )
    if not findings:
        said = prose_hits(facts, SAID_OVERHEAT)
        if said:
            findings.append(
                RULE.finding(
                    summary=(
                        "The report says the GPU overheats or throttles: "
                        f'"{said[0].cite.text.strip()[:160]}"'
                    ),
                    fix=["Paste nvidia-smi -q -d PERFORMANCE,TEMPERATURE under load", *_FIX],
                    evidence=[h.cite for h in said[:2]],
                    confidence=Confidence.LOW,
                )
            )
    return findings
