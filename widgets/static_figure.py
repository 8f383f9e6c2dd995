"""A plotly figure drawn as a static inline SVG, for the views' static HTML (``DisplaysWidget.static_html``).

A notebook opened without live widgets (untrusted, nbviewer, a code host) cannot draw a plotly figure:
plotly's own HTML export is a loader script that fetches plotly.js from a CDN, and a static output must
hold no script and work offline (``widgets.html.plotly_bundle`` says the same for the live outputs).
The workbench's figures are all scatter plots (the event timeline's lanes, the cost-accuracy points,
RecMem's clusters and gate counts), so this module draws exactly that subset from the figure's own data:
scatter traces (markers with their colour, size and shape, lines, text labels, vertical error bars),
numeric, log or categorical axes with the figure's tick labels, rectangle and line shapes (session bands,
reference lines), annotations, the title, the axis titles and a legend. Anything else (another trace type,
hover text) is left out; the views put their content in tables beside the picture, so nothing is only here.

Every text taken from the figure (names, labels, titles) is reduced to plain text (plotly's ``<br>`` and
``<sup>`` tags dropped, entities decoded) and escaped again with ``widgets.html.esc``.

    figure_html(fig)     # '<div class="wb-figure"><svg ...>...</svg><div>legend</div></div>'
"""
from __future__ import annotations

import html as _html
import math
import re
from typing import Any, Sequence

from .html import esc

WIDTH = 760
#: plotly's default colour sequence (its template's colorway), for traces without a colour of their own
COLORWAY = ("#636efa", "#EF553B", "#00cc96", "#ab63fa", "#FFA15A", "#19d3f3", "#FF6692", "#B6E880", "#FF97FF",
            "#FECB52")
_TAG = re.compile(r"<[^>]*>")
_BR = re.compile(r"<br\s*/?>", re.I)


def plain(text: Any) -> str:
    """A plotly text (HTML-ish: ``<br>``, ``<sup>``, entities) as one line of plain text (escape it to show it)."""
    if text is None:
        return ""
    s = _BR.sub(" · ", str(text))
    return " ".join(_html.unescape(_TAG.sub("", s)).split())


def _num(v) -> float | None:
    if v is None or isinstance(v, str):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _seq(v, n: int) -> list:
    """A per-point property as a list of ``n`` (a scalar repeated; missing -> None)."""
    if isinstance(v, (list, tuple)):
        return list(v) + [None] * (n - len(v))
    try:  # numpy arrays
        import numpy as np

        if isinstance(v, np.ndarray):
            return list(v.tolist()) + [None] * (n - len(v))
    except ImportError:  # pragma: no cover
        pass
    return [v] * n


class _Axis:
    """Data -> pixel along one axis: numeric, log or categorical (category ``i`` at ``i``, as plotly)."""

    def __init__(self, spec, values: Sequence, extra: Sequence[float], lo_px: float, hi_px: float):
        self.log = getattr(spec, "type", None) == "log"
        cats = [v for v in values if isinstance(v, str)]
        self.categories: list[str] = []
        if cats or getattr(spec, "type", None) == "category":
            order = list(getattr(spec, "categoryarray", None) or ())
            self.categories = order + [c for c in dict.fromkeys(cats) if c not in order]
        nums = [self._raw(v) for v in values] + [self._raw(v) for v in extra]
        nums = [v for v in nums if v is not None]
        rng = getattr(spec, "range", None)
        if rng is not None and None not in rng:
            lo, hi = float(rng[0]), float(rng[1])  # plotly gives a log axis's range in log units already
        elif self.categories:
            lo, hi = -0.6, len(self.categories) - 0.4
        elif nums:
            lo, hi = min(nums), max(nums)
            pad = (hi - lo) * 0.06 or (abs(hi) * 0.1 or 1.0)
            lo, hi = lo - pad, hi + pad
        else:
            lo, hi = 0.0, 1.0
        self.lo, self.hi, self.lo_px, self.hi_px = lo, hi, lo_px, hi_px
        self.spec = spec

    def _raw(self, v) -> float | None:
        if isinstance(v, str):
            return float(self.categories.index(v)) if v in self.categories else None
        f = _num(v)
        if f is None:
            return None
        if self.log:
            return math.log10(f) if f > 0 else None
        return f

    def px(self, v) -> float | None:
        f = self._raw(v)
        return None if f is None else self.frac_px((f - self.lo) / ((self.hi - self.lo) or 1.0))

    def frac_px(self, frac: float) -> float:
        return self.lo_px + frac * (self.hi_px - self.lo_px)

    def ticks(self) -> list[tuple[float, str]]:
        """(pixel, label) pairs: the figure's own tick values and texts (plotly markup, ``<br>`` for a line
        break), else categories, else round numbers."""
        vals = getattr(self.spec, "tickvals", None)
        if vals is not None:
            texts = list(getattr(self.spec, "ticktext", None) or [str(v) for v in vals])
            out = [(self.px(v), str(t)) for v, t in zip(vals, texts)]
        elif self.categories:
            out = [(self.px(c), c) for c in self.categories]
        elif self.log:
            out = [(self.px(10 ** e), f"{10 ** e:,.0f}" if e >= 0 else f"{10 ** e:g}")
                   for e in range(math.floor(self.lo), math.ceil(self.hi) + 1)]
        else:
            out = [(self.px(v), f"{v:g}") for v in _nice(self.lo, self.hi)]
        lo, hi = sorted((self.lo_px, self.hi_px))
        return [(p, t) for p, t in out if p is not None and lo - 0.5 <= p <= hi + 0.5]


