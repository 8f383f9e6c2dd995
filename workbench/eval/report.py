"""Aggregation and reports: pure functions over a DataFrame of result rows.

- ``results_frame(rows)`` / ``load_results(paths)``: one row per question, scores as columns, plus
  ``judge_f1_disagree`` (CORRECT with F1 = 0, or WRONG with F1 = 1).
- ``summary_table(df, audits=...)``: per dataset x method x category — n (questions scored; judge
  failures left out and counted in ``judge_errors``), accuracy with a seeded 95% bootstrap CI
  clustered by conversation (none when n < 5), the judge's accuracy beside its audited false-accept
  rate, F1/BLEU-1/official F1, evidence recall (with turns_shown and evidence_precision: see
  ``metrics``), mean query tokens per question, construction tokens
  per conversation, query-token ratio to Full-Context on the same questions, error counts.
- ``paired_differences(df)``: each method minus Full-Context on the same questions (paired bootstrap).
- ``report_markdown(df)``: the whole report (reliability banner, audit, headline, paired differences,
  categories, judge/F1 disagreements). ``cost_accuracy_frame(df)``: the frame the chart draws.
- ``to_markdown`` (no ``tabulate`` needed), ``export(df, "md" | "csv" | "json")``.

Accuracy is the ``metric`` column: by default the judge only when every judge of the rows has an
audit (``workbench judge-audit``) with at most 20 % false accepts, else mem0-style F1 — an unaudited
judge is not trusted. LoCoMo category 5 (adversarial) is scored by the checker's reading where the
metric is the checker (an abstention in any wording is right, anything else a fabrication: ``checker.
check_adversarial``), else by the official rule ("no information available", "not mentioned"). The
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
from ..untrusted import markdown_text
from .checker import row_score
from .markdown import markdown_table  # the table writer (re-exported: benchmarks import it from here)
from .mechanisms import census_markdown
from .stats import MIN_N_FOR_CI, bootstrap_ci, paired_bootstrap
from .store import load_rows

OVERALL = "overall"


def reference_method() -> str | None:
    """The registered method the papers measure against (``MemoryMethod.reference``: the whole conversation in
    the prompt), whose query tokens and accuracy the reports compare with; None if none is registered."""
    from ..methods import REGISTRY

    return next((name for name, cls in REGISTRY.items() if getattr(cls, "reference", False)), None)


SCORE_COLUMNS = ("judge", "checker", "f1", "bleu1", "locomo_f1", "exact_match", "adversarial")
_ORDER = [CATEGORY_NAMES[c] for c in (1, 2, 3, 4)] + list(QUESTION_TYPES) + [OVERALL, CATEGORY_NAMES[5]]

#: how the LoCoMo dataset itself names its integers (DATA.md §1.5)
OFFICIAL_CATEGORY_LABELS = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


def category_labels() -> dict[str, dict[int, str]]:
    """How the LoCoMo integers are labelled in published tables: the dataset's own names, then each registered
    method whose paper reports LoCoMo by category (``MemoryMethod.category_labels``), under its name."""
    from ..methods import REGISTRY

    out = {"official": OFFICIAL_CATEGORY_LABELS}
    for name, cls in REGISTRY.items():
        labels = getattr(cls, "category_labels", None)
        if isinstance(labels, dict) and all(c in labels for c in range(1, 6)):
            out[name] = labels
    return out


def category_translation() -> pd.DataFrame:
    """One row per LoCoMo integer: the official name and each paper's label for it."""
    labels = category_labels()
    return pd.DataFrame([{"category": c, **{k: v[c] for k, v in labels.items()}} for c in range(1, 6)])


# -- frames ------------------------------------------------------------------------------------------

def verdict_text(check) -> str | None:
    """A row's checker verdict in words: ``right``, or ``wrong: <kind>`` (``wrong: wrong_date``); None where the
    checker does not apply (category 5, LongMemEval) or the field is not a readable ``check`` dict."""
    if not isinstance(check, dict) or not isinstance(check.get("correct"), bool):
        return None
    return "right" if check["correct"] else f"wrong: {check.get('kind') or 'wrong'}"


