"""The worker side: one process per rank (or per GPU), started fresh for every launch.

A worker receives a *spec* (a plain dict), sets the environment it names
(``NCCL_P2P_DISABLE=1``...) before torch loads NCCL, runs its task and sends
messages to the parent over its own pipe:

* ``{"t": "enter", "step": S}`` before each step: the parent's watchdog
  gives the step its deadline from this moment;
* ``{"t": "step", "step": S, "ok": ..., "error": ..., "seconds": ..., ...}``;
* ``{"t": "bw", "kind": ..., "size_bytes": ..., "seconds": ..., ...}``;
* ``{"t": "end"}`` when the task is done.

Fault injection, for the tests and for checking the tool: the spec's
``inject`` (or ``NCCL_DOCTOR_PROBE_INJECT``) holds items ``KIND@DEVICE[:STEP][!VAR]``,
comma-separated: ``corrupt@3`` makes device 3 contribute wrong values,
``hang@2:all_reduce`` makes device 2 sleep in that step, ``fail@1:kernel``
raises there; ``!VAR`` keeps the fault off when the environment sets ``VAR=1``
(a fault that a transport switch cures).
"""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

INJECT_ENV = "NCCL_DOCTOR_PROBE_INJECT"


@dataclass(frozen=True, slots=True)
class Fault:
    """One injected fault."""

    kind: str
    device: int
    step: str | None = None
    unless: str | None = None


def parse_inject(text: str | None) -> tuple[Fault, ...]:
    """Faults of an inject string; malformed items are ignored."""
    out: list[Fault] = []
    for raw in (text or "").split(","):
        item, _, unless = raw.strip().partition("!")
        kind, _, rest = item.partition("@")
        dev, _, step = rest.partition(":")
        if kind in ("corrupt", "hang", "fail") and dev.isdigit():
            out.append(Fault(kind, int(dev), step or None, unless or None))
    return tuple(out)


class Ctx:
    """What a task needs: its spec, the message pipe, and the faults of its device."""

    def __init__(self, spec: dict[str, Any], send: Callable[[dict[str, Any]], None]) -> None:
        self.spec = spec
        self.send = send
        self.rank: int = spec.get("rank", 0)
        self.world: int = spec.get("world", 1)
        self.devices: list[int] = spec.get("devices", [0])
        self.device: int = spec.get("device", self.devices[0])
        self.kind: str = spec.get("kind", "cpu")
        self.faults = parse_inject(spec.get("inject") or os.environ.get(INJECT_ENV))

    def fault(self, kind: str, step: str) -> bool:
        """Whether a fault of ``kind`` applies to this device in ``step``."""
        for f in self.faults:
            if f.kind != kind or f.device != self.device or f.step not in (None, step):
                continue
            if f.unless and os.environ.get(f.unless) == "1":
                continue
            return True
        return False

    def enter(self, step: str) -> None:
        """Tell the parent a step begins, then act out an injected hang or failure."""
        self.send({"t": "enter", "step": step})
        if self.fault("hang", step):
            time.sleep(10**6)
        if self.fault("fail", step):
            raise RuntimeError(f"injected failure in {step}")

    def step(self, step: str, fn: Callable[[], str | None]) -> bool:
        """Run one step: report ok with its detail, or the error; returns success."""
        t0 = time.perf_counter()
        try:
            self.enter(step)
            detail = fn()
        except Exception as exc:  # noqa: BLE001 -- any failure of a step is its result
            self.send(
                {
                    "t": "step",
                    "step": step,
                    "ok": False,
                    "error": f"{type(exc).__name__}: {exc}".strip()[:500],
                    "seconds": time.perf_counter() - t0,
                    "trace": traceback.format_exc(limit=3)[-800:],
                }
            )
            return False
        self.send(
            {
                "t": "step",
                "step": step,
                "ok": not (detail or "").startswith("WRONG"),
                "error": detail if (detail or "").startswith("WRONG") else None,
                "detail": None if (detail or "").startswith("WRONG") else detail,
                "seconds": time.perf_counter() - t0,
            }
        )
        return not (detail or "").startswith("WRONG")

    def bw(self, **record: Any) -> None:
        """Send one bandwidth record."""
        self.send({"t": "bw", **record})


def worker_main(conn: Any, spec: dict[str, Any]) -> None:
    """The entry of a worker process (a multiprocessing target)."""
    for key, value in (spec.get("env") or {}).items():
        os.environ[key] = str(value)

    def send(msg: dict[str, Any]) -> None:
        conn.send({"rank": spec.get("rank", 0), "device": spec.get("device"), **msg})

    ctx = Ctx(spec, send)
    try:
        if spec["task"] == "device":
            from nccl_doctor.probe.tasks import device_task  # noqa: PLC0415

            device_task(ctx)
        elif spec["task"] == "p2p":
            from nccl_doctor.probe.tasks import p2p_task  # noqa: PLC0415

            p2p_task(ctx)
        elif spec["task"] == "collectives":
            from nccl_doctor.probe.collective import collective_task  # noqa: PLC0415

            collective_task(ctx)
        elif spec["task"] == "sleep":  # the watchdog's own test task

            def nap() -> str:
                time.sleep(float(spec["sleep_s"]))
                return "slept"

            ctx.step(spec.get("name", "sleep"), nap)
    except Exception as exc:  # noqa: BLE001 -- report, never die silently
        send({"t": "step", "step": spec["task"], "ok": False, "error": repr(exc)[:500]})
    send({"t": "end"})
    conn.close()
