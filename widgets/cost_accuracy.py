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
import math
from typing import Sequence

import numpy as np
import pandas as pd

from workbench.methods import display_name

from .html import DisplaysWidget, box, esc, show_figure, table_html


def _reference() -> str | None:
    from workbench.eval.report import reference_method  # the registered method declaring ``reference = True``

    return reference_method()


REFERENCE_METHOD = _reference()


REFERENCE_TITLE = display_name(str(REFERENCE_METHOD))  # how prose names the reference method
X_CHOICES = ("query_tokens", "construction_tokens", "amortised_tokens")
#: each cost axis in words, for the picker, the chart's title and its axis (usability review: "query_tokens")
X_WORDS = {"query_tokens": "query tokens", "construction_tokens": "construction tokens",
           "amortised_tokens": "amortised tokens"}
#: what a cost axis that is not self-explaining counts, under the chart's title
X_NOTES = {"amortised_tokens": "amortised tokens: query tokens + the conversation's construction tokens ÷ the "
                               "questions asked of it"}
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
            "construction_tokens", "amortised_tokens", "params"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    per_q = "construction_tokens_per_question" if "construction_tokens_per_question" in df.columns \
        else "construction_tokens"
    df = df.assign(_acc=metric_values(df, metric).values, _label=_labels(df).values)
    # as report._amortised_tokens: a conversation's construction total shared over the rows answered there; a
    # per-question figure only where the rows carry no per-conversation total to share
    if "construction_tokens" in df.columns and "conv_id" in df.columns:
        built = pd.to_numeric(df["construction_tokens"], errors="coerce").fillna(0.0) / df.groupby(
            ["_label", "conv_id"], sort=False)["_label"].transform("size")
    elif per_q in df.columns:
        built = pd.to_numeric(df[per_q], errors="coerce").fillna(0.0)
    else:
        built = 0.0
    df = df.assign(_amortised=pd.to_numeric(df.get("query_tokens"), errors="coerce") + built)
    out = []
    for label, mg in df.groupby("_label", sort=True):
        for cat, g in [(ALL, mg)] + [(str(c), gc) for c, gc in mg.groupby("category_name", sort=True)]:
            lo, hi = bootstrap_ci(g["_acc"].tolist(), n_boot=n_boot, seed=seed)
            out.append({"dataset": g["dataset"].iloc[0], "method": label, "params_hash": g["params_hash"].iloc[0],
                        "category": cat, "n": int(g["_acc"].notna().sum()), "accuracy": float(g["_acc"].mean()),
                        "ci_low": lo, "ci_high": hi, "query_tokens": _mean(g, "query_tokens"),
                        "construction_tokens": _mean(g, per_q), "amortised_tokens": _mean(g, "_amortised"),
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


def run_audits(manifest: dict, rows: list[dict]) -> dict:
    """Judge audits for a run: those recorded in its manifest (by judge key), then the audit cache."""
    found = {}
    for ev in (manifest.get("evaluations") or []) if isinstance(manifest, dict) else []:
        judge = ev.get("judge") if isinstance(ev, dict) else None
        if isinstance(judge, dict) and isinstance(judge.get("audit"), dict) and judge.get("key"):
            found.setdefault(judge["key"], judge["audit"])
    judge = (manifest.get("judge") if isinstance(manifest, dict) else None) or {}
    if isinstance(judge, dict) and isinstance(judge.get("audit"), dict) and judge.get("key"):
        found.setdefault(judge["key"], judge["audit"])
    merged = {**resolve_audits(rows), **found}
    if _report() is None:
        return merged
    from workbench.eval.audit import prefer_real_answers

    return prefer_real_answers(merged, rows)


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
            f"Headline metric: <b>{esc(metric)}</b>{esc(_source_note(metric))}; the judge's accuracy is shown for "
            "reference only.</div>")


def _source_note(metric: str) -> str:
    """What the headline verdict source is and how far it agrees with careful readers (labelled answers)."""
    if metric != "checker" or _report() is None:
        return ""
    from workbench.eval.label_audit import checker_audit, verdict_note

    return " (" + verdict_note("the deterministic checker", checker_audit()) + ")"


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
    # each point by its method's title (a variant's label in words: "AMA (paper judge)")
    t["label"] = t["method"].map(display_name) + (" · " + t["dataset"].astype(str) if several else "")
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
        # a right/wrong score per question: a count reads truer than a mean of two (review: "1.000 (n=1)" beside "1/2")
        binary = str(r.get("metric", "")) in ("judge", "checker", "exact_match", "adversarial") or \
            r["category"] == "adversarial"
        return f"{int(round(r['accuracy'] * n))}/{n}" if binary else f"{r['accuracy']:.3f} (n={n})"
    return f"{r['accuracy']:.3f} [{lo:.3f}, {hi:.3f}] (n={n})"


def summary_table_html(summary: pd.DataFrame, metric: str, head: str, *, links: bool = False) -> str:
    """Method x category cells ``mean [lo, hi] (n)`` (counts only below n = 5), then the headline
    row's quality and cost per method, one narrow table: related figures share a cell and every
    accuracy carries its own n, so the table fits a laptop screen. ``links`` (the app): each method's
    name links to its How it works page."""
    from widgets.html import method_title_html

    def name(method):  # its title, the run's name beside it in grey (usability review: code identifiers)
        return method_title_html(method, link=links)

    cats = [head] + [c for c in dict.fromkeys(summary["category"]) if c != head]
    rows = []
    for method, g in summary.groupby("method", sort=True):
        row = {"method": name(method)}
        for _, r in g.iterrows():
            row[r["category"]] = estimate_cell(r)
        rows.append(row)
    heads = summary[summary["category"] == head]
    quality = [quality_cells(r, metric) for _, r in heads.iterrows()]
    cols = [c for c in QUALITY_COLUMNS if any(q.get(c) for q in quality)]
    cols = ["method"] + [c.format(metric=metric) for c in cols[1:]]
    quality = [{c.format(metric=metric): v for c, v in q.items()} for q in quality]
    for q, (_, r) in zip(quality, heads.iterrows()):  # the name from the summary, escaped once (or a link)
        q["method"] = name(r["method"])
    return (f"<h4>{esc(metric)} by category</h4>{table_html(rows, ['method'] + cats, raw=['method'])}"
            f"<h4>{esc(head)}: quality and cost</h4>{table_html(quality, cols, raw=cols)}"
            f"<p class='wb-muted'><small>{QUALITY_NOTE}</small></p>")


QUALITY_COLUMNS = ("method", "{metric} (n)", "judge (n)", "F1 · BLEU-1", "evidence recall · turns shown",
                   "judge vs F1", "query tokens / question", "construction tokens / conversation", "failures")
QUALITY_NOTE = ("judge (n): the judge's accuracy and its audited false-accept rate (on wrong answers) · judge vs F1: "
                "questions where the judge says CORRECT with F1 = 0 or WRONG with F1 = 1 · query tokens: mean per "
                f"question, with the ratio to {REFERENCE_TITLE} on the same questions · construction tokens: LLM "
                "tokens spent building the memory, mean per conversation built (0: the method builds without an LLM) · "
                "failures: questions whose method raised, and questions with any failed call or fallback")


def _val(r, col: str) -> float:
    v = r.get(col, np.nan) if hasattr(r, "get") else np.nan
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def quality_cells(r, metric: str) -> dict:
    """One headline summary row as escaped HTML cells (see ``QUALITY_COLUMNS``); a cell is empty
    when the summary lacks every figure it shows (the local fallback has fewer columns)."""
    n = int(_val(r, "n")) if _val(r, "n") == _val(r, "n") else 0
    acc = _val(r, "accuracy")
    out = {"method": esc(r["method"]), "{metric} (n)": "–" if acc != acc else f"{acc:.3f} (n={n})"}
    ja, jn, fa, jerr = (_val(r, c) for c in ("judge_accuracy", "judge_n", "judge_false_accept", "judge_errors"))
    judge = []
    if ja == ja:
        judge.append(f"{ja:.3f} (n={int(jn) if jn == jn else n})")
    if jerr == jerr and jerr > 0:
        judge.append(f"<span class='wb-forced'>{int(jerr)} judge failures</span>")
    if judge and "judge_false_accept" in r:
        judge.append(f"<small>false accepts {'not audited' if fa != fa else f'{fa:.0%}'}</small>")
    out["judge (n)"] = "<br>".join(judge)
    f1, bleu = _val(r, "f1"), _val(r, "bleu1")
    out["F1 · BLEU-1"] = "" if f1 != f1 and bleu != bleu else f"{_fmt(f1)} · {_fmt(bleu)}"
    rec, shown = _val(r, "evidence_recall"), _val(r, "turns_shown")
    out["evidence recall · turns shown"] = ("" if rec != rec and shown != shown else
                                            f"{_fmt(rec)} · {'–' if shown != shown else f'{shown:.1f}'}")
    dis = _val(r, "judge_f1_disagree")
    out["judge vs F1"] = "" if dis != dis else (f"<b>{int(dis)} of {n}</b>" if dis > 0 else f"0 of {n}")
    qt, ratio = _val(r, "query_tokens"), _val(r, "fc_token_ratio")
    out["query tokens / question"] = ("" if qt != qt else f"{qt:,.0f}" + (f" <small>(×{ratio:.2f} {REFERENCE_TITLE})"
                                                                          "</small>" if ratio == ratio else ""))
    ct, convs = _val(r, "construction_tokens"), _val(r, "conversations")
    built = f" <small>(n={int(convs)} conv.)</small>" if convs == convs else ""
    out["construction tokens / conversation"] = ("" if ct != ct else
                                                 ("0 <small>(no LLM to build)</small>" if ct == 0 else f"{ct:,.0f}")
                                                 + built)
    err, flagged = _val(r, "errors"), _val(r, "flagged")
    fails = ([f"{int(err)} raised"] if err == err else []) + ([f"{int(flagged)} flagged"] if flagged == flagged else [])
    out["failures"] = " · ".join(f"<b>{f}</b>" if not f.startswith("0 ") else f for f in fails)
    return out


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
        delta = f"<br>vs {REFERENCE_TITLE} (paired, n={int(r['delta_n'])}): {r['delta_fc']:+.3f}{dci}"
    return (f"{esc(r['label'])}<br>{esc(metric)} {r['accuracy']:.3f} {ci} · n={r['n']}{judge}{delta}<br>"
            f"mean {esc(X_WORDS.get(x, x))}: {r['tokens']:,.0f}<br>{params_hover(r['params'])}")


def params_hover(params, width: int = 60, lines: int = 4) -> str:
    """A method's parameters for a hover box: ``k=v`` pairs wrapped into a few short lines (a JSON band with
    ``&quot;`` escapes pushed the figures off screen). Escaped for Plotly's hover HTML, quotes left as they are
    (Plotly shows ``&quot;`` literally)."""
    import html
    import textwrap

    try:
        value = json.loads(params) if isinstance(params, str) else params
    except ValueError:
        value = params
    text = (", ".join(f"{k}={v}" for k, v in value.items()) if isinstance(value, dict) else str(value or ""))
    if not text:
        return "params: –"
    wrapped = textwrap.wrap(text, width) or [""]
    shown = wrapped[:lines] + (["…"] if len(wrapped) > lines else [])
    return "params: " + "<br>".join(html.escape(line, quote=False) for line in shown)


def _per(x: str) -> str:
    return "conversation" if x == "construction_tokens" else "question"


#: text positions tried for a point's label, in order of preference
LABEL_POSITIONS = ("top center", "bottom center", "middle right", "middle left", "top right", "top left",
                   "bottom right", "bottom left")


def label_positions(xs: Sequence[float], ys: Sequence[float], labels: Sequence[str], *, log_x: bool = False,
                    width: float = 760.0, height: float = 300.0,
                    y_bounds: tuple[float, float] | None = None, hlines: Sequence[float] = (),
                    bars: Sequence[tuple[float, float]] | None = None) -> list[str]:
    """A plotly ``textposition`` per point such that no label covers another label or a marker,
    where the plot's size allows: greedy, in order of x, each label takes the first position in
    ``LABEL_POSITIONS`` that overlaps nothing placed so far and stays inside the plot area (else the least
    overlapping one).
    Label boxes are estimated in pixels of a ``width`` x ``height`` plot area (7 px per character);
    ``y_bounds`` is the y range the axis will span (the error bars reach beyond the points, which
    squeezes the points together on screen); ``hlines``: y values of horizontal lines drawn across the plot
    (the Full-Context level), which a label should not sit on either; ``bars``: each point's error bar
    (low, high), which the other points' labels keep off (its own label may sit on it)."""
    xv = [np.log10(a) if (log_x and a and a > 0) else (a if a == a else 0.0) for a in xs]
    x_lo, x_hi = (min(xv), max(xv)) if xv else (0.0, 1.0)
    px = [0.05 * width + 0.9 * width * (a - x_lo) / ((x_hi - x_lo) or 1.0) for a in xv]
    yv = [a if a == a else 0.0 for a in ys]
    y_lo, y_hi = (min(yv), max(yv)) if yv else (0.0, 1.0)
    if y_bounds is not None and all(b == b for b in y_bounds):
        y_lo, y_hi = min(y_lo, y_bounds[0]), max(y_hi, y_bounds[1])

    def to_y(v: float) -> float:  # data y -> pixels (markers, lines and error bars on one scale)
        return 0.05 * height + 0.9 * height * (v - y_lo) / ((y_hi - y_lo) or 1.0)

    py = [to_y(a) for a in yv]
    boxes = [(x - 7, y - 7, x + 7, y + 7) for x, y in zip(px, py)]  # the markers
    boxes += [(0.0, to_y(float(h)) - 2, width, to_y(float(h)) + 2) for h in hlines]  # the lines across the plot
    bar_boxes = {i: (px[i] - 3, to_y(min(lo, hi)), px[i] + 3, to_y(max(lo, hi)))
                 for i, (lo, hi) in enumerate(list(bars or ())[:len(px)]) if lo == lo and hi == hi}

    def box_at(i: int, pos: str):
        if not str(labels[i]):  # a point drawn without a label (it lies under another's) blocks nothing
            return px[i], py[i], px[i], py[i]
        w, h = 7.0 * len(str(labels[i])) + 4, 14.0
        vert, horiz = pos.split()
        cx = px[i] + {"center": 0.0, "right": 9 + w / 2, "left": -9 - w / 2}[horiz]
        cy = py[i] + {"top": 10 + h / 2, "bottom": -10 - h / 2, "middle": 0.0}[vert]
        return cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2

    def overlap(a, b) -> float:
        return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))

    def clipped(b) -> float:  # the part of a label box outside the plot area (cut off on screen), past a
        # tolerance of half a character's width: the box estimate is rough, a sliver off the edge still reads
        return max(0.0, (b[2] - b[0]) * (b[3] - b[1]) - overlap(b, (0.0, 0.0, width, height)) - 50.0)

    out = [LABEL_POSITIONS[0]] * len(px)
    placed = []
    for i in sorted(range(len(px)), key=lambda j: (px[j], py[j])):
        others = ([b for j, b in enumerate(boxes) if j != i] + placed  # (j >= len(px): a line, never i)
                  + [b for j, b in bar_boxes.items() if j != i])
        best = min(LABEL_POSITIONS, key=lambda p: (sum(overlap(box_at(i, p), b) for b in others)
                                                   + 2 * clipped(box_at(i, p)), LABEL_POSITIONS.index(p)))
        out[i] = best
        placed.append(box_at(i, best))
    return out