def results_frame(rows: Iterable, *, answers: bool = False) -> pd.DataFrame:
    """Rows (dicts or ``QuestionResult``) as a DataFrame; each score becomes a column, plus
    ``judge_f1_disagree`` (see ``judge_f1_disagreement``) and ``verdict``, the checker's in words
    (``verdict_text``)."""
    records = []
    for r in rows:
        d = r.to_dict() if hasattr(r, "to_dict") else dict(r)
        scores = d.pop("scores", None) or {}
        # prompt-only query tokens (the papers' "input tokens", e.g. AMA's Table 4): the row's own field, else
        # (rows written before the harness kept it) the answer's usage
        prompt = d.get("query_prompt_tokens")
        if not isinstance(prompt, (int, float)) or isinstance(prompt, bool):
            usage = (d.get("answer") or {}).get("usage") if isinstance(d.get("answer"), dict) else None
            prompt = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        d["query_prompt_tokens"] = float(prompt) if isinstance(prompt, (int, float)) else np.nan
        if not answers:
            d.pop("answer", None)
        d["params"] = json.dumps(d.get("params") or {}, sort_keys=True)
        d["judge_f1_disagree"] = judge_f1_disagreement(d.get("judge_label"), scores.get("f1"))
        d["verdict"] = verdict_text(d.get("check"))
        if "checker" not in scores:  # a row written before the checker: its verdict from the row's own text
            scores = {**scores, "checker": row_score({**d, "scores": scores})}
        if d["verdict"] is None and scores.get("checker") in (0.0, 1.0):  # no check field: the score, in words
            d["verdict"] = "right" if scores["checker"] == 1.0 else "wrong"
        records.append({**d, **{k: (np.nan if v is None else v) for k, v in scores.items()}})
    df = pd.DataFrame.from_records(records)
    for col in SCORE_COLUMNS:
        if col not in df.columns:
            df[col] = np.nan
    for col in ("judge_key", "judge_model", "judge_error", "judge_label", "judge_reasoning", "conv_id"):
        if col not in df.columns:
            df[col] = None
    return df


def judge_f1_disagreement(label, f1) -> bool:
    """True when the judge and token F1 flatly disagree: CORRECT with F1 = 0, or WRONG with F1 = 1."""
    if f1 is None or (isinstance(f1, float) and math.isnan(f1)):
        return False
    return (label == "CORRECT" and float(f1) == 0.0) or (label == "WRONG" and float(f1) == 1.0)


def load_results(paths: Sequence) -> pd.DataFrame:
    """Results of one or more JSONL stores (latest row per key)."""
    return results_frame(load_rows(paths))


# -- the judge's audit ---------------------------------------------------------------------------------

def _judge_idents(df: pd.DataFrame) -> pd.Series:
    """Per row, the judge it was judged by: its ``judge_key``, or ``judge_model`` for older rows."""
    key = df["judge_key"].where(df["judge_key"].notna(), df["judge_model"])
    return key.where(df["judge"].notna() | df["judge_error"].notna(), None)


def judge_status(df: pd.DataFrame, audits: dict | None = None) -> dict:
    """Which judges judged these rows, their audits, and whether the judge column can be trusted.

    ``audits``: ``{judge key (or judge model for older rows): audit}`` (see ``audit.audits_for_rows``).
    ``reliable`` is True only when rows were judged and every judge's audit passes ``audit.is_reliable``.
    """
    from .audit import is_reliable, reliability_note

    audits = audits or {}
    models: dict[str, str] = {}
    if not df.empty:
        for ident, model in zip(_judge_idents(df), df["judge_model"]):
            if isinstance(ident, str) and ident and ident not in models:
                models[ident] = model if isinstance(model, str) and model else ident
    idents = list(models)
    found = {i: audits.get(i) for i in idents}
    reliable = bool(idents) and all(is_reliable(a) for a in found.values())
    notes = [f"{models[i]}: {reliability_note(a)}" for i, a in found.items()]
    worst = max((a["false_accept"]["rate"] for a in found.values() if a and a["false_accept"].get("rate") is not None),
                default=math.nan)
    return {"judged": bool(idents), "judges": models, "audits": found, "reliable": reliable, "notes": notes,
            "false_accept": worst if all(found.values()) else math.nan}


def auto_metric(df: pd.DataFrame, audits: dict | None = None) -> str:
    """The verdict source every view leads with: the ``judge`` when rows were judged by judges whose audit (on
    labelled real answers first) passes; else whichever of the deterministic ``checker`` and token ``f1`` agrees
    more with careful readers on the labelled real answers (``label_audit.best_row_source``: the checker, by a
    wide margin, on the shipped set); ``f1`` for rows the checker does not cover (e.g. a LongMemEval rubric)."""
    if "judge" in df.columns and df["judge"].notna().any() and judge_status(df, audits)["reliable"]:
        return "judge"
    from .label_audit import best_row_source  # measured: the source that agrees most with careful readers

    best = best_row_source()
    for metric in (best, "checker", "f1"):
        if metric in df.columns and df[metric].notna().any():
            return metric
    return "f1"


