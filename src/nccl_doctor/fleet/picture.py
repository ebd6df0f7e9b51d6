"""The HTML report's history picture, from the fleet history (the view model of render).

For the report's nodes and GPUs (its inventory), the runs the history holds
of each, oldest first, and what the findings of each run said about it. It
only reads: the default SQLite history is not created when it does not
exist, and then there is no picture.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from nccl_doctor.fleet.db import resolve
from nccl_doctor.fleet.extract import gpu_key, norm_bus
from nccl_doctor.fleet.read import StoredRun
from nccl_doctor.fleet.store import open_store
from nccl_doctor.render.history_chart import MAX_MARKS, History, Mark, Row
from nccl_doctor.report import GpuIdentity, Inventory

MAX_NODES, MAX_GPUS = 8, 16


def _stored_key(run: StoredRun, g: GpuIdentity) -> str | None:
    """The key this run stored the GPU under (a slot's key may have become its UUID)."""
    bus = norm_bus(g.bus_id) if g.bus_id else None
    for s in run.gpus:
        if (g.uuid and s.uuid == g.uuid) or (g.serial and s.serial == g.serial):
            return s.key
        if s.node == g.host and ((bus and s.bus_id == bus) or (not bus and s.index == g.index)):
            return s.key
    return None


def _mark(
    run: StoredRun, *, node: str | None, gpu: GpuIdentity | None, current: int | None
) -> Mark:
    key = _stored_key(run, gpu) if gpu is not None else None
    named = [
        f
        for f in run.findings
        if (key is not None and key in f.gpus) or (gpu is None and node in f.nodes)
    ]
    severities = {f.severity for f in named}
    state = (
        "critical" if "critical" in severities else "warning" if "warning" in severities else "ok"
    )
    shown = tuple(dict.fromkeys(f.id for f in named if f.severity in ("critical", "warning")))
    return Mark(
        run_id=run.id,
        when=run.when.strftime("%Y-%m-%d %H:%M"),
        state=state,
        findings=shown,
        current=run.id == current,
    )


def _row(
    runs: list[StoredRun],
    *,
    node: str | None,
    gpu: GpuIdentity | None,
    label: str | None,
    current: int | None,
) -> Row:
    marks = tuple(_mark(r, node=node, gpu=gpu, current=current) for r in reversed(runs))
    flagged = sum(1 for m in marks if m.state != "ok")
    return Row(host=node, gpu=label, marks=marks, summary=f"{flagged} of {len(marks)} flagged")


def history_picture(
    inventory: Inventory,
    url: str | None = None,
    *,
    current: int | None = None,
    node: str | None = None,
) -> History | None:
    """The history of the inventory's nodes and GPUs, or ``None`` when the history has none.

    ``node`` is the host of what the report does not attribute (``--node``).
    """
    target = resolve(url)
    if target.engine == "sqlite" and not Path(target.location).is_file():
        return None
    hosts = tuple(dict.fromkeys([*inventory.hosts, *([node] if node else [])]))
    default = node or (hosts[0] if len(hosts) == 1 else None)  # as the record does
    gpus = tuple(replace(g, host=g.host or default) for g in inventory.gpus)
    if not hosts and not gpus:
        return None
    rows: list[Row] = []
    with open_store(url, create=False) as store:
        for name in hosts[:MAX_NODES]:
            runs = store.runs(node=name, limit=MAX_MARKS, reports=False)
            if runs:
                rows.append(_row(runs, node=name, gpu=None, label=None, current=current))
        for g in gpus[:MAX_GPUS]:
            bus = norm_bus(g.bus_id) if g.bus_id else None
            key = gpu_key(g.host, g.uuid, g.serial, bus, g.index)
            if key is None:
                continue
            runs = store.runs(gpu=key, limit=MAX_MARKS, reports=False)
            if runs:
                index = f"GPU {g.index}" if g.index is not None else f"GPU {g.bus_id or '?'}"
                label = f"{index}" + (f" {g.uuid[:12]}…" if g.uuid else "")
                rows.append(_row(runs, node=g.host, gpu=g, label=label, current=current))
        source = store.target.shown
    return History(rows=tuple(rows), source=source) if rows else None
