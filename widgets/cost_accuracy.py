"""``CostAccuracyChart``: accuracy against mean tokens per question, per method (and per category).

Input: the harness's result rows (dicts or a DataFrame) with ``method``, ``params_hash``,
``category``/``category_name``, ``scores`` ({judge, f1, bleu1, ...}) or a ``judge`` label,
``query_tokens`` and ``construction_tokens``. Error bars are percentile-bootstrap 95% intervals
of the mean (seeded). When ``workbench.eval.report`` is installed its ``results_frame`` and
``summary_table`` do the aggregation (so the chart agrees with the report tables: the headline
``overall`` leaves LoCoMo category 5 out); otherwise the local computation below (``source`` says
which).
Full-Context, when present, is drawn as a dashed reference line plus a star marker.
"""
from __future__ import annotations

import importlib
import importlib.util
import json
from typing import Sequence

import numpy as np
import pandas as pd

from .html import DisplaysWidget, esc, show_figure, table_html

REFERENCE_METHOD = "full_context"
X_CHOICES = ("query_tokens", "construction_tokens")
ALL = "all"


def _report():
    """``workbench.eval.report`` when it is installed, else None (the local code below is used)."""
    if importlib.util.find_spec("workbench.eval.report") is None:
        return None
    return importlib.import_module("workbench.eval.report")


def _rows(rows_or_frame) -> list[dict]:
    if isinstance(rows_or_frame, pd.DataFrame):
        return rows_or_frame.to_dict(orient="records")
    return [r.to_dict() if hasattr(r, "to_dict") else dict(r) for r in rows_or_frame]


def results_frame(rows_or_frame) -> pd.DataFrame:
    """Result rows as a flat frame, one column per score (``report.results_frame`` when present).
    A DataFrame without a ``scores`` column is taken to be flat already."""
    if isinstance(rows_or_frame, pd.DataFrame) and "scores" not in rows_or_frame.columns:
        df = rows_or_frame.copy()
    elif (report := _report()) is not None:
        df = report.results_frame(_rows(rows_or_frame))
    else:
        records = []
        for r in _rows(rows_or_frame):
            scores = r.pop("scores", None) or {}
            r.pop("answer", None)
            records.append({**r, **{k: (np.nan if v is None else v) for k, v in scores.items()}})
        df = pd.DataFrame.from_records(records)
    for col in ("method", "params_hash", "dataset"):
        if col not in df.columns:
            df[col] = ""
    if "category_name" not in df.columns:
        df["category_name"] = df["category"].astype(str) if "category" in df.columns else ""
    return df


def metric_values(df: pd.DataFrame, metric: str = "judge") -> pd.Series:
    """Per-row score for ``metric``; for ``judge`` without scores, the label CORRECT -> 1."""
    if metric in df.columns and pd.to_numeric(df[metric], errors="coerce").notna().any():
        return pd.to_numeric(df[metric], errors="coerce").astype(float)
    label = next((c for c in ("judge_label", "judge") if c in df.columns), None)
    if metric == "judge" and label:
        return df[label].map(lambda v: np.nan if v is None or v != v else float(str(v).upper() == "CORRECT"))
    return pd.Series(np.nan, index=df.index, dtype=float)


def bootstrap_ci(values: Sequence[float], *, n_boot: int = 1000, seed: int = 0, alpha: float = 0.05):
    """Percentile bootstrap interval of the mean (NaNs dropped); (nan, nan) when empty."""
    v = np.asarray([x for x in values if x == x], dtype=float)
    if v.size == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, v.size, size=(n_boot, v.size))].mean(axis=1)
    return float(np.quantile(means, alpha / 2)), float(np.quantile(means, 1 - alpha / 2))


def _labels(df: pd.DataFrame) -> pd.Series:
    """``method``, or ``method[hash]`` when a method appears with several parameter sets."""
    hashes = df.groupby("method")["params_hash"].transform("nunique")
    return df["method"].where(hashes <= 1, df["method"] + "[" + df["params_hash"].astype(str).str[:6] + "]")