def method_labels(df: pd.DataFrame) -> pd.Series:
    """``method``, or ``method[hash]`` when a method was run with more than one configuration."""
    multi = df.groupby(["dataset", "method"])["params_hash"].transform("nunique") > 1
    return df["method"].where(~multi, df["method"] + "[" + df["params_hash"].str[:6] + "]")


def _accuracy_values(df: pd.DataFrame, metric: str) -> pd.Series:
    adversarial = (df["category"].astype(str) == "5") & df["category_name"].eq(CATEGORY_NAMES[5])
    if metric == "checker" and "checker" in df:  # the checker reads an abstention in any wording (issue #66)
        return df["checker"].where(~adversarial | df["checker"].notna(), df["adversarial"]).astype(float)
    return df[metric].where(~adversarial, df["adversarial"]).astype(float)


def _groups(df: pd.DataFrame) -> Iterable[tuple[str, pd.DataFrame]]:
    """Per category, plus the headline (everything except LoCoMo category 5)."""
    for name, g in df.groupby("category_name", sort=False):
        yield name, g
    headline = df[df["category_name"] != CATEGORY_NAMES[5]]
    if len(headline):
        yield OVERALL, headline


def _mean(s: pd.Series) -> float:
    s = s.dropna()
    return float(s.mean()) if len(s) else math.nan


def _fc_tokens(df: pd.DataFrame, col: str = "query_tokens") -> pd.Series:
    fc = df[df["method"] == reference_method()].drop_duplicates(["dataset", "qa_id"])
    return fc.set_index(["dataset", "qa_id"])[col].astype(float).dropna()


def _ratio(g: pd.DataFrame, fc: pd.Series, col: str = "query_tokens") -> float:
    """Mean ``col`` of ``g`` ÷ the reference method's on the questions both answered (and both counted)."""
    if fc.empty:
        return math.nan
    g = g[g[col].notna()]
    idx = pd.MultiIndex.from_frame(g[["dataset", "qa_id"]])
    common = idx[idx.isin(fc.index)]
    if len(common) == 0:
        return math.nan
    mine = g.set_index(["dataset", "qa_id"])[col].astype(float)
    denominator = fc.loc[common].mean()
    return float(mine.loc[common].mean() / denominator) if denominator else math.nan


def _shown_columns(g: pd.DataFrame) -> dict:
    """Mean turns covered by what the final reader saw, and evidence precision (NaN for old rows)."""
    return {c: _mean(g[c].astype(float)) if c in g else math.nan for c in ("turns_shown", "evidence_precision")}


def _per_conversation(g: pd.DataFrame, col: str) -> float:
    """Mean over the group's conversations of a per-conversation figure (each row carries its total)."""
    if col not in g.columns:
        return math.nan
    return _mean(g.drop_duplicates("conv_id")[col].astype(float))


def _amortised_tokens(df: pd.DataFrame) -> pd.Series:
    """Per row: its query tokens plus its conversation's construction tokens shared over the questions the method
    answered there, i.e. what one answer cost when the memory was built for these questions alone. It puts an
    eager method (a costly build, cheap questions) and a lazy one on one axis, and leaves none off it: construction
    tokens alone are 0 for Full-Context and Naive RAG, which a log axis cannot draw."""
    q = pd.to_numeric(df["query_tokens"], errors="coerce")
    if "construction_tokens" not in df.columns:
        return q
    built = pd.to_numeric(df["construction_tokens"], errors="coerce").fillna(0.0)
    asked = df.groupby(["dataset", "method_label", "conv_id"], sort=False)["conv_id"].transform("size")
    return q + built / asked


