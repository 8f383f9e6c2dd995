"""Embedder calibration: map the papers' cosine thresholds onto the embedder actually in use.

A cosine threshold belongs to the encoder it was tuned with (RecMem: text-embedding-3-small; H-Mem
alpha: Qwen3-Embedding-4B). Another encoder spreads cosines differently: with all-MiniLM-L6-v2 at
the papers' values, H-Mem's tree almost never consolidates and RecMem's gate fires on < 2 % of
units. ``calibrate(embedder, conversations)`` measures the embedder's similarity distributions on
conversation data and picks, per threshold, the value that reproduces a target *rate* of the
decision the threshold drives. Where the paper reports enough to derive that rate, the target is
derived from it (``basis: "derived"``); otherwise it is a documented target of ours
(``basis: "target"``). Only embeddings are used, no LLM; the decisions are replayed with the
methods' own code (``hmem.tree.HTree``, ``recmem.trigger.decide``).

Thresholds (every embedder-cosine threshold of the five methods):

- H-Mem alpha_2..alpha_4 (paper App. A.2: 0.8 / 0.7 / 0.6, Qwen3-Embedding-4B). *Derived*: Table 7
  gives the average node count per level on LoCoMo (L1 995.1, L2 563.7, L3 419.7, L4 100.9), so
  the share of level-l nodes that join an existing parent is 1 - N_{l+1} / N_l (0.434 / 0.255 /
  0.760). Each alpha is set, level by level, to reproduce that join share. Proxy (ours): leaves are
  the turns (the paper's fragment is one message and yields 1.67 events on average), at their
  session date; a parent's vector is the normalised mean of its children's (no LLM summary).
- RecMem theta_sim (paper §4: 0.7 LoCoMo / 0.6 LongMemEval, text-embedding-3-small). *Target*
  (ours): the paper gives no trigger rate. Each trigger consolidates at least theta_count units,
  and the paper's subconscious-ablation result says much stays unconsolidated, so we aim at about
  half of the units ending in a cluster: trigger rate 0.5 / theta_count (0.10 for LoCoMo's 5,
  0.125 for LongMemEval's 4), accepted within a factor 0.5-1.5 of it. Replayed with the gate alone
  (every unit reaches the gate, every consolidation succeeds), on RecMem's own unit texts.
- RecMem theta_merge: the paper sets it equal to theta_sim (Eq. 6), so it follows the calibrated
  theta_sim (``None``); the merge-candidate rate is reported (episode vector = mean of its units).
- Not calibrated, listed for completeness: AMA ``conflict_min_sim`` (ours, off by default), H-Mem
  ``seed_min_sim`` (ours, set with MiniLM; its quantile is reported), RecMem ``refine_min_score``
  (the code's 0.0, "any positive cosine"), H-Mem ``fuzzy_threshold`` (string similarity, not cosine).

``apply_calibration(method, calibration, dataset=...)`` sets the calibrated parameters on a method
whose embedder matches the calibration; ``threshold_warnings`` says when a method's thresholds
were set for another embedder than the one in use. The MiniLM calibration ships as
``calibrations/all-MiniLM-L6-v2-int8.json`` (made with ``workbench calibrate`` on the sample data: the
demo's) and ``all-MiniLM-L6-v2-int8.locomo.json`` (made on two LoCoMo dev conversations plus the sample,
used for ``locomo:`` data); see ``shipped_calibration_path`` for why there are two.
"""
from __future__ import annotations

import hashlib
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from ..jsonl import loads_strict

FORMAT = "workbench-calibration/1"
CALIBRATION_DIR = Path(__file__).resolve().parent / "calibrations"

