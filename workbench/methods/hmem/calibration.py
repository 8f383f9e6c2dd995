"""H-Mem's part of the embedder calibration (``workbench.methods.calibration``, which runs it through
``HMem.calibration``): alpha_2..alpha_4 mapped onto the embedder in use.

The paper's alphas (App. A.2: 0.8 / 0.7 / 0.6) belong to Qwen3-Embedding-4B. *Derived* target: Table 7 gives
the average node count per level on LoCoMo (L1 995.1, L2 563.7, L3 419.7, L4 100.9), so the share of level-l
nodes that join an existing parent is 1 - N_{l+1} / N_l (0.434 / 0.255 / 0.760). Each alpha is set, level by
level, to reproduce that join share. Proxy (ours): leaves are the turns (the paper's fragment is one message
and yields 1.67 events on average), at their session date; a parent's vector is the normalised mean of its
children's (no LLM summary). Replayed with the method's own tree (``tree.HTree``); only embeddings, no LLM.
Not calibrated: ``seed_min_sim`` (ours, set with MiniLM; its quantile is reported) and ``fuzzy_threshold``
(string similarity of entity names, not a cosine).
"""
from __future__ import annotations

from datetime import datetime
from typing import Sequence

import numpy as np

from ..calibration import CalibrationData, CalibrationHook, quantile_of

# Table 7, LoCoMo column: average nodes per level per conversation.
TABLE7_LOCOMO = (995.1, 563.7, 419.7, 100.9)
PAPER_ALPHAS = (0.8, 0.7, 0.6)


def join_targets(table7: Sequence[float] = TABLE7_LOCOMO) -> list[float]:
    """Share of level-l nodes that join an existing parent, l = 1..3: 1 - N_{l+1} / N_l."""
    return [round(1 - table7[i + 1] / table7[i], 4) for i in range(len(table7) - 1)]


def replay(leaves: Sequence[tuple[datetime, np.ndarray]], alphas: Sequence[float], *, levels: int = 4,
                window_reading: str = "parent", cluster_similarity: str = "max") -> dict:
    """Insert the leaves into ``HTree`` with mean-vector summaries; node counts and join shares per level.

    ``leaves``: (time, unit vector) in insertion order. Returns ``{"nodes": [N_1..N_L], "join_share":
    [...], "multi_child_share": share of parents (level >= 2) with more than one child}``.
    """
    from .tree import WINDOWS, HTree

    tree = HTree(WINDOWS[:levels], tuple(alphas)[:levels - 1], window_reading=window_reading,
                 cluster_similarity=cluster_similarity)
    pending: dict[str, np.ndarray] = {}
    counter = iter(range(1 << 62))

    def summarize(node, children):
        v = np.mean([tree.vectors[c.id] for c in children], axis=0)
        # a fresh key per call (review B4): a repeated key reads as unchanged text and left the vector stale
        key = f"mean:{node.id}:{next(counter)}"
        pending[key] = v / (np.linalg.norm(v) or 1.0)
        return key

    def embed(texts):
        return np.stack([pending.pop(t) for t in texts])

    for i, (when, vec) in enumerate(leaves):
        tree.add_leaf(f"leaf{i}", time=when, mention_time=when, vector=vec, source_ids=(str(i),),
                      fragment_ids=(str(i),), summarize=summarize, embed=embed, propagate=True,
                      summarize_single=False)
    nodes = [len(tree.level(lv)) for lv in range(1, levels + 1)]
    parents = [n for n in tree.nodes.values() if n.level >= 2]
    return {"nodes": nodes,
            "join_share": [round(1 - nodes[i + 1] / nodes[i], 4) if nodes[i] else None for i in range(levels - 1)],
            "multi_child_share": (round(sum(len(n.children) > 1 for n in parents) / len(parents), 4)
                                  if parents else None),
            "l2_multi_child_share": _share([n for n in parents if n.level == 2])}


def _share(parents) -> float | None:
    return round(sum(len(n.children) > 1 for n in parents) / len(parents), 4) if parents else None


def _totals(per_conv: list[dict], levels: int) -> dict:
    nodes = [sum(r["nodes"][i] for r in per_conv) for i in range(levels)]
    multi = [r["multi_child_share"] for r in per_conv if r["multi_child_share"] is not None]
    l2 = [r["l2_multi_child_share"] for r in per_conv if r["l2_multi_child_share"] is not None]
    return {"nodes": nodes,
            "join_share": [round(1 - nodes[i + 1] / nodes[i], 4) if nodes[i] else None for i in range(levels - 1)],
            "multi_child_share": round(float(np.mean(multi)), 4) if multi else None,
            "l2_multi_child_share": round(float(np.mean(l2)), 4) if l2 else None}


def leaves(conv, vectors: np.ndarray) -> list[tuple[datetime, np.ndarray]]:
    """One leaf per turn at its session date (the calibration proxy for the extracted events)."""
    times = [conv.session_of(t.id).date_time for t in conv.turns]
    return list(zip(times, vectors))