def summary_table(df: pd.DataFrame, *, metric: str | None = None, n_boot: int = 1000, seed: int = 0,
                  level: float = 0.95, audits: dict | None = None) -> pd.DataFrame:
    """Per dataset x method x category (official names, plus ``overall``).

    ``n`` counts the questions scored by ``metric``: judge failures (a reply the judge could not
    read) are left out of the mean and counted in ``judge_errors``; a method failure is judged
    wrong. ``ci_low``/``ci_high``: bootstrap clustered by conversation, NaN when n < 5.
    ``judge_accuracy`` / ``judge_false_accept`` / ``judge_reliable`` put the judge's audit next to
    its accuracy; ``metric`` defaults to the judge only when it is reliable (``auto_metric``).
    ``construction_tokens`` is the mean per conversation built (``conversations``), not per question;
    ``amortised_tokens`` is per question: query tokens plus the conversation's construction tokens shared over the
    questions the method answered there (``_amortised_tokens``).
    ``query_prompt_tokens`` / ``fc_prompt_ratio``: prompt tokens only (the papers' "input tokens"), NaN for rows
    written before the harness kept them and saved without their answer's usage. ``errors``: rows where the
    method raised or an LLM call made while answering failed, a replay cassette's miss included (``row_failed``;
    before issue 20 only rows that raised were counted, so a MemR3 answer written from its draft after a failed
    call showed 0); ``flagged``: rows carrying any failure or fallback at all (construction failures, unusable
    replies, JSON repairs too).
    """
    if df.empty:
        return pd.DataFrame()
    metric = metric or auto_metric(df, audits)
    if metric not in df.columns:
        raise ValueError(f"no column {metric!r} in the results; have {sorted(df.columns)}")
    status = judge_status(df, audits)
    df = df.assign(method_label=method_labels(df), _acc=_accuracy_values(df, metric),
                   _judge=_accuracy_values(df, "judge"))
    if "query_prompt_tokens" not in df.columns:  # a frame not built by results_frame
        df = df.assign(query_prompt_tokens=np.nan)
    df = df.assign(_amortised=_amortised_tokens(df))
    fc, fc_prompt = _fc_tokens(df), _fc_tokens(df, "query_prompt_tokens")
    out = []
    for (dataset, label), mg in df.groupby(["dataset", "method_label"], sort=False):
        mine = judge_status(mg, audits)
        for cat, g in _groups(mg):
            scored = g["_acc"].notna()
            n = int(scored.sum())
            lo, hi = (bootstrap_ci(g["_acc"], clusters=g["conv_id"].astype(str), n_boot=n_boot, seed=seed,
                                   level=level) if n >= MIN_N_FOR_CI else (math.nan, math.nan))
            out.append({
                "dataset": dataset, "method": label, "params_hash": g["params_hash"].iloc[0], "category": cat,
                "n": n, "metric": metric, "accuracy": _mean(g["_acc"]), "ci_low": lo, "ci_high": hi,
                "judge_accuracy": _mean(g["_judge"]), "judge_n": int(g["_judge"].notna().sum()),
                "judge_false_accept": mine["false_accept"], "judge_reliable": mine["reliable"],
                "judge_f1_disagree": int(g["judge_f1_disagree"].fillna(False).astype(bool).sum())
                if "judge_f1_disagree" in g else 0,
                "f1": _mean(g["f1"]), "bleu1": _mean(g["bleu1"]), "locomo_f1": _mean(g["locomo_f1"]),
                "evidence_recall": _mean(g["evidence_recall"].astype(float)),
                "session_recall": _mean(g["session_recall"].astype(float)),
                **_shown_columns(g),
                "query_tokens": _mean(g["query_tokens"].astype(float)),
                "construction_tokens": _per_conversation(g, "construction_tokens"),
                "amortised_tokens": _mean(g["_amortised"].astype(float)),
                "conversations": int(g["conv_id"].nunique()),
                "fc_token_ratio": _ratio(g, fc),
                # prompt tokens only, both sides: what AMA's Table 4 and HyMem's efficiency figures count
                "query_prompt_tokens": _mean(g["query_prompt_tokens"].astype(float)),
                "fc_prompt_ratio": _ratio(g, fc_prompt, "query_prompt_tokens"),
                "errors": _errors(g),
                "judge_errors": int(g["judge_error"].notna().sum()) if "judge_error" in g else 0,
                "flagged": _flagged(g),
                "params": g["params"].iloc[0],
            })
    table = pd.DataFrame(out)
    table.attrs["judge_status"] = status
    rank = {c: i for i, c in enumerate(_ORDER)}
    table["_rank"] = table["category"].map(lambda c: rank.get(c, len(rank)))
    table = table.sort_values(["dataset", "method", "_rank"], kind="stable").drop(columns="_rank")
    table = table.reset_index(drop=True)
    table.attrs["judge_status"] = status
    return table


