"""The "How it works" tab: one page per method (``widgets.how_it_works``), its gallery example stepped through.

The methods listed are every registered method that declares ``how_it_works`` (a plugin's too), the run's own
first. The gallery example is read from ``<run>/gallery`` (``workbench demo`` replays it there); its answers are
stepped through with the Traces tab's own view over that run, so the stepper, the cards and the keys are the
ones the reader already knows.

Where the example has a reference file (``sample_data/reference``), its designed run (issue #64: the method's
code on replies written by hand) is made on first view into ``<run>/designed/<method>`` and stepped beside the
model's: two trace panes, the designed run's labelled "reference replies written by hand, not a model", the
model's (small or paper profile) opened at the step where it leaves the designed path, with that place said.
"""
from __future__ import annotations

from pathlib import Path

import panel as pn

from widgets.designed_view import attach
from widgets.how_it_works import HowItWorksPage
from widgets.html import box, esc
from widgets.panel_parts import html_pane, message
from widgets.run_store import RunStore
from workbench.methods import display_options, method_base

#: the folder of a run that holds the replayed gallery (``workbench.gallery.SUBDIR``)
GALLERY_SUBDIR = "gallery"


def explained_methods(run_methods=()) -> dict[str, type]:
    """``name -> class`` of the registered methods with a "How it works" page, in registry order: those with a
    gallery example first (the mechanisms a lecture is about), then the others; a method of the run that is not
    registered has no page. An alias that shares another method's page (a deprecated name) is listed once,
    under the first name."""
    from workbench.methods import REGISTRY

    def has_example(name):
        return bool(getattr(getattr(REGISTRY[name], "how_it_works", None), "gallery", None))

    order = sorted(REGISTRY, key=lambda n: not has_example(n))  # stable: registry order within each group
    out, seen = {}, set()
    for name in order:
        cls = REGISTRY.get(name)
        how = getattr(cls, "how_it_works", None)
        if how is None or id(how) in seen:
            continue
        seen.add(id(how))
        out[name] = cls
    for name in dict.fromkeys(method_base(m) for m in run_methods):  # the run's methods without a page, last:
        if name not in out and getattr(REGISTRY.get(name), "how_it_works", None) is None:  # the page says why
            out[name] = REGISTRY.get(name)
    return out


def undeclared_html(name: str, cls) -> str:
    """The page of a method of the run with no declaration: what it would take to have one."""
    what = ("is not a registered method here, so nothing is known of how it works" if cls is None else
            "declares no How it works page. A method gets one by setting the class attribute how_it_works to a "
            "workbench.methods.explain.HowItWorks (two plain sentences, its pipeline, optionally a gallery example): "
            "see docs/method-contract.md")
    return box(f"<p><b>{esc(name)}</b> {esc(what)}.</p>")


class HowItWorksView:
    """A method picker, the method's page, and (when the run holds its gallery example) the Traces view over
    the example's answers."""

    def __init__(self, store: RunStore):
        self.store = store
        self.classes = explained_methods(store.methods)
        self.gallery_dir = Path(store.run_dir) / GALLERY_SUBDIR
        self.method = pn.widgets.RadioButtonGroup(options=display_options(self.classes),
                                                  variant="outline", color="primary", sizing_mode="stretch_width",
                                                  margin=(4, 10))
        self.page_pane = html_pane("")
        self.trace_slot = pn.Column(sizing_mode="stretch_width")
        self.traces = None
        self.beside = None  # the designed run's trace beside the model's (``DesignedBeside``)
        self.make_designed: set[str] = set()  # methods whose designed run this view was asked to make
        self.method.param.watch(lambda e: self.show(), "value")
        self.panel = pn.Column(self.method, self.page_pane, self.trace_slot, sizing_mode="stretch_width")
        if not self.classes:
            self.panel.objects = [message("No registered method declares how it works.")]
            return
        # the first page (in the picker's order) of a method the run holds, else the first page
        held = {method_base(m) for m in store.methods}
        first = next((n for n in self.classes if n in held and getattr(self.classes[n], "how_it_works", None)),
                     next(iter(self.classes)))
        if self.method.value != first:
            self.method.value = first  # triggers show
        else:
            self.show()

    def show(self, method: str | None = None) -> None:
        """Show ``method``'s page (default: the picker's choice); a name of the run (``ama[probe]``) shows its base."""
        if method is not None:
            base = method_base(method)
            if base in self.classes and self.method.value != base:
                self.method.value = base  # comes back here through the watcher
                return
        name = self.method.value
        if name not in self.classes:
            return
        cls = self.classes[name]
        if getattr(cls, "how_it_works", None) is None:
            self.page = None
            self.page_pane.object = undeclared_html(name, cls)
            self.trace_slot.objects = []
            return
        gallery = self.gallery_dir if self.gallery_dir.is_dir() else None
        paper_dir = self.paper_dir
        make = name in self.make_designed  # made on demand: the button below, once per method
        page = HowItWorksPage.from_run(name, cls, gallery, paper_dir if paper_dir.is_dir() else None)
        attach(page, self.store.run_dir, make=make)
        self.page = page
        self.page_pane.object = page.html()
        self.trace_slot.objects = self._designed(page) + self._trace(page)

    def _make(self, name: str) -> None:
        """Make the designed run of ``name``'s example (the button), then show the page again with it."""
        self.make_designed.add(name)
        self.make_button.disabled, self.make_button.label = True, "Making the designed run ..."
        self.show()

    @property
    def paper_dir(self) -> Path:
        return self.gallery_dir.with_name(GALLERY_SUBDIR + "-paper")  # workbench.gallery.subdir("paper")

    def _designed(self, page: HowItWorksPage) -> list:
        """The designed run's answers beside the model's, each in its own trace pane; empty without one."""
        designed = page.designed
        self.beside = None
        if designed is not None and designed.pending:
            self.make_button = pn.widgets.Button(label="Make the designed run (the method's code on the reference "
                                                 "replies, some tens of seconds)", color="primary",
                                                 margin=(4, 10))
            self.make_button.on_click(lambda e: self._make(page.name))
            return [self.make_button]
        if designed is None or designed.example is None or not designed.example.rows or page.example is None:
            return []
        self.beside = DesignedBeside(page, self.gallery_dir, self.paper_dir)
        return [self.beside.panel]

    def _trace(self, page: HowItWorksPage) -> list:
        """The example's answers in the Traces view (over the gallery run, on the example's conversation)."""
        if page.example is None:
            return []
        from widgets.tabs.traces import TracesView

        gallery = RunStore(self.gallery_dir)
        if page.how.gallery not in gallery.param.conv_id.objects:
            return []
        gallery.conv_id = page.how.gallery
        self.traces = TracesView(gallery)
        if page.name in self.traces.method.values:
            self.traces.method.value = page.name
        return [html_pane("<h4 style='font-family:system-ui,sans-serif;margin:10px 0 0 10px'>Step through the "
                          "example: the method's answer, one step at a time</h4>"), self.traces.panel]