def local_summary(df: pd.DataFrame, *, metric: str = "judge", n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Fallback for ``report.summary_table``: per method x category (plus ``all``): n, accuracy, CI,
    mean query and construction tokens, params. Every row counts (no category is set apart)."""
    cols = ["dataset", "method", "params_hash", "category", "n", "accuracy", "ci_low", "ci_high", "query_tokens",
            "construction_tokens", "params"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    per_q = "construction_tokens_per_question" if "construction_tokens_per_question" in df.columns \
        else "construction_tokens"
    df = df.assign(_acc=metric_values(df, metric).values, _label=_labels(df).values)
    out = []
    for label, mg in df.groupby("_label", sort=True):
        for cat, g in [(ALL, mg)] + [(str(c), gc) for c, gc in mg.groupby("category_name", sort=True)]:
            lo, hi = bootstrap_ci(g["_acc"].tolist(), n_boot=n_boot, seed=seed)
            out.append({"dataset": g["dataset"].iloc[0], "method": label, "params_hash": g["params_hash"].iloc[0],
                        "category": cat, "n": int(g["_acc"].notna().sum()), "accuracy": float(g["_acc"].mean()),
                        "ci_low": lo, "ci_high": hi, "query_tokens": _mean(g, "query_tokens"),
                        "construction_tokens": _mean(g, per_q),
                        "params": json.dumps(g["params"].iloc[0], sort_keys=True, default=str)
                        if "params" in g.columns else ""})
    return pd.DataFrame(out, columns=cols)


def _mean(g: pd.DataFrame, col: str) -> float:
    return float(pd.to_numeric(g[col], errors="coerce").mean()) if col in g.columns else float("nan")


def summary_frame(df: pd.DataFrame, *, metric: str = "judge", n_boot: int = 1000, seed: int = 0):
    """(per method x category table, source). ``report.summary_table`` when present (its headline
    row ``overall`` leaves LoCoMo category 5 out); else ``local_summary`` (headline ``all``)."""
    report = _report()
    if report is None:
        why = "workbench.eval.report absent"
    elif df.empty:
        why = "no rows"
    else:
        try:
            return report.summary_table(df, metric=metric, n_boot=n_boot, seed=seed), "workbench.eval.report"
        except (KeyError, ValueError) as exc:  # rows not in the harness format: say so, use the local code
            why = f"report.summary_table could not read these rows: {type(exc).__name__}: {exc}"
    return local_summary(df, metric=metric, n_boot=n_boot, seed=seed), f"local bootstrap ({why})"


def headline(table: pd.DataFrame) -> str:
    return "overall" if "overall" in set(table.get("category", ())) else ALL


def points_frame(table: pd.DataFrame, *, x: str = "query_tokens", category: str = ALL) -> pd.DataFrame:
    """Chart points from a summary table: one row per method for ``category`` (``all`` = headline)."""
    cols = ["label", "method", "category", "n", "accuracy", "ci_low", "ci_high", "tokens", "params"]
    if table.empty:
        return pd.DataFrame(columns=cols)
    cat = headline(table) if category in (None, "", ALL) else category
    t = table[table["category"] == cat].copy()
    several = "dataset" in t.columns and t["dataset"].nunique() > 1
    t["label"] = t["method"] + (" (" + t["dataset"].astype(str) + ")" if several else "")
    t["method"] = t["method"].str.split("[", regex=False).str[0]
    t["tokens"] = pd.to_numeric(t[x], errors="coerce")
    return t[cols].reset_index(drop=True)


def cost_accuracy_frame(rows_or_frame, *, x: str = "query_tokens", metric: str = "judge", category: str = ALL,
                        n_boot: int = 1000, seed: int = 0):
    """(points, source): accuracy with CI and mean ``x`` tokens per question, one row per method."""
    table, source = summary_frame(results_frame(rows_or_frame), metric=metric, n_boot=n_boot, seed=seed)
    return points_frame(table, x=x, category=category), source


def summary_table_html(summary: pd.DataFrame, metric: str, head: str) -> str:
    """Method x category cells ``mean [lo, hi] (n)``, then the headline row's costs per method."""
    cats = [head] + [c for c in dict.fromkeys(summary["category"]) if c != head]
    rows = []
    for method, g in summary.groupby("method", sort=True):
        row = {"method": method}
        for _, r in g.iterrows():
            row[r["category"]] = (f"{r['accuracy']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}] (n={r['n']})"
                                  if r["accuracy"] == r["accuracy"] else f"– (n={r['n']})")
        rows.append(row)
    cost_cols = [c for c in ("n", "accuracy", "f1", "bleu1", "evidence_recall", "query_tokens", "construction_tokens",
                             "fc_token_ratio", "errors", "flagged") if c in summary.columns]
    heads = summary[summary["category"] == head]
    cost = [{"method": r["method"], **{c: _fmt(r[c]) for c in cost_cols}} for _, r in heads.iterrows()]
    return (f"<h4>{esc(metric)} by category</h4>{table_html(rows, ['method'] + cats)}"
            f"<h4>{esc(head)}: quality and cost per question</h4>{table_html(cost, ['method'] + cost_cols)}")


def _fmt(v) -> str:
    if isinstance(v, float):
        return "–" if v != v else (f"{v:.3f}" if abs(v) < 10 else f"{v:.0f}")
    return str(v)


def cost_accuracy_figure(frame: pd.DataFrame, *, x: str = "query_tokens", metric: str = "judge", title: str = ""):
    """One scatter trace per method (with CI error bars); Full-Context as a dashed reference."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for _, r in frame.iterrows():
        ref = r["method"] == REFERENCE_METHOD
        hover = (f"{esc(r['label'])}<br>accuracy {r['accuracy']:.3f} "
                 f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}] · n={r['n']}<br>"
                 f"mean {esc(x)}: {r['tokens']:.0f}<br>params: {esc(str(r['params'])[:300])}")
        fig.add_trace(go.Scatter(
            x=[r["tokens"]], y=[r["accuracy"]], mode="markers+text", name=esc(r["label"]), text=[esc(r["label"])],
            textposition="top center", hovertext=[hover], hoverinfo="text",
            marker=dict(size=16 if ref else 12, symbol="star" if ref else "circle"),
            error_y=dict(type="data", symmetric=False, array=[r["ci_high"] - r["accuracy"]],
                         arrayminus=[r["accuracy"] - r["ci_low"]])))
        if ref and r["accuracy"] == r["accuracy"]:
            fig.add_hline(y=r["accuracy"], line_dash="dash", line_color="gray",
                          annotation_text="Full-Context", annotation_position="bottom right")
    fig.update_layout(title=title or f"{metric} vs mean {x} per question", xaxis_title=f"mean {x} per question",
                      yaxis_title=f"{metric} (95% bootstrap CI)", height=420, margin=dict(l=50, r=20, t=50, b=50))
    return fig


class CostAccuracyChart(DisplaysWidget):
    """Scatter of accuracy vs tokens with a category dropdown.

    State: ``table`` (per method x category summary), ``frame`` (the plotted points), ``figure``,
    ``category``, ``source`` (which code aggregated)."""

    def __init__(self, results_rows_or_frame, *, x: str = "query_tokens", metric: str = "judge",
                 n_boot: int = 1000, seed: int = 0):
        if x not in X_CHOICES:
            raise ValueError(f"x must be one of {X_CHOICES}, got {x!r}")
        self.results = results_frame(results_rows_or_frame)
        self.x, self.metric = x, metric
        self.table, self.source = summary_frame(self.results, metric=metric, n_boot=n_boot, seed=seed)
        self.headline = headline(self.table)
        cats = [] if self.table.empty else [c for c in dict.fromkeys(self.table["category"]) if c != self.headline]
        self.categories = [ALL] + cats
        self.category = ALL
        self._build_widgets()
        self.set_category(ALL)

    def set_category(self, category: str) -> "CostAccuracyChart":
        if category not in self.categories:
            raise ValueError(f"unknown category {category!r}; choose from {self.categories}")
        self.category = category
        self.frame = points_frame(self.table, x=self.x, category=category)
        shown = f"headline: {self.headline}" if category == ALL else category
        self.figure = cost_accuracy_figure(self.frame, x=self.x, metric=self.metric,
                                           title=f"{self.metric} vs mean {self.x} per question ({shown})")
        if self.dropdown.value != category:
            self.dropdown.value = category
        self.note.value = f"<small>{len(self.results)} result rows · aggregated by {esc(self.source)}</small>"
        show_figure(self.plot, self.figure)
        return self

    def _build_widgets(self) -> None:
        import ipywidgets as W

        self.dropdown = W.Dropdown(options=self.categories, value="all", description="category")
        self.dropdown.observe(lambda ch: self.set_category(ch["new"]), names="value")
        self.plot = W.Output()
        self.note = W.HTML()
        self.widget = W.VBox([self.dropdown, self.plot, self.note])

    def __repr__(self) -> str:
        return f"CostAccuracyChart({len(self.frame)} methods, x={self.x!r}, category={self.category!r})"