# The encoder each method's paper tuned its cosine thresholds with (digests, "Embedder" rows).
PAPER_EMBEDDERS = {"hmem": "Qwen3-Embedding-4B", "recmem": "text-embedding-3-small"}
# H-Mem Table 7, LoCoMo column: average nodes per level per conversation.
HMEM_TABLE7_LOCOMO = (995.1, 563.7, 419.7, 100.9)
HMEM_PAPER_ALPHAS = (0.8, 0.7, 0.6)
RECMEM_PAPER = {"locomo": {"theta_sim": 0.7, "theta_count": 5}, "longmemeval": {"theta_sim": 0.6, "theta_count": 4}}
RECMEM_CONSOLIDATED_SHARE = 0.5  # [ours] target share of units ending in a consolidated cluster
RECMEM_BAND = (0.5, 1.5)  # [ours] accepted trigger rate, as factors of the target


def hmem_join_targets(table7: Sequence[float] = HMEM_TABLE7_LOCOMO) -> list[float]:
    """Share of level-l nodes that join an existing parent, l = 1..3: 1 - N_{l+1} / N_l."""
    return [round(1 - table7[i + 1] / table7[i], 4) for i in range(len(table7) - 1)]


def recmem_target(theta_count: int) -> dict:
    rate = RECMEM_CONSOLIDATED_SHARE / theta_count
    return {"trigger_rate": round(rate, 4), "band": [round(rate * RECMEM_BAND[0], 4), round(rate * RECMEM_BAND[1], 4)]}


def dataset_kind(name: str | None) -> str | None:
    """``locomo`` | ``longmemeval`` from a data spec or dataset name (the sample data is LoCoMo format)."""
    if not name:
        return None
    key = re.sub(r"[^a-z]", "", str(name).lower())
    if key.startswith("longmemeval") or key.startswith("lme"):
        return "longmemeval"
    if key.startswith(("locomo", "sample", "tiny", "gallery")):
        return "locomo"
    return None


# -- similarity distributions ---------------------------------------------------------------------------

def _quantiles(values: np.ndarray) -> dict:
    if len(values) == 0:
        return {}
    qs = np.quantile(values, [0.05, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99])
    return {"n": int(len(values)), "mean": round(float(values.mean()), 4),
            **{f"q{int(p * 100):02d}": round(float(v), 4)
               for p, v in zip([0.05, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99], qs)}}


def quantile_of(value: float, dist: dict, values: np.ndarray | None = None) -> float | None:
    """Share of the distribution below ``value`` (exact when the raw values are given)."""
    if values is not None and len(values):
        return round(float((values < value).mean()), 4)
    return None


def _pairs(vectors: np.ndarray) -> np.ndarray:
    sims = vectors @ vectors.T
    return sims[np.triu_indices(len(vectors), 1)]


def _nearest_earlier(vectors: np.ndarray) -> np.ndarray:
    sims = vectors @ vectors.T
    return np.array([sims[i, :i].max() for i in range(1, len(vectors))]) if len(vectors) > 1 else np.zeros(0)


# -- H-Mem -------------------------------------------------------------------------------------------

def hmem_replay(leaves: Sequence[tuple[datetime, np.ndarray]], alphas: Sequence[float], *, levels: int = 4,
                window_reading: str = "parent", cluster_similarity: str = "max") -> dict:
    """Insert the leaves into ``HTree`` with mean-vector summaries; node counts and join shares per level.

    ``leaves``: (time, unit vector) in insertion order. Returns ``{"nodes": [N_1..N_L], "join_share":
    [...], "multi_child_share": share of parents (level >= 2) with more than one child}``.
    """
    from .hmem.tree import WINDOWS, HTree

    tree = HTree(WINDOWS[:levels], tuple(alphas)[:levels - 1], window_reading=window_reading,
                 cluster_similarity=cluster_similarity)
    pending: dict[str, np.ndarray] = {}

    def summarize(node, children):
        v = np.mean([tree.vectors[c.id] for c in children], axis=0)
        key = f"mean:{node.id}:{len(children)}:{len(pending)}"
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


def _hmem_totals(per_conv: list[dict], levels: int) -> dict:
    nodes = [sum(r["nodes"][i] for r in per_conv) for i in range(levels)]
    multi = [r["multi_child_share"] for r in per_conv if r["multi_child_share"] is not None]
    l2 = [r["l2_multi_child_share"] for r in per_conv if r["l2_multi_child_share"] is not None]
    return {"nodes": nodes,
            "join_share": [round(1 - nodes[i + 1] / nodes[i], 4) if nodes[i] else None for i in range(levels - 1)],
            "multi_child_share": round(float(np.mean(multi)), 4) if multi else None,
            "l2_multi_child_share": round(float(np.mean(l2)), 4) if l2 else None}