def _bars(frame: pd.DataFrame) -> list[tuple[float, float]] | None:
    """Each row's error bar (ci_low, ci_high); NaN where a row has none; None without the columns."""
    if not {"ci_low", "ci_high"} <= set(frame.columns):
        return None
    lows = pd.to_numeric(frame["ci_low"], errors="coerce").tolist()
    highs = pd.to_numeric(frame["ci_high"], errors="coerce").tolist()
    return list(zip(lows, highs))


def log_ticks(values: Sequence[float]) -> tuple[list[float], list[str]]:
    """Tick values 1-2-5 per decade covering the positive ``values``, labelled in full ("500",
    "2k", "1.5M" style) rather than plotly's bare mantissas on a log axis."""
    v = [float(a) for a in values if a == a and a > 0]
    if not v:
        return [], []
    lo, hi = min(v) / 1.5, max(v) * 1.5
    ticks = [m * 10 ** k for k in range(int(np.floor(np.log10(lo))), int(np.ceil(np.log10(hi))) + 1)
             for m in (1, 2, 5) if lo <= m * 10 ** k <= hi]
    if len(ticks) < 2:  # a narrow range: the data's own ends
        ticks = sorted({round(min(v)), round(max(v))})

    def text(t: float) -> str:
        for div, suffix in ((1e6, "M"), (1e3, "k")):
            if t >= div:
                return f"{t / div:g}{suffix}"
        return f"{t:g}"

    return ticks, [text(t) for t in ticks]


