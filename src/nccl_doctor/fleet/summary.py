"""Per node and per GPU over time: failures, last findings, trend, bandwidth drift, counters.

For each node (and GPU) the newest ``window`` runs that include it are read:

- ``runs``; ``failures``: runs where a critical finding blames it;
  ``flagged``: runs where a critical or warning finding blames it (see
  :mod:`nccl_doctor.fleet.extract` for who a finding blames);
- ``last_findings``: the ids of the newest flagged run's findings on it;
- ``trend``: flagged runs among its last :data:`RECENT` runs against the
  runs before them; ``worse`` when the recent share is higher by a third
  or more (and at least two recent runs are flagged), ``better`` when lower;
- ``drift``: each probe figure's latest value against the median of its own
  earlier values, and against the median of the latest value of every
  other node (GPU) of the same model (``sku``), in percent;
- ``counters``: each error counter that moved during a ``run``, with its
  deltas over the runs that compared it (zeros included), oldest first;
  ``rising`` when the last deltas grow.

``suspect`` and ``reasons`` say, in words, why it deserves a look: blamed in
two runs or more, a worse trend, a counter that moves in most runs or
rises, a figure 20 % or more below its own past or its model's fleet.
"""

from __future__ import annotations

import itertools
import json
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from nccl_doctor.fleet.db import Connection

RECENT = 5
#: A figure this far below its own median or its model's is worth a look (percent).
DRIFT_PCT = 20.0
FLAGGING = ("critical", "warning")


@dataclass(frozen=True, slots=True)
class Trend:
    """Flagged runs among the last :data:`RECENT` runs, and among the runs before them."""

    recent_runs: int
    recent_flagged: int
    earlier_runs: int
    earlier_flagged: int

    @property
    def direction(self) -> str:
        """``worse``, ``better``, ``steady`` or ``new`` (no earlier runs)."""
        if not self.earlier_runs:
            return "new"
        recent = self.recent_flagged / self.recent_runs if self.recent_runs else 0.0
        earlier = self.earlier_flagged / self.earlier_runs
        if self.recent_flagged >= 2 and recent >= earlier + 1 / 3:
            return "worse"
        if recent + 1 / 3 <= earlier:
            return "better"
        return "steady"

    def text(self) -> str:
        """``3/5 recent, 0/12 before (worse)``."""
        head = f"{self.recent_flagged}/{self.recent_runs} recent"
        if not self.earlier_runs:
            return head
        return f"{head}, {self.earlier_flagged}/{self.earlier_runs} before ({self.direction})"


@dataclass(frozen=True, slots=True)
class Drift:
    """One probe figure: latest value against its own past and its model's fleet median."""

    metric: str
    latest_gbytes_s: float
    own_median: float | None
    sku: str | None
    sku_median: float | None
    sku_peers: int = 0

    @property
    def vs_own_pct(self) -> float | None:
        """How far the latest value is from its own median, in percent."""
        return _pct(self.latest_gbytes_s, self.own_median)

    @property
    def vs_sku_pct(self) -> float | None:
        """How far the latest value is from the model's fleet median, in percent."""
        return _pct(self.latest_gbytes_s, self.sku_median)


def _pct(value: float, base: float | None) -> float | None:
    return None if not base else round((value - base) / base * 100, 1)


@dataclass(frozen=True, slots=True)
class CounterTrend:
    """An error counter's deltas over the runs that compared it, oldest first."""

    device: str
    counter: str
    deltas: tuple[int, ...]

    @property
    def total(self) -> int:
        """Everything it counted during those runs."""
        return sum(self.deltas)

    @property
    def rising(self) -> bool:
        """Its last two (or more) moves grow: a link getting worse."""
        moves = [d for d in self.deltas if d > 0][-3:]
        return len(moves) >= 2 and all(a < b for a, b in itertools.pairwise(moves))

    @property
    def moving(self) -> int:
        """In how many of the last :data:`RECENT` compared runs it moved."""
        return sum(1 for d in self.deltas[-RECENT:] if d > 0)


@dataclass(frozen=True, slots=True)
class Summary:
    """One node's (``gpu`` None) or one GPU's history."""

    node: str | None
    gpu: str | None
    runs: int
    failures: int
    flagged: int
    last_run_at: str
    last_findings: tuple[str, ...]
    last_flagged_at: str | None
    last_flagged_run: int | None
    trend: Trend
    drift: tuple[Drift, ...] = ()
    counters: tuple[CounterTrend, ...] = ()
    identity: dict[str, Any] = field(default_factory=dict)

    @property
    def reasons(self) -> tuple[str, ...]:
        """Why it deserves a look, in words (empty: nothing seen)."""
        out = []
        if self.failures >= 2:
            out.append(f"critical findings in {self.failures} of {self.runs} runs")
        elif self.flagged >= 2:
            out.append(f"findings in {self.flagged} of {self.runs} runs")
        if self.trend.direction == "worse":
            out.append(f"worse lately: {self.trend.text()}")
        for c in self.counters:
            if c.rising or c.moving >= 2:
                how = "rising" if c.rising else f"moved in {c.moving} of the last runs"
                shown = ", ".join(f"+{d}" for d in c.deltas[-RECENT:])
                out.append(f"{c.device} {c.counter} {how} ({shown})")
        for d in self.drift:
            own, sku = d.vs_own_pct, d.vs_sku_pct
            if own is not None and own <= -DRIFT_PCT:
                out.append(f"{d.metric} {-own:g}% below its own median")
            if sku is not None and sku <= -DRIFT_PCT:
                out.append(f"{d.metric} {-sku:g}% below the {d.sku or 'same-model'} median")
        return tuple(out)

    @property
    def suspect(self) -> bool:
        """Whether anything in :attr:`reasons`."""
        return bool(self.reasons)


