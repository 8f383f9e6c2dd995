"""Aggregation and reports: pure functions over a DataFrame of result rows.

- ``results_frame(rows)`` / ``load_results(paths)``: one row per question, scores as columns.
- ``summary_table(df)``: per dataset x method x category — n, accuracy with a seeded bootstrap 95%
  CI, F1/BLEU-1/official F1, evidence recall (with turns_shown and evidence_precision: see
  ``metrics``), mean query tokens and amortised construction tokens
  per question, query-token ratio to Full-Context on the same questions, error counts.
- ``cost_accuracy_frame(df)``: the tidy frame the plotly cost-accuracy chart draws.
- ``to_markdown`` (no ``tabulate`` needed), ``export(df, "md" | "csv" | "json")``.

Accuracy is the ``metric`` column (the judge by default when one was run, else mem0-style F1),
except for LoCoMo category 5, which is always scored with the official adversarial rule. The
headline ``overall`` row is the micro mean over LoCoMo categories 1-4 (category 5 is listed apart,
as ``adversarial``) or over all LongMemEval questions. Timings and cache flags are left out of
the tables, so a replayed run reproduces them bit for bit.
"""
from __future__ import annotations

import json
import math
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from ..data.locomo import CATEGORY_NAMES
from ..data.longmemeval import QUESTION_TYPES
from .store import load_rows

OVERALL = "overall"
FULL_CONTEXT = "full_context"
SCORE_COLUMNS = ("judge", "f1", "bleu1", "locomo_f1", "exact_match", "adversarial")
_ORDER = [CATEGORY_NAMES[c] for c in (1, 2, 3, 4)] + list(QUESTION_TYPES) + [OVERALL, CATEGORY_NAMES[5]]