def hmem_leaves(conv, vectors: np.ndarray) -> list[tuple[datetime, np.ndarray]]:
    """One leaf per turn at its session date (the calibration proxy for the extracted events)."""
    times = [conv.session_of(t.id).date_time for t in conv.turns]
    return list(zip(times, vectors))


def calibrate_hmem(leaf_sets: list, *, targets: Sequence[float] | None = None, levels: int = 4,
                   lo: float = 0.05, hi: float = 0.99, steps: int = 12) -> dict:
    """Alpha_2..alpha_L, level by level, so that the join share matches ``targets`` (Table 7 by default).

    The join share falls as alpha rises; bisection on [lo, hi] to 0.01. Returns the alphas, the
    replay at the paper's alphas and at the calibrated ones (totals over all conversations).
    """
    targets = list(targets or hmem_join_targets())[:levels - 1]
    alphas = list(HMEM_PAPER_ALPHAS[:levels - 1])

    def totals(a):
        return _hmem_totals([hmem_replay(ls, a, levels=levels) for ls in leaf_sets], levels)

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
    return {"alphas": alphas, "targets": targets, "paper": totals(list(HMEM_PAPER_ALPHAS[:levels - 1])),
            "calibrated": totals(alphas)}


# -- RecMem ------------------------------------------------------------------------------------------

def recmem_replay(vector_sets: list[np.ndarray], *, theta_sim: float, theta_count: int,
                  theta_merge: float | None = None) -> dict:
    """Gate + merge-first replay: every triggered cluster becomes one episode (mean of its units), a
    later unit whose nearest episode reaches ``theta_merge`` (default theta_sim) is a merge candidate
    and joins it (as if the LLM agreed). Returns trigger rate (fired / gated) and merge rate (merge
    candidates / units)."""
    from .recmem.trigger import decide

    theta_merge = theta_sim if theta_merge is None else theta_merge
    fired = gated = merged = units = 0
    for vectors in vector_sets:
        pool: list[int] = []
        episodes: list[list[int]] = []
        epi_vecs: list[np.ndarray] = []
        for i in range(len(vectors)):
            units += 1
            v = vectors[i]
            if epi_vecs:
                sims = np.stack(epi_vecs) @ v
                j = int(np.argmax(sims))
                if sims[j] >= theta_merge:
                    merged += 1
                    episodes[j].append(i)
                    m = vectors[episodes[j]].mean(axis=0)
                    epi_vecs[j] = m / (np.linalg.norm(m) or 1.0)
                    continue
            cos = vectors[pool] @ v if pool else np.zeros(0, dtype=np.float32)
            d = decide(str(i), i, cos, [str(j) for j in pool], theta_sim=theta_sim, theta_count=theta_count)
            gated += 1
            if d.fired:
                fired += 1
                members = {int(x) for x in d.relevant_ids}
                cluster = [j for j in pool if j in members] + [i]
                pool = [j for j in pool if j not in members]
                episodes.append(cluster)
                m = vectors[cluster].mean(axis=0)
                epi_vecs.append(m / (np.linalg.norm(m) or 1.0))
            else:
                pool.append(i)
    return {"trigger_rate": round(fired / gated, 4) if gated else 0.0,
            "merge_rate": round(merged / units, 4) if units else 0.0,
            "triggers": fired, "gated": gated, "merge_candidates": merged, "units": units}


