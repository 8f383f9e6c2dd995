"""The Results tab: the case finder (every question against every method) first, then the summary tables with
their audits, and cost against accuracy."""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

import pandas as pd
import panel as pn

from widgets import case_finder as cf

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
from widgets.question import ATTRIBUTION_WORDS
from widgets.panel_parts import (
    LinkHTML,
    html_pane,
    text_table,
)
from widgets.plotly_loader import defer
from widgets.run_store import RunStore
from workbench.methods import display_options


#: the case finder's conversation picker: every conversation of the run
ALL_CONVERSATIONS = "(all conversations)"


class CaseFinderPanel:
    """The case finder (``widgets.case_finder``) bound to Panel widgets: filters, a pager, and the grid, whose
    cells open that method's answer on the Question tab (``follow``, set by ``ResultsView`` from the app's; a
    question of another conversation switches the app's conversation first). The conversation picker follows
    the header's unless "(all conversations)" is picked."""

    def __init__(self, store: RunStore):
        self.store = store
        self.follow: Callable[[tuple], None] | None = None
        convs = list(store.param.conv_id.objects or [])
        self.conv = pn.widgets.Select(label="conversation", options=[ALL_CONVERSATIONS, *convs],
                                      value=store.conv_id or ALL_CONVERSATIONS, width=180,
                                      visible=len(convs) > 1)
        self.category = pn.widgets.Select(label="category", options={"(any)": cf.ANY}, width=150)
        self.disagree = pn.widgets.Checkbox(label="methods disagree", value=False, align="end", width=150,
                                            margin=(10, 10, 14, 10))
        self.right_with = pn.widgets.Select(label="right with", options={"(any)": cf.ANY}, width=170)
        self.wrong_with = pn.widgets.Select(label="wrong with", options={"(any)": cf.ANY}, width=170)
        self.kind = pn.widgets.Select(label="kind of error", options={"(any)": cf.ANY}, width=150)
        self.attribution = pn.widgets.Select(label="attribution", options={"(any)": cf.ANY}, width=150)
        self.words = pn.widgets.TextInput(label="question words", placeholder="words of the question, any order",
                                          width=240)
        self.summary = html_pane("")
        self.prev_button = pn.widgets.Button(label="◀ previous", width=110)
        self.next_button = pn.widgets.Button(label="next ▶", width=90)
        self.pager = html_pane("", width=380)
        self.grid = LinkHTML("", on_link=self.open)
        self.page = 0
        self._quiet = False
        for w in (self.category, self.disagree, self.right_with, self.wrong_with, self.kind, self.attribution):
            w.param.watch(lambda e: self._filtered(), "value")
        self.words.param.watch(lambda e: self._filtered(), "value_input")
        self.conv.param.watch(lambda e: self.load(), "value")
        self.prev_button.on_click(lambda e: self.turn_page(-1))
        self.next_button.on_click(lambda e: self.turn_page(+1))
        store.param.watch(lambda e: self._followed(), "conv_id")
        self.panel = pn.Column(
            html_pane("<h4 style='margin:4px 0 0'>Case finder: every question against every method</h4>"),
            pn.Row(self.conv, self.category, self.disagree, self.words, sizing_mode="stretch_width"),
            pn.Row(self.right_with, self.wrong_with, self.kind, self.attribution, sizing_mode="stretch_width"),
            self.summary, pn.Row(self.prev_button, self.next_button, self.pager), self.grid,
            html_pane(box(cf.LEGEND)), sizing_mode="stretch_width", css_classes=["wb-case-finder"])
        self.load()

    def _followed(self) -> None:
        """The header's conversation changed: the grid follows it, unless it shows the whole run."""
        if self.conv.value != ALL_CONVERSATIONS and self.store.conv_id in self.conv.options:
            self.conv.value = self.store.conv_id

    def load(self) -> None:
        """The cases of the picked scope, and the filters' options from them (a filter whose value they no
        longer offer is reset)."""
        scope = None if self.conv.value == ALL_CONVERSATIONS else self.conv.value
        self.cases = cf.store_cases(self.store, scope)
        self.methods = cf.case_methods(self.cases)
        # Bokeh's Select writes its option labels as text (DOM text nodes), so run strings go in as they are
        methods = {"(any)": cf.ANY, **display_options(self.methods)}
        choices = {self.category: {"(any)": cf.ANY, **{c: c for c in cf.categories(self.cases)}},
                   self.right_with: methods, self.wrong_with: methods,
                   self.kind: {"(any)": cf.ANY, **{k: k for k in cf.error_kinds(self.cases)}},
                   self.attribution: {"(any)": cf.ANY, **{ATTRIBUTION_WORDS.get(a, a): a
                                                          for a in cf.attributions(self.cases)}}}
        self._quiet = True
        try:
            for widget, options in choices.items():
                keep = widget.value if widget.value in options.values() else cf.ANY
                widget.options = options
                widget.value = keep
        finally:
            self._quiet = False
        self._filtered()

    @property
    def filter(self) -> cf.CaseFilter:
        return cf.CaseFilter(category=self.category.value or cf.ANY, disagree=bool(self.disagree.value),
                             right_with=self.right_with.value or cf.ANY, wrong_with=self.wrong_with.value or cf.ANY,
                             kind=self.kind.value or cf.ANY, attribution=self.attribution.value or cf.ANY,
                             words=self.words.value_input or "")

    def set_filter(self, **changes) -> None:
        """Set filters by ``CaseFilter`` field name (a test, a link): the widgets follow, then the grid once."""
        flt = replace(self.filter, **changes)
        self._quiet = True
        try:
            for name in ("category", "disagree", "right_with", "wrong_with", "kind", "attribution"):
                widget = getattr(self, name)
                value = getattr(flt, name)
                if name == "disagree" or value in (widget.options.values() if isinstance(widget.options, dict)
                                                   else widget.options):
                    widget.value = value
            self.words.value = self.words.value_input = flt.words
        finally:
            self._quiet = False
        self._filtered()

    def _filtered(self) -> None:
        if self._quiet:
            return
        self.shown = cf.filter_cases(self.cases, self.filter)
        self.page = 0
        self.summary.object = box(f"<p style='margin:2px 0'><b>{esc(cf.summary_text(self.shown, len(self.cases)))}"
                                  "</b></p>")
        self.show_page()

    def turn_page(self, step: int) -> None:
        self.page = max(0, min(cf.pages(len(self.shown)) - 1, self.page + step))
        self.show_page()

    def show_page(self) -> None:
        n = len(self.shown)
        self.pager.object = box(f"<p style='margin:6px 0'>{esc(cf.pager_text(n, self.page))}</p>")
        self.prev_button.disabled = self.page == 0
        self.next_button.disabled = self.page >= cf.pages(n) - 1
        self.grid.object = cf.grid_html(self.shown, self.methods, links=True, page=self.page)

    def open(self, target: tuple) -> None:
        """A cell (or a question id) was clicked: that answer on the Question tab, in its own conversation."""
        if target[0] != "question" or self.follow is None:
            return
        case = next((c for c in self.cases if c.qa_id == target[1]), None)
        if case is not None and case.conv_id != self.store.conv_id \
                and case.conv_id in (self.store.param.conv_id.objects or ()):
            self.store.conv_id = case.conv_id
        self.follow(target)


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
        self.cases = CaseFinderPanel(store)  # the tab's first view: where a case study starts
        self.cases.follow = lambda target: self.follow and self.follow(target)
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
        #: what the tab opens on: a link (``widgets.url_state``) writes only the controls changed from it
        self.opened_on = {"metric": self.metric.value, "cost": self.x.value, "chart": ALL}
        self.metric.param.watch(lambda e: self.refresh(), "value")
        self.x.param.watch(lambda e: self.draw(), "value")
        self.category.param.watch(lambda e: self.draw(), "value")
        self.panel = pn.Column(self.cases.panel,
                               html_pane("<h4 style='margin:14px 0 0'>Summary: each method by category, and cost "
                                         "against accuracy</h4>"),
                               self.banner, pn.Row(self.metric, self.x, self.category), self.note, self.table,
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
