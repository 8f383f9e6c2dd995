"""``CostAccuracyChart``: accuracy against mean tokens per question, per method (and per category).

Input: the harness's result rows (dicts or a DataFrame) with ``method``, ``params_hash``,
``category``/``category_name``, ``scores`` ({judge, f1, bleu1, ...}) or a ``judge`` label,
``query_tokens`` and ``construction_tokens``. Error bars are percentile-bootstrap 95% intervals
of the mean (seeded). When ``workbench.eval.report`` is installed its ``results_frame`` and
``summary_table`` do the aggregation (so the chart agrees with the report tables: the headline
``overall`` leaves LoCoMo category 5 out, intervals are clustered by conversation, n < 5 gives no
interval, and the judge's audited false-accept rate stands beside its accuracy); otherwise the local
computation below (``source`` says which).

The metric defaults to the report's choice: the judge only when its audit says it is reliable
(false-accept rate <= 20 %), else F1, with a banner saying why (``banner``). Audits come from
``audits`` (``{judge key: audit}``), by default from the judge-audit cache. Each point's hover shows
its paired difference to Full-Context on the same questions (paired bootstrap).
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


def resolve_audits(rows_or_frame, audits="auto") -> dict:
    """``{judge key: audit}``: given, or (``"auto"``) looked up in the judge-audit cache for the
    judges of these rows; {} when the evaluation package or the cache is absent."""
    if isinstance(audits, dict):
        return audits
    if audits != "auto" or _report() is None:
        return {}
    from workbench.eval.audit import audits_for_rows

    try:
        return audits_for_rows(_rows(rows_or_frame))
    except ValueError:  # an unreadable cache: no audits, so the judge counts as unaudited
        return {}


def summary_frame(df: pd.DataFrame, *, metric: str | None = None, n_boot: int = 1000, seed: int = 0,
                  audits: dict | None = None):
    """(per method x category table, source). ``report.summary_table`` when present (its headline
    row ``overall`` leaves LoCoMo category 5 out); else ``local_summary`` (headline ``all``)."""
    report = _report()
    if report is None:
        why = "workbench.eval.report absent"
    elif df.empty:
        why = "no rows"
    else:
        try:
            table = report.summary_table(df, metric=metric, n_boot=n_boot, seed=seed, audits=audits)
            return table, "workbench.eval.report"
        except (KeyError, ValueError) as exc:  # rows not in the harness format: say so, use the local code
            why = f"report.summary_table could not read these rows: {type(exc).__name__}: {exc}"
    return local_summary(df, metric=metric or "f1", n_boot=n_boot, seed=seed), f"local bootstrap ({why})"


def table_metric(table: pd.DataFrame, default: str = "f1") -> str:
    """The metric a summary table was computed with."""
    return str(table["metric"].iloc[0]) if "metric" in table.columns and len(table) else default


def judge_banner_html(table: pd.DataFrame) -> str:
    """A visible warning when the judge column cannot be trusted (or a one-line audit note when it can)."""
    status = table.attrs.get("judge_status") if hasattr(table, "attrs") else None
    if not status or not status.get("judged"):
        return ""
    notes = "; ".join(status.get("notes") or [])
    if status.get("reliable"):
        return f"<p class='wb-muted'><small>{esc(notes)}</small></p>"
    metric = table_metric(table)
    return ("<div class='wb-banner wb-forced' role='alert' style='padding:6px;border:2px solid #b00;"
            f"background:#fff3f3'><b>Judge accuracy is unreliable.</b> {esc(notes)}. "
            f"Headline metric: <b>{esc(metric)}</b>; the judge's accuracy is shown for reference only.</div>")


def paired_frame(df: pd.DataFrame, metric: str, *, audits=None, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Paired differences to Full-Context per method and category (empty without the report module)."""
    report = _report()
    if report is None or df.empty or not hasattr(report, "paired_differences"):
        return pd.DataFrame()
    try:
        return report.paired_differences(df, metric=metric, audits=audits, n_boot=n_boot, seed=seed, categories=True)
    except (KeyError, ValueError):
        return pd.DataFrame()


def headline(table: pd.DataFrame) -> str:
    return "overall" if "overall" in set(table.get("category", ())) else ALL


