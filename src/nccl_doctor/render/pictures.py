"""Pictures of the facts for the HTML report: failure timeline and topology.

(The GPU-memory picture has its own module, :mod:`~nccl_doctor.render.memory_chart`.)

Each function returns ``None`` when the facts do not support its picture.
Every string from the evidence goes through ``clean`` (redaction and
pseudonymisation) and then :func:`~nccl_doctor.render.svg.esc`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from nccl_doctor.facts.failures import Failure, failures_of
from nccl_doctor.facts.job import world_size
from nccl_doctor.facts.store import Facts
from nccl_doctor.facts.topology import TopoMatrix
from nccl_doctor.render.svg import Svg, esc, nice_step
from nccl_doctor.report import Report

Clean = Callable[[str], str]
MAX_ROWS = 64
LAUNCHER = "launcher"
UNATTRIBUTED = "rank ?"
NO_ERROR = "no error seen"


@dataclass(frozen=True, slots=True)
class _Mark:
    row: str
    x: float
    kind: str  # first | failure | cascade | launcher
    tip: str


def _row(failure: Failure) -> str:
    if failure.rank is not None:
        return f"rank {failure.rank}"
    return LAUNCHER if failure.launcher else UNATTRIBUTED


def _rows(fails: list[Failure], facts: Facts) -> tuple[list[str], set[str], int]:
    """The timeline's rows, the rows any line of evidence belongs to, and how many were left out.

    Every rank the evidence knows gets a row: those that failed, those whose
    lines were read, and every rank below the world size (a rank that printed
    nothing is a fact to show, not to hide). Past ``MAX_ROWS`` the ranks that
    failed are kept and the others counted.
    """
    heard = {f"rank {r}" for r in facts.ranks}
    failed = {_row(f) for f in fails}
    ranks = {f.rank for f in fails if f.rank is not None} | set(facts.ranks)
    world = world_size(facts) or 0
    total = world + sum(1 for r in ranks if not 0 <= r < world)  # |ranks | range(world)|
    extra = [r for r in (LAUNCHER, UNATTRIBUTED) if r in failed]
    if total + len(extra) <= MAX_ROWS:
        rows = [f"rank {r}" for r in sorted(ranks | set(range(world)))]
        return rows + extra, heard | failed, 0
    kept = [f"rank {r}" for r in sorted(ranks) if f"rank {r}" in failed]
    kept = (kept + extra)[:MAX_ROWS]
    return kept, heard | failed, total + len(extra) - len(kept)


def _times(fails: list[Failure]) -> tuple[dict[int, float], set[int]] | None:
    """Seconds of each failure (by order) on one clock, borrowing a neighbour's where unprinted."""
    clocks = Counter(f.fact.clock for f in fails if f.fact.time_s is not None)
    if not clocks:
        return None
    clock = clocks.most_common(1)[0][0]
    timed = [f for f in fails if f.fact.time_s is not None and f.fact.clock == clock]
    if len({f.fact.time_s for f in timed}) < 2:
        return None
    times: dict[int, float] = {}
    inferred: set[int] = set()
    for f in fails:
        if f.fact.time_s is not None and f.fact.clock == clock:
            times[f.order] = f.fact.time_s
            continue
        same = [t for t in timed if t.fact.cite.source == f.fact.cite.source]
        before = [t for t in same if t.order < f.order]
        after = [t for t in same if t.order > f.order]
        near = before[-1] if before else (after[0] if after else None)
        if near is None or near.fact.time_s is None:
            return None  # a source without any timestamp: time cannot order it
        times[f.order] = near.fact.time_s
        inferred.add(f.order)
    return times, inferred


def _first_order(fails: list[Failure], report: Report) -> int | None:
    first = report.first_failure
    if first is None:
        return None
    at = [
        f
        for f in fails
        if (f.fact.cite.source, f.fact.cite.line) == (first.cite.source, first.cite.line)
    ]
    best = [f for f in at if f.rank == first.rank] or at
    return best[0].order if best else None