def _nice(lo: float, hi: float, n: int = 5) -> list[float]:
    span = hi - lo
    if span <= 0:
        return [lo]
    step = 10 ** math.floor(math.log10(span / n))
    for m in (1, 2, 5, 10):
        if span / (step * m) <= n:
            step *= m
            break
    first = math.ceil(lo / step) * step
    return [round(first + i * step, 10) for i in range(int((hi - first) / step) + 1)]


def _marker(shape: str, x: float, y: float, size: float, fill: str, stroke: str, width: float) -> str:
    """One marker: circle, square, diamond or star (plotly's names; ``-open`` draws the outline only)."""
    open_ = shape.endswith("-open")
    shape = shape.replace("-open", "")
    fill_attr = "none" if open_ else fill
    stroke = fill if open_ else stroke
    width = max(width, 1.5) if open_ else width
    r = size / 2
    style = f'fill="{esc(fill_attr)}" stroke="{esc(stroke)}" stroke-width="{width:g}"'
    if shape == "square":
        return f'<rect x="{x - r:.1f}" y="{y - r:.1f}" width="{size:.1f}" height="{size:.1f}" {style}/>'
    if shape in ("diamond", "star"):
        k = 10 if shape == "star" else 4
        pts = []
        for i in range(k):
            a = -math.pi / 2 + i * 2 * math.pi / k
            rr = r * (1.25 if shape == "star" else 1.2) if i % 2 == 0 or shape == "diamond" else r * 0.5
            pts.append(f"{x + rr * math.cos(a):.1f},{y + rr * math.sin(a):.1f}")
        return f'<polygon points="{" ".join(pts)}" {style}/>'
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}" {style}/>'


def _text(x: float, y: float, text: str, *, anchor: str = "middle", size: int = 11, colour: str = "#333",
          rotate: bool = False, weight: str = "normal") -> str:
    rot = f' transform="rotate(-90 {x:.1f} {y:.1f})"' if rotate else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" fill="{colour}" '
            f'font-weight="{weight}"{rot}>{esc(text)}</text>')


def _dash(dash) -> str:
    return {"dash": ' stroke-dasharray="6 4"', "dot": ' stroke-dasharray="2 3"',
            "dashdot": ' stroke-dasharray="6 3 2 3"'}.get(dash or "", "")


def _colour(trace, i: int) -> str:
    c = getattr(trace.marker, "color", None) if getattr(trace, "marker", None) is not None else None
    if isinstance(c, str):
        return c
    lc = getattr(trace.line, "color", None) if getattr(trace, "line", None) is not None else None
    return lc if isinstance(lc, str) else COLORWAY[i % len(COLORWAY)]


def _error_extents(trace) -> list[float]:
    """The y values an error bar reaches (so the axis range takes them in)."""
    e = getattr(trace, "error_y", None)
    if e is None or getattr(e, "array", None) is None:
        return []
    n = len(trace.y or ())
    up, down = _seq(e.array, n), _seq(e.arrayminus if e.arrayminus is not None else e.array, n)
    out = []
    for y, u, d in zip(trace.y or (), up, down):
        y, u, d = _num(y), _num(u), _num(d)
        if y is not None and u is not None:
            out.append(y + u)
        if y is not None and d is not None:
            out.append(y - d)
    return out


