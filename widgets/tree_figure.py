"""H-Mem's temporal-semantic tree drawn as a tree: a plotly icicle, one box per node.

Roots (the level-4 year nodes) are on the left, their children to the right of them, down to the
level-1 leaves (one memory event each). A box's height is the number of memory events under it, its
colour its level; a single-child parent that only copies its child's text (``copy_of_child``, no
LLM summary) is drawn pale and hatched. Each box is labelled with its level and time window
(``L3 · Mar 2023``) and the start of its summary; hovering shows the whole window, the dates, the
consolidation count and more of the summary. Every text is escaped (``widgets.html.esc``) before
plotly sees it, so a summary cannot inject markup into the chart.

H-Mem groups nodes *by meaning inside a time window*: a node joins the most similar cluster of its
parent level's window, or starts a new one when no cluster is similar enough (cosine below the
level's alpha). So one year can hold two L4 nodes, one month three L3 nodes: they are separate
clusters, not duplicates. ``same_window_groups`` finds them and the caption says so.

    fig = tree_figure(nodes, levels, selected="sum19")   # zoomed to sum19, its box outlined
    caption_html(nodes, levels)                          # the legend: levels, colours, clusters
"""
from __future__ import annotations

import re
import textwrap
from collections import Counter
from datetime import date, datetime
from typing import Mapping, Sequence

from workbench.words import counted

from .html import box, esc, short, when_text

#: one colour per level (L1 blue, L2 green, L3 orange, L4 violet, then more for deeper trees)
LEVEL_COLOURS = ("#1971c2", "#2f7d32", "#c2410c", "#7048e8", "#862e9c", "#0b7285")
SELECTED_LINE = "#212529"
#: the figure's height: PX_PER_EVENT for each memory event of the whole tree, within MIN_HEIGHT..MAX_HEIGHT;
#: a one-event box under LABELLED_PX is too small for its 11 px text, so plotly hides its label (hover still shows
#: it, zooming in makes room, and the caption says so: ``leaves_unlabelled``)
PX_PER_EVENT, MIN_HEIGHT, MAX_HEIGHT = 14, 420, 860
#: a one-event box shorter than this (px) shows no label: plotly hides 11 px text that does not fit with its padding
LABELLED_PX = 18
#: the figure's margins (top: room for the zoom path bar's line; the sides and bottom: a sliver)
MARGIN = dict(l=4, r=4, t=30, b=4)
#: what the figure spends above and below the boxes: the top and bottom margins and the zoom path bar (22 px)
CHROME_PX = MARGIN["t"] + MARGIN["b"] + 22
LABEL_CHARS, LEAF_CHARS = 30, 24
SHOWN_GROUPS = 3  # same-window groups the caption names (highest levels first)
#: the id of the box drawn above the roots (the whole memory)
ROOT = "(memory)"


def level_colour(level: int) -> str:
    return LEVEL_COLOURS[(int(level) - 1) % len(LEVEL_COLOURS)]


def pale(colour: str, amount: float = 0.72) -> str:
    """``colour`` mixed with white (a copy's fill)."""
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    r, g, b = (round(c + (255 - c) * amount) for c in (r, g, b))
    return f"#{r:02x}{g:02x}{b:02x}"


def window_text(window: str) -> str:
    """A bucket key read aloud: ``2023`` -> 2023, ``2023-03`` -> Mar 2023, ``2023-W11`` -> week of
    13 Mar 2023, ``2023-03-14`` -> 14 Mar 2023; anything else unchanged."""
    w = str(window or "")
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", w):
            d = datetime.strptime(w, "%Y-%m-%d")
            return f"{d.day} {d:%b %Y}"
        if re.fullmatch(r"\d{4}-\d{2}", w):
            return datetime.strptime(w, "%Y-%m").strftime("%b %Y")
        m = re.fullmatch(r"(\d{4})-W(\d{2})", w)
        if m:
            d = date.fromisocalendar(int(m[1]), int(m[2]), 1)
            return f"week of {d.day} {d:%b %Y}"
    except ValueError:
        pass
    return w


def roots_of(nodes: Mapping[str, Mapping]) -> list[Mapping]:
    """Nodes without a (known) parent, in time order."""
    return sorted((r for r in nodes.values() if r.get("parent") not in nodes),
                  key=lambda r: (str(r.get("start")), -r["level"], r["id"]))