def points_frame(table: pd.DataFrame, *, x: str = "query_tokens", category: str = ALL,
                 paired: pd.DataFrame | None = None) -> pd.DataFrame:
    """Chart points from a summary table: one row per method for ``category`` (``all`` = headline),
    with the judge's accuracy and audit and (given ``paired``) the difference to Full-Context."""
    cols = ["label", "method", "category", "n", "accuracy", "ci_low", "ci_high", "tokens", "params",
            "judge_accuracy", "judge_false_accept", "delta_fc", "delta_low", "delta_high", "delta_n"]
    if table.empty:
        return pd.DataFrame(columns=cols)
    cat = headline(table) if category in (None, "", ALL) else category
    t = table[table["category"] == cat].copy()
    for c in ("judge_accuracy", "judge_false_accept"):
        if c not in t.columns:
            t[c] = np.nan
    t["delta_fc"], t["delta_low"], t["delta_high"], t["delta_n"] = np.nan, np.nan, np.nan, 0
    if paired is not None and not paired.empty:
        p = paired[paired["category"] == cat].set_index(["dataset", "method"])
        for i, r in t.iterrows():
            key = (r.get("dataset", ""), r["method"])
            if key in p.index:
                d = p.loc[key]
                t.loc[i, ["delta_fc", "delta_low", "delta_high", "delta_n"]] = [d["diff"], d["ci_low"], d["ci_high"],
                                                                                d["n"]]
    several = "dataset" in t.columns and t["dataset"].nunique() > 1
    t["label"] = t["method"] + (" (" + t["dataset"].astype(str) + ")" if several else "")
    t["method"] = t["method"].str.split("[", regex=False).str[0]
    t["tokens"] = pd.to_numeric(t[x], errors="coerce")
    return t[cols].reset_index(drop=True)


def cost_accuracy_frame(rows_or_frame, *, x: str = "query_tokens", metric: str | None = None, category: str = ALL,
                        n_boot: int = 1000, seed: int = 0, audits="auto"):
    """(points, source): accuracy with CI and mean ``x`` tokens per question, one row per method."""
    df = results_frame(rows_or_frame)
    audits = resolve_audits(rows_or_frame, audits)
    table, source = summary_frame(df, metric=metric, n_boot=n_boot, seed=seed, audits=audits)
    paired = paired_frame(df, table_metric(table), audits=audits, n_boot=n_boot, seed=seed)
    return points_frame(table, x=x, category=category, paired=paired), source


def estimate_cell(r) -> str:
    """``mean [lo, hi] (n=…)``; below 5 questions the count only (``2/3``), never an interval."""
    n = int(r["n"]) if r["n"] == r["n"] else 0
    if r["accuracy"] != r["accuracy"] or not n:
        return f"– (n={n})"
    lo, hi = r.get("ci_low", np.nan), r.get("ci_high", np.nan)
    if n < 5 or lo != lo:
        binary = str(r.get("metric", "")) in ("judge", "exact_match", "adversarial") or r["category"] == "adversarial"
        return f"{int(round(r['accuracy'] * n))}/{n}" if binary else f"{r['accuracy']:.3f} (n={n})"
    return f"{r['accuracy']:.3f} [{lo:.3f}, {hi:.3f}] (n={n})"


def summary_table_html(summary: pd.DataFrame, metric: str, head: str) -> str:
    """Method x category cells ``mean [lo, hi] (n)`` (counts only below n = 5), then the headline
    row's judge audit, quality and costs per method."""
    cats = [head] + [c for c in dict.fromkeys(summary["category"]) if c != head]
    rows = []
    for method, g in summary.groupby("method", sort=True):
        row = {"method": method}
        for _, r in g.iterrows():
            row[r["category"]] = estimate_cell(r)
        rows.append(row)
    cost_cols = [c for c in ("n", "accuracy", "judge_accuracy", "judge_false_accept", "judge_errors", "f1", "bleu1",
                             "evidence_recall", "query_tokens", "construction_tokens", "conversations",
                             "fc_token_ratio", "errors", "judge_f1_disagree", "flagged") if c in summary.columns]
    heads = summary[summary["category"] == head]
    cost = [{"method": r["method"], **{c: _fmt(r[c]) for c in cost_cols}} for _, r in heads.iterrows()]
    return (f"<h4>{esc(metric)} by category</h4>{table_html(rows, ['method'] + cats)}"
            f"<h4>{esc(head)}: quality and cost per question</h4>{table_html(cost, ['method'] + cost_cols)}")


def _fmt(v) -> str:
    if isinstance(v, float):
        return "–" if v != v else (f"{v:.3f}" if abs(v) < 10 else f"{v:.0f}")
    return str(v)


