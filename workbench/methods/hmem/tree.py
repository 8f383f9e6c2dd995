"""H-Mem temporal-semantic tree, time windows and the evidence-scoring formulas (pure: no LLM).

Yu et al., "H-Mem: ... Evolving and Retrieving Agent Memory via a Hybrid Structure", arXiv:2605.15701,
§3.2 (tree construction), §3.3 eqs. (1)-(3) (temporal relevance, robustness, final score), App. A.2
(levels, windows, thresholds, level activation). Digest: shared/methods/hmem.md §3, §10.

The tree is built incrementally: ``HTree.add_leaf`` inserts one memory event bottom-up. LLM work
(summaries) and embeddings come in as callbacks, so this module can be tested with plain functions.
Every change is returned as an ``op`` record that the method turns into a ``MemoryEvent``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Callable, Sequence

import numpy as np

# Time helpers and the rule-based temporal-hint parser are shared with other methods (core module);
# imported here under their old names, which H-Mem's retrieval and tests use.
from ...timehints import MONTHS, NUMBERS, WINDOW_DAYS, day_interval, naive, parse_time_hint, window_bounds  # noqa: F401

WINDOWS = ("day", "week", "month", "year")
EPOCH = datetime(1970, 1, 1)
DAY = 86400.0


# -- time helpers -------------------------------------------------------------------------------
def seconds(when: datetime) -> float:
    return (naive(when) - EPOCH).total_seconds()


def bucket(when: datetime, window: str) -> str:
    """Calendar bucket key (digest §10.3: calendar windows in data time)."""
    when = naive(when)
    if window == "day":
        return when.strftime("%Y-%m-%d")
    if window == "week":
        year, week, _ = when.isocalendar()
        return f"{year}-W{week:02d}"
    if window == "month":
        return when.strftime("%Y-%m")
    if window == "year":
        return when.strftime("%Y")
    raise ValueError(f"unknown window {window!r}; expected one of {WINDOWS}")


def event_time(value, default: datetime) -> datetime:
    """The date an event refers to (YYYY-MM-DD, resolved by the extractor) or else the fragment's time.
    Data only: a leaf is placed by when it was said (``HTree.add_leaf``); this date feeds T (eq. 1)."""
    try:
        return datetime.strptime(str(value or "")[:10], "%Y-%m-%d")
    except ValueError:
        return naive(default)


def active_levels(first: datetime, last: datetime, levels: int) -> int:
    """Paper App. A.2: a history under 7 days activates L1-L2, 7 to 30 days L1-L3, longer all four."""
    age = (naive(last) - naive(first)).total_seconds() / DAY
    n = 2 if age < 7 else 3 if age <= 30 else 4
    return max(1, min(levels, n))


# -- scoring formulas -----------------------------------------------------------------------------
def temporal_relevance(mem: tuple[float, float], query: tuple[float, float], *, lam: float = 0.5,
                       eps: float = 1.0) -> float:
    """Eq. (1): lam*|Im∩Ik|/(|Im∪Ik|+eps) + (1-lam)*(1-|cm-ck|/(|Im∪Ik|+eps)), intervals in seconds.

    The union is taken as the convex hull of both intervals and the result clipped to [0, 1]
    (digest §10.9; the paper does not say how a disjoint union is measured).
    """
    (sm, em), (sk, ek) = sorted(mem), sorted(query)
    inter = max(0.0, min(em, ek) - max(sm, sk))
    union = max(em, ek) - min(sm, sk)
    dist = abs((sm + em) / 2 - (sk + ek) / 2)
    value = lam * inter / (union + eps) + (1 - lam) * (1 - dist / (union + eps))
    return min(1.0, max(0.0, value))


def robustness(t: float, r_m: float, n_m: int, *, tau: float = 365 * DAY, eta: float = 0.5) -> float:
    """Eq. (2): exp(-(t - r_m) / (tau * (1 + eta * ln(1 + n_m)))), times in seconds.

    A memory newer than the query time (t < r_m) counts as fresh: the gap is clipped at 0 [ours].
    """
    gap = max(0.0, t - r_m)
    return math.exp(-gap / (tau * (1 + eta * math.log(1 + n_m))))


def evidence_score(s: float, t: float, r: float, theta: Sequence[float] = (0.70, 0.15, 0.15)) -> float:
    """Eq. (3): F = theta1*S + theta2*T + theta3*R."""
    return theta[0] * s + theta[1] * t + theta[2] * r


# -- the tree -------------------------------------------------------------------------------------
@dataclass
class TreeNode:
    """A leaf (level 1: one memory event) or a summary (level >= 2) of the H-Mem tree.

    ``anchor`` is the time used to put the node into its parent's window (a leaf's mention time, i.e.
    when the turn was said -- paper §3.2 "according to its timestamp"; a summary's first child's anchor);
    ``start``/``end`` the interval it covers (mention days); ``n_m`` how often it was consolidated and
    ``r_m`` when last (eq. 2). ``copy_of`` is the child id while a summary is only its single child's
    text copied (``summarize_single=False``), else None. ``refers`` is a leaf's referenced day (the date
    the extractor resolved, e.g. a plan for October said in March) when it is not the mention day: data
    for the temporal score T and the evidence label, never for placement.
    """

    id: str
    level: int
    text: str
    anchor: datetime
    start: datetime
    end: datetime
    r_m: datetime
    n_m: int = 0
    window: str = ""
    parent: str | None = None
    children: list[str] = field(default_factory=list)
    source_ids: list[str] = field(default_factory=list)
    fragment_ids: list[str] = field(default_factory=list)
    copy_of: str | None = None
    refers: tuple[datetime, datetime] | None = None

    def row(self) -> dict:
        return {"id": self.id, "level": self.level, "parent": self.parent, "children": list(self.children),
                "summary": self.text, "window": self.window, "start": self.start.isoformat(),
                "end": self.end.isoformat(), "n_m": self.n_m, "r_m": self.r_m.isoformat(),
                "source_ids": list(self.source_ids), "fragment_ids": list(self.fragment_ids),
                "copy_of_child": self.copy_of, "refers_to": self.refers[0].isoformat() if self.refers else None}


Summarize = Callable[[TreeNode, list[TreeNode]], str]
Embed = Callable[[list[str]], np.ndarray]


def _union(a: list[str], b: Sequence[str]) -> list[str]:
    return a + [x for x in b if x not in set(a)]


class HTree:
    """Levels 1..``l_max``; ``windows[l-1]`` is beta_l and ``alphas[l-2]`` is alpha_l (l >= 2).

    ``window_reading="parent"`` (digest §10.2): a level-(l+1) parent groups level-l children of one
    beta_{l+1} window. ``"child"``: the literal main-text reading, grouping by the child's beta_l.
    ``cluster_similarity``: ``max`` cosine to any member (digest §10.4), the ``parent`` summary,
    or the ``centroid`` of the members.
    """

    leaf_time = "referenced"  # a tree saved before the B1 fix (no instance attribute) keeps its placement

    def __init__(self, windows: Sequence[str] = WINDOWS, alphas: Sequence[float] = (0.8, 0.7, 0.6), *,
                 l_max: int | None = None, window_reading: str = "parent", cluster_similarity: str = "max",
                 leaf_time: str = "said"):
        self.windows, self.alphas = tuple(windows), tuple(alphas)
        self.l_max = l_max or len(self.windows)
        self.window_reading = window_reading
        self.cluster_similarity = cluster_similarity
        self.leaf_time = leaf_time  # "said" (paper §3.2) | "referenced" (before the B1 fix; recorded cassettes)
        self.nodes: dict[str, TreeNode] = {}
        self.vectors: dict[str, np.ndarray] = {}
        self._groups: dict[tuple[int, str], list[str]] = {}
        self._next = 0

    def __len__(self) -> int:
        return len(self.nodes)

    def level(self, level: int) -> list[TreeNode]:
        return [n for n in self.nodes.values() if n.level == level]

    def ancestors(self, node_id: str) -> list[str]:
        out, parent = [], self.nodes[node_id].parent
        while parent is not None:
            out.append(parent)
            parent = self.nodes[parent].parent
        return out

    def window_name(self, level: int) -> str:
        """The window a level-``level`` node spans (day for leaves; for summaries, per the reading)."""
        return self.windows[level - 1 if self.window_reading == "parent" or level == 1 else level - 2]

    def group_key(self, node: TreeNode) -> str:
        """The window that bounds the cluster ``node`` may join one level up."""
        index = node.level if self.window_reading == "parent" else node.level - 1
        return bucket(node.anchor, self.windows[index])

    def _new_id(self, level: int) -> str:
        self._next += 1
        return f"{'ev' if level == 1 else 'sum'}{self._next}"

    def _put(self, node: TreeNode, vector: np.ndarray) -> None:
        self.nodes[node.id] = node
        self.vectors[node.id] = np.asarray(vector, dtype=np.float32)
        if node.level < self.l_max:
            self._groups.setdefault((node.level, self.group_key(node)), []).append(node.id)

    # -- insertion ------------------------------------------------------------------------------
    def add_leaf(self, text: str, *, time: datetime, mention_time: datetime, vector: np.ndarray,
                 source_ids: Sequence[str], fragment_ids: Sequence[str], summarize: Summarize, embed: Embed,
                 propagate: bool = True, summarize_single: bool = False) -> list[dict]:
        """Insert one memory event bottom-up (paper §3.2). Returns the op records, in order.

        The leaf is placed, dated and windowed by ``mention_time`` (when it was said: paper §3.2, "according
        to its timestamp"); ``time`` (the date the event refers to) is kept as ``refers`` when it is another day."""
        placed = mention_time if self.leaf_time == "said" else time  # "referenced": review B1's bug, kept for replay
        start, end = day_interval(placed)
        refers = day_interval(time)
        leaf = TreeNode(self._new_id(1), 1, text, naive(placed), start, end, naive(mention_time), 0,
                        bucket(placed, self.windows[0]), None, [], list(source_ids), list(fragment_ids),
                        refers=refers if refers[0] != start else None)
        self._put(leaf, vector)
        ops = [{"op": "ADD", "node": leaf.id, "level": 1}]
        self._insert(leaf, naive(mention_time), ops, summarize, embed, propagate, summarize_single)
        return ops

    def _cluster_scores(self, x: TreeNode, members: list[str]) -> tuple[dict[str, float], list[dict]]:
        vx = self.vectors[x.id]
        sims = {m: float(self.vectors[m] @ vx) for m in members}
        rows = [{"id": m, "cluster": self.nodes[m].parent, "similarity": round(s, 4)} for m, s in sims.items()]
        clusters: dict[str, float] = {}
        for m, s in sims.items():
            p = self.nodes[m].parent
            if self.cluster_similarity == "max":
                clusters[p] = max(clusters.get(p, -1.0), s)
            elif p not in clusters:
                if self.cluster_similarity == "parent":
                    clusters[p] = float(self.vectors[p] @ vx)
                else:
                    kids = np.stack([self.vectors[c] for c in self.nodes[p].children if c != x.id])
                    centroid = kids.mean(axis=0)
                    clusters[p] = float(centroid @ vx / (np.linalg.norm(centroid) or 1.0))
        return clusters, rows

    def _insert(self, x: TreeNode, t: datetime, ops: list[dict], summarize: Summarize, embed: Embed,
                propagate: bool, summarize_single: bool) -> None:
        level = x.level
        if level >= self.l_max:
            return
        window = self.group_key(x)
        members = [m for m in self._groups.get((level, window), []) if m != x.id and self.nodes[m].parent]
        clusters, rows = self._cluster_scores(x, members)
        alpha = self.alphas[level - 1]
        best = max(clusters, key=lambda p: (clusters[p], p)) if clusters else None
        decision = {"level": level + 1, "window": window, "threshold": alpha, "candidates": rows,
                    "best": best, "similarity": round(clusters[best], 4) if best else None}
        if best is not None and clusters[best] >= alpha:
            self._join(x, self.nodes[best], t, decision, ops, summarize, embed, propagate)
        else:
            self._new_parent(x, t, window, decision, ops, summarize, embed, propagate, summarize_single)

    def _absorb(self, node: TreeNode, child: TreeNode) -> None:
        node.start, node.end = min(node.start, child.start), max(node.end, child.end)
        node.source_ids = _union(node.source_ids, child.source_ids)
        node.fragment_ids = _union(node.fragment_ids, child.fragment_ids)

    def _resummarize(self, node: TreeNode, summarize: Summarize, embed: Embed) -> tuple[str, str]:
        before = node.text
        node.text = summarize(node, [self.nodes[c] for c in node.children])
        node.copy_of = None
        if node.text != before:
            self.vectors[node.id] = np.asarray(embed([node.text])[0], dtype=np.float32)
        return before, node.text

    def _join(self, x, y, t, decision, ops, summarize, embed, propagate) -> None:
        x.parent = y.id
        y.children.append(x.id)
        self._absorb(y, x)
        y.n_m += 1
        y.r_m = max(y.r_m, t)
        ops.append({"op": "MERGE", "node": y.id, "child": x.id, **decision})
        before, after = self._resummarize(y, summarize, embed)
        ops.append({"op": "SUMMARIZE", "node": y.id, "level": y.level, "before": before, "after": after,
                    "reason": "joined", "child": x.id})
        for a in self.ancestors(y.id):
            anc = self.nodes[a]
            self._absorb(anc, x)
            anc.n_m += 1
            anc.r_m = max(anc.r_m, t)
            before, after = self._resummarize(anc, summarize, embed) if propagate else (anc.text, anc.text)
            ops.append({"op": "SUMMARIZE", "node": a, "level": anc.level, "before": before, "after": after,
                        "reason": "propagated" if propagate else "propagated (text kept)", "child": x.id})

    def _new_parent(self, x, t, window, decision, ops, summarize, embed, propagate, summarize_single) -> None:
        z = TreeNode(self._new_id(x.level + 1), x.level + 1, x.text, x.anchor, x.start, x.end, t, 0, window,
                     None, [x.id], list(x.source_ids), list(x.fragment_ids))
        x.parent = z.id
        self.nodes[z.id] = z  # summarize() may look the node up
        vector = self.vectors[x.id]
        if summarize_single:
            z.text = summarize(z, [x])
            vector = embed([z.text])[0]
        else:
            z.copy_of = x.id
        self._put(z, vector)
        ops.append({"op": "SUMMARIZE", "node": z.id, "level": z.level, "before": None, "after": z.text,
                    "reason": "new parent" if summarize_single else "new parent (copy of its single child)",
                    "child": x.id, **decision})
        self._insert(z, t, ops, summarize, embed, propagate, summarize_single)

    # -- search -----------------------------------------------------------------------------------
    def search(self, qvec: np.ndarray, k: int, *, levels: Sequence[int] | None = None,
               exclude=frozenset()) -> list[tuple[str, float]]:
        """Cosine top-``k`` node ids (brute force; the tree holds a few thousand nodes at most)."""
        ids = [i for i, n in self.nodes.items() if (levels is None or n.level in levels) and i not in exclude]
        if not ids or k <= 0:
            return []
        sims = np.stack([self.vectors[i] for i in ids]) @ np.asarray(qvec, dtype=np.float32)
        order = sorted(range(len(ids)), key=lambda j: (-float(sims[j]), ids[j]))[:k]
        return [(ids[j], float(sims[j])) for j in order]

    def rows(self) -> list[dict]:
        return [n.row() for n in self.nodes.values()]


# -- evidence candidates and the chain ------------------------------------------------------------
@dataclass
class Candidate:
    """One piece of evidence for a sub-query with its score components (S, T, R) and F (eq. 3)."""

    id: str
    kind: str  # fragment | event | summary | profile
    text: str
    source_ids: tuple[str, ...]
    level: int
    start: datetime
    end: datetime
    r_m: datetime
    n_m: int
    vector: np.ndarray
    label: str = ""
    via: list[str] = field(default_factory=list)
    refers: tuple[datetime, datetime] | None = None  # an event's referenced day: T uses it instead of start/end
    S: float = 0.0
    T: float = 0.0
    R: float = 0.0
    F: float = 0.0

    def display(self) -> str:
        return f"[{self.label}] {self.text}" if self.label else self.text

    def hit(self, score: float | None = None):
        from ...trace import Hit

        return Hit(self.id, self.display(), self.F if score is None else score, self.source_ids, self.kind)

    def trace(self) -> dict:
        return {"id": self.id, "kind": self.kind, "level": self.level, "S": round(self.S, 4),
                "T": round(self.T, 4), "R": round(self.R, 4), "F": round(self.F, 4), "via": list(self.via),
                "interval": [self.start.isoformat(), self.end.isoformat()]}


def _date(when: datetime) -> str:
    return f"{when.day} {when.strftime('%B %Y')}"


def candidate_from_node(node: TreeNode, vector: np.ndarray, window_name: str) -> Candidate:
    if node.level == 1:
        kind, label = "event", _date(node.start)
        if node.refers:  # said on one day about another: both, so the reader can order and date it
            label = f"said {label}, about {_date(node.refers[0])}"
    else:
        last = node.end - timedelta(seconds=1)
        kind, label = "summary", f"L{node.level} {window_name} {node.window}: {_date(node.start)} to {_date(last)}"
    return Candidate(node.id, kind, node.text, tuple(node.source_ids), node.level, node.start, node.end, node.r_m,
                     node.n_m, vector, label, refers=node.refers)


def candidate_from_unit(unit, vector: np.ndarray, *, kind: str = "fragment", n_m: int = 0) -> Candidate:
    """A fragment (or a profile) stored as a ``MemoryUnit``: its day is its interval, n_m = 0."""
    when = naive(datetime.fromisoformat(unit.time))
    start, end = day_interval(when)
    return Candidate(unit.id, kind, unit.text, tuple(unit.source_ids), 0, start, end, when, n_m, vector)


def score_candidates(cands: list[Candidate], qvec: np.ndarray, *, interval: tuple[datetime, datetime] | None,
                     now: datetime, theta: Sequence[float], lam: float, eps: float, tau: float, eta: float,
                     use_robustness: bool = True) -> list[Candidate]:
    """Fill S (cosine), T (eq. 1; 0 without a temporal hint, App. A.2), R (eq. 2) and F (eq. 3); rank by F."""
    t = seconds(now)
    q = (seconds(interval[0]), seconds(interval[1])) if interval else None
    for c in cands:
        c.S = float(np.asarray(c.vector, dtype=np.float32) @ np.asarray(qvec, dtype=np.float32))
        start, end = c.refers or (c.start, c.end)  # an event's referenced day, else when it was said
        c.T = temporal_relevance((seconds(start), seconds(end)), q, lam=lam, eps=eps) if q else 0.0
        c.R = robustness(t, seconds(c.r_m), c.n_m, tau=tau, eta=eta) if use_robustness else 0.0
        c.F = evidence_score(c.S, c.T, c.R, theta)
    return sorted(cands, key=lambda c: (-c.F, c.id))


def format_evidence(chain: Sequence[Candidate]) -> str:
    """The evidence chain for a prompt: chronological, each line tagged with its kind (digest §10.13)."""
    if not chain:
        return "(no evidence found)"
    return "\n".join(f"- ({c.kind}) {c.display()}" for c in sorted(chain, key=lambda c: (c.start, c.level, c.id)))


def dedupe(ranked: Sequence[Candidate]) -> tuple[list[Candidate], dict[str, str]]:
    """Drop candidates whose text repeats a better-ranked one (a single-child parent copies its
    child's text); returns the survivors and ``{dropped id: kept id}``."""
    kept: dict[str, str] = {}
    out, dropped = [], {}
    for c in ranked:
        key = " ".join(c.text.lower().split())
        if key in kept:
            dropped[c.id] = kept[key]
        else:
            kept[key] = c.id
            out.append(c)
    return out, dropped