def cost_accuracy_figure(frame: pd.DataFrame, *, x: str = "query_tokens", metric: str = "judge", title: str = ""):
    """One scatter trace per method (with CI error bars); Full-Context as a dashed reference line.
    Tokens are on a log axis (methods differ by orders of magnitude); a method with 0 tokens
    cannot sit on it and is listed in the legend and the title instead. Labels are placed so they
    do not overlap (``label_positions``)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    tokens = pd.to_numeric(frame["tokens"], errors="coerce") if len(frame) else pd.Series(dtype=float)
    positive = tokens > 0
    log_x = bool(positive.any())
    drawn = frame[positive] if log_x else frame
    bounds = None
    if {"ci_low", "ci_high"} <= set(drawn.columns) and len(drawn):
        lows = pd.to_numeric(drawn["ci_low"], errors="coerce").dropna()
        highs = pd.to_numeric(drawn["ci_high"], errors="coerce").dropna()
        if len(lows) and len(highs):
            bounds = (float(lows.min()), float(highs.max()))
    ref_level = [float(a) for a in pd.to_numeric(frame.loc[frame["method"] == REFERENCE_METHOD, "accuracy"],
                                                 errors="coerce").dropna()] if len(frame) else []
    zero = []
    # points drawn on one spot (AMA and its paper-judge variant give the same answers): one label names them all,
    # and the hidden ones say whose point they lie under (review: a dot hidden with no word)
    spot: dict[tuple, list] = {}
    for i, r in drawn.iterrows():  # one spot: the same accuracy, tokens within about 2 % (a marker's width)
        where = (round(math.log10(r["tokens"]), 2) if log_x and r["tokens"] > 0 else r["tokens"], r["accuracy"])
        spot.setdefault(where, []).append(i)
    under = {j: frame.loc[ids[0], "label"] for ids in spot.values() for j in ids[1:]}
    together = {ids[0]: [frame.loc[j, "label"] for j in ids[1:]] for ids in spot.values() if len(ids) > 1}
    shown = {i: "" if i in under else " = ".join([str(r["label"]), *map(str, together.get(i, ()))]) + _small_n(r)
             for i, r in frame.iterrows()}
    # placed by the texts as drawn: a merged label ("AMA = AMA (paper judge)") is longer, a hidden one takes no room
    positions = dict(zip(drawn.index, label_positions(drawn["tokens"].tolist(), drawn["accuracy"].tolist(),
                                                      [shown[i] for i in drawn.index], log_x=log_x, y_bounds=bounds,
                                                      hlines=ref_level, bars=_bars(drawn))))
    for i, r in frame.iterrows():
        ref = r["method"] == REFERENCE_METHOD
        hover = _hover(r, x, metric)
        off_axis = log_x and not positive.loc[i]
        if off_axis:
            zero.append(str(r["label"]))
        label = esc(shown[i])
        fig.add_trace(go.Scatter(
            x=[None if off_axis else r["tokens"]], y=[None if off_axis else r["accuracy"]], mode="markers+text",
            name=esc(r["label"]) + (" (0 tokens: not on the log axis)" if off_axis else "")
            + (f" (under {esc(under[i])})" if i in under else ""),
            text=[label],
            textposition=positions.get(i, LABEL_POSITIONS[0]), hovertext=[hover], hoverinfo="text",
            marker=dict(size=16 if ref else 12, symbol="star" if ref else "circle"),
            error_y=dict(type="data", symmetric=False, array=[r["ci_high"] - r["accuracy"]],
                         arrayminus=[r["accuracy"] - r["ci_low"]])))
        if ref and r["accuracy"] == r["accuracy"]:
            fig.add_hline(y=r["accuracy"], line_dash="dash", line_color="gray")
    ticks, ticktext = log_ticks(drawn["tokens"].tolist()) if log_x else ([], [])
    words = X_WORDS.get(x, x)
    head = title or f"{metric} vs mean {words} per {_per(x)}"
    has_ref = (frame["method"] == REFERENCE_METHOD).any()
    notes = ([X_NOTES[x]] if x in X_NOTES else []) + \
        ([f"dashed line: the {REFERENCE_TITLE} level"] if has_ref else []) + \
            ([f"0 tokens (not drawn): {', '.join(zero)}"] if zero else [])
    fig.update_layout(title=esc(head) + (f"<br><sup>{esc(' · '.join(notes))}</sup>" if notes else ""),
                      xaxis=dict(title=f"mean {words} per {_per(x)}" + (" (log scale)" if log_x else ""),
                                 type="log" if log_x else "linear",
                                 **(dict(tickvals=ticks, ticktext=ticktext) if ticks else {})),
                      yaxis_title=ci_axis_title(metric, drawn), height=440,
                      margin=dict(l=50, r=20, t=70, b=50))
    return fig


def _small_n(r) -> str:
    """`` (n=3)`` beside a point drawn without an interval (too few questions for one), so a bare dot never
    passes for a measured accuracy of the same weight as its neighbours' (review R2b)."""
    n = r.get("n") if hasattr(r, "get") else None
    no_ci = not (r.get("ci_low") == r.get("ci_low")) if hasattr(r, "get") else False  # NaN: no interval
    return f" (n={int(n)})" if no_ci and isinstance(n, (int, float)) and n == n else ""


