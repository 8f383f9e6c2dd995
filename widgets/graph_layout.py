"""Where the entity graph's nodes go, computed before the page is drawn, so labels do not overlap.

vis-network's physics spreads dots, not their labels: around a hub (Priya, Tomasz) the neighbours'
names were drawn over each other, and fitting the whole graph into the frame shrank every label to
about 7 px. Here each entity gets a dot and a label size from its mentions (``node_sizes``), the
graph a seeded spring layout (networkx), stretched to the frame's shape; then every pair of label
boxes (the dot with its name under it, ``label_box``) that still overlap is pushed apart until none
do (``remove_overlaps``). The page draws the nodes where they are put (physics off) at a zoom where
the smallest label is at least ``MIN_LABEL_PX`` on screen; a graph too big for the frame at that
zoom is panned, not shrunk.

    pos = layout(graph)                  # {node id: (x, y)} in vis-network canvas units
    overlaps(graph, pos)                 # [] : no two label boxes overlap
"""
from __future__ import annotations

import math
from typing import Mapping

import numpy as np

#: the smallest label on screen, in CSS pixels at 100 % zoom
MIN_LABEL_PX = 11
#: label font sizes (canvas units): the least mentioned entity gets FONT_MIN, the most FONT_MAX
FONT_MIN, FONT_MAX = 14, 20
#: dot radius (canvas units), by mentions likewise
DOT_MIN, DOT_MAX = 7, 22
#: a label's width per character, as a share of its font size (system-ui, a little generous)
CHAR_WIDTH = 0.6
GAP = 6  # free space kept around each label box
ASPECT = 2.0  # the frame is about twice as wide as high
SEED = 7


def node_sizes(graph: Mapping) -> dict[str, tuple[float, float]]:
    """``{id: (dot radius, font size)}``, growing with the square root of mentions."""
    nodes = graph.get("nodes") or []
    counts = {n["id"]: max(1, int(n.get("mentions") or 0)) for n in nodes}
    lo, hi = min(counts.values(), default=1), max(counts.values(), default=1)
    out = {}
    for nid, c in counts.items():
        t = math.sqrt((c - lo) / (hi - lo)) if hi > lo else 0.0
        out[nid] = (DOT_MIN + (DOT_MAX - DOT_MIN) * t, round(FONT_MIN + (FONT_MAX - FONT_MIN) * t))
    return out


def label_box(name: str, radius: float, font: float) -> tuple[float, float, float, float]:
    """A node's extent around its centre: ``(left, right, up, down)``: the dot, and its name drawn
    under it (vis-network's dot shape), with ``GAP`` of free space around."""
    half = max(radius, CHAR_WIDTH * font * len(str(name)) / 2) + GAP / 2
    return half, half, radius + GAP / 2, radius + 4 + 1.3 * font + GAP / 2


def _boxes(graph: Mapping) -> tuple[list[str], np.ndarray]:
    sizes = node_sizes(graph)
    ids = [n["id"] for n in graph.get("nodes") or []]
    names = {n["id"]: n.get("name", n["id"]) for n in graph.get("nodes") or []}
    return ids, np.array([label_box(names[i], *sizes[i]) for i in ids], dtype=float).reshape(-1, 4)


def _pair_overlaps(xy: np.ndarray, ext: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For every pair (i, j): how far their boxes overlap in x and in y (<= 0: apart on that axis)."""
    left, right = xy[:, 0] - ext[:, 0], xy[:, 0] + ext[:, 1]
    top, bottom = xy[:, 1] - ext[:, 2], xy[:, 1] + ext[:, 3]
    ox = np.minimum(right[:, None], right[None, :]) - np.maximum(left[:, None], left[None, :])
    oy = np.minimum(bottom[:, None], bottom[None, :]) - np.maximum(top[:, None], top[None, :])
    return ox, oy


def remove_overlaps(xy: np.ndarray, ext: np.ndarray, *, rounds: int = 3000) -> np.ndarray:
    """Push overlapping boxes apart, along the axis where they overlap least (half each way), until no
    two overlap; deterministic. All overlapping pairs move at once each round (numpy); every 50th
    round spreads the whole layout by 5 % instead, so a crowded graph untangles in a few hundred
    rounds (300 entities: about 1.5 s)."""
    xy = xy.astype(float).copy()
    n = len(xy)
    if n < 2:
        return xy
    upper = np.triu(np.ones((n, n), dtype=bool), 1)
    for k in range(rounds):
        ox, oy = _pair_overlaps(xy, ext)
        hit = (ox > 0) & (oy > 0) & upper
        if not hit.any():
            break
        if k and k % 50 == 0:  # a crowded layout untangles faster with a little more room
            xy = (xy - xy.mean(axis=0)) * 1.05 + xy.mean(axis=0)
            continue
        i, j = np.nonzero(hit)
        dx, dy = xy[j, 0] - xy[i, 0], xy[j, 1] - xy[i, 1]
        along_x = ox[i, j] / ASPECT <= oy[i, j]  # moving sideways is cheaper in a wide frame
        push = np.zeros((len(i), 2))
        sx = np.where(dx >= 0, 1.0, -1.0)
        sy = np.where(dy >= 0, 1.0, -1.0)
        push[along_x, 0] = sx[along_x] * (ox[i, j][along_x] / 2 + 0.5)
        push[~along_x, 1] = sy[~along_x] * (oy[i, j][~along_x] / 2 + 0.5)
        np.add.at(xy, j, push)
        np.add.at(xy, i, -push)
    return xy


def layout(graph: Mapping) -> dict[str, tuple[float, float]]:
    """``{node id: (x, y)}``: a seeded spring layout scaled to hold the label boxes in a frame about
    ``ASPECT`` times as wide as high, then made overlap-free (``remove_overlaps``)."""
    import networkx as nx

    ids, ext = _boxes(graph)
    if not ids:
        return {}
    g = nx.Graph()
    g.add_nodes_from(ids)
    known = set(ids)
    g.add_edges_from((e["source"], e["target"]) for e in graph.get("edges") or []
                     if e["source"] in known and e["target"] in known and e["source"] != e["target"])
    pos = nx.spring_layout(g, seed=SEED, iterations=200)
    xy = np.array([pos[i] for i in ids], dtype=float).reshape(-1, 2)
    xy -= xy.mean(axis=0)
    span = np.maximum(np.abs(xy).max(axis=0), 1e-9)
    area = float(((ext[:, 0] + ext[:, 1]) * (ext[:, 2] + ext[:, 3])).sum()) * 2.5  # room for edges
    height = math.sqrt(area / ASPECT)
    xy = xy / span * np.array([height * ASPECT / 2, height / 2])
    xy = remove_overlaps(xy, ext)
    return {i: (round(float(x), 1), round(float(y), 1)) for i, (x, y) in zip(ids, xy)}


def overlaps(graph: Mapping, pos: Mapping[str, tuple[float, float]]) -> list[tuple[str, str]]:
    """Pairs of nodes whose label boxes overlap at ``pos`` (what ``layout`` leaves none of)."""
    ids, ext = _boxes(graph)
    xy = np.array([pos[i] for i in ids], dtype=float).reshape(-1, 2)
    ox, oy = _pair_overlaps(xy, ext)
    hit = (ox > 0.01) & (oy > 0.01) & np.triu(np.ones((len(ids), len(ids)), dtype=bool), 1)
    return [(ids[i], ids[j]) for i, j in zip(*np.nonzero(hit))]


def min_scale() -> float:
    """The least zoom at which the smallest label is ``MIN_LABEL_PX`` on screen."""
    return MIN_LABEL_PX / FONT_MIN