def calibrate_recmem(vector_sets: list[np.ndarray], *, theta_count: int, paper_theta: float) -> dict:
    """theta_sim whose gate-only trigger rate is nearest the documented target (``recmem_target``)."""
    from .recmem.trigger import calibrate_thresholds

    target = recmem_target(theta_count)
    cal = calibrate_thresholds(vector_sets, target_trigger_rate=target["trigger_rate"], theta_count=theta_count)
    theta = cal["theta_sim"]
    return {"theta_sim": theta, "theta_count": theta_count, "target": target,
            "gate_only_trigger_rate": round(cal["trigger_rate"], 4),
            "within_band": target["band"][0] <= cal["trigger_rate"] <= target["band"][1],
            "paper": recmem_replay(vector_sets, theta_sim=paper_theta, theta_count=theta_count),
            "calibrated": recmem_replay(vector_sets, theta_sim=theta, theta_count=theta_count)}


# -- the whole calibration ------------------------------------------------------------------------------

def _embed_all(embedder, texts: list[str]) -> np.ndarray:
    return np.asarray(embedder(texts), dtype=np.float32) if texts else np.zeros((0, getattr(embedder, "dim", 1)))


def calibrate(embedder, conversations: Iterable, *, data_label: str = "", kinds: Sequence[str] = ("locomo",)) -> dict:
    """Measure ``embedder`` on ``conversations`` and calibrate every threshold (module docstring).

    ``kinds``: the RecMem dataset presets to calibrate (``locomo`` and/or ``longmemeval``); all are
    calibrated on the same data, which is recorded.
    """
    from .recmem import RecMem

    convs = [c for c in conversations if c.turns]
    if not convs:
        raise ValueError("calibration needs at least one conversation with turns")
    turn_vecs = [_embed_all(embedder, [t.text for t in c.turns]) for c in convs]
    unit_vecs = [_embed_all(embedder, [u.text for u in RecMem().subconscious_units(c)]) for c in convs]
    turn_pairs = np.concatenate([_pairs(v) for v in turn_vecs])
    nearest = np.concatenate([_nearest_earlier(v) for v in turn_vecs])
    unit_nearest = np.concatenate([_nearest_earlier(v) for v in unit_vecs])

    hmem = calibrate_hmem([hmem_leaves(c, v) for c, v in zip(convs, turn_vecs)])
    recmem = {k: calibrate_recmem(unit_vecs, theta_count=RECMEM_PAPER[k]["theta_count"],
                                  paper_theta=RECMEM_PAPER[k]["theta_sim"]) for k in kinds}
    name = getattr(embedder, "name", type(embedder).__name__)
    return {
        "format": FORMAT, "embedder": name, "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "data": {"label": data_label, "conversations": [c.id for c in convs],
                 "turns": int(sum(len(c.turns) for c in convs)),
                 "exchange_units": int(sum(len(v) for v in unit_vecs))},
        "similarity": {"turn_pairs": _quantiles(turn_pairs), "turn_nearest_earlier": _quantiles(nearest),
                       "recmem_unit_nearest_earlier": _quantiles(unit_nearest)},
        "methods": {
            "hmem": {
                "paper_embedder": PAPER_EMBEDDERS["hmem"],
                "params": {"alphas": hmem["alphas"]},
                "thresholds": {f"alpha_{i + 2}": {
                    "paper": HMEM_PAPER_ALPHAS[i], "calibrated": hmem["alphas"][i], "basis": "derived",
                    "target": {"join_share": hmem["targets"][i]},
                    "how": "join share 1 - N_{l+1}/N_l from the paper's Table 7 (LoCoMo); turns as leaves, "
                           "mean-vector parents; bisection on alpha",
                    "paper_value_quantile_turn_pairs": quantile_of(HMEM_PAPER_ALPHAS[i], {}, turn_pairs),
                    "calibrated_quantile_turn_pairs": quantile_of(hmem["alphas"][i], {}, turn_pairs)}
                    for i in range(len(hmem["alphas"]))},
                "replay": {"paper": hmem["paper"], "calibrated": hmem["calibrated"]},
            },
            "recmem": {
                "paper_embedder": PAPER_EMBEDDERS["recmem"],
                "presets": {k: {"theta_sim": r["theta_sim"], "theta_merge": None} for k, r in recmem.items()},
                "thresholds": {f"theta_sim[{k}]": {
                    "paper": RECMEM_PAPER[k]["theta_sim"], "calibrated": r["theta_sim"], "basis": "target",
                    "theta_count": r["theta_count"], "target": r["target"], "within_band": r["within_band"],
                    "gate_only_trigger_rate": r["gate_only_trigger_rate"],
                    "how": "trigger rate 0.5/theta_count (about half of the units consolidated; ours: the paper "
                           "gives no rate); gate-only replay on RecMem's unit texts",
                    "paper_value_quantile_unit_nearest": quantile_of(RECMEM_PAPER[k]["theta_sim"], {}, unit_nearest),
                    "calibrated_quantile_unit_nearest": quantile_of(r["theta_sim"], {}, unit_nearest)}
                    for k, r in recmem.items()} | {"theta_merge": {
                        "paper": "= theta_sim (Eq. 6)", "calibrated": "= theta_sim", "basis": "derived",
                        "how": "the paper ties theta_merge to theta_sim; "
                               "left at None so it follows the calibrated value"}},
                "replay": {k: {"paper": r["paper"], "calibrated": r["calibrated"]} for k, r in recmem.items()},
            },
        },
        "not_calibrated": {
            "ama.conflict_min_sim": "ours, off (None) by default: no paper value to map",
            "hmem.seed_min_sim": {"why": "ours, chosen with MiniLM; no paper value",
                                  "quantile_turn_pairs": quantile_of(0.3, {}, turn_pairs)},
            "recmem.refine_min_score": "the authors' code uses 0.0 (any positive cosine): embedder-independent",
            "hmem.fuzzy_threshold": "string similarity of entity names, not an embedding cosine",
        },
    }