def points_table_html(frame: pd.DataFrame, *, x: str = "query_tokens", metric: str = "judge") -> str:
    """The chart's points as an escaped table (what the hover boxes say): per method, the estimate with its
    interval and n, the mean tokens, the paired difference to the reference and, when the chart's metric is
    not the judge, the judge's accuracy and audited false-accept rate."""
    if frame.empty:
        return "<p class='wb-muted'>(no points)</p>"
    est, tok = f"{metric} [95% CI] (n)", f"mean {X_WORDS.get(x, x)} per {_per(x)}"
    ref = f"vs {REFERENCE_TITLE} (paired)"
    rows, judged = [], False
    for _, r in frame.iterrows():
        row = {"method": r["label"], est: estimate_cell({**r.to_dict(), "metric": metric}),
               tok: _fmt(float(r["tokens"])) if r["tokens"] == r["tokens"] else "–", ref: ""}
        if r.get("delta_n", 0) and r["method"] != REFERENCE_METHOD and r["delta_fc"] == r["delta_fc"]:
            ci = (f" [{r['delta_low']:+.3f}, {r['delta_high']:+.3f}]" if r["delta_low"] == r["delta_low"]
                  else " (no CI: n < 5)")
            row[ref] = f"{r['delta_fc']:+.3f}{ci} (n={int(r['delta_n'])})"
        ja, fa = r.get("judge_accuracy", np.nan), r.get("judge_false_accept", np.nan)
        if metric != "judge" and ja == ja:
            judged = True
            row["judge (false accepts)"] = f"{ja:.3f} ({'unknown' if fa != fa else f'{fa:.0%}'})"
        rows.append(row)
    cols = ["method", est, tok, ref] + (["judge (false accepts)"] if judged else [])
    return table_html(rows, cols)