def paired_differences(df: pd.DataFrame, *, reference: str | None = None, metric: str | None = None,
                       n_boot: int = 1000, seed: int = 0, level: float = 0.95, audits: dict | None = None,
                       categories: bool = False) -> pd.DataFrame:
    """Each method minus ``reference`` on the questions both answered (paired bootstrap, clustered by
    conversation): per dataset x method, on the headline questions (and per category with
    ``categories=True``). Empty when the reference method is absent. ``reference``: by default the registered
    method that declares itself the reference (``reference_method``), looked up when called, not at import."""
    cols = ["dataset", "method", "reference", "category", "metric", "n", "diff", "ci_low", "ci_high", "p_le_0"]
    reference = reference or reference_method()
    if df.empty or reference not in set(df["method"]):
        return pd.DataFrame(columns=cols)
    metric = metric or auto_metric(df, audits)
    df = df.assign(method_label=method_labels(df), _acc=_accuracy_values(df, metric))
    out = []
    for dataset, dg in df.groupby("dataset", sort=False):
        ref = dg[dg["method"] == reference]
        if ref["params_hash"].nunique() != 1:
            continue  # several reference configurations: no single baseline to pair with
        ref = ref.drop_duplicates("qa_id").set_index("qa_id")
        for label, mg in dg[dg["method"] != reference].groupby("method_label", sort=True):
            groups = list(_groups(mg)) if categories else [(OVERALL, mg[mg["category_name"] != CATEGORY_NAMES[5]])]
            for cat, g in groups:
                g = g[g["qa_id"].isin(ref.index)]
                if g.empty:
                    continue
                r = paired_bootstrap(g["_acc"].to_numpy(), ref.loc[g["qa_id"], "_acc"].to_numpy(),
                                     clusters=g["conv_id"].astype(str).tolist(), n_boot=n_boot, seed=seed, level=level)
                out.append({"dataset": dataset, "method": label, "reference": reference, "category": cat,
                            "metric": metric, **r})
    return pd.DataFrame(out, columns=cols)


#: failure kinds (``harness.question_failures``) that mean an LLM call made for this very question
#: failed: a replay cassette's miss, a server or network error, an answer call that raised
ERROR_KINDS = ("llm_error", "answer_error")


def row_failed(row) -> bool:
    """The rule behind the ``errors`` column: the method raised (``error``), or an LLM call it made
    while answering this question failed (a failure of kind ``llm_error`` — a cassette miss
    included — or ``answer_error``). Such a row's answer, when there is one, came from a fallback
    (MemR3 answers from its draft, HyMem keeps the light answer, AMA returns nothing), so it is not
    the method's own answer. Failures while building the conversation's memory, replies that could
    not be used (JSON the client could not repair), design fallbacks and JSON repairs that worked
    are counted in ``flagged`` only."""
    d = row if isinstance(row, dict) else dict(row)
    error = d.get("error")
    if isinstance(error, str) and error:
        return True
    failures = d.get("failures")
    return isinstance(failures, list) and any(isinstance(f, dict) and f.get("kind") in ERROR_KINDS
                                              for f in failures)


def _errors(g: pd.DataFrame) -> int:
    """``errors``: rows that raised or met a failed LLM call while answering (``row_failed``)."""
    cols = [c for c in ("error", "failures") if c in g.columns]
    return int(sum(row_failed(dict(zip(cols, vals))) for vals in zip(*(g[c] for c in cols)))) if cols else 0


def _flagged(g: pd.DataFrame) -> int:
    """Rows that carry at least one failure or fallback (``QuestionResult.failures``)."""
    return int(g["failures"].map(lambda f: bool(f) if isinstance(f, list) else False).sum()) if "failures" in g else 0


def failure_counts(rows: Iterable) -> pd.DataFrame:
    """Per method: how many rows carry failures (``flagged_rows``), how many are errors (``errors``,
    the rule of ``row_failed``) and how many of those raised (``raised``), and how many failures of
    each kind (``llm_error``, ``empty_reply``, ``empty_answer``, ``fallback``, ``construction`` ...)."""
    counts: dict[str, dict] = {}
    for r in rows:
        d = r.to_dict() if hasattr(r, "to_dict") else dict(r)
        entry = counts.setdefault(str(d.get("method")), {"method": str(d.get("method")), "rows": 0, "flagged_rows": 0,
                                                          "errors": 0, "raised": 0})
        entry["rows"] += 1
        entry["errors"] += row_failed(d)
        entry["raised"] += bool(d.get("error"))
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
            "n", "params", "metric", "judge_accuracy", "judge_false_accept", "judge_reliable"]
    return t[cols].copy() if not t.empty else pd.DataFrame(columns=cols)


# -- export -------------------------------------------------------------------------------------------

def _cell(v, floatfmt: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, (float, np.floating)):
        return format(float(v), floatfmt)
    return markdown_text(v)  # run data: no HTML, image, link or code span, one cell


def to_markdown(df: pd.DataFrame, *, floatfmt: str = ".3f", index: bool = False) -> str:
    """A data frame as a Markdown table (numbers right-aligned), without the ``tabulate`` package."""
    frame = df.reset_index() if index else df
    body = [[_cell(v, floatfmt) for v in row] for row in frame.itertuples(index=False, name=None)]
    numeric = [pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])
               for c in frame.columns]
    return markdown_table([markdown_text(c) for c in frame.columns], body, numeric)


def export(df: pd.DataFrame, fmt: str = "md") -> str:
    """The table as Markdown, CSV or JSON (records) text."""
    if fmt in ("md", "markdown"):
        return to_markdown(df)
    if fmt == "csv":
        return df.to_csv(index=False)
    if fmt == "json":
        return json.dumps(json.loads(df.to_json(orient="records")), indent=2)
    raise ValueError(f"unknown format {fmt!r}: use md, csv or json")


