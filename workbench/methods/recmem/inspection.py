"""RecMem's read-only views, as plain functions of a built ``RecMem`` (passed as ``m``).

They read the state ``ingest`` builds (``units_``, ``unit_order_``, ``unit_vectors_``,
``trigger_log_``, the three stores, ``construction_ledger_``) and never call an LLM: the
cluster-view structures, the offline gate replay and the construction accounting. ``RecMem``'s
methods of the same names check that the memory is built and call these.
"""
from __future__ import annotations

from collections import Counter
from typing import Literal

import numpy as np

from .trigger import TriggerDecision, replay_triggers

LAYERS = ("subconscious", "episode", "fact")


def structures(m) -> dict:
    """``RecMem.structures``: units with their fate, embeddings (full and 2-D), trigger log, episodes, facts;
    and, for the mechanism census (``workbench.eval.mechanisms``), every merge-first check (ids, cosine, gate
    and LLM outcome; texts left out: the events hold them), every refinement call (ids, mode, facts returned
    and stored, error) and the construction failures."""
    units = [{"id": uid, "text": m.units_[uid].text, "source_ids": list(m.units_[uid].source_ids),
              "time": m.units_[uid].time, "order": pos, "session_id": m.units_[uid].meta.get("session_id"),
              **m.unit_fate_.get(uid, {})} for pos, uid in enumerate(m.unit_order_)]
    episodes = [{"id": e.id, "text": e.text, "member_ids": list(e.meta.get("raw_ids", [])),
                 "copy_of": e.meta.get("copy_of"),  # an earlier episode of the same reply it repeats
                 "source_ids": list(e.source_ids), "time": e.time, "cluster": e.meta.get("cluster"),
                 "lineage": e.meta.get("lineage"), "version": e.meta.get("version")} for e in m.epi_]
    facts = [{"id": f.id, "text": f.text, "source_ids": list(f.source_ids), "time": f.time,
              "episode": f.meta.get("episode"), "cluster": f.meta.get("cluster")} for f in m.sem_]
    params = {k: getattr(m, k) for k in ("theta_sim", "theta_count", "gate_k", "strict_gate", "count_self",
                                         "theta_merge", "on_failure", "refine_with_episode")}
    merges = [{k: a.get(k) for k in ("unit_id", "episode_id", "cos", "passed", "should_merge", "merged", "error")}
              for a in getattr(m, "merge_log_", [])]
    refinements = [{"episode_id": r["episode_id"], "mode": r["mode"], "cluster": r["cluster"],
                    "returned": r["returned"], "new_fact_ids": list(r["new_fact_ids"]),
                    "duplicates": len(r["duplicates"]), "error": r["error"]}
                   for r in getattr(m, "refinements_", [])]
    failures = [{k: v for k, v in f.items() if k != "members"} for f in getattr(m, "failures_", [])]
    return {"units": units, "embeddings_2d": _pca_2d(m.unit_vectors_),
            "embeddings": m.unit_vectors_.tolist(), "trigger_log": [d.to_dict() for d in m.trigger_log_],
            "episodes": episodes, "facts": facts, "params": params,
            "merge_attempts": merges, "refinements": refinements, "failures": failures,
            "embedder": getattr(m.embedder, "name", type(m.embedder).__name__)}


def replay(m, theta_sim: float | None = None, theta_count: int | None = None, k: int | None = None, *,
           live_merges: bool = True, live_failures: bool = True) -> list[TriggerDecision]:
    """``RecMem.replay``: ``trigger.replay_triggers`` over the stored unit embeddings."""
    log = m.trigger_log_
    return replay_triggers(m.unit_vectors_, None, m.theta_sim if theta_sim is None else theta_sim,
                           m.theta_count if theta_count is None else theta_count,
                           m.gate_k if k is None else k, ids=m.unit_order_, strict=m.strict_gate,
                           count_self=m.count_self,
                           merged=[d.unit_id for d in log if d.outcome == "merged"] if live_merges else (),
                           failed=[d.unit_id for d in log if d.outcome in ("failed", "dropped")]
                           if live_failures else (), drop_failed=m.on_failure == "drop")


def construction_breakdown(m, by: Literal["operation", "role"] = "operation") -> dict:
    """``RecMem.construction_breakdown``: the construction ledger summed per operation or role."""
    rows = m.construction_ledger_
    keys = ["merge", "consolidate", "refine"] if by == "operation" else sorted({r["role"] for r in rows})
    out = {key: Counter(calls=0, prompt_tokens=0, completion_tokens=0, total_tokens=0) for key in keys + ["total"]}
    for r in rows:
        for key in (r["operation"] if by == "operation" else r["role"], "total"):
            out.setdefault(key, Counter()).update(calls=1, prompt_tokens=r["prompt_tokens"],
                                                  completion_tokens=r["completion_tokens"],
                                                  total_tokens=r["prompt_tokens"] + r["completion_tokens"])
    return {key: dict(c) for key, c in out.items()}


def consolidation_summary(m) -> dict:
    """``RecMem.consolidation_summary``: unit outcomes, store sizes, save ratio."""
    n = len(m.unit_order_)
    outcomes = Counter(d.outcome for d in m.trigger_log_)
    return {"units": n, **{o: outcomes.get(o, 0) for o in ("buffered", "merged", "triggered", "failed", "dropped")},
            "in_buffer": len(m.pool_), "episodes": len(m.epi_), "facts": len(m.sem_),
            "save_ratio": (n - len(m.pool_)) / n if n else 0.0,
            "llm_calls": len(m.construction_ledger_), "eager_calls": n}


def repeated_episodes(episodes) -> dict[str, str]:
    """Episode id -> the id of an earlier episode with the same text, case and spacing aside, among
    ``episodes`` (dicts with ``id`` and ``text``: one consolidation's). A small model's reply can repeat one
    paragraph up to the item bound, and RecMem stores (and refines) every copy, as its code does; the
    mechanism census and the cluster view both name the copies with this."""
    first: dict[str, str] = {}
    copies: dict[str, str] = {}
    for e in episodes:
        eid = e.get("id")
        if not isinstance(eid, (str, int)):  # read from a run directory: an id that is no id names nothing
            continue
        key = " ".join(str(e.get("text") or "").lower().split())
        if key in first:
            copies[eid] = first[key]
        else:
            first[key] = eid
    return copies


def _pca_2d(vectors: np.ndarray) -> list[list[float]]:
    """Units projected on their first two principal components, for the cluster view (zeros when
    fewer than two distinct units).

    Centred SVD; each component's sign is fixed so that its largest loading is positive (the
    convention of scikit-learn's PCA, whose output this reproduces), so the picture is deterministic.
    """
    x = np.asarray(vectors, dtype=np.float64)
    if x.ndim != 2 or len(x) < 2 or not np.ptp(x, axis=0).any():
        return [[0.0, 0.0] for _ in range(len(x))]
    k = min(2, *x.shape)
    u, s, vt = np.linalg.svd(x - x.mean(axis=0), full_matrices=False)
    signs = np.sign(vt[np.arange(len(vt)), np.abs(vt).argmax(axis=1)])
    xy = (u * signs)[:, :k] * s[:k]
    xy = np.pad(xy, ((0, 0), (0, 2 - k)))
    return np.round(xy, 6).tolist()