def figure_svg(fig, *, width: int = WIDTH) -> str:
    """The figure's scatter traces, shapes and texts as an ``<svg>`` element (see the module docstring)."""
    layout = fig.layout
    traces = [t for t in fig.data if t.type == "scatter"]
    height = int(layout.height or 400)
    xs = [v for t in traces for v in (t.x or ())]
    ys = [v for t in traces for v in (t.y or ())]
    shapes = list(layout.shapes or ())
    y_extra = [v for t in traces for v in _error_extents(t)] + [
        s.y0 for s in shapes if s.yref == "y" and s.type == "line" and s.y0 == s.y1 and _num(s.y0) is not None]
    y_labels = [str(v) for v in ys if isinstance(v, str)] + [str(c) for c in (layout.yaxis.categoryarray or ())]
    left = max(55, min(300, 7 * max((len(s) for s in y_labels), default=0) + 20))
    title_lines = [plain(line) for line in _BR.split(str(getattr(layout.title, "text", None) or "")) if plain(line)]
    top, right, bottom = 18 + 16 * len(title_lines), 20, 64
    xa = _Axis(layout.xaxis, xs, [], left, width - right)
    ya = _Axis(layout.yaxis, ys, y_extra, height - bottom, top)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
           f'font-family="system-ui, sans-serif" role="img" aria-label="{esc(" ".join(title_lines) or "figure")}">',
           f'<rect x="{left}" y="{top}" width="{width - right - left}" height="{height - bottom - top}" '
           f'fill="white" stroke="#ced4da"/>']

    def sx(s, v, frac_ref):  # a shape coordinate: data or a fraction of the plot area
        return xa.frac_px(float(v)) if frac_ref in ("paper", "x domain") else xa.px(v)

    def sy(s, v, frac_ref):
        return ya.frac_px(float(v)) if frac_ref in ("paper", "y domain") else ya.px(v)

    below = [s for s in shapes if s.layer == "below"]
    for s in below + [s for s in shapes if s.layer != "below"]:
        x0, x1 = sx(s, s.x0, s.xref), sx(s, s.x1, s.xref)
        y0, y1 = sy(s, s.y0, s.yref), sy(s, s.y1, s.yref)
        if None in (x0, x1, y0, y1):
            continue
        line = s.line
        stroke = (line.color if line and line.color else "#868e96")
        if s.type == "rect":
            w = line.width if line and line.width is not None else 1
            out.append(f'<rect x="{min(x0, x1):.1f}" y="{min(y0, y1):.1f}" width="{abs(x1 - x0):.1f}" '
                       f'height="{abs(y1 - y0):.1f}" fill="{esc(s.fillcolor or "none")}" '
                       f'stroke="{esc(stroke) if w else "none"}"/>')
        elif s.type == "line":
            out.append(f'<line x1="{x0:.1f}" y1="{y0:.1f}" x2="{x1:.1f}" y2="{y1:.1f}" stroke="{esc(stroke)}" '
                       f'stroke-width="{(line.width if line and line.width else 1):g}"'
                       f'{_dash(line.dash if line else None)}/>')
    edge = -math.inf  # the right end of the last x tick label drawn: a label that would overlap it is left out
    for px_, label in xa.ticks():
        lines = [plain(part) for part in _BR.split(label)]
        half = 3 * max(len(line) for line in lines)
        out.append(f'<line x1="{px_:.1f}" y1="{height - bottom}" x2="{px_:.1f}" y2="{height - bottom + 4}" '
                   f'stroke="#868e96"/>')
        if px_ - half > edge + 4:
            edge = px_ + half
            out += [_text(px_, height - bottom + 16 + 12 * k, line, size=10) for k, line in enumerate(lines)]
    for py_, label in ya.ticks():
        out.append(f'<line x1="{left}" y1="{py_:.1f}" x2="{width - right}" y2="{py_:.1f}" stroke="#f1f3f5"/>'
                   + _text(left - 6, py_ + 4, plain(label), anchor="end", size=10))
    for i, t in enumerate(traces):
        out.append(_trace_svg(t, i, xa, ya))
    for a in layout.annotations or ():
        ax = sx(a, a.x, a.xref) if a.x is not None else None
        ay = sy(a, a.y, a.yref) if a.y is not None else None
        if ax is not None and ay is not None and plain(a.text):
            anchor = {"right": "end", "left": "start"}.get(a.xanchor, "middle")
            out.append(_text(ax, ay - 4, plain(a.text), anchor=anchor, size=10, colour="#495057"))
    for n, line in enumerate(title_lines):
        out.append(_text(width / 2, 16 + 16 * n, line, size=13 if n == 0 else 11,
                         weight="bold" if n == 0 else "normal"))
    xt, yt = plain(getattr(layout.xaxis.title, "text", "")), plain(getattr(layout.yaxis.title, "text", ""))
    if xt:
        out.append(_text((left + width - right) / 2, height - 8, xt))
    if yt and not ya.categories:
        out.append(_text(14, (top + height - bottom) / 2, yt, rotate=True))
    out.append("</svg>")
    return "".join(out)