# -- the Markdown report ------------------------------------------------------------------------------

BINARY_METRICS = ("judge", "checker", "exact_match", "adversarial")


def format_estimate(mean, lo, hi, n, *, binary: bool = False) -> str:
    """``0.612 [0.410, 0.790]``; with n < 5 the count instead (``2/3`` or ``0.41 (n=3)``), never a CI."""
    if not n or mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "–"
    if n < MIN_N_FOR_CI or lo is None or (isinstance(lo, float) and math.isnan(lo)):
        return f"{int(round(mean * n))}/{n}" if binary else f"{mean:.3f} (n={n})"
    return f"{mean:.3f} [{lo:.3f}, {hi:.3f}]"


def _rate_cell(audit: dict | None, which: str) -> str:
    r = (audit or {}).get(which) or {}
    if r.get("rate") is None:
        return "–"
    lo, hi = r.get("ci") or [None, None]
    return f"{r['rate']:.1%} ({r['k']}/{r['n']}) [{lo:.1%}, {hi:.1%}]" if lo is not None else f"{r['rate']:.1%}"


def _verdict_note(metric: str) -> str:
    from .label_audit import checker_audit, verdict_note

    if metric == "checker":
        return verdict_note("the deterministic checker", checker_audit())
    if metric == "f1":
        return "token F1 (no checker verdict on these rows)"
    return metric


def judge_banner(status: dict, metric: str) -> str:
    """The reliability banner (Markdown quote): empty when the judge is audited, reliable and the headline."""
    if not status.get("judged"):
        return f"> No LLM judge was run on these rows; the headline is {_verdict_note(metric)}."
    if status["reliable"] and metric == "judge":
        return "> Judge audited and reliable: " + markdown_text("; ".join(status["notes"]))
    lines = ["> **Judge accuracy is not trustworthy here.** " + markdown_text("; ".join(status["notes"])) + "."]
    if metric != "judge":
        lines.append(f"> The headline is therefore **{metric}**: {_verdict_note(metric)}. The judge's accuracy "
                     "is shown beside it for reference only.")
    else:
        lines.append("> The judge was nevertheless chosen as the headline metric (`--metric judge`).")
    return "\n".join(lines)


def report_markdown(df: pd.DataFrame, *, audits: dict | None = None, metric: str | None = None, n_boot: int = 1000,
                    seed: int = 0, title: str = "Evaluation report", stats: dict | None = None,
                    max_disagreements: int = 40, mechanisms: dict | None = None) -> str:
    """The whole report: banner, judge audit, headline table, paired differences against Full-Context,
    per-category cells, failure attribution (when rows carry it), the mechanism census (when
    ``mechanisms``, a ``mechanisms.census`` of the run, is given), judge/F1 disagreements, method statistics."""
    table = summary_table(df, metric=metric, n_boot=n_boot, seed=seed, audits=audits)
    if table.empty:
        return f"# {title}\n\n(no result rows)"
    status = table.attrs["judge_status"]
    metric = table["metric"].iloc[0]
    binary = metric in BINARY_METRICS
    parts = [f"# {title}", "", judge_banner(status, metric), ""]
    parts += _audit_section(status)
    parts += _headline_section(table, metric, binary)
    parts += departures_section(df)
    parts += llms_section(df)
    parts += _paired_section(df, metric, audits, n_boot, seed)
    parts += _category_section(table, metric, binary)
    if "attribution" in df.columns and df["attribution"].notna().any():
        parts += _attribution_section(df)
    if mechanisms:
        parts += [census_markdown(mechanisms), ""]
    parts += _disagreement_section(df, max_disagreements)
    parts += ["## How to read this", "",
              f"- n: questions scored by {metric}; judge failures (unreadable judge replies) are left out of the "
              "mean and counted in `judge failures`; a method that failed to answer counts as wrong.",
              "- errors: questions where the method raised, or an LLM call it made for the question failed (a "
              "replay cassette's miss included) and its answer came from a fallback; flagged: questions carrying "
              "any failure or fallback (construction failures, unusable replies, JSON repairs too).",
              f"- [lo, hi]: 95% percentile bootstrap ({n_boot} replicates, seed {seed}) clustered by conversation "
              "(conversations resampled, then questions within each). A cell with fewer than "
              f"{MIN_N_FOR_CI} questions shows the count instead, never an interval.",
              "- judge FA: the judge's audited false-accept rate (`workbench judge-audit`: on labelled real answers "
              "where the set holds that judge's verdicts, else on synthetic probes); above 20% or unknown the judge "
              "column is unreliable and the deterministic checker (dates as days, names as entities, gold content "
              "recall; `workbench.eval.checker`) is the headline. Token F1 and BLEU-1 stay for comparison with "
              "papers.",
              "- construction tokens: mean per conversation built (not spread over questions).",
              "- LoCoMo category 5 (adversarial) is kept out of `overall` (categories 1-4); under the checker an "
              "abstention in any wording is its right answer, under other metrics the official rule's two phrases.",
              ""]
    if stats:
        parts.append(method_stats_markdown(stats))
    return "\n".join(parts).rstrip() + "\n"


