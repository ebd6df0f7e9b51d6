"""The HTML report's history picture: each node's and GPU's recorded runs, oldest to newest.

One row per node or GPU of the report that the fleet history knows; one
square per recorded run: red where a critical finding named it, amber for a
warning, green for a clean run; the report's own run (when it was recorded
too) is outlined. "Is it this GPU again?" reads off a row of red squares.
The view model (:class:`History`) is built by :mod:`nccl_doctor.fleet.picture`;
this module only draws it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nccl_doctor.render.svg import Svg

Clean = Callable[[str], str]
COLOUR = {"critical": "#cf222e", "warning": "#bf8700", "ok": "#2da44e"}
#: The most runs a row shows (the newest), and the most rows.
MAX_MARKS = 40
MAX_ROWS = 24
_LABEL_W, _CELL, _ROW_H, _TOP = 230.0, 15.0, 24.0, 10.0


@dataclass(frozen=True, slots=True)
class Mark:
    """One recorded run of a node or GPU."""

    run_id: int
    when: str
    state: str  # critical | warning | ok
    findings: tuple[str, ...] = ()
    current: bool = False


@dataclass(frozen=True, slots=True)
class Row:
    """A node (``gpu`` None) or a GPU of ``host``, with its runs oldest first."""

    host: str | None
    gpu: str | None
    marks: tuple[Mark, ...]
    summary: str = ""


@dataclass(frozen=True, slots=True)
class History:
    """What the history picture draws, and where the history came from."""

    rows: tuple[Row, ...]
    source: str = ""


def _label(row: Row, clean: Clean) -> str:
    host = clean(row.host) if row.host else "?"
    return host if row.gpu is None else f"{host} {clean(row.gpu)}"


def history_svg(history: History, clean: Clean) -> str | None:
    """The picture, or ``None`` when no row has a run."""
    rows = [r for r in history.rows if r.marks][:MAX_ROWS]
    if not rows:
        return None
    height = _TOP + len(rows) * _ROW_H + 34
    width = _LABEL_W + MAX_MARKS * _CELL + 150
    svg = Svg(width, height, "Node and GPU history", class_="chart history")
    for n, row in enumerate(rows):
        y = _TOP + n * _ROW_H
        label = _label(row, clean)
        shown = row.marks[-MAX_MARKS:]
        svg.open(
            "g",
            f"{label}: {clean(row.summary)}" if row.summary else label,
            class_="row",
            data_kind="gpu" if row.gpu else "node",
            data_marks=str(len(shown)),
        )
        svg.text(_LABEL_W - 8, y + 12, label[:34], text_anchor="end")
        svg.close()
        for i, mark in enumerate(shown):
            x = _LABEL_W + i * _CELL
            what = ", ".join(mark.findings) or "no finding on it"
            tip = f"run {mark.run_id} · {mark.when} · {what}" + (
                " · this report" if mark.current else ""
            )
            svg.open("g", tip, class_=f"mark {mark.state}", data_run=str(mark.run_id))
            svg.rect(
                x,
                y + 2,
                _CELL - 3,
                _CELL - 3,
                fill=COLOUR.get(mark.state, "#8c959f"),
                stroke="#1f2328" if mark.current else "",
                stroke_width="2" if mark.current else "",
            )
            svg.close()
        if row.summary:
            svg.text(
                _LABEL_W + len(shown) * _CELL + 8, y + 12, clean(row.summary)[:26], fill="#57606a"
            )
    legend_y = _TOP + len(rows) * _ROW_H + 16
    x = _LABEL_W
    for state, words in (("critical", "critical finding"), ("warning", "warning"), ("ok", "clean")):
        svg.rect(x, legend_y - 10, 11, 11, fill=COLOUR[state])
        svg.text(x + 15, legend_y, words)
        x += 130
    svg.text(x, legend_y, "oldest → newest; outlined: this report")
    return svg.render()