def timeline_svg(report: Report, facts: Facts, clean: Clean) -> str | None:
    """Ranks down, time (or log order) across: the first failure and the cascade after it."""
    fails: list[Failure] = []
    seen: set[tuple[str, str, int]] = set()
    for f in failures_of(facts):
        key = (_row(f), f.fact.cite.source, f.fact.cite.line)
        if key not in seen:  # one mark per line and row: the best statement of it
            seen.add(key)
            fails.append(f)
    if not fails:
        return None
    rows, heard, hidden = _rows(fails, facts)
    if len(rows) < 2:
        return None
    first = _first_order(fails, report)
    timing = _times(fails)
    sources = {f.fact.cite.source for f in fails}
    if timing is not None:
        times, inferred = timing
        zero = min(times.values())
        xs = {o: t - zero for o, t in times.items()}
        axis = "seconds after the first timestamped failure"
    else:
        inferred = set()
        xs = {f.order: float(n) for n, f in enumerate(fails)}
        axis = "log order (no usable timestamps)"
        if len(sources) > 1:
            axis += "; across files this is reading order, not time"
    span = max(xs.values()) or 1.0
    left, right, top, row_h = 90.0, 860.0, 30.0, 24.0
    height = top + row_h * len(rows) + (68 if hidden else 50)
    svg = Svg(1000, height, "Failure timeline by rank", class_="chart timeline")

    def x_of(order: int) -> float:
        return left + xs[order] / span * (right - left)

    y_of = {row: top + row_h * (n + 0.5) for n, row in enumerate(rows)}
    for n, row in enumerate(rows):
        y = y_of[row]
        svg.open("g", None, class_="row", data_row=row)
        if n % 2 == 0:
            svg.rect(left - 6, y - row_h / 2, right - left + 12, row_h, fill="#f6f8fa")
        svg.text(left - 12, y + 4, row, text_anchor="end")
        if not any(_row(f) == row for f in fails):
            quiet = NO_ERROR if row in heard else f"{NO_ERROR} (no output of this rank was read)"
            svg.text(left + 4, y + 4, quiet, fill="#8c959f", font_style="italic", class_="quiet")
        svg.close()
    bottom = top + row_h * len(rows)
    svg.line(left, bottom, right, bottom, stroke="#57606a")
    if timing is not None:
        step = nice_step(span)
        tick = 0.0
        while tick <= span + 1e-9:
            x = left + tick / span * (right - left)
            svg.line(x, bottom, x, bottom + 4, stroke="#57606a")
            svg.text(x, bottom + 16, f"+{tick:g} s", text_anchor="middle", fill="#57606a")
            tick += step
    svg.text((left + right) / 2, bottom + 34, axis, text_anchor="middle", fill="#57606a")
    if hidden:
        more = f"{hidden} more rank{'s' if hidden != 1 else ''} with {NO_ERROR}, not drawn"
        svg.text(left, bottom + 52, more, fill="#57606a", class_="hidden-rows")
    if (
        first is not None
        and first in xs
        and _row(next(f for f in fails if f.order == first)) in y_of
    ):
        x = x_of(first)
        svg.line(x, top - 6, x, bottom, stroke="#cf222e", stroke_dasharray="4 3")
        svg.text(x + 4, top - 10, "first failure", fill="#cf222e", font_weight="bold")
    for f in fails:
        row = _row(f)
        if row not in y_of:
            continue
        kind = _kind(f, first)
        when = f" at {f.time_text}" if f.time_text else ""
        guess = " (time of a neighbouring line)" if f.order in inferred else ""
        where = f"{clean(f.fact.cite.source)}:{f.fact.cite.line}"
        tip = f"{row}, {kind}{when}{guess}: {clean(f.message)} [{where}]"
        svg.open("g", tip, class_=f"mark {kind}", data_kind=kind, data_row=row)
        _marker(svg, kind, x_of(f.order), y_of[row])
        svg.close()
    legend = (
        ("first", "first failure"),
        ("failure", "failure"),
        ("cascade", "cascade"),
        ("launcher", "launcher report"),
    )
    for n, (kind, name) in enumerate(legend):
        _marker(svg, kind, right + 30, top + 10 + n * 18, small=True)
        svg.text(right + 42, top + 14 + n * 18, name)
    return svg.render()