@dataclass(slots=True)
class _Subject:
    runs: list[tuple[int, str]] = field(default_factory=list)  # (run id, time), newest first
    blamed: dict[int, list[tuple[str, str]]] = field(default_factory=dict)  # run -> (id, severity)


def _window(conn: Connection, table: str, column: str, window: int) -> dict[str, _Subject]:
    """Each subject's newest ``window`` runs (a window function: one query, both engines)."""
    rows = conn.rows(
        f"SELECT subject, run_id, recorded_at FROM (SELECT t.{column} AS subject, t.run_id, "
        "r.recorded_at, ROW_NUMBER() OVER (PARTITION BY t."
        f"{column} ORDER BY r.recorded_at DESC, t.run_id DESC) AS n FROM {table} t "
        f"JOIN runs r ON r.id = t.run_id WHERE t.{column} IS NOT NULL) w WHERE n <= ? "
        "ORDER BY subject, recorded_at DESC, run_id DESC",
        (max(1, window),),
    )
    out: dict[str, _Subject] = defaultdict(_Subject)
    for subject, run_id, at in rows:
        out[str(subject)].runs.append((int(run_id), str(at)))
    return dict(out)


def _blame(conn: Connection, subjects: dict[str, _Subject], column: str) -> None:
    rows = conn.rows(
        f"SELECT DISTINCT t.{column}, t.run_id, f.seq, f.finding, f.severity "
        "FROM finding_targets t JOIN run_findings f ON f.run_id = t.run_id AND f.seq = t.seq "
        f"WHERE t.{column} IS NOT NULL ORDER BY t.run_id, f.seq"
    )
    for subject, run_id, _seq, ident, severity in rows:
        s = subjects.get(str(subject))
        if s is not None and severity in FLAGGING:
            s.blamed.setdefault(int(run_id), []).append((ident, severity))


def _trend(s: _Subject) -> Trend:
    recent, earlier = s.runs[:RECENT], s.runs[RECENT:]
    return Trend(
        recent_runs=len(recent),
        recent_flagged=sum(1 for rid, _ in recent if rid in s.blamed),
        earlier_runs=len(earlier),
        earlier_flagged=sum(1 for rid, _ in earlier if rid in s.blamed),
    )


def _summary(
    name: str,
    s: _Subject,
    *,
    node: str | None,
    gpu: str | None,
    drift: Sequence[Drift],
    counters: Sequence[CounterTrend],
    identity: dict[str, Any] | None = None,
) -> Summary:
    flagged_runs = [(rid, at) for rid, at in s.runs if rid in s.blamed]
    last = flagged_runs[0] if flagged_runs else None
    return Summary(
        node=node,
        gpu=gpu,
        runs=len(s.runs),
        failures=sum(
            1 for rid, _ in s.runs if any(sev == "critical" for _, sev in s.blamed.get(rid, ()))
        ),
        flagged=len(flagged_runs),
        last_run_at=s.runs[0][1] if s.runs else "",
        last_findings=tuple(dict.fromkeys(i for i, _ in s.blamed[last[0]])) if last else (),
        last_flagged_at=last[1] if last else None,
        last_flagged_run=last[0] if last else None,
        trend=_trend(s),
        drift=tuple(drift),
        counters=tuple(counters),
        identity=identity or {},
    )


def _median(values: Iterable[float]) -> float | None:
    found = list(values)
    return round(statistics.median(found), 3) if found else None


def _metric(kind: str, gpus: str, world: int | None, *, node: bool) -> tuple[str, str]:
    """(the name shown, the name compared across the fleet) of one figure.

    A node shows a device figure with its GPU (``h2d GPU 0``) and compares it
    with every GPU's of that model; a collective by its size (``all_reduce
    (8 GPUs)``); a GPU shows the kind alone.
    """
    on = json.loads(gpus) if gpus.startswith("[") else []
    if world is None and len(on) == 1:
        return (f"{kind} GPU {on[0]}" if node else kind), kind
    size = world or len(on)
    name = f"{kind} ({size} GPUs)" if size else kind
    return name, name


