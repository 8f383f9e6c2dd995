"""RecMem's recurrence trigger as pure functions: the live gate, an offline replay, and threshold
calibration for another encoder. No LLM, no store, only numpy.

Paper: Dai et al., "RecMem: Recurrence-based Memory Consolidation" §3.2, Eq. 5; digest
``../shared/methods/recmem.md`` §3 lines 11-15 and §10.1-3, 8.

The gate for a new unit s_i over the pool P of units still waiting in the subconscious buffer:

    N_i  = top-k of P by cos(v_i, .)                 k = 2 * theta_count by default  [code]
    R_i  = {s_j in N_i : cos > theta_sim}            '>' [code]; '>=' with strict=False (paper Eq. 5)
    count = |R_i| + 1                                self-inclusive [code] and Fig. 3; |R_i| with count_self=False
    fired = count >= theta_count

``RecMem`` calls ``decide`` on the cosines that ``cosines`` computes, and ``replay_triggers`` calls
the very same two functions, so with the live thresholds and the same merge/failure outcomes the
replay reproduces the live decisions bit for bit.

What the replay models (and what it cannot): the pool evolves exactly as in the live run — a
fired cluster (R_i and s_i) leaves the pool, a buffered unit joins it — but whether an LLM would
have *merged* a unit into an episode, or an episode call would have *failed*, depends on episodes
that other thresholds would have written differently. The replay therefore takes merge-first and
failure outcomes as given: ``merged`` lists units that skip the gate (absorbed by an episode),
``failed`` lists triggering units whose consolidation did not happen (cluster stays, unit joins
the pool). Pass the live run's sets to reproduce it; pass nothing to replay the gate alone
("every unit reaches the gate, every consolidation succeeds"), which is what the threshold sliders
of a widget show.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Iterable, Sequence

import numpy as np

OUTCOMES = ("buffered", "triggered", "merged", "failed", "dropped")


@dataclass(frozen=True)
class TriggerDecision:
    """One gate check (digest §2 ``TriggerCheck``) and what became of the unit.

    ``outcome``: ``buffered`` (no recurrence, joins the buffer), ``triggered`` (cluster consolidated),
    ``merged`` (absorbed by an episode before the gate; no neighbours), ``failed`` (fired but the
    consolidation failed: the unit joins the buffer), ``dropped`` (fired, failed, and dropped:
    ``on_failure="drop"``, the authors' code).
    """

    unit_id: str
    position: int
    neighbours: tuple[tuple[str, float], ...] = ()
    relevant_ids: tuple[str, ...] = ()
    count: int = 0
    fired: bool = False
    outcome: str = "buffered"

    def to_dict(self) -> dict:
        d = asdict(self)
        d["neighbours"] = [[i, float(c)] for i, c in self.neighbours]
        d["relevant_ids"] = list(self.relevant_ids)
        return d


def default_k(theta_count: int, k: int | None = None) -> int:
    """Gate top-k: ``k`` if given, else 2 * theta_count (the authors' code; the paper leaves k open)."""
    return int(k) if k is not None else 2 * int(theta_count)


def cosines(vectors: np.ndarray, pool: Sequence[int], i: int) -> np.ndarray:
    """cos(v_i, v_j) for j in ``pool`` (rows are L2-normalised). ``einsum`` without BLAS, so the
    same inputs give the same bits whatever the memory layout (live run and replay agree)."""
    if len(pool) == 0:
        return np.zeros(0, dtype=np.float32)
    return np.einsum("ij,j->i", vectors[np.asarray(pool, dtype=np.int64)], vectors[i])


def decide(unit_id: str, position: int, cos: np.ndarray, pool_ids: Sequence[str], *, theta_sim: float,
           theta_count: int, k: int | None = None, strict: bool = True, count_self: bool = True) -> TriggerDecision:
    """The gate on precomputed cosines to the pool (pool in arrival order; ties keep that order)."""
    cos = np.asarray(cos, dtype=np.float64)
    top = np.argsort(-cos, kind="stable")[:default_k(theta_count, k)]
    neighbours = tuple((pool_ids[j], float(cos[j])) for j in top)
    relevant = tuple(i for i, c in neighbours if (c > theta_sim if strict else c >= theta_sim))
    count = len(relevant) + (1 if count_self else 0)
    fired = count >= theta_count
    return TriggerDecision(unit_id, position, neighbours, relevant, count, fired, "triggered" if fired else "buffered")


def _sequence(n: int, order) -> list[int]:
    if order is None:
        return list(range(n))
    if len(order) != n:
        raise ValueError(f"order has {len(order)} keys for {n} embeddings")
    return sorted(range(n), key=lambda i: (order[i], i))


def _replay(n: int, ids: Sequence[str], seq: Sequence[int], cos_fn, *, theta_sim, theta_count, k, strict,
            count_self, merged: frozenset, failed: frozenset, drop_failed: bool) -> list[TriggerDecision]:
    pool: list[int] = []
    out = []
    for pos, i in enumerate(seq):
        uid = ids[i]
        if uid in merged:
            out.append(TriggerDecision(uid, pos, outcome="merged"))
            continue
        d = decide(uid, pos, cos_fn(pool, i), [ids[j] for j in pool], theta_sim=theta_sim,
                   theta_count=theta_count, k=k, strict=strict, count_self=count_self)
        if d.fired and uid not in failed:
            members = set(d.relevant_ids)
            pool = [j for j in pool if ids[j] not in members]
        elif d.fired and drop_failed:
            d = replace(d, outcome="dropped")
        else:
            if d.fired:
                d = replace(d, outcome="failed")
            pool.append(i)
        out.append(d)
    return out


def replay_triggers(embeddings, order=None, theta_sim: float = 0.7, theta_count: int = 5, k: int | None = None, *,
                    ids: Sequence[str] | None = None, strict: bool = True, count_self: bool = True,
                    merged: Iterable[str] = (), failed: Iterable[str] = (),
                    drop_failed: bool = False) -> list[TriggerDecision]:
    """Replay the recurrence gate from stored unit embeddings for any (theta_sim, theta_count). No LLM.

    ``embeddings``: (n, d) L2-normalised unit vectors; ``order``: one sort key per row (times or
    ints; ties keep row order), default row order; ``ids``: unit ids (default ``"0".."n-1"``).
    ``merged`` / ``failed`` / ``drop_failed``: the live run's merge-first and failure outcomes (see the
    module docstring); by default none. Returns one decision per unit in processing order.
    """
    vectors = np.asarray(embeddings, dtype=np.float32)
    n = len(vectors)
    ids = [str(i) for i in range(n)] if ids is None else list(ids)
    if len(ids) != n:
        raise ValueError(f"{len(ids)} ids for {n} embeddings")
    check_gate_k(theta_count, k, count_self)
    return _replay(n, ids, _sequence(n, order), lambda pool, i: cosines(vectors, pool, i), theta_sim=theta_sim,
                   theta_count=theta_count, k=k, strict=strict, count_self=count_self, merged=frozenset(merged),
                   failed=frozenset(failed), drop_failed=drop_failed)


def check_gate_k(theta_count: int, k: int | None, count_self: bool) -> None:
    """A gate whose top-k cannot hold enough neighbours would never fire (digest §10.3)."""
    need = theta_count - (1 if count_self else 0)
    if default_k(theta_count, k) < need:
        raise ValueError(f"gate top-k {default_k(theta_count, k)} < {need}: the trigger could never fire")


def trigger_rate(decisions: Sequence[TriggerDecision]) -> float:
    """Fired gate checks / gate checks (units absorbed by merge-first never reach the gate)."""
    gated = [d for d in decisions if d.outcome != "merged"]
    return sum(d.fired for d in gated) / len(gated) if gated else 0.0


def calibrate_thresholds(embeddings, *, target_trigger_rate: float, theta_count: int = 5, k: int | None = None,
                         grid: Sequence[float] | None = None, strict: bool = True, count_self: bool = True) -> dict:
    """Pick the theta_sim whose replayed trigger rate is closest to ``target_trigger_rate``. No LLM.

    The paper's 0.7 / 0.6 are cosines of text-embedding-3-small (digest §10.8); another encoder
    spreads cosines differently. Measure the target on a reference run, e.g.
    ``trigger_rate(replay_triggers(E_ref, theta_sim=0.7, theta_count=5))``, then calibrate the new
    encoder's unit embeddings to it. ``embeddings``: one (n, d) array, or a list of them (one per
    conversation, pooled). Ties go to the higher (more conservative) theta. Returns
    ``{"theta_sim", "theta_count", "trigger_rate", "target_trigger_rate", "grid": [[theta, rate], ...]}``.
    """
    several = isinstance(embeddings, (list, tuple)) and len(embeddings) > 0 and np.ndim(embeddings[0]) == 2
    convs = [np.asarray(e, dtype=np.float32) for e in (embeddings if several else [embeddings])]
    grid = [round(float(x), 4) for x in (np.arange(0.2, 0.96, 0.01) if grid is None else grid)]
    check_gate_k(theta_count, k, count_self)
    sims = [e @ e.T for e in convs]  # one matrix per conversation; the sweep only indexes it
    table = []
    for theta in grid:
        fired = gated = 0
        for e, s in zip(convs, sims):
            n = len(e)
            ds = _replay(n, [str(i) for i in range(n)], range(n), lambda pool, i, s=s: s[i, pool],
                         theta_sim=theta, theta_count=theta_count, k=k, strict=strict, count_self=count_self,
                         merged=frozenset(), failed=frozenset(), drop_failed=False)
            fired += sum(d.fired for d in ds)
            gated += len(ds)
        table.append([theta, fired / gated if gated else 0.0])
    best = min(table, key=lambda row: (abs(row[1] - target_trigger_rate), -row[0]))
    return {"theta_sim": best[0], "theta_count": theta_count, "trigger_rate": best[1],
            "target_trigger_rate": target_trigger_rate, "grid": table}