# -- reading and applying ----------------------------------------------------------------------------------

def _embedder_name(embedder) -> str | None:
    if embedder is None:
        return None
    return getattr(embedder, "name", None) or type(embedder).__name__


def shipped_calibration_path(embedder_name: str | None, variant: str | None = None) -> Path | None:
    """The calibration shipped in the package for this embedder (``<name>.<variant>.json`` when a
    variant is asked for and shipped, else ``<name>.json``), if any.

    Rates depend on conversation length (a longer history gives the gate and the tree more
    candidates), so one threshold cannot fit short and long conversations alike: the plain file is
    made on the sample data (the demo, notebooks and CI), the ``locomo`` variant on LoCoMo dev data.
    """
    if not embedder_name:
        return None
    stem = re.sub(r'[^A-Za-z0-9._-]+', '_', embedder_name)
    for name in ([f"{stem}.{variant}.json"] if variant else []) + [f"{stem}.json"]:
        path = CALIBRATION_DIR / name
        if path.exists():
            return path
    return None


def load_calibration(source) -> dict:
    """A calibration from a path, or ``"shipped:<embedder name>"``. Validates the fields it uses."""
    if isinstance(source, dict):
        data, where = source, "<dict>"
    else:
        text = str(source)
        if text.startswith("shipped:"):
            name, _, variant = text.split(":", 1)[1].partition("@")
            path = shipped_calibration_path(name, variant or None)
        else:
            path = Path(text)
        if path is None or not path.exists():
            raise FileNotFoundError(f"calibration file not found: {source}")
        where = text  # as given (a shipped one is named, never by its absolute path)
        try:
            data = loads_strict(path.read_text())
        except ValueError as exc:
            raise ValueError(f"{where}: not valid JSON ({exc})") from None
        data = {**data, "_path": where, "_sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{where}: field 'format' must be {FORMAT!r}")
    if not isinstance(data.get("embedder"), str) or not isinstance(data.get("methods"), dict):
        raise ValueError(f"{where}: needs a string 'embedder' and an object 'methods'")
    return data


def calibrated_params(calibration: dict, method_name: str, dataset: str | None = None) -> dict:
    """The parameters a calibration sets for one method (and dataset preset, for RecMem)."""
    entry = calibration.get("methods", {}).get(method_name)
    if not isinstance(entry, dict):
        return {}
    params = dict(entry.get("params") or {})
    presets = entry.get("presets") or {}
    kind = dataset_kind(dataset) or ("locomo" if "locomo" in presets else None)
    if kind in presets:
        params.update({k: v for k, v in presets[kind].items()})
    if "alphas" in params:
        params["alphas"] = tuple(params["alphas"])
    return params