class DesignedBeside:
    """The designed run's trace and a model run's trace of the same question, side by side, each with its own
    stepper (``widgets.tabs.traces.TracePane``). The designed pane carries its label; the model pane (small or
    paper profile) opens at the step where that run leaves the designed path while answering, and says where it
    left it otherwise (while building the memory)."""

    def __init__(self, page: HowItWorksPage, gallery_dir: Path, paper_dir: Path):
        from widgets.designed_view import PROFILE_WORDS, label_html
        from widgets.tabs.traces import TracePane

        self.page = page
        designed = page.designed
        self.stores = {"designed": RunStore(designed.dir), "small": RunStore(gallery_dir)}
        if page.paper is not None:
            self.stores["paper"] = RunStore(paper_dir)
        for st in self.stores.values():
            if page.how.gallery in st.param.conv_id.objects:
                st.conv_id = page.how.gallery
        self.examples = {"designed": designed.example, "small": page.example, "paper": page.paper}
        questions = {str(r.get("question")): str(r.get("qa_id")) for r in designed.example.rows}
        self.question = pn.widgets.Select(label="question", options=questions, sizing_mode="stretch_width")
        runs = {f"{PROFILE_WORDS[p]} ({designed.comparisons[p].who})" if p in designed.comparisons
                else PROFILE_WORDS[p]: p for p in ("small", "paper") if p in self.stores}
        self.profile = pn.widgets.RadioButtonGroup(options=runs, value=next(iter(runs.values())),
                                                   variant="outline", color="primary")
        self.left = TracePane(self.stores["designed"])
        self.left.export.visible = False  # an export would carry no label: the pane is viewed here only
        self.right = TracePane(self.stores[self.profile.value])
        self.left_head = html_pane(box(f"<b>Designed run</b> {label_html()}<br><small class='wb-muted'>"
                                       "the method's own code (paper profile) on replies a person wrote</small>"))
        self.right_head = html_pane("")
        self.question.param.watch(lambda e: self.load(), "value")
        self.profile.param.watch(lambda e: self.load(), "value")
        self.body = pn.Row(pn.Column(self.left_head, self.left.column, sizing_mode="stretch_width"),
                           pn.Column(self.right_head, self.right.column, sizing_mode="stretch_width"),
                           sizing_mode="stretch_width")
        self.panel = pn.Column(
            html_pane("<h4 style='font-family:system-ui,sans-serif;margin:10px 0 0 10px'>Step through both: the "
                      "designed run (reference replies written by hand, not a model) beside the model's</h4>"),
            pn.Row(self.question, self.profile, sizing_mode="stretch_width"), self.body, sizing_mode="stretch_width")
        self.load()

    def _row(self, run: str, qa_id: str):
        ex = self.examples.get(run)
        return next((r for r in (ex.rows if ex else ()) if str(r.get("qa_id")) == qa_id), None), ex

    def load(self) -> None:
        from widgets.designed_view import PROFILE_WORDS
        from workbench.trace import Answer

        qa_id, run = self.question.value, self.profile.value
        for pane, which in ((self.left, "designed"), (self.right, run)):
            row, ex = self._row(which, qa_id)
            if pane is self.right:
                pane.store = self.stores[which]
            qa = next((q for q in ex.conversation.qa if q.id == qa_id), None) if ex else None
            pane.show(Answer.from_dict(row["answer"]) if row else None, method=self.page.name, qa=qa)
        at = self.page.divergence_at(run)
        here = self.page.designed.on_question(self.page, run, qa_id)
        if at is not None and at[0] == qa_id:
            self.right.goto(at[1])
        elif here is not None:
            self.right.goto(here[1])
        if here is not None and here[0]["designed"] is not None:  # the designed pane at its side of that step
            from widgets.designed_view import divergence_step

            mine = divergence_step(self.examples["designed"], {"model": here[0]["designed"]})
            if mine is not None and mine[0] == qa_id:
                self.left.goto(mine[1])
        intro = self.page.stepper_intro(run, qa_id)
        self.right_head.object = box(f"<b>{esc(PROFILE_WORDS[run].capitalize())}, recorded</b><br>"
                                     f"<small>{intro or 'it takes every step of the designed path'}</small>")
