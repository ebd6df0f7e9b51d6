"""``history`` and ``nodes`` as text and JSON (docs/fleet.md has both shapes)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

from nccl_doctor.fleet.read import StoredRun
from nccl_doctor.fleet.summary import RECENT, Summary

#: How many nodes a history line names before "+N".
SHOWN_NODES = 2


def _when(run: StoredRun) -> str:
    return run.when.strftime("%Y-%m-%d %H:%M:%S")


def run_json(run: StoredRun, *, report: bool = False) -> dict[str, Any]:
    """One run as ``history --format json`` lists it (``report``: with the whole report)."""
    out: dict[str, Any] = {
        "id": run.id,
        "kind": run.kind,
        "job": run.job,
        "recorded_at": run.when.isoformat().replace("+00:00", "Z"),
        "verdict": run.verdict,
        "good": run.good,
        "nodes": list(run.nodes),
        "gpus": [
            {
                "gpu": g.key,
                "node": g.node,
                "index": g.index,
                "bus_id": g.bus_id,
                "uuid": g.uuid,
                "serial": g.serial,
                "name": g.name,
            }
            for g in run.gpus
        ],
        "versions": dict(run.versions),
        "findings": [
            {
                "id": f.id,
                "severity": f.severity,
                "confidence": f.confidence,
                "root_cause": f.root_cause,
                "nodes": list(f.nodes),
                "gpus": list(f.gpus),
            }
            for f in run.findings
        ],
    }
    if report:
        out["report"] = run.report
    return out


def _findings_text(run: StoredRun) -> str:
    shown = [f.id for f in run.findings if f.severity in ("critical", "warning")]
    return ", ".join(dict.fromkeys(shown)) or "-"


def _nodes_text(nodes: Sequence[str]) -> str:
    head = ",".join(nodes[:SHOWN_NODES])
    more = len(nodes) - SHOWN_NODES
    return (head + (f" +{more}" if more > 0 else "")) or "-"


def history_text(runs: Sequence[StoredRun], where: str, width: int = 100) -> str:
    """One line per run, newest first."""
    if not runs:
        return f"no recorded run matches (history: {where})\n"
    rows = [("ID", "WHEN (UTC)", "KIND", "JOB", "VERDICT", "NODES", "FINDINGS")]
    rows.extend(
        (
            str(r.id),
            _when(r),
            r.kind,
            (r.job or "-")[:16],
            r.verdict,
            _nodes_text(r.nodes),
            _findings_text(r),
        )
        for r in runs
    )
    sizes = [max(len(row[i]) for row in rows) for i in range(6)]
    lines = []
    for row in rows:
        line = "  ".join(cell.ljust(sizes[i]) for i, cell in enumerate(row[:6])) + "  " + row[6]
        lines.append(line if len(line) <= width else line[: width - 1] + "…")
    lines.append(f"{len(runs)} run(s), newest first (history: {where})")
    return "\n".join(lines) + "\n"


def run_text(run: StoredRun, where: str) -> str:
    """One run in full: nodes, GPUs, versions, findings and whom they blame."""
    lines = [
        f"run {run.id}: {run.kind}, {run.verdict}{'' if run.good else ' (not good)'}, "
        f"recorded {_when(run)} UTC" + (f", job {run.job}" if run.job else ""),
        f"  nodes: {', '.join(run.nodes) or '-'}",
    ]
    if run.versions:
        lines.append("  versions: " + ", ".join(f"{k} {v}" for k, v in run.versions.items()))
    for g in run.gpus:
        where_ = f"{g.node or '?'} GPU {g.index if g.index is not None else '?'}"
        extra = ", ".join(x for x in (g.bus_id, g.serial and f"serial {g.serial}", g.name) if x)
        lines.append(f"  gpu {g.key}: {where_}" + (f" ({extra})" if extra else ""))
    for f in run.findings:
        blamed = ", ".join([*f.gpus] or [*f.nodes]) or "no node named"
        root = ", root cause" if f.root_cause else ""
        lines.append(f"  {f.severity:8} {f.id} ({f.confidence or '?'}{root}) -> {blamed}")
    if not run.findings:
        lines.append("  no finding")
    lines.append(f"(history: {where}; `--format json` includes the whole report)")
    return "\n".join(lines) + "\n"


def summary_json(s: Summary) -> dict[str, Any]:
    """One node's or GPU's summary as ``nodes --format json`` writes it."""
    out: dict[str, Any] = {"node": s.node}
    if s.gpu is not None:
        out = {
            "gpu": s.gpu,
            **{k: s.identity.get(k) for k in ("node", "index", "bus_id", "uuid", "serial", "name")},
        }
    out.update(
        runs=s.runs,
        failures=s.failures,
        flagged=s.flagged,
        last_run_at=s.last_run_at,
        last_findings=list(s.last_findings),
        last_flagged_at=s.last_flagged_at,
        last_flagged_run=s.last_flagged_run,
        trend={
            "recent_runs": s.trend.recent_runs,
            "recent_flagged": s.trend.recent_flagged,
            "earlier_runs": s.trend.earlier_runs,
            "earlier_flagged": s.trend.earlier_flagged,
            "direction": s.trend.direction,
        },
        drift=[
            {
                "metric": d.metric,
                "latest_gbytes_s": d.latest_gbytes_s,
                "own_median_gbytes_s": d.own_median,
                "vs_own_pct": d.vs_own_pct,
                "sku": d.sku,
                "sku_median_gbytes_s": d.sku_median,
                "sku_peers": d.sku_peers,
                "vs_sku_pct": d.vs_sku_pct,
            }
            for d in s.drift
        ],
        counters=[
            {
                "device": c.device,
                "counter": c.counter,
                "deltas": list(c.deltas),
                "total": c.total,
                "rising": c.rising,
            }
            for c in s.counters
        ],
        suspect=s.suspect,
        reasons=list(s.reasons),
    )
    return out


#: A drift shown in text (percent, either way); JSON has every figure.
SHOWN_DRIFT_PCT = 10.0


def _drift_lines(s: Summary) -> list[str]:
    out = []
    for d in s.drift:
        moves = [abs(p) for p in (d.vs_own_pct, d.vs_sku_pct) if p is not None]
        if not moves or max(moves) < SHOWN_DRIFT_PCT:
            continue
        parts = [f"{d.latest_gbytes_s:g} GB/s"]
        if d.vs_own_pct is not None:
            parts.append(f"{d.vs_own_pct:+g}% vs its median {d.own_median:g}")
        if d.vs_sku_pct is not None:
            parts.append(f"{d.vs_sku_pct:+g}% vs {d.sku or 'its model'} median {d.sku_median:g}")
        if len(parts) > 1:
            out.append(f"    {d.metric}: " + ", ".join(parts))
    return out


def _counter_lines(s: Summary, shown: int = 4) -> list[str]:
    return [
        f"    {c.device} {c.counter}: "
        + " ".join(f"+{d}" for d in c.deltas[-8:])
        + f" (total {c.total}{', rising' if c.rising else ''})"
        for c in s.counters[:shown]
    ]


def _table(
    summaries: Sequence[Summary], head: tuple[str, ...], cells: Any, width: int
) -> list[str]:
    rows = [head, *(cells(s) for s in summaries)]
    sizes = [max(len(row[i]) for row in rows) for i in range(len(head) - 1)]
    lines = []
    for n, row in enumerate(rows):
        line = "  ".join(c.ljust(sizes[i]) for i, c in enumerate(row[:-1])) + "  " + row[-1]
        lines.append(line if len(line) <= width else line[: width - 1] + "…")
        if n:
            s = summaries[n - 1]
            lines.extend(f"  ! {r}" for r in s.reasons)
            lines.extend(_drift_lines(s))
            lines.extend(_counter_lines(s))
    return lines


def _gpu_label(s: Summary) -> str:
    key = s.gpu or "?"
    return key if len(key) <= 13 else key[:12] + "…"


def _trend(s: Summary) -> str:
    t = s.trend
    head = f"{t.recent_flagged}/{t.recent_runs}"
    return head if not t.earlier_runs else f"{head} vs {t.earlier_flagged}/{t.earlier_runs}"


def _noted(s: Summary) -> bool:
    """Whether a GPU has anything to say: flagged, counters that moved, a drift shown."""
    return bool(s.flagged or s.suspect or s.counters or _drift_lines(s))


def nodes_text(
    nodes: Sequence[Summary],
    gpus: Sequence[Summary],
    where: str,
    window: int,
    width: int = 100,
    *,
    every_gpu: bool = False,
) -> str:
    """The node table, then the GPUs with something to say (``every_gpu``: all); suspects first."""
    if not nodes and not gpus:
        return f"no recorded run (history: {where})\n"
    common = ("RUNS", "FAIL", "FLAG", "RECENT", "LAST FINDINGS")

    def tail(s: Summary) -> tuple[str, ...]:
        last = ", ".join(s.last_findings) or "-"
        return (str(s.runs), str(s.failures), str(s.flagged), _trend(s), last)

    lines = [f"Nodes, suspects first (each node's and GPU's newest {window} runs)"]
    lines += _table(nodes, ("NODE", *common), lambda s: (s.node or "?", *tail(s)), width)
    shown = [s for s in gpus if every_gpu or _noted(s)]
    if shown:
        lines += ["", "GPUs"]

        def gpu_cells(s: Summary) -> tuple[str, ...]:
            index = s.identity.get("index")
            return (_gpu_label(s), s.node or "?", "-" if index is None else str(index), *tail(s))

        lines += _table(shown, ("GPU", "NODE", "IDX", *common), gpu_cells, width)
    if len(shown) < len(gpus):
        lines.append(f"{len(gpus) - len(shown)} other GPU(s): nothing to say (--all lists them)")
    suspects = sum(1 for s in nodes if s.suspect)
    lines.append(
        f"{len(nodes)} node(s), {suspects} to look at; {len(gpus)} GPU(s), "
        f"{sum(1 for s in gpus if s.suspect)} to look at (history: {where})"
    )
    legend = (
        "FAIL: runs where a critical finding names it; FLAG: a critical or warning one; "
        f"RECENT: flagged among its last {RECENT} runs, vs the runs before."
    )
    lines.extend(textwrap.wrap(legend, width=max(40, width)))
    return "\n".join(lines) + "\n"