def _hover(r, x: str, metric: str) -> str:
    ci = (f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]" if r["ci_low"] == r["ci_low"] else "(no CI: n < 5)")
    judge = ""
    if metric != "judge" and r.get("judge_accuracy", np.nan) == r.get("judge_accuracy", np.nan):
        fa = r.get("judge_false_accept", np.nan)
        judge = (f"<br>judge accuracy {r['judge_accuracy']:.3f} (false accepts "
                 f"{'unknown' if fa != fa else f'{fa:.0%}'}: unreliable)")
    delta = ""
    if r.get("delta_n", 0) and r["method"] != REFERENCE_METHOD:
        dci = (f" [{r['delta_low']:+.3f}, {r['delta_high']:+.3f}]" if r["delta_low"] == r["delta_low"] else
               " (no CI: n < 5)")
        delta = f"<br>vs Full-Context (paired, n={int(r['delta_n'])}): {r['delta_fc']:+.3f}{dci}"
    return (f"{esc(r['label'])}<br>{esc(metric)} {r['accuracy']:.3f} {ci} · n={r['n']}{judge}{delta}<br>"
            f"mean {esc(x)}: {r['tokens']:.0f}<br>params: {esc(str(r['params'])[:300])}")


def _per(x: str) -> str:
    return "conversation" if x == "construction_tokens" else "question"


def cost_accuracy_figure(frame: pd.DataFrame, *, x: str = "query_tokens", metric: str = "judge", title: str = ""):
    """One scatter trace per method (with CI error bars); Full-Context as a dashed reference."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for _, r in frame.iterrows():
        ref = r["method"] == REFERENCE_METHOD
        hover = _hover(r, x, metric)
        fig.add_trace(go.Scatter(
            x=[r["tokens"]], y=[r["accuracy"]], mode="markers+text", name=esc(r["label"]), text=[esc(r["label"])],
            textposition="top center", hovertext=[hover], hoverinfo="text",
            marker=dict(size=16 if ref else 12, symbol="star" if ref else "circle"),
            error_y=dict(type="data", symmetric=False, array=[r["ci_high"] - r["accuracy"]],
                         arrayminus=[r["accuracy"] - r["ci_low"]])))
        if ref and r["accuracy"] == r["accuracy"]:
            fig.add_hline(y=r["accuracy"], line_dash="dash", line_color="gray",
                          annotation_text="Full-Context", annotation_position="bottom right")
    fig.update_layout(title=title or f"{metric} vs mean {x} per {_per(x)}", xaxis_title=f"mean {x} per {_per(x)}",
                      yaxis_title=f"{metric} (95% bootstrap CI, clustered by conversation)", height=420,
                      margin=dict(l=50, r=20, t=50, b=50))
    return fig


class CostAccuracyChart(DisplaysWidget):
    """Scatter of accuracy vs tokens with a category dropdown.

    State: ``table`` (per method x category summary), ``frame`` (the plotted points), ``figure``,
    ``category``, ``source`` (which code aggregated), ``metric`` (as chosen: the judge only when its
    audit is reliable, unless given), ``banner`` (HTML warning when the judge is not trusted),
    ``paired`` (differences to Full-Context)."""

    def __init__(self, results_rows_or_frame, *, x: str = "query_tokens", metric: str | None = None,
                 n_boot: int = 1000, seed: int = 0, audits="auto"):
        if x not in X_CHOICES:
            raise ValueError(f"x must be one of {X_CHOICES}, got {x!r}")
        self.results = results_frame(results_rows_or_frame)
        self.audits = resolve_audits(results_rows_or_frame, audits)
        self.x = x
        self.table, self.source = summary_frame(self.results, metric=metric, n_boot=n_boot, seed=seed,
                                                audits=self.audits)
        self.metric = table_metric(self.table, metric or "f1")
        self.banner = judge_banner_html(self.table)
        self.paired = paired_frame(self.results, self.metric, audits=self.audits, n_boot=n_boot, seed=seed)
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
        self.frame = points_frame(self.table, x=self.x, category=category, paired=self.paired)
        shown = f"headline: {self.headline}" if category == ALL else category
        self.figure = cost_accuracy_figure(self.frame, x=self.x, metric=self.metric,
                                           title=f"{self.metric} vs mean {self.x} per {_per(self.x)} ({shown})")
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
        self.widget = W.VBox([W.HTML(self.banner), self.dropdown, self.plot, self.note])

    def __repr__(self) -> str:
        return f"CostAccuracyChart({len(self.frame)} methods, x={self.x!r}, category={self.category!r})"
