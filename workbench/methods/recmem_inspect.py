"""RecMem's inspection half: stores as retrievers, the cluster-view structures, the offline gate replay,
construction accounting, and ``summary_stats`` over saved traces.

A mixin for ``recmem.RecMem`` (it reads the state ``ingest`` builds: ``units_``, ``unit_order_``,
``unit_vectors_``, ``trigger_log_``, the three stores, ``construction_ledger_``). None of it calls an LLM.
"""
from __future__ import annotations

from collections import Counter
from typing import Literal

import numpy as np

from ..trace import Answer
from .recmem_trigger import TriggerDecision, replay_triggers
from .store import MergedRetriever

LAYERS = ("subconscious", "episode", "fact")


class RecMemInspection:
    """Read-only views of a built RecMem (mixed into ``RecMem``)."""

    # -- inspection --------------------------------------------------------------------------------
    def _units(self) -> list[dict]:
        return self.sub_.rows() + self.epi_.rows() + self.sem_.rows()

    def as_retriever(self, layer: Literal["subconscious", "episode", "fact", "all"] = "all"):
        """One store (``subconscious`` | ``episode`` | ``fact``) or all three merged by score."""
        self._check_ingested()
        stores = {"subconscious": self.sub_, "episode": self.epi_, "fact": self.sem_}
        if layer == "all":
            return MergedRetriever(list(stores.values()), name="recmem")
        if layer not in stores:
            raise ValueError(f"layer must be one of {[*stores, 'all']}, got {layer!r}")
        return stores[layer]

    def structures(self) -> dict:
        """Plain JSON for ``widgets.cluster_view`` (saved as ``structures.json``): the units in arrival
        order with their fate, their embeddings (full, for replaying the gate at other thresholds,
        and a 2-D PCA projection), the live trigger log, episodes (with member unit ids), facts and
        the gate's parameters; and, for the mechanism census (``workbench.eval.mechanisms``), every
        merge-first check (ids, cosine, gate and LLM outcome; texts left out: the events hold them),
        every refinement call (ids, mode, facts returned and stored, error) and the construction
        failures. No LLM."""
        self._check_ingested()
        units = [{"id": uid, "text": self.units_[uid].text, "source_ids": list(self.units_[uid].source_ids),
                  "time": self.units_[uid].time, "order": pos, "session_id": self.units_[uid].meta.get("session_id"),
                  **self.unit_fate_.get(uid, {})} for pos, uid in enumerate(self.unit_order_)]
        episodes = [{"id": e.id, "text": e.text, "member_ids": list(e.meta.get("raw_ids", [])),
                     "source_ids": list(e.source_ids), "time": e.time, "cluster": e.meta.get("cluster"),
                     "lineage": e.meta.get("lineage"), "version": e.meta.get("version")} for e in self.epi_]
        facts = [{"id": f.id, "text": f.text, "source_ids": list(f.source_ids), "time": f.time,
                  "episode": f.meta.get("episode"), "cluster": f.meta.get("cluster")} for f in self.sem_]
        params = {k: getattr(self, k) for k in ("theta_sim", "theta_count", "gate_k", "strict_gate", "count_self",
                                                "theta_merge", "on_failure", "refine_with_episode")}
        merges = [{k: a.get(k) for k in ("unit_id", "episode_id", "cos", "passed", "should_merge", "merged", "error")}
                  for a in getattr(self, "merge_log_", [])]
        refinements = [{"episode_id": r["episode_id"], "mode": r["mode"], "cluster": r["cluster"],
                        "returned": r["returned"], "new_fact_ids": list(r["new_fact_ids"]),
                        "duplicates": len(r["duplicates"]), "error": r["error"]}
                       for r in getattr(self, "refinements_", [])]
        failures = [{k: v for k, v in f.items() if k != "members"} for f in getattr(self, "failures_", [])]
        return {"units": units, "embeddings_2d": _pca_2d(self.unit_vectors_),
                "embeddings": self.unit_vectors_.tolist(), "trigger_log": [d.to_dict() for d in self.trigger_log_],
                "episodes": episodes, "facts": facts, "params": params,
                "merge_attempts": merges, "refinements": refinements, "failures": failures,
                "embedder": getattr(self.embedder, "name", type(self.embedder).__name__)}

    def replay(self, theta_sim: float | None = None, theta_count: int | None = None, k: int | None = None, *,
               live_merges: bool = True, live_failures: bool = True) -> list[TriggerDecision]:
        """Replay the gate from the stored unit embeddings (no LLM; ``recmem_trigger.replay_triggers``).

        With ``live_merges``/``live_failures`` the live run's merge-first absorptions and failed
        consolidations are taken as given, so the live thresholds reproduce ``trigger_log_``
        exactly; other thresholds show what the gate alone would do (merges cannot be re-decided
        without an LLM). Without them every unit reaches the gate and every consolidation succeeds.
        """
        self._check_ingested()
        log = self.trigger_log_
        return replay_triggers(self.unit_vectors_, None, self.theta_sim if theta_sim is None else theta_sim,
                               self.theta_count if theta_count is None else theta_count,
                               self.gate_k if k is None else k, ids=self.unit_order_, strict=self.strict_gate,
                               count_self=self.count_self,
                               merged=[d.unit_id for d in log if d.outcome == "merged"] if live_merges else (),
                               failed=[d.unit_id for d in log if d.outcome in ("failed", "dropped")]
                               if live_failures else (), drop_failed=self.on_failure == "drop")

    def construction_breakdown(self, by: Literal["operation", "role"] = "operation") -> dict:
        """Construction calls and tokens per operation (merge / consolidate / refine) or per ledger role."""
        self._check_ingested()
        rows = self.construction_ledger_
        keys = ["merge", "consolidate", "refine"] if by == "operation" else sorted({r["role"] for r in rows})
        out = {key: Counter(calls=0, prompt_tokens=0, completion_tokens=0, total_tokens=0) for key in keys + ["total"]}
        for r in rows:
            for key in (r["operation"] if by == "operation" else r["role"], "total"):
                out.setdefault(key, Counter()).update(calls=1, prompt_tokens=r["prompt_tokens"],
                                                      completion_tokens=r["completion_tokens"],
                                                      total_tokens=r["prompt_tokens"] + r["completion_tokens"])
        return {key: dict(c) for key, c in out.items()}

    def consolidation_summary(self) -> dict:
        """Unit outcomes, store sizes and the [code] save ratio (units out of the buffer / units)."""
        self._check_ingested()
        n = len(self.unit_order_)
        outcomes = Counter(d.outcome for d in self.trigger_log_)
        return {"units": n, **{o: outcomes.get(o, 0) for o in ("buffered", "merged", "triggered", "failed", "dropped")},
                "in_buffer": len(self.pool_), "episodes": len(self.epi_), "facts": len(self.sem_),
                "save_ratio": (n - len(self.pool_)) / n if n else 0.0,
                "llm_calls": len(self.construction_ledger_), "eager_calls": n}


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


def summary_stats(answers: list[Answer]) -> dict:
    """From traces only: mean hits per layer in the answer context, and mean query tokens."""
    n = len(answers)
    totals = Counter()
    for a in answers:
        for s in a.steps:
            if s.kind == "retrieve" and s.data.get("layer") in LAYERS:
                totals[s.data["layer"]] += len(s.hits)
    return {"questions": n, "mean_hits": {layer: totals[layer] / n if n else 0.0 for layer in LAYERS},
            "mean_query_tokens": sum(a.usage.total_tokens for a in answers) / n if n else 0.0}
