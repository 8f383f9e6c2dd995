"""The Results tab: the summary tables with their audits, and cost against accuracy."""
from __future__ import annotations

import pandas as pd
import panel as pn

from widgets.cost_accuracy import (
    ALL,
    X_CHOICES,
    X_WORDS,
    ci_words,
    cost_accuracy_figure,
    headline,
    judge_banner_html,
    metric_values,
    points_frame,
    summary_table_html,
)
from widgets.html import box, esc
from widgets.panel_parts import (
    LinkHTML,
    html_pane,
    text_table,
)
from widgets.plotly_loader import defer
from widgets.run_store import RunStore


def _fmt(v) -> str:
    return "" if v is None or v != v else (f"{v:.2f}" if isinstance(v, float) else str(v))


class ResultsView:
    """Per-category tables with clustered bootstrap CIs, the judge's audit and reliability banner, the
    cost-accuracy chart, and per question the judge's label and reasoning beside F1 (flat
    disagreements flagged)."""

    QUESTION_COLUMNS = ["method", "qa_id", "category_name", "checker", "judge_label", "f1", "disagree",
                        "judge_reasoning", "prediction", "gold"]

    def __init__(self, store: RunStore):
        self.store = store
        self.frame = store.results_table()
        self.audits = store.audits()
        metrics = [m for m in ("checker", "judge", "f1", "bleu1", "locomo_f1", "evidence_recall")
                   if not self.frame.empty and metric_values(self.frame, m).notna().any()]
        auto = self.auto_metric()
        self.metric = pn.widgets.Select(label="metric", options=metrics or ["judge"],
                                        value=auto if auto in metrics else (metrics or ["judge"])[0])
        self.x = pn.widgets.Select(label="cost axis", options={X_WORDS[c]: c for c in X_CHOICES})
        self.category = pn.widgets.Select(label="chart category", options=[ALL])
        self.banner = html_pane("")
        self.follow = None  # set by WorkbenchApp: a method's name opens its How it works page
        self.table = LinkHTML("", on_link=lambda target: self.follow and self.follow(target))
        self.plot = pn.pane.Plotly(None, height=440, sizing_mode="stretch_width")  # drawn once, by refresh()
        self.note = html_pane("")
        self.questions = defer(text_table(  # below the chart: drawn after the tab's first paint
            self.question_frame(), page_size=10,  # long texts wrap: no sideways scroll
            widths={"judge_reasoning": 380, "prediction": 220, "gold": 140}))
        self.metric.param.watch(lambda e: self.refresh(), "value")
        self.x.param.watch(lambda e: self.draw(), "value")
        self.category.param.watch(lambda e: self.draw(), "value")
        self.panel = pn.Column(self.banner, pn.Row(self.metric, self.x, self.category), self.note, self.table,
                               self.plot, html_pane("<h4>Per question: the verdict (checker), the judge's label "
                                                    "and reasoning beside F1</h4>"),
                               self.questions, sizing_mode="stretch_width")
        self.refresh()

    def auto_metric(self) -> str | None:
        return self.store.auto_metric()

    def question_frame(self) -> pd.DataFrame:
        """One row per (method, question): the verdict, judge label and reasoning, F1, and a flag when the judge
        and F1 flatly disagree."""
        df = self.frame
        if df.empty:
            return pd.DataFrame(columns=self.QUESTION_COLUMNS)
        out = df.reindex(columns=[c for c in self.QUESTION_COLUMNS if c != "disagree"]).copy()
        flag = df["judge_f1_disagree"] if "judge_f1_disagree" in df.columns else pd.Series(False, index=df.index)
        out.insert(out.columns.get_loc("f1") + 1, "disagree",
                   flag.map(lambda v: "⚠ judge vs F1" if v == v and bool(v) else ""))
        out["f1"] = out["f1"].map(_fmt)
        out["checker"] = out["checker"].map(lambda v: "" if v != v or v is None else ("right" if v >= 0.5 else "wrong"))
        return out.map(lambda v: "" if v is None or (isinstance(v, float) and v != v) else str(v))

    def refresh(self) -> None:
        if self.frame.empty:
            self.summary, self.source = pd.DataFrame(), "no rows"
            self.table.object = box("<p>This run has no results (results.jsonl is missing or empty).</p>")
            self.plot.visible = self.questions.visible = False  # no empty chart frame or table under it
            return
        self.plot.visible = self.questions.visible = True
        self.summary, self.source = self.store.summary(self.metric.value)
        self.paired = self.store.paired(self.metric.value)
        head = headline(self.summary)
        self.category.options = [ALL] + [c for c in dict.fromkeys(self.summary["category"]) if c != head]
        self.banner.object = judge_banner_html(self.summary)
        self.table.object = box(results_table_html(self.store, self.metric.value))
        n_conv = int(self.frame["conv_id"].nunique()) if "conv_id" in self.frame.columns else 0
        # the headline leaves LoCoMo's adversarial questions out: say so where the table has them (review: "overall
        # (n=10)" beside categories that add up to 12)
        apart = ("overall: LoCoMo categories 1-4, the adversarial ones (category 5) scored apart by their own rule, "
                 "as the papers report · " if "adversarial" in set(self.summary.get("category", ())) else "")
        self.note.object = box(f"<small>{len(self.frame)} result rows · n: questions scored (judge failures left "
                               f"out and counted) · {apart}[lo, hi] and error bars: 95% percentile bootstrap of the "
                               f"mean, {ci_words(n_conv)}, 1000 resamples, seed 0; fewer than 5 questions show the "
                               f"count, no interval · aggregated by {esc(self.source)}</small>")
        self.draw()

    def draw(self) -> None:
        self.chart_frame, self.plot.object = cost_chart(self.store, self.metric.value, self.x.value,
                                                        self.category.value)


def results_table_html(store: RunStore, metric: str) -> str:
    """The Results tab's method x category table for ``metric``, made once per run and metric (the
    read-ahead thread makes the one the tab opens on)."""
    def make():
        summary, _ = store.summary(metric)
        return summary_table_html(summary, metric, headline(summary), links=True)
    return store.cached(("results table", metric), f"results table ({metric})", make, "")


def cost_chart(store: RunStore, metric: str, x: str, category: str):
    """(points, cost-accuracy figure) for one choice of the Results tab's pickers, made once per run
    and choice (the read-ahead thread makes the one the tab opens on; the figure is made anew for
    each other choice, so no two panes share one)."""
    def make():
        summary, _ = store.summary(metric)
        frame = points_frame(summary, x=x, category=category, paired=store.paired(metric))
        return frame, cost_accuracy_figure(frame, x=x, metric=metric)
    return store.cached(("cost chart", metric, x, category), f"cost-accuracy chart ({metric}, {x})", make,
                        (pd.DataFrame(), None))