def _drift(conn: Connection, column: str, subjects: dict[str, _Subject]) -> dict[str, list[Drift]]:
    """Per subject: each metric's latest value, own median, and its model's fleet median."""
    node = column == "node"
    rows = conn.rows(
        f"SELECT f.{column}, f.run_id, f.kind, f.gpus, f.world, f.busbw, f.sku "
        f"FROM run_figures f JOIN runs r ON r.id = f.run_id WHERE f.{column} IS NOT NULL "
        "ORDER BY r.recorded_at DESC, f.run_id DESC"
    )
    runs = {name: {r for r, _ in s.runs} for name, s in subjects.items()}
    series: dict[tuple[str, str], list[float]] = defaultdict(list)  # newest first
    about: dict[tuple[str, str], tuple[str, str | None]] = {}  # -> (compared as, sku)
    for subject, run_id, kind, gpus, world, busbw, sku in rows:
        if int(run_id) not in runs.get(str(subject), ()):
            continue
        shown, compared = _metric(kind, gpus, world, node=node)
        series[(str(subject), shown)].append(float(busbw))
        about.setdefault((str(subject), shown), (compared, sku))
    out: dict[str, list[Drift]] = defaultdict(list)
    for (subject, metric), values in series.items():
        compared, sku = about[(subject, metric)]
        peers = [
            v[0]
            for (other, m), v in series.items()
            if other != subject and about[(other, m)] == (compared, sku)
        ]
        out[subject].append(
            Drift(
                metric=metric,
                latest_gbytes_s=values[0],
                own_median=_median(values[1:]),
                sku=sku,
                sku_median=_median(peers),
                sku_peers=len(peers),
            )
        )
    return out


def _counters(
    conn: Connection, column: str, subjects: dict[str, _Subject]
) -> dict[str, list[CounterTrend]]:
    """Per subject: each counter's deltas over the runs that compared its node, oldest first."""
    compared: dict[str, set[int]] = defaultdict(set)
    for node, run_id in conn.rows("SELECT node, run_id FROM run_nodes WHERE compared = 1"):
        compared[str(node)].add(int(run_id))
    rows = conn.rows(
        f"SELECT {column}, node, run_id, device, counter, delta FROM run_counters "
        f"WHERE {column} IS NOT NULL"
    )
    moved: dict[tuple[str, str, str], dict[int, int]] = defaultdict(dict)
    node_of: dict[str, str] = {}
    for subject, node, run_id, device, counter, delta in rows:
        moved[(str(subject), device, counter)][int(run_id)] = int(delta)
        node_of[str(subject)] = str(node)
    out: dict[str, list[CounterTrend]] = defaultdict(list)
    for (subject, device, counter), deltas in moved.items():
        s = subjects.get(subject)
        if s is None:
            continue
        runs = [rid for rid, _ in reversed(s.runs) if rid in compared[node_of[subject]]]
        out[subject].append(
            CounterTrend(device, counter, tuple(deltas.get(rid, 0) for rid in runs))
        )
    for trends in out.values():
        trends.sort(key=lambda c: (not c.rising, -c.moving, -c.total, c.device, c.counter))
    return out


def _order(summaries: Sequence[Summary]) -> list[Summary]:
    return sorted(
        summaries,
        key=lambda s: (
            not s.suspect,
            -s.failures,
            -s.flagged,
            -s.trend.recent_flagged,
            s.node or "",
            s.gpu or "",
        ),
    )


def node_summaries(conn: Connection, *, window: int = 50) -> list[Summary]:
    """Every node's summary, suspects first."""
    subjects = _window(conn, "run_nodes", "node", window)
    _blame(conn, subjects, "node")
    drift = _drift(conn, "node", subjects)
    counters = _counters(conn, "node", subjects)
    return _order(
        [
            _summary(
                name,
                s,
                node=name,
                gpu=None,
                drift=drift.get(name, ()),
                counters=counters.get(name, ()),
            )
            for name, s in subjects.items()
        ]
    )


def gpu_summaries(conn: Connection, *, window: int = 50) -> list[Summary]:
    """Every GPU's summary, suspects first; ``identity`` holds its newest node, index, bus..."""
    subjects = _window(conn, "run_gpus", "gpu", window)
    _blame(conn, subjects, "gpu")
    identity: dict[str, dict[str, Any]] = {}
    for gpu, node, index, bus, uuid, serial, name in conn.rows(
        "SELECT g.gpu, g.node, g.idx, g.bus_id, g.uuid, g.serial, g.name FROM run_gpus g "
        "JOIN runs r ON r.id = g.run_id ORDER BY r.recorded_at, g.run_id"
    ):
        known = identity.setdefault(str(gpu), {})
        fresh = {"node": node, "index": index, "bus_id": bus, "uuid": uuid}
        known.update(
            {k: v for k, v in {**fresh, "serial": serial, "name": name}.items() if v is not None}
        )
    drift = _drift(conn, "gpu", subjects)
    counters = _counters(conn, "gpu", subjects)
    return _order(
        [
            _summary(
                key,
                s,
                node=identity.get(key, {}).get("node"),
                gpu=key,
                drift=drift.get(key, ()),
                counters=counters.get(key, ()),
                identity=identity.get(key, {}),
            )
            for key, s in subjects.items()
        ]
    )