def children_of(r: Mapping, nodes: Mapping[str, Mapping]) -> list[Mapping]:
    return sorted((nodes[c] for c in r.get("children") or [] if c in nodes),
                  key=lambda c: (str(c.get("start")), c["id"]))


def _day(value) -> str:
    return str(value or "")[:10]


def day_text(value) -> str:
    """An ISO date or datetime as a reader says the day ("14 Mar 2023"); anything else unchanged."""
    return when_text(_day(value))


def dates_text(r: Mapping) -> str:
    """A node's date range in words: "14 Mar 2023", or "14 Mar – 19 Jun 2023" (the year once when shared)."""
    start, end = _day(r.get("start")), _day(r.get("end"))
    if not end or end == start:
        return day_text(start)
    first, last = day_text(start), day_text(end)
    if first[-4:] == last[-4:] and first != start:
        first = first[:-5]
    return f"{first} – {last}"


def walk(nodes: Mapping[str, Mapping]) -> list[Mapping]:
    """Every node reachable from a root through its ``parent`` field, parents before children; roots
    and siblings in time order. A node in a parent cycle is left out (``unreachable`` lists it)."""
    out, seen = [], set()
    stack = list(reversed(roots_of(nodes)))
    while stack:
        r = stack.pop()
        if r["id"] in seen:
            continue
        seen.add(r["id"])
        out.append(r)
        stack.extend(reversed([c for c in children_of(r, nodes) if c["id"] not in seen and c.get("parent") == r["id"]]))
    return out


def unreachable(nodes: Mapping[str, Mapping]) -> list[str]:
    shown = {r["id"] for r in walk(nodes)}
    return [n for n in nodes if n not in shown]


def event_counts(order: Sequence[Mapping], nodes: Mapping[str, Mapping]) -> dict[str, int]:
    """Memory events (leaves) under each node: a leaf counts 1, a parent the sum of its drawn children."""
    drawn = {r["id"] for r in order}
    counts: dict[str, int] = {}
    for r in reversed(order):  # children come after their parent in ``order``
        kids = [c for c in r.get("children") or [] if c in drawn and nodes[c].get("parent") == r["id"]]
        counts[r["id"]] = sum(counts.get(c, 0) for c in kids) or 1
    return counts


def same_window_groups(nodes: Mapping[str, Mapping]) -> list[tuple[int, str, list[str]]]:
    """``(level, window, ids)`` for each level and window that holds more than one node (H-Mem's
    separate semantic clusters of one time window), highest level first."""
    groups: dict[tuple[int, str], list[str]] = {}
    for r in sorted(nodes.values(), key=lambda r: (str(r.get("start")), r["id"])):
        if int(r["level"]) > 1:
            groups.setdefault((int(r["level"]), str(r.get("window", ""))), []).append(r["id"])
    return [(lv, w, ids) for (lv, w), ids in sorted(groups.items(), key=lambda kv: (-kv[0][0], kv[0][1]))
            if len(ids) > 1]


def zoom_root(selected: str | None, nodes: Mapping[str, Mapping]) -> str | None:
    """The box the figure opens on: the selected node when it has children, else its parent (a leaf is
    shown among its siblings); None (the whole tree) without a selection."""
    if not selected or selected not in nodes:
        return None
    r = nodes[selected]
    if any(c in nodes for c in r.get("children") or []):
        return selected
    return r.get("parent") if r.get("parent") in nodes else None


def _box_text(r: Mapping, cluster: str) -> str:
    """Level and window in bold, then the start of the summary: on a second line for a summary node,
    on the same line for a leaf (a leaf's box is one event high)."""
    copy = " · copy" if r.get("copy_of_child") else ""
    leaf = int(r["level"]) == 1
    words = short(" ".join(str(r.get("summary", "")).split()), LEAF_CHARS if leaf else LABEL_CHARS)
    return (f"<b>L{int(r['level'])} · {esc(window_text(r.get('window', '')))}{esc(cluster)}</b>{copy}"
            f"{' ' if leaf else '<br>'}{esc(words)}")