def llms_section(df: pd.DataFrame) -> list[str]:
    """The LLM each method ran on, when the rows' methods ran on more than one (``method_llms.llm_section``):
    their scores then compare the readers as well as the memories. Nothing when one LLM ran them all."""
    from .method_llms import llms_from_rows

    by = llms_from_rows(df.to_dict("records")) if "llm_model" in df.columns else {}
    if len({m for models in by.values() for m in models}) <= 1:
        return []
    rows = [[markdown_text(method), markdown_text(", ".join(models))] for method, models in by.items()]
    return ["## The LLM each method ran on", "",
            "> The methods below ran on different LLMs, so their scores compare the readers as well as the memories.",
            "", markdown_table(["method", "LLM"], rows, [False, False]), ""]


def departures_section(df: pd.DataFrame) -> list[str]:
    """"Departures from the papers": for each method configuration in the rows, the parameters that leave its
    paper's method (``MemoryMethod.departures``: a ``small`` profile lists each of its aids, the fair arena
    its shared answer prompt). Nothing when no configuration departs."""
    from ..methods import REGISTRY
    from ..methods.base import method_base

    if df.empty or "params" not in df.columns:
        return []
    lines = []
    for (method, params), group in df.groupby(["method", "params"], sort=True):
        cls = REGISTRY.get(method_base(method))
        try:
            saved = json.loads(params) if isinstance(params, str) else {}
        except ValueError:
            saved = {}
        names = sorted({str(d) for d in group["dataset"].dropna()}) if "dataset" in group.columns else []
        notes = cls.departures(saved, names[0] if len(names) == 1 else None) if cls is not None else []
        if notes:  # the method, its profile and each note (which quotes the saved values) are run data
            profile = f" (profile {markdown_text(saved['profile'])})" if isinstance(saved.get("profile"), str) else ""
            lines.append(f"- **{markdown_text(method)}**{profile}: " + "; ".join(markdown_text(n) for n in notes))
    return ["## Departures from the papers", "", *lines, ""] if lines else []


def _audit_section(status: dict) -> list[str]:
    if not status.get("judged"):
        return []
    rows = []
    for ident, audit in status["audits"].items():
        rows.append({"judge": status["judges"].get(ident, ident), "audit": (audit or {}).get("dataset", "none"),
                     "probes": (audit or {}).get("n_probes", 0),
                     "false accept [95% CI]": _rate_cell(audit, "false_accept"),
                     "false reject [95% CI]": _rate_cell(audit, "false_reject"),
                     "reliable": "yes" if _reliable(audit) else "NO"})
    return ["## Judge audit", "", to_markdown(pd.DataFrame(rows)), ""]


def _reliable(audit) -> bool:
    from .audit import is_reliable

    return is_reliable(audit)


def _headline_section(table: pd.DataFrame, metric: str, binary: bool) -> list[str]:
    head = table[table["category"] == OVERALL]
    rows = []
    for _, r in head.iterrows():
        rows.append({"dataset": r["dataset"], "method": r["method"], "n": r["n"],
                     f"{metric} [95% CI]": format_estimate(r["accuracy"], r["ci_low"], r["ci_high"], r["n"],
                                                           binary=binary),
                     "judge acc" + ("" if metric == "judge" else " (unreliable)" if not r["judge_reliable"] else ""):
                         r["judge_accuracy"],
                     "judge FA": r["judge_false_accept"], "f1": r["f1"], "evidence recall": r["evidence_recall"],
                     "query tokens": r["query_tokens"], "construction tokens / conv": r["construction_tokens"],
                     "convs": r["conversations"], "errors": r["errors"], "flagged": r["flagged"],
                     "judge failures": r["judge_errors"],
                     "judge/F1 disagree": r["judge_f1_disagree"]})
    return [f"## Headline: {metric}, overall", "", to_markdown(pd.DataFrame(rows)), ""]


