"""Server-side SVG for the HTML report: a tiny builder and the bandwidth chart.

Every string that reaches the markup passes through :func:`esc`; the charts
carry no script, fonts or links, so the page stays one self-contained file.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

#: One bandwidth series: (message size in bytes, bus bandwidth in GB/s).
Series = Sequence[tuple[int, float]]

FONT = "font-family:system-ui,sans-serif"
SERIES_COLOURS = ("#1f6feb", "#2da44e", "#8250df", "#bf8700", "#cf222e", "#0a7d8c")


def esc(text: object) -> str:
    """Text safe as HTML/SVG content and inside a quoted attribute."""
    return html.escape(str(text), quote=True)


def num(value: float) -> str:
    """A coordinate, short: ``12.5`` not ``12.500000001``."""
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _name(key: str) -> str:
    """An attribute name from a keyword: ``class_`` -> ``class``, ``data_row`` -> ``data-row``."""
    return key.rstrip("_").replace("_", "-")


class Svg:
    """An SVG document built element by element; attributes are escaped here."""

    def __init__(self, width: float, height: float, label: str, **attrs: str) -> None:
        self.width = width
        self.height = height
        head = {
            "viewBox": f"0 0 {num(width)} {num(height)}",
            "width": num(width),
            "height": num(height),
            "role": "img",
            "aria-label": label,
            "style": f"{FONT};font-size:12px;max-width:100%;height:auto",
        }
        head.update(attrs)
        self.parts = [f"<svg{self._attrs(head)}>", f"<title>{esc(label)}</title>"]

    @staticmethod
    def _attrs(attrs: dict[str, str]) -> str:
        return "".join(f' {_name(k)}="{esc(v)}"' for k, v in attrs.items() if v)

    def el(self, tag: str, text: str | None = None, /, **attrs: str) -> None:
        """One element; ``text`` is escaped."""
        if text is None:
            self.parts.append(f"<{tag}{self._attrs(attrs)}/>")
        else:
            self.parts.append(f"<{tag}{self._attrs(attrs)}>{esc(text)}</{tag}>")

    def open(self, tag: str, tip: str | None = None, /, **attrs: str) -> None:
        """Open a group-like element, with a hover tooltip when ``tip`` is given."""
        self.parts.append(f"<{tag}{self._attrs(attrs)}>")
        if tip:
            self.parts.append(f"<title>{esc(tip)}</title>")

    def close(self, tag: str = "g") -> None:
        self.parts.append(f"</{tag}>")

    def text(self, x: float, y: float, text: str, **attrs: str) -> None:
        self.el("text", text, x=num(x), y=num(y), **attrs)

    def line(self, x1: float, y1: float, x2: float, y2: float, **attrs: str) -> None:
        self.el("line", x1=num(x1), y1=num(y1), x2=num(x2), y2=num(y2), **attrs)

    def rect(self, x: float, y: float, w: float, h: float, **attrs: str) -> None:
        self.el("rect", x=num(x), y=num(y), width=num(max(w, 0.0)), height=num(h), **attrs)

    def render(self) -> str:
        return "".join([*self.parts, "</svg>"])


def nice_step(span: float, ticks: int = 6) -> float:
    """A round tick step (1, 2 or 5 times a power of ten) for ``span``."""
    if span <= 0:
        return 1.0
    raw = span / ticks
    power = 10 ** math.floor(math.log10(raw))
    return float(next(m * power for m in (1, 2, 5, 10) if m * power >= raw))


def size_label(size: float) -> str:
    """Bytes as the probes print them: ``8 B``, ``64 KiB``, ``1 GiB``."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:g} {unit}"
    return f"{size:g} B"


def bandwidth_svg(
    series: Sequence[Series],
    expected_gbytes_s: float | None,
    *,
    labels: Sequence[str] = (),
    title: str = "Bus bandwidth by message size",
) -> str:
    """A log-x chart of bus bandwidth by message size, with the expected line dashed.

    ``series`` are lists of (size_bytes, busbw_gbytes_s); sizes that are not
    positive are left out (a log axis has no place for them). ``labels``
    name the series in the legend (``series 1``... when missing).
    """
    points = [[(s, bw) for s, bw in one if s > 0 and bw >= 0] for one in series]
    sizes = [s for one in points for s, _ in one]
    svg = Svg(760, 320, title, class_="chart bandwidth")
    left, top, right, bottom = 60.0, 20.0, 600.0, 270.0
    if not sizes:
        svg.text(left, top + 20, "no bandwidth measurements")
        return svg.render()
    lo, hi = math.log2(min(sizes)), math.log2(max(sizes))
    if hi - lo < 1:
        lo, hi = lo - 1, hi + 1
    peak = max([bw for one in points for _, bw in one] + [expected_gbytes_s or 0.0]) * 1.1 or 1.0

    def x_of(size: float) -> float:
        return left + (math.log2(size) - lo) / (hi - lo) * (right - left)

    def y_of(bw: float) -> float:
        return bottom - bw / peak * (bottom - top)

    svg.rect(left, top, right - left, bottom - top, fill="#fafafa", stroke="#d0d7de")
    step = nice_step(peak)
    tick = 0.0
    while tick <= peak:
        svg.line(left, y_of(tick), right, y_of(tick), stroke="#eaeef2")
        svg.text(left - 6, y_of(tick) + 4, f"{tick:g}", text_anchor="end", fill="#57606a")
        tick += step
    stride = max(1, math.ceil((hi - lo) / 10))
    exp = math.ceil(lo)
    while exp <= hi:
        if exp % stride == 0:
            x = x_of(2.0**exp)
            svg.line(x, bottom, x, bottom + 4, stroke="#57606a")
            svg.text(x, bottom + 16, size_label(2.0**exp), text_anchor="middle", fill="#57606a")
        exp += 1
    svg.text((left + right) / 2, bottom + 34, "message size (log scale)", text_anchor="middle")
    svg.text(
        14,
        (top + bottom) / 2,
        "busbw GB/s",
        transform=f"rotate(-90 14 {num((top + bottom) / 2)})",
        text_anchor="middle",
    )
    legend_y = top + 8
    if expected_gbytes_s is not None:
        y = y_of(expected_gbytes_s)
        svg.line(
            left,
            y,
            right,
            y,
            stroke="#cf222e",
            stroke_dasharray="6 4",
            stroke_width="1.5",
            class_="expected",
        )
        svg.line(
            right + 14, legend_y, right + 34, legend_y, stroke="#cf222e", stroke_dasharray="6 4"
        )
        svg.text(right + 40, legend_y + 4, f"expected {expected_gbytes_s:g} GB/s")
        legend_y += 18
    for n, one in enumerate(points):
        colour = SERIES_COLOURS[n % len(SERIES_COLOURS)]
        name = labels[n] if n < len(labels) else f"series {n + 1}"
        ordered = sorted(one)
        svg.open("g", None, class_="series", data_series=name)
        coords = " ".join(f"{num(x_of(s))},{num(y_of(bw))}" for s, bw in ordered)
        svg.el("polyline", points=coords, fill="none", stroke=colour, stroke_width="2")
        for s, bw in ordered:
            svg.open("g", f"{name}: {size_label(s)} at {bw:g} GB/s")
            svg.el("circle", cx=num(x_of(s)), cy=num(y_of(bw)), r="3", fill=colour)
            svg.close()
        svg.close()
        svg.line(right + 14, legend_y, right + 34, legend_y, stroke=colour, stroke_width="2")
        svg.text(right + 40, legend_y + 4, name[:20])
        legend_y += 18
    return svg.render()