# How the LoCoMo integers are labelled in published tables (DATA.md §1.5).
CATEGORY_LABELS = {
    "official": {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"},
    "mem0": {1: "single-hop", 2: "temporal", 3: "multi-hop", 4: "open-domain", 5: "(not scored)"},
    "hymem": {1: "single-hop", 2: "multi-hop", 3: "open-domain", 4: "temporal", 5: "(not scored)"},
    "memr3": {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "(not scored)"},
    "recmem": {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"},
}


def category_translation() -> pd.DataFrame:
    """One row per LoCoMo integer: the official name and each paper's label for it."""
    return pd.DataFrame([{"category": c, **{k: v[c] for k, v in CATEGORY_LABELS.items()}} for c in range(1, 6)])


# -- frames ------------------------------------------------------------------------------------------

def results_frame(rows: Iterable, *, answers: bool = False) -> pd.DataFrame:
    """Rows (dicts or ``QuestionResult``) as a DataFrame; each score becomes a column."""
    records = []
    for r in rows:
        d = r.to_dict() if hasattr(r, "to_dict") else dict(r)
        scores = d.pop("scores", None) or {}
        if not answers:
            d.pop("answer", None)
        d["params"] = json.dumps(d.get("params") or {}, sort_keys=True)
        records.append({**d, **{k: (np.nan if v is None else v) for k, v in scores.items()}})
    df = pd.DataFrame.from_records(records)
    for col in SCORE_COLUMNS:
        if col not in df.columns:
            df[col] = np.nan
    return df


def load_results(paths: Sequence) -> pd.DataFrame:
    """Results of one or more JSONL stores (latest row per key)."""
    return results_frame(load_rows(paths))


def auto_metric(df: pd.DataFrame) -> str:
    """``judge`` when any row was judged, else mem0-style ``f1``."""
    return "judge" if "judge" in df.columns and df["judge"].notna().any() else "f1"


def method_labels(df: pd.DataFrame) -> pd.Series:
    """``method``, or ``method[hash]`` when a method was run with more than one configuration."""
    multi = df.groupby(["dataset", "method"])["params_hash"].transform("nunique") > 1
    return df["method"].where(~multi, df["method"] + "[" + df["params_hash"].str[:6] + "]")


def _accuracy_values(df: pd.DataFrame, metric: str) -> pd.Series:
    adversarial = (df["category"].astype(str) == "5") & df["category_name"].eq(CATEGORY_NAMES[5])
    return df[metric].where(~adversarial, df["adversarial"]).astype(float)


def _groups(df: pd.DataFrame) -> Iterable[tuple[str, pd.DataFrame]]:
    """Per category, plus the headline (everything except LoCoMo category 5)."""
    for name, g in df.groupby("category_name", sort=False):
        yield name, g
    headline = df[df["category_name"] != CATEGORY_NAMES[5]]
    if len(headline):
        yield OVERALL, headline


def bootstrap_ci(values, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean (NaNs dropped); a fresh seeded generator per call."""
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if len(v) == 0:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, len(v), size=(n_boot, len(v)))].mean(axis=1)
    alpha = (1 - level) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return float(lo), float(hi)


def _mean(s: pd.Series) -> float:
    s = s.dropna()
    return float(s.mean()) if len(s) else math.nan


def _fc_tokens(df: pd.DataFrame) -> pd.Series:
    fc = df[df["method"] == FULL_CONTEXT].drop_duplicates(["dataset", "qa_id"])
    return fc.set_index(["dataset", "qa_id"])["query_tokens"].astype(float)


def _ratio(g: pd.DataFrame, fc: pd.Series) -> float:
    if fc.empty:
        return math.nan
    idx = pd.MultiIndex.from_frame(g[["dataset", "qa_id"]])
    common = idx[idx.isin(fc.index)]
    if len(common) == 0:
        return math.nan
    mine = g.set_index(["dataset", "qa_id"])["query_tokens"].astype(float)
    denominator = fc.loc[common].mean()
    return float(mine.loc[common].mean() / denominator) if denominator else math.nan


def _shown_columns(g: pd.DataFrame) -> dict:
    """Mean turns covered by what the final reader saw, and evidence precision (NaN for old rows)."""
    return {c: _mean(g[c].astype(float)) if c in g else math.nan for c in ("turns_shown", "evidence_precision")}


def summary_table(df: pd.DataFrame, *, metric: str | None = None, n_boot: int = 1000, seed: int = 0,
                  level: float = 0.95) -> pd.DataFrame:
    """Per dataset x method x category (official names, plus ``overall``): see the module docstring."""
    if df.empty:
        return pd.DataFrame()
    metric = metric or auto_metric(df)
    if metric not in df.columns:
        raise ValueError(f"no column {metric!r} in the results; have {sorted(df.columns)}")
    df = df.assign(method_label=method_labels(df), _acc=_accuracy_values(df, metric))
    fc = _fc_tokens(df)
    out = []
    for (dataset, label), mg in df.groupby(["dataset", "method_label"], sort=False):
        for cat, g in _groups(mg):
            lo, hi = bootstrap_ci(g["_acc"], n_boot=n_boot, seed=seed, level=level)
            out.append({
                "dataset": dataset, "method": label, "params_hash": g["params_hash"].iloc[0], "category": cat,
                "n": len(g), "metric": metric, "accuracy": _mean(g["_acc"]), "ci_low": lo, "ci_high": hi,
                "f1": _mean(g["f1"]), "bleu1": _mean(g["bleu1"]), "locomo_f1": _mean(g["locomo_f1"]),
                "evidence_recall": _mean(g["evidence_recall"].astype(float)),
                "session_recall": _mean(g["session_recall"].astype(float)),
                **_shown_columns(g),
                "query_tokens": _mean(g["query_tokens"].astype(float)),
                "construction_tokens": _mean(g["construction_tokens_per_question"].astype(float)),
                "fc_token_ratio": _ratio(g, fc), "errors": int(g["error"].notna().sum()),
                "judge_errors": int(g["judge_error"].notna().sum()) if "judge_error" in g else 0,
                "flagged": _flagged(g),
                "params": g["params"].iloc[0],
            })
    table = pd.DataFrame(out)
    rank = {c: i for i, c in enumerate(_ORDER)}
    table["_rank"] = table["category"].map(lambda c: rank.get(c, len(rank)))
    table = table.sort_values(["dataset", "method", "_rank"], kind="stable").drop(columns="_rank")
    return table.reset_index(drop=True)


def _flagged(g: pd.DataFrame) -> int:
    """Rows that carry at least one failure or fallback (``QuestionResult.failures``)."""
    return int(g["failures"].map(lambda f: bool(f) if isinstance(f, list) else False).sum()) if "failures" in g else 0


def failure_counts(rows: Iterable) -> pd.DataFrame:
    """Per method: how many rows carry failures, and how many failures of each kind
    (``llm_error``, ``empty_reply``, ``empty_answer``, ``fallback``, ``construction`` ...)."""
    counts: dict[str, dict] = {}
    for r in rows:
        d = r.to_dict() if hasattr(r, "to_dict") else dict(r)
        entry = counts.setdefault(str(d.get("method")), {"method": str(d.get("method")), "rows": 0, "flagged_rows": 0,
                                                          "errors": 0})
        entry["rows"] += 1
        entry["errors"] += bool(d.get("error"))
        failures = d.get("failures") if isinstance(d.get("failures"), list) else []
        entry["flagged_rows"] += bool(failures)
        for f in failures:
            kind = str(f.get("kind", "?")) if isinstance(f, dict) else "?"
            entry[kind] = entry.get(kind, 0) + 1
    df = pd.DataFrame(list(counts.values()))
    return df.fillna(0).astype({c: int for c in df.columns if c != "method"}) if not df.empty else df


def cost_accuracy_frame(df: pd.DataFrame, **kw) -> pd.DataFrame:
    """Tidy frame for the cost-accuracy chart: one point per dataset x method x category."""
    t = summary_table(df, **kw)
    cols = ["dataset", "method", "category", "accuracy", "ci_low", "ci_high", "query_tokens", "construction_tokens",
            "n", "params"]
    return t[cols].copy() if not t.empty else pd.DataFrame(columns=cols)


# -- export -------------------------------------------------------------------------------------------

def _cell(v, floatfmt: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, (float, np.floating)):
        return format(float(v), floatfmt)
    return str(v).replace("|", "\\|").replace("\n", " ")


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[bool]) -> str:
    """The project's one Markdown table writer: GitHub style, columns padded to their widest cell,
    ``numeric`` columns right-aligned. Cells arrive as formatted text (each caller formats its own)."""
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]

    def line(cells):
        return "| " + " | ".join(c.rjust(w) if num else c.ljust(w) for c, w, num in zip(cells, widths, numeric)) + " |"

    sep = "|" + "|".join(("-" * (w + 1) + ":") if num else ("-" * (w + 2)) for w, num in zip(widths, numeric)) + "|"
    return "\n".join([line(header), sep] + [line(r) for r in rows])


def to_markdown(df: pd.DataFrame, *, floatfmt: str = ".3f", index: bool = False) -> str:
    """A data frame as a Markdown table (numbers right-aligned), without the ``tabulate`` package."""
    frame = df.reset_index() if index else df
    body = [[_cell(v, floatfmt) for v in row] for row in frame.itertuples(index=False, name=None)]
    numeric = [pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])
               for c in frame.columns]
    return markdown_table([str(c) for c in frame.columns], body, numeric)


def export(df: pd.DataFrame, fmt: str = "md") -> str:
    """The table as Markdown, CSV or JSON (records) text."""
    if fmt in ("md", "markdown"):
        return to_markdown(df)
    if fmt == "csv":
        return df.to_csv(index=False)
    if fmt == "json":
        return json.dumps(json.loads(df.to_json(orient="records")), indent=2)
    raise ValueError(f"unknown format {fmt!r}: use md, csv or json")


def method_stats(rows: Iterable) -> dict[str, dict]:
    """Each method's own decision figures (its module's ``summary_stats``: AMA's Retry/Refresh counts,
    H-Mem's scopes and follow-ups, MemR3's iterations and guards, ...), from the saved traces alone."""
    import importlib

    from ..methods import REGISTRY
    from ..trace import Answer

    answers: dict[str, list] = {}
    for r in rows:
        d = r.to_dict() if hasattr(r, "to_dict") else dict(r)
        if d.get("answer") and d.get("method") in REGISTRY:
            answers.setdefault(d["method"], []).append(Answer.from_dict(d["answer"]))
    out = {}
    for name, ans in sorted(answers.items()):
        stats = getattr(importlib.import_module(REGISTRY[name].__module__), "summary_stats", None)
        if stats is not None:
            out[name] = stats(ans)
    return out


def method_stats_markdown(stats: dict[str, dict]) -> str:
    """``method_stats`` as a Markdown section (nested figures written as ``key=value`` lists)."""
    def fmt(v):
        if isinstance(v, dict):
            return ", ".join(f"{k}={fmt(x)}" for k, x in v.items()) or "-"
        return f"{v:.3g}" if isinstance(v, float) else str(v)

    lines = ["## Method statistics from traces", ""]
    for name, s in stats.items():
        lines.append(f"- **{name}**: " + "; ".join(f"{k}: {fmt(v)}" for k, v in s.items()))
    return "\n".join(lines)