def _paired_section(df, metric, audits, n_boot, seed) -> list[str]:
    ref = reference_method()
    if ref is None:
        return []
    diffs = paired_differences(df, reference=ref, metric=metric, audits=audits, n_boot=n_boot, seed=seed)
    if diffs.empty:
        return []
    rows = [{"dataset": d["dataset"], "method": d["method"], "n pairs": d["n"],
             f"Δ {metric} vs {ref} [95% CI]": format_estimate(d["diff"], d["ci_low"], d["ci_high"], d["n"]),
             "P(Δ ≤ 0)": d["p_le_0"]} for _, d in diffs.iterrows()]
    return [f"## Paired differences against {ref}", "",
            f"Each method minus {ref} on the same questions (paired bootstrap clustered by conversation).", "",
            to_markdown(pd.DataFrame(rows)), ""]


def _category_section(table: pd.DataFrame, metric: str, binary: bool) -> list[str]:
    cats = [c for c in dict.fromkeys(table["category"]) if c != OVERALL]
    rows = []
    for (dataset, method), g in table.groupby(["dataset", "method"], sort=False):
        row = {"dataset": dataset, "method": method}
        for _, r in g.iterrows():
            if r["category"] == OVERALL:
                continue
            b = binary or r["category"] == CATEGORY_NAMES[5]
            row[r["category"]] = f"{format_estimate(r['accuracy'], r['ci_low'], r['ci_high'], r['n'], binary=b)}"
        rows.append(row)
    frame = pd.DataFrame(rows, columns=["dataset", "method"] + cats).fillna("")
    how = "an abstention in any wording" if metric == "checker" else "official rule"
    return [f"## By category ({metric}; adversarial: {how})", "", to_markdown(frame), ""]


def _attribution_section(df: pd.DataFrame) -> list[str]:
    counts = pd.crosstab(method_labels(df), df["attribution"].fillna("–"))
    counts.index.name = "method"
    return ["## Failure attribution per method", "", to_markdown(counts.reset_index()), ""]


def _disagreement_section(df: pd.DataFrame, limit: int) -> list[str]:
    if "judge_f1_disagree" not in df.columns:
        return []
    flagged = df[df["judge_f1_disagree"].fillna(False).astype(bool)]
    if flagged.empty:
        return ["## Judge vs F1", "", "No question where the judge and token F1 flatly disagree.", ""]
    rows = [{"method": r["method"], "question": r["qa_id"], "category": r["category_name"], "judge": r["judge_label"],
             "f1": r["f1"], "prediction": _short(r["prediction"], 60), "gold": _short(r["gold"], 40),
             "judge reasoning": _short(r["judge_reasoning"], 100)} for _, r in flagged.head(limit).iterrows()]
    more = f" (first {limit} shown)" if len(flagged) > limit else ""
    return ["## Judge vs F1: flat disagreements", "",
            f"{len(flagged)} of {int(df['judge_label'].notna().sum())} judged answers{more}: CORRECT with F1 = 0 or "
            "WRONG with F1 = 1.", "", to_markdown(pd.DataFrame(rows)), ""]


def _short(text, n: int) -> str:
    text = "" if text is None or (isinstance(text, float) and math.isnan(text)) else " ".join(str(text).split())
    return text if len(text) <= n else text[:n - 1] + "…"


def method_stats(rows: Iterable) -> dict[str, dict]:
    """Each method's own decision figures (its class's ``summary_stats``: AMA's Retry/Refresh counts,
    H-Mem's scopes and follow-ups, MemR3's iterations and guards, ...), from the saved traces alone;
    methods without figures of their own (the baselines) are left out."""
    from ..methods import REGISTRY, method_base
    from ..trace import Answer

    answers: dict[str, list] = {}
    for r in rows:
        d = r.to_dict() if hasattr(r, "to_dict") else dict(r)
        if d.get("answer") and method_base(d.get("method")) in REGISTRY:
            answers.setdefault(d["method"], []).append(Answer.from_dict(d["answer"]))
    out = {}
    for name, ans in sorted(answers.items()):
        stats = REGISTRY[method_base(name)].summary_stats(ans)
        if stats:
            out[name] = stats
    return out


def method_stats_markdown(stats: dict[str, dict]) -> str:
    """``method_stats`` as a Markdown section (nested figures written as ``key=value`` lists)."""
    def fmt(v):
        if isinstance(v, dict):
            return ", ".join(f"{k}={fmt(x)}" for k, x in v.items()) or "-"
        return f"{v:.3g}" if isinstance(v, float) else str(v)

    lines = ["## Method statistics from traces", ""]
    for name, s in stats.items():
        figures = "; ".join(f"{k}: {fmt(v)}" for k, v in s.items())
        lines.append(f"- **{markdown_text(name)}**: " + markdown_text(figures))
    return "\n".join(lines)