def _hover(r: Mapping, levels: Mapping[int, str], events: int, cluster: str) -> str:
    lv = int(r["level"])
    words = ' '.join(str(r.get('summary', '')).split())
    lines = [f"<b>{esc(r['id'])}</b>: L{lv} {esc(levels.get(lv, ''))} window {esc(window_text(r.get('window', '')))}"
             f"{esc(cluster)}",
             f"{esc(dates_text(r))} · {counted(events, 'memory event')}"
             f" · consolidated {esc(r.get('n_m', 0))}×"]
    if r.get("copy_of_child"):
        lines.append(f"copy of its single child {esc(r['copy_of_child'])} (no LLM summary)")
    lines += [esc(line) for line in textwrap.wrap(short(words, 360), 90)]  # plotly does not wrap hover text
    return "<br>".join(lines)


def cluster_marks(nodes: Mapping[str, Mapping]) -> dict[str, str]:
    """`` (cluster 2 of 3)`` for each node that shares its level and window with others."""
    marks = {}
    for _, _, ids in same_window_groups(nodes):
        for i, nid in enumerate(ids, 1):
            marks[nid] = f" ({i} of {len(ids)})"
    return marks


def tree_figure(nodes: Mapping[str, Mapping], levels: Mapping[int, str] | None = None, *,
                selected: str | None = None, height: int | None = None):
    """The tree as a plotly icicle (see the module docstring); ``customdata`` holds each box's node id,
    so a click names the node. ``selected`` is outlined and the figure opens zoomed on it (``zoom_root``)."""
    import plotly.graph_objects as go

    levels = dict(levels or {})
    order = walk(nodes)
    counts = event_counts(order, nodes)
    marks = cluster_marks(nodes)
    roots = [r for r in order if r.get("parent") not in nodes]
    total = sum(counts[r["id"]] for r in roots)
    # one box above the L4 nodes, the whole memory (plotly would add a blank one for several roots)
    top = f"{counted(len(roots), 'root')} · {counted(total, 'event')}"
    ids, colours, hatch, ink, ring = [ROOT], ["#e9ecef"], ["#ffffff"], ["#212529"], ["#ffffff"]
    parents, labels, values = [""], ["memory"], [total]
    texts, hovers = [f"<b>memory</b><br>{esc(top)}"], [f"the whole memory: {esc(top)}"]
    for r in order:
        c, copy, mark = level_colour(r["level"]), bool(r.get("copy_of_child")), marks.get(r["id"], "")
        ids.append(r["id"])
        parents.append(r.get("parent") if r.get("parent") in nodes else ROOT)
        labels.append(f"L{int(r['level'])} {window_text(r.get('window', ''))}")  # short: the zoom bar hides the rest
        values.append(counts[r["id"]])
        texts.append(_box_text(r, mark))
        hovers.append(_hover(r, levels, counts[r["id"]], mark))
        colours.append(pale(c, 0.6) if copy else c)
        hatch.append(pale(c, 0.25))  # thin hatching: the text over it stays readable
        ink.append("#212529" if copy else "#ffffff")  # white on a level colour, dark on pale (AA either way)
        ring.append(SELECTED_LINE if r["id"] == selected else "#ffffff")
    patterns = [""] + ["/" if r.get("copy_of_child") else "" for r in order]
    trace = go.Icicle(
        ids=ids, customdata=[""] + ids[1:], parents=parents, labels=labels, values=values, branchvalues="total",
        sort=False, text=texts, texttemplate="%{text}", hovertext=hovers, hovertemplate="%{hovertext}<extra></extra>",
        # one line width for all (a per-box width array makes plotly drop the zoom path bar)
        marker=dict(colors=colours, line=dict(color=ring, width=3),
                    pattern=dict(shape=patterns, bgcolor=colours, fgcolor=hatch, size=12, solidity=0.12)),
        textfont=dict(size=12), insidetextfont=dict(color=ink), tiling=dict(orientation="h", pad=1),
        pathbar=dict(visible=True, side="top", thickness=22, textfont=dict(size=12, color=ink)),
        leaf=dict(opacity=1.0), level=zoom_root(selected, nodes) or ROOT, maxdepth=-1)
    fig = go.Figure(trace)
    if height is None:
        height = figure_height(total)
    fig.update_layout(height=int(height), margin=MARGIN, hoverlabel=dict(align="left"),
                      uniformtext=dict(minsize=11, mode="hide"),  # a label that cannot be 11 px is hidden
                      font=dict(family="system-ui, sans-serif", size=12))
    return fig


