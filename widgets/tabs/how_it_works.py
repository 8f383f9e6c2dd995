"""The "How it works" tab: one page per method (``widgets.how_it_works``), its gallery example stepped through.

The methods listed are every registered method that declares ``how_it_works`` (a plugin's too), the run's own
first. The gallery example is read from ``<run>/gallery`` (``workbench demo`` replays it there); its answers are
stepped through with the Traces tab's own view over that run, so the stepper, the cards and the keys are the
ones the reader already knows.
"""
from __future__ import annotations

from pathlib import Path

import panel as pn

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
        paper_dir = self.gallery_dir.with_name(GALLERY_SUBDIR + "-paper")  # workbench.gallery.subdir("paper")
        page = HowItWorksPage.from_run(name, cls, gallery, paper_dir if paper_dir.is_dir() else None)
        self.page = page
        self.page_pane.object = page.html()
        self.trace_slot.objects = self._trace(page)

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