def _kind(f: Failure, first: int | None) -> str:
    if f.order == first:
        return "first"
    if f.launcher:
        return "launcher"
    return "cascade" if f.cascade else "failure"


def _marker(svg: Svg, kind: str, x: float, y: float, *, small: bool = False) -> None:
    """A mark: red dot (ringed, bigger: the first), orange (cascade), diamond (launcher)."""
    cx, cy = f"{x:.1f}", f"{y:.1f}"
    if kind == "first":
        r = "6" if small else "8"
        svg.el("circle", cx=cx, cy=cy, r=r, fill="#cf222e", stroke="#000", stroke_width="1.5")
    elif kind == "failure":
        svg.el("circle", cx=cx, cy=cy, r="5", fill="#cf222e")
    elif kind == "cascade":
        svg.el("circle", cx=cx, cy=cy, r="5", fill="#fb8f44", stroke="#bc4c00")
    else:
        d = f"M{x:.1f},{y - 6:.1f} L{x + 6:.1f},{y:.1f} L{x:.1f},{y + 6:.1f} L{x - 6:.1f},{y:.1f} Z"
        svg.el("path", d=d, fill="#fff", stroke="#57606a", stroke_width="1.5")


_LINK_COLOUR = (
    ("NV", "#2da44e", "#fff"),
    ("PIX", "#aceebb", "#000"),
    ("PXB", "#d2f4d3", "#000"),
    ("PHB", "#fff1a8", "#000"),
    ("NODE", "#ffd8b5", "#000"),
    ("SYS", "#ffc1c0", "#000"),
)
_LINK_LEGEND = (
    ("NV#", "NVLink, # links bonded (fastest)"),
    ("PIX", "one PCIe bridge"),
    ("PXB", "several PCIe bridges"),
    ("PHB", "through the PCIe host bridge (CPU)"),
    ("NODE", "across host bridges of one NUMA node"),
    ("SYS", "across NUMA nodes (slowest)"),
)


def _link_style(link: str) -> str:
    for prefix, bg, fg in _LINK_COLOUR:
        if link.upper().startswith(prefix):
            return f"background:{bg};color:{fg}"
    return ""


def topology_html(facts: Facts, clean: Clean) -> str | None:
    """Each ``nvidia-smi topo -m`` matrix as a table coloured by link speed."""
    matrices = facts.of(TopoMatrix)
    if not matrices:
        return None
    out: list[str] = []
    for matrix in matrices:
        cells = {(a, b): link for a, b, link in matrix.links}
        names = dict(matrix.nic_names)
        head = "".join(
            f'<th scope="col" title="{esc(clean(names.get(d, d)))}">{esc(clean(d))}</th>'
            for d in matrix.devices
        )
        out.append(
            f'<figure class="topo"><figcaption>{esc(clean(matrix.cite.source))}:'
            f'{matrix.cite.line}</figcaption><table class="topo"><tr><th></th>{head}</tr>'
        )
        for row in matrix.devices:
            tds = []
            for col in matrix.devices:
                link = "X" if row == col else cells.get((row, col), "")
                style = _link_style(link)
                attr = f' style="{style}"' if style else ""
                tds.append(f'<td{attr} title="{esc(row)}-{esc(col)}">{esc(clean(link))}</td>')
            label = esc(clean(row if row not in names else f"{row} ({names[row]})"))
            out.append(f'<tr><th scope="row">{label}</th>{"".join(tds)}</tr>')
        out.append("</table></figure>")
    legend = "".join(
        f'<li><span class="swatch" style="{_link_style(k)}">{esc(k)}</span> {esc(v)}</li>'
        for k, v in _LINK_LEGEND
    )
    out.append(f'<ul class="legend">{legend}</ul>')
    return "".join(out)