def _trace_svg(t, i: int, xa: _Axis, ya: _Axis) -> str:
    xs, ys = list(t.x or ()), list(t.y or ())
    n = min(len(xs), len(ys))
    pts = [(xa.px(x), ya.px(y)) for x, y in zip(xs[:n], ys[:n])]
    mode = t.mode or "markers"
    colour = _colour(t, i)
    out = []
    if "lines" in mode:
        seg = [f"{x:.1f},{y:.1f}" for x, y in pts if x is not None and y is not None]
        if len(seg) > 1:
            dash = _dash(t.line.dash if t.line else None)
            out.append(f'<polyline points="{" ".join(seg)}" fill="none" stroke="{esc(colour)}" '
                       f'stroke-width="1.5"{dash}/>')
    e = t.error_y
    if e is not None and e.array is not None:
        up, down = _seq(e.array, n), _seq(e.arrayminus if e.arrayminus is not None else e.array, n)
        for (px_, _), y, u, d in zip(pts, ys, up, down):
            y, u, d = _num(y), _num(u), _num(d)
            if px_ is None or y is None or u is None or d is None:
                continue
            hi, lo = ya.px(y + u), ya.px(y - d)
            if hi is not None and lo is not None:
                out.append(f'<path d="M{px_:.1f},{lo:.1f}V{hi:.1f}M{px_ - 4:.1f},{lo:.1f}h8M{px_ - 4:.1f},{hi:.1f}h8" '
                           f'stroke="{esc(colour)}" stroke-width="1.2" fill="none"/>')
    if "markers" in mode:
        m = t.marker
        sizes = _seq(m.size if m and m.size is not None else 6, n)
        symbols = _seq(m.symbol if m and m.symbol is not None else "circle", n)
        colours = _seq(m.color if m and m.color is not None else colour, n)
        line = m.line if m is not None else None
        stroke = line.color if line is not None and isinstance(line.color, str) else "white"
        lw = line.width if line is not None and isinstance(line.width, (int, float)) else 0.5
        for (x, y), size, sym, c in zip(pts, sizes, symbols, colours):
            if x is None or y is None:
                continue
            out.append(_marker(str(sym or "circle"), x, y, float(_num(size) or 6),
                               c if isinstance(c, str) else colour, stroke, lw))
    if "text" in mode and t.text is not None:
        texts = _seq(t.text, n)
        positions = _seq(t.textposition or "top center", n)
        for (x, y), text, pos in zip(pts, texts, positions):
            if x is None or y is None or not plain(text):
                continue
            pos = str(pos or "top center")
            dy = -10 if pos.startswith("top") else (14 if pos.startswith("bottom") else 4)
            anchor, dx = (("start", 8) if pos.endswith("right") else
                          ("end", -8) if pos.endswith("left") else ("middle", 0))
            out.append(_text(x + dx, y + dy, plain(text), anchor=anchor, size=10))
    return "".join(out)


def legend_html(fig) -> str:
    """The legend's entries as inline HTML: a swatch in each trace's colour and its name."""
    items = []
    for i, t in enumerate(fig.data):
        if getattr(t, "showlegend", None) is False or not plain(getattr(t, "name", None)):
            continue
        c = _colour(t, i)
        items.append(f'<span style="margin-right:12px;white-space:nowrap"><span style="color:{esc(c)}">●</span> '
                     f"{esc(plain(t.name))}</span>")
    return (f'<div style="font: 12px system-ui, sans-serif; margin: 2px 0 6px 0">{"".join(items)}</div>'
            if items else "")


HIERARCHIES = ("icicle", "sunburst", "treemap")


def hierarchy_html(trace) -> str:
    """A hierarchical trace (icicle, sunburst, treemap) as nested lists: each node's label (its hover text's first
    line is the label when no label is given) under its parent, in the trace's order."""
    ids = [str(i) for i in (trace.ids or ())]
    labels = [plain(x) for x in _seq(trace.labels, len(ids))]
    parents = [str(x) if x is not None else "" for x in _seq(trace.parents, len(ids))]
    kids: dict[str, list[int]] = {}
    for n, parent in enumerate(parents):
        kids.setdefault(parent if parent in ids else "", []).append(n)

    def branch(key: str, depth: int) -> str:
        if depth > 12 or key not in kids:
            return ""
        items = "".join(f"<li>{esc(labels[n] or ids[n])}{branch(ids[n], depth + 1)}</li>" for n in kids[key])
        return f"<ul style='margin:0 0 0 1em;padding:0'>{items}</ul>"

    return f'<div class="wb-figure" style="font: 12px system-ui, sans-serif">{branch("", 0)}</div>'


def figure_html(fig, *, width: int = WIDTH) -> str:
    """The figure as static HTML: the SVG, then its legend (a hierarchy: nested lists). No script, nothing loaded
    from anywhere."""
    tree = [t for t in fig.data if t.type in HIERARCHIES]
    if tree:
        return "".join(hierarchy_html(t) for t in tree)
    return f'<div class="wb-figure" style="overflow-x:auto">{figure_svg(fig, width=width)}{legend_html(fig)}</div>'


__all__ = ["figure_html", "figure_svg", "legend_html", "plain"]