def figure_height(events: int) -> int:
    """The figure's height for a tree of ``events`` memory events (``PX_PER_EVENT`` each, within the bounds)."""
    return min(MAX_HEIGHT, max(MIN_HEIGHT, PX_PER_EVENT * events + 50))


def leaves_unlabelled(nodes: Mapping[str, Mapping]) -> int:
    """How many one-event boxes the whole-tree view draws too thin to carry a label (0 when they fit): the
    caption says so, since a column of bare strips reads as a rendering fault (usability review)."""
    roots = [r for r in walk(nodes) if r.get("parent") not in nodes]
    counts = event_counts(walk(nodes), nodes)
    total = sum(counts[r["id"]] for r in roots)
    if not total or (figure_height(total) - CHROME_PX) / total >= LABELLED_PX:
        return 0
    return sum(1 for r in nodes.values() if int(r["level"]) == 1)


def caption_html(nodes: Mapping[str, Mapping], levels: Mapping[int, str] | None = None) -> str:
    """The figure's legend (escaped): a colour chip per level present with its window, what a pale
    hatched box, a box's height and a click mean, and which windows hold several clusters."""
    levels = dict(levels or {})
    if not nodes:
        return ""
    per_level = Counter(int(r["level"]) for r in nodes.values())
    chips = "".join(
        f"<span class='wb-lv' style='background:{level_colour(lv)}'>L{lv} {esc(levels.get(lv, ''))}</span>"
        f"<span class='wb-muted'>{n}{' (one memory event each)' if lv == 1 else ''}</span> "
        for lv, n in sorted(per_level.items(), reverse=True))
    fill, hatch = pale(level_colour(2), 0.6), pale(level_colour(2), 0.25)
    copy_chip = (f"<span class='wb-lv wb-lv-copy' style='background:repeating-linear-gradient(135deg,"
                 f"{fill} 0 5px,{hatch} 5px 6px);color:#212529'>pale, hatched</span>")
    groups = same_window_groups(nodes)
    split = ""
    if groups:
        counts = event_counts(walk(nodes), nodes)
        # the clusters by their events, as the boxes are labelled ("(1 of 2)"); their node ids on hover
        named = "; ".join(f"<span title='{esc('nodes ' + ', '.join(ids))}'>{len(ids)} × L{lv} "
                          f"{esc(window_text(w))} ({' + '.join(f'{counts.get(i, 0):,}' for i in ids)} events)</span>"
                          for lv, w, ids in groups[:SHOWN_GROUPS])
        more = len(groups) - SHOWN_GROUPS
        named += f"; {counted(more, 'more window')} at lower levels" if more > 0 else ""
        split = ("<p class='wb-legend-line'><b>Same window, separate clusters:</b> " + named + ". The method puts a "
                 "node in the most similar cluster of its parent's time window and starts a new one when none is "
                 "similar enough (cosine below that level's alpha), so one window can hold several nodes, labelled "
                 "<i>(1 of 2)</i>, <i>(2 of 2)</i>; a one-event cluster is a thin strip (hover it, or pick it in "
                 "the list).</p>")
    thin = leaves_unlabelled(nodes)
    strips = (f"<p class='wb-legend-line'>Over the whole tree the {thin} L1 {esc(levels.get(1, ''))} boxes (one memory "
              "event each) are strips too thin to label: hover one to read it, or pick or click a box to their "
              "left (a higher level) to zoom in, where they get their labels.</p>" if thin else "")
    lost = unreachable(nodes)
    missing = (f"<p class='wb-muted'>Not drawn (in a parent cycle): {esc(' '.join(lost))}</p>" if lost else "")
    return box("<style>.wb-tree-caption .wb-lv {display:inline-block; padding:0 7px; border-radius:8px; color:#fff; "
               "font-weight:600; margin-right:3px;} .wb-tree-caption .wb-legend-line {color:#343a40; margin:3px 0;}"
               "</style><div class='wb-tree-caption'>"
               f"<p class='wb-legend-line'><b>Levels</b>, left to right (with their time window and how many "
               f"nodes): {chips}· {copy_chip} a single-child parent that copies its child's text (no LLM summary)</p>"
               "<p class='wb-legend-line'>A box's height is the number of memory events under it; its label says its "
               "level, window and how its summary starts (hover for more). Pick a node in the list (in the app, or "
               "click its box) to see its details and zoom the chart onto it; the bar above the chart zooms out.</p>"
               f"{split}{strips}{missing}</div>")