def calibrate_alphas(leaf_sets: list, *, targets: Sequence[float] | None = None, levels: int = 4,
                   lo: float = 0.05, hi: float = 0.99, steps: int = 12) -> dict:
    """Alpha_2..alpha_L, level by level, so that the join share matches ``targets`` (Table 7 by default).

    The join share falls as alpha rises; bisection on [lo, hi] to 0.01. Returns the alphas, the
    replay at the paper's alphas and at the calibrated ones (totals over all conversations).
    """
    targets = list(targets or join_targets())[:levels - 1]
    alphas = list(PAPER_ALPHAS[:levels - 1])

    def totals(a):
        return _totals([replay(ls, a, levels=levels) for ls in leaf_sets], levels)

    for li, target in enumerate(targets):
        a_lo, a_hi = lo, hi
        for _ in range(steps):
            mid = (a_lo + a_hi) / 2
            trial = alphas[:li] + [mid] + alphas[li + 1:]
            share = totals(trial)["join_share"][li]
            if share is None:
                break
            if share > target:
                a_lo = mid
            else:
                a_hi = mid
        alphas[li] = round((a_lo + a_hi) / 2, 2)
    return {"alphas": alphas, "targets": targets, "paper": totals(list(PAPER_ALPHAS[:levels - 1])),
            "calibrated": totals(alphas)}




def calibrate_section(data: CalibrationData, kinds: Sequence[str]) -> dict:
    """H-Mem's section of a calibration file, and what it adds to ``not_calibrated``."""
    cal = calibrate_alphas([leaves(c, v) for c, v in zip(data.convs, data.turn_vecs)])
    return {"section": {
        "paper_embedder": CALIBRATION.paper_embedder,
        "params": {"alphas": cal["alphas"]},
        "thresholds": {f"alpha_{i + 2}": {
            "paper": PAPER_ALPHAS[i], "calibrated": cal["alphas"][i], "basis": "derived",
            "target": {"join_share": cal["targets"][i]},
            "how": "join share 1 - N_{l+1}/N_l from the paper's Table 7 (LoCoMo); turns as leaves, "
                   "mean-vector parents; bisection on alpha",
            "paper_value_quantile_turn_pairs": quantile_of(PAPER_ALPHAS[i], {}, data.turn_pairs),
            "calibrated_quantile_turn_pairs": quantile_of(cal["alphas"][i], {}, data.turn_pairs)}
            for i in range(len(cal["alphas"]))},
        "replay": {"paper": cal["paper"], "calibrated": cal["calibrated"]},
    }, "not_calibrated": {
        "seed_min_sim": {"why": "ours, chosen with MiniLM; no paper value",
                         "quantile_turn_pairs": quantile_of(0.3, {}, data.turn_pairs)},
        "fuzzy_threshold": "string similarity of entity names, not an embedding cosine"}}


def summary_lines(section: dict) -> list[str]:
    """Before/after in words: node counts, join shares and multi-child parent shares."""
    out = []
    for label, key in (("paper", "paper"), ("calibrated", "calibrated")):
        r = section["replay"][key]
        alphas = PAPER_ALPHAS if key == "paper" else section["params"]["alphas"]
        out.append(f"  hmem   {label:<10} alphas {tuple(alphas)}: nodes/level {r['nodes']}, "
                   f"join share {r['join_share']}, "
                   f"multi-child parents {r['multi_child_share']} (L2 {r['l2_multi_child_share']})")
    shares = [t["target"]["join_share"] for t in section["thresholds"].values()]
    out.append(f"         target join share (Table 7): {shares}")
    return out


def measure_section(data: CalibrationData, calibration: dict | None, kinds: Sequence[str]) -> dict:
    """The tree replay at the paper's alphas and at ``calibration``'s (no LLM)."""
    from ..calibration import calibrated_params

    leaf_sets = [leaves(c, v) for c, v in zip(data.convs, data.turn_vecs)]
    out = {"paper": {"alphas": list(PAPER_ALPHAS), **_totals([replay(ls, PAPER_ALPHAS) for ls in leaf_sets], 4)},
           "target_join_share": join_targets()}
    if calibration is not None:
        alphas = calibrated_params(calibration, "hmem").get("alphas")
        if alphas:
            out["calibrated"] = {"alphas": list(alphas), **_totals([replay(ls, alphas) for ls in leaf_sets], 4)}
    return out


def measure_lines(m: dict) -> list[str]:
    out = []
    for key in ("paper", "calibrated"):
        r = m.get(key)
        if r:
            out.append(f"  hmem   {key:<10} alphas {tuple(r['alphas'])}: nodes/level {r['nodes']}, join share "
                       f"{r['join_share']} (target {m['target_join_share']}), multi-child parents "
                       f"{r['multi_child_share']} (L2 {r['l2_multi_child_share']})")
    return out


#: the encoder the paper tuned its thresholds with, and this module's functions
CALIBRATION = CalibrationHook("Qwen3-Embedding-4B", calibrate_section, measure_section, summary_lines, measure_lines)