def threshold_warnings(method, calibration: dict | None = None) -> list[str]:
    """Warnings for a method whose paper thresholds belong to another embedder than the one in use
    (none when a calibration for that embedder is applied, or the method has no such thresholds)."""
    paper = PAPER_EMBEDDERS.get(getattr(method, "name", ""))
    used = _embedder_name(getattr(method, "embedder", None))
    if paper is None or used is None or used == paper:
        return []
    if (calibration is not None and calibration.get("embedder") == used
            and method.name in calibration.get("methods", {})):
        return []
    return [f"{method.name}: its similarity thresholds were set for {paper}, but the embedder in use is {used} "
            f"and no calibration for it is applied (run `workbench calibrate --embedder ...`)"]


def apply_calibration(method, calibration: dict | None, *, dataset: str | None = None):
    """Set the calibrated thresholds on ``method`` (in place; returns ``(method, applied params)``).

    Applied only when the calibration was made for the method's embedder; otherwise nothing is set
    and ``threshold_warnings`` reports the mismatch.
    """
    if calibration is None or calibration.get("embedder") != _embedder_name(getattr(method, "embedder", None)):
        return method, {}
    params = {k: v for k, v in calibrated_params(calibration, method.name, dataset).items()
              if k in method.get_params()}
    if params:
        method.set_params(**params)
    return method, params


def calibration_summary(calibration: dict | None) -> dict | None:
    """What a manifest records about a calibration: where it came from and what it was made on."""
    if calibration is None:
        return None
    return {"embedder": calibration.get("embedder"), "path": calibration.get("_path"),
            "sha256": calibration.get("_sha256"), "created": calibration.get("created"),
            "data": calibration.get("data"), "format": calibration.get("format")}


def summary_lines(calibration: dict) -> list[str]:
    """Before/after in words: H-Mem multi-child parent share and join shares, RecMem trigger/merge rates."""
    m = calibration["methods"]
    out = [f"calibration for {calibration['embedder']} on {calibration['data']['label'] or 'data'} "
           f"({len(calibration['data']['conversations'])} conversations, {calibration['data']['turns']} turns)"]
    h = m["hmem"]
    for label, key in (("paper", "paper"), ("calibrated", "calibrated")):
        r = h["replay"][key]
        alphas = HMEM_PAPER_ALPHAS if key == "paper" else h["params"]["alphas"]
        out.append(f"  hmem   {label:<10} alphas {tuple(alphas)}: nodes/level {r['nodes']}, "
                   f"join share {r['join_share']}, "
                   f"multi-child parents {r['multi_child_share']} (L2 {r['l2_multi_child_share']})")
    out.append(f"         target join share (Table 7): {[t['target']['join_share'] for t in h['thresholds'].values()]}")
    for kind, rep in m["recmem"]["replay"].items():
        th = m["recmem"]["thresholds"][f"theta_sim[{kind}]"]
        for label in ("paper", "calibrated"):
            r = rep[label]
            theta = th["paper"] if label == "paper" else th["calibrated"]
            out.append(f"  recmem {kind:<11} {label:<10} theta_sim {theta} / count {th['theta_count']}: "
                       f"trigger rate {r['trigger_rate']} ({r['triggers']}/{r['gated']}), "
                       f"merge-candidate rate {r['merge_rate']} ({r['merge_candidates']}/{r['units']})")
        out.append(f"         target trigger rate {th['target']['trigger_rate']} (band {th['target']['band']}), "
                   f"gate-only {th['gate_only_trigger_rate']}, within band: {th['within_band']}")
    return out


