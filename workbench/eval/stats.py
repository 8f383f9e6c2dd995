"""Confidence intervals for per-question scores: percentile bootstrap, clustered by conversation,
and the paired bootstrap of a difference between two methods on the same questions.

Questions of one conversation are not independent (one memory answers them all, one hard
conversation drags every answer down), so an interval that resamples questions alone is too narrow.
With ``clusters`` (the conversation of each question) the bootstrap is two-stage: draw as many
conversations as there are, with replacement, then inside each drawn conversation draw its
questions with replacement; the statistic is the mean over all drawn questions. One cluster gives
the ordinary question bootstrap. Everything is seeded (a fresh generator per call).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

MIN_N_FOR_CI = 5  # below this many scored questions a table shows the count, never an interval


def _clean(values, clusters) -> tuple[np.ndarray, np.ndarray | None]:
    v = np.asarray(values, dtype=float)
    keep = ~np.isnan(v)
    c = None if clusters is None else np.asarray(list(clusters), dtype=object)[keep]
    return v[keep], c


def bootstrap_means(values, clusters=None, *, n_boot: int = 1000, seed: int = 0) -> np.ndarray:
    """``n_boot`` bootstrap means of ``values`` (NaNs dropped); two-stage when ``clusters`` is given."""
    v, c = _clean(values, clusters)
    rng = np.random.default_rng(seed)
    if len(v) == 0:
        return np.full(n_boot, math.nan)
    if c is None or len(set(c.tolist())) <= 1:
        return v[rng.integers(0, len(v), size=(n_boot, len(v)))].mean(axis=1)
    _, codes = np.unique(c.astype(str), return_inverse=True)
    groups = [v[codes == g] for g in range(codes.max() + 1)]
    n_clusters = len(groups)
    # multiplicity of each conversation in each replicate: (n_boot, n_clusters)
    mult = rng.multinomial(n_clusters, np.full(n_clusters, 1.0 / n_clusters), size=n_boot)
    sums = np.zeros(n_boot)
    counts = np.zeros(n_boot)
    for g, vals in enumerate(groups):
        draws = mult[:, g] * len(vals)  # questions drawn from conversation g in each replicate
        total = int(draws.sum())
        if total == 0:
            continue
        picked = vals[rng.integers(0, len(vals), size=total)]
        owner = np.repeat(np.arange(n_boot), draws)
        sums += np.bincount(owner, weights=picked, minlength=n_boot)
        counts += draws
    return sums / counts


def bootstrap_ci(values, *, clusters=None, n_boot: int = 1000, seed: int = 0,
                 level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean (NaNs dropped), clustered when ``clusters`` is given."""
    means = bootstrap_means(values, clusters, n_boot=n_boot, seed=seed)
    if np.isnan(means).all():
        return (math.nan, math.nan)
    alpha = (1 - level) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return float(lo), float(hi)


def paired_bootstrap(a: Sequence[float], b: Sequence[float], *, clusters=None, n_boot: int = 1000, seed: int = 0,
                     level: float = 0.95) -> dict:
    """Mean of ``a - b`` over the questions both scored, with its (clustered) bootstrap CI.

    Pairs where either side is NaN are dropped. ``p_le_0`` is the share of replicates with a
    difference <= 0 (a one-sided bootstrap p-value for "a is better than b"). Fewer than
    ``MIN_N_FOR_CI`` pairs give no interval.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired values need the same length, got {len(a)} and {len(b)}")
    keep = ~(np.isnan(a) | np.isnan(b))
    d = (a - b)[keep]
    c = None if clusters is None else np.asarray(list(clusters), dtype=object)[keep]
    out = {"n": int(len(d)), "diff": float(d.mean()) if len(d) else math.nan, "ci_low": math.nan,
           "ci_high": math.nan, "p_le_0": math.nan}
    if len(d) >= MIN_N_FOR_CI:
        means = bootstrap_means(d, c, n_boot=n_boot, seed=seed)
        alpha = (1 - level) / 2
        out["ci_low"], out["ci_high"] = (float(x) for x in np.quantile(means, [alpha, 1 - alpha]))
        out["p_le_0"] = float((means <= 0).mean())
    return out


# -- rates with Wilson intervals (judge and verdict audits) ----------------------------------------
def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval of a proportion k/n; (nan, nan) for n = 0."""
    if n <= 0:
        return (math.nan, math.nan)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def rate(k: int, n: int) -> dict:
    lo, hi = wilson(k, n)
    return {"rate": (k / n) if n else None, "k": k, "n": n,
            "ci": [None if math.isnan(lo) else round(lo, 4), None if math.isnan(hi) else round(hi, 4)]}