def ci_axis_title(metric: str, drawn: pd.DataFrame) -> str:
    """The y axis names the 95 % interval only when at least one point draws one (cells under 5 questions show
    no interval: their axis must not promise one). How it was resampled (by conversation, or by question when the
    run has one conversation) is said where the run is known: the Results tab's note, ``ci_words``."""
    has_ci = "ci_low" in drawn and pd.to_numeric(drawn["ci_low"], errors="coerce").notna().any()
    if has_ci:
        return f"{metric} (95% bootstrap CI)"
    return f"{metric} (no error bars: fewer than 5 questions per point)"


def ci_words(n_conversations: int) -> str:
    """How the intervals were resampled (``workbench.eval.stats.bootstrap_means``), for a note under them: by
    conversation where the rows come from several; with one, by question, since one cluster cannot be resampled
    (the usability review found "clustered by conversation" over a one-conversation run)."""
    if n_conversations >= 2:
        return f"clustered by conversation ({n_conversations} conversations)"
    return "resampling questions (one conversation: no clusters to resample)"


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
                                           title=f"{self.metric} vs mean {X_WORDS.get(self.x, self.x)} per "
                                                 f"{_per(self.x)} ({shown})")
        if self.dropdown.value != category:
            self.dropdown.value = category
        self.note.value = f"<small>{len(self.results)} result rows · aggregated by {esc(self.source)}</small>"
        show_figure(self.plot, self.figure)
        return self

    def static_html(self) -> str:
        """The banner, the chart drawn as an inline SVG (no plotly.js: nothing to load) and its points as a table."""
        from .static_figure import figure_html

        return ((box(self.banner) if self.banner else "") + figure_html(self.figure)
                + box(f"<p class='wb-muted'>category: <b>{esc(self.category)}</b> · {len(self.results)} result rows "
                      f"· aggregated by {esc(self.source)}</p>" + points_table_html(self.frame, x=self.x,
                                                                                   metric=self.metric)))

    def _build_widgets(self) -> None:
        import ipywidgets as W

        self.dropdown = W.Dropdown(options=self.categories, value="all", description="category")
        self.dropdown.observe(lambda ch: self.set_category(ch["new"]), names="value")
        self.plot = W.Output()
        self.note = W.HTML()
        self.widget = W.VBox([W.HTML(self.banner), self.dropdown, self.plot, self.note])

    def __repr__(self) -> str:
        return f"CostAccuracyChart({len(self.frame)} methods, x={self.x!r}, category={self.category!r})"