def measure(embedder, conversations: Iterable, calibration: dict | None = None, *,
            kinds: Sequence[str] = ("locomo",)) -> dict:
    """Before/after on some data: the H-Mem replay (node counts, join shares, multi-child parent share)
    and the RecMem replay (trigger and merge-candidate rates) at the papers' thresholds and at the
    ``calibration``'s (no LLM). This is how a shipped calibration is checked on data it was not made on."""
    from .recmem import RecMem

    convs = [c for c in conversations if c.turns]
    turn_vecs = [_embed_all(embedder, [t.text for t in c.turns]) for c in convs]
    unit_vecs = [_embed_all(embedder, [u.text for u in RecMem().subconscious_units(c)]) for c in convs]
    leaf_sets = [hmem_leaves(c, v) for c, v in zip(convs, turn_vecs)]
    out = {"conversations": [c.id for c in convs], "turns": int(sum(len(c.turns) for c in convs)),
           "hmem": {"paper": {"alphas": list(HMEM_PAPER_ALPHAS),
                              **_hmem_totals([hmem_replay(ls, HMEM_PAPER_ALPHAS) for ls in leaf_sets], 4)},
                    "target_join_share": hmem_join_targets()},
           "recmem": {}}
    if calibration is not None:
        alphas = calibrated_params(calibration, "hmem").get("alphas")
        if alphas:
            out["hmem"]["calibrated"] = {"alphas": list(alphas),
                                         **_hmem_totals([hmem_replay(ls, alphas) for ls in leaf_sets], 4)}
    for kind in kinds:
        paper = RECMEM_PAPER[kind]
        row = {"target": recmem_target(paper["theta_count"]),
               "paper": {"theta_sim": paper["theta_sim"],
                         "gate_only_trigger_rate": _gate_only_rate(unit_vecs, paper["theta_sim"], paper["theta_count"]),
                         **recmem_replay(unit_vecs, **paper)}}
        if calibration is not None:
            p = calibrated_params(calibration, "recmem", kind)
            if "theta_sim" in p:
                count = p.get("theta_count", paper["theta_count"])
                r = recmem_replay(unit_vecs, theta_sim=p["theta_sim"], theta_count=count,
                                  theta_merge=p.get("theta_merge"))
                gate = _gate_only_rate(unit_vecs, p["theta_sim"], count)
                row["calibrated"] = {"theta_sim": p["theta_sim"], "gate_only_trigger_rate": gate, **r}
                # the documented target is a rate of the gate alone (as calibrated); the merge-first
                # replay's rate is reported beside it
                row["within_band"] = row["target"]["band"][0] <= gate <= row["target"]["band"][1]
        out["recmem"][kind] = row
    return out


def _gate_only_rate(vector_sets, theta_sim: float, theta_count: int) -> float:
    """Fired / gated with every unit reaching the gate (no merge-first), pooled over conversations."""
    from .recmem.trigger import replay_triggers

    ds = [d for v in vector_sets for d in replay_triggers(v, theta_sim=theta_sim, theta_count=theta_count)]
    return round(sum(d.fired for d in ds) / len(ds), 4) if ds else 0.0


def measure_lines(m: dict, label: str = "") -> list[str]:
    out = [f"{label or 'data'}: {len(m['conversations'])} conversations, {m['turns']} turns"]
    for key in ("paper", "calibrated"):
        r = m["hmem"].get(key)
        if r:
            out.append(f"  hmem   {key:<10} alphas {tuple(r['alphas'])}: nodes/level {r['nodes']}, join share "
                       f"{r['join_share']} (target {m['hmem']['target_join_share']}), multi-child parents "
                       f"{r['multi_child_share']} (L2 {r['l2_multi_child_share']})")
    for kind, row in m["recmem"].items():
        for key in ("paper", "calibrated"):
            r = row.get(key)
            if r:
                out.append(f"  recmem {kind:<11} {key:<10} theta_sim {r['theta_sim']}: gate-only trigger rate "
                           f"{r['gate_only_trigger_rate']}; with merge-first: trigger rate {r['trigger_rate']} "
                           f"({r['triggers']}/{r['gated']}), merge-candidate rate {r['merge_rate']} "
                           f"({r['merge_candidates']}/{r['units']})")
        out.append(f"         target trigger rate {row['target']['trigger_rate']} band {row['target']['band']}"
                   + (f", calibrated within band: {row['within_band']}" if "within_band" in row else ""))
    return out
