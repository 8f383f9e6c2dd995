"""The Structures tab, and its registry of structure views (by kind, or by a method's own name)."""
from __future__ import annotations

import importlib
import pkgutil
import re
from typing import Any, Callable

import panel as pn

from widgets.html import box, json_html, link_html, method_title_html
from widgets.panel_parts import (
    LinkHTML,
    html_pane,
    message,
)
from widgets.plotly_loader import defer, place
from widgets.run_store import RunStore
from widgets.structure_cards import CARDS as STRUCTURE_CARDS
from widgets.structure_cards import declared_view
from workbench.methods import display_name, display_options, method_base

#: method name -> function(structures: dict, conversation) -> panel object (the Structures tab)
STRUCTURE_VIEWS: dict[str, Callable[[dict, Any], Any]] = {}


def register_structure_view(method: str, *, files: bool = False):
    """Decorator: show ``fn(structures, conversation)`` in the Structures tab for ``method``.
    ``files=True``: called as ``fn(structures, conversation, **files)`` with the memory's
    ``memories`` rows, ``params`` and ``backend_params`` (params.json contents), ``views``
    (the methods that have a structure view) and ``method`` (the run's name of the method shown)."""
    def deco(fn):
        fn.structure_files = files  # read by StructuresView.section
        STRUCTURE_VIEWS[method] = fn
        return fn
    return deco


def _card_view(card):
    """A structure card of ``widgets.structure_cards`` (HTML from the saved files) as a Panel view."""
    def view(structures, conversation, **files):
        return LinkHTML(card(structures, conversation, **files))  # its "jump to" links scroll within the pane
    view.__doc__ = card.__doc__
    return view


for _kind, _card in STRUCTURE_CARDS.items():  # under their kind: a method declares which it uses
    register_structure_view(_kind, files=True)(_card_view(_card))


def views_available() -> list[str]:
    """The names with a structure view here: registered views (kinds and method names) and every registered
    method whose declared kind has one."""
    from workbench.methods import REGISTRY

    return sorted({*STRUCTURE_VIEWS, *(n for n in REGISTRY if (declared_view(n) or "") in STRUCTURE_VIEWS)})


def load_structure_views() -> list[str]:
    """Import every ``widgets/*_view.py`` / ``*_views.py`` module (each registers its views here).
    Returns the problems met: a module that fails to import is reported in the app, not raised."""
    import widgets

    problems = []
    for info in pkgutil.iter_modules(widgets.__path__):
        if info.name.endswith(("_view", "_views")):
            try:
                importlib.import_module(f"widgets.{info.name}")
            except Exception as exc:  # an optional view must not stop the app; shown in its header
                problems.append(f"widgets.{info.name}: {type(exc).__name__}: {exc}")
    return problems


STRUCTURE_TITLE_STYLE = ("margin:14px 0 4px;padding:6px 10px;background:#f3f3f3;border-radius:4px;"
                         "font-size:15px;font-family:system-ui,sans-serif")
STRUCTURES_LEAD = ("<p>What each method built from this conversation, read from the run's saved memory files: pick "
                   "a method.</p>")


class StructuresView:
    """Per method: its registered structure view, or its structures.json content with a notice. One method is
    shown at a time, chosen with a picker above it (``method``): the ten-method demo run as one page was a
    20,000-pixel scroll with no way to jump to a method (usability review)."""

    def __init__(self, store: RunStore):
        self.store = store
        self.method = pn.widgets.RadioButtonGroup(options=[], variant="outline", color="primary",
                                                  sizing_mode="stretch_width", margin=(4, 10))
        self.method.param.watch(lambda e: self.show(), "value")
        self.panel = pn.Column(sizing_mode="stretch_width")
        self.follow: Callable[[tuple], None] | None = None  # set by WorkbenchApp: the method's How it works link
        self.how_link = LinkHTML("", on_link=lambda target: self.follow and self.follow(target))
        self.shown: dict[str, pn.Column] = {}
        store.param.watch(lambda e: self.load(), "conv_id")
        self.load()

    def load(self) -> None:
        self.sections = {m: self.section(m) for m in self.store.methods}
        self.shown = {}
        if not self.sections:
            self.panel.objects = [message("This run has no saved memories, so no structures.")]
            return
        names = list(self.sections)
        keep = self.method.value if self.method.value in names else names[0]
        self.method.options = display_options(names)
        if self.method.value != keep:
            self.method.value = keep  # triggers show
        else:
            self.show()

    def _column(self, m: str) -> pn.Column:
        """One method's section: a heading, then its body, drawn after the heading (``defer``). A plain Column,
        not a pn.Card (cards cost about 1 s on the ten-method demo run, bench_ui). A method name is a folder name
        of the run, so the heading is escaped."""
        if m not in self.shown:
            self.shown[m] = pn.Column(
                html_pane(f"<h3 class='wb-structure-title' style='{STRUCTURE_TITLE_STYLE}'>"
                          f"{method_title_html(m)}</h3>"),
                defer(pn.Column(*self.sections[m], sizing_mode="stretch_width")),
                sizing_mode="stretch_width", css_classes=["wb-structure"])
        return self.shown[m]

    def show(self, method: str | None = None) -> None:
        """Show ``method``'s section (default: the picker's choice)."""
        if method is not None and method in self.sections:
            self.method.value = method  # comes back here through the watcher
            return
        chosen = self.method.value
        if chosen not in self.sections:
            return
        how = link_html(f"how {display_name(chosen)} works", "method", chosen,
                        title="its description, pipeline and gallery example")
        self.how_link.object = box(f"<p style='margin:0 0 0 10px'>{how} →</p>")
        # placed, not set: the app holds this layout's charts until plotly.js is in the page (a deep link's first
        # paint comes before it), and a section swapped in here must wait for it too
        place(self.panel, [html_pane(box(STRUCTURES_LEAD)), self.method, self.how_link, self._column(chosen)])

    def headings(self) -> list[str]:
        """Each method's section heading (its escaped HTML text, tags removed), in picker order: the one shown
        and those a click on the picker shows."""
        return [re.sub(r"<[^>]+>", "", str(self._column(m).objects[0].object)) for m in self.sections]

    def files(self, method: str) -> dict:
        """What a ``files=True`` view reads besides structures.json (read errors land in the header)."""
        return {"memories": self.store.memory_rows(method), "params": self.store.params(method),
                "backend_params": self.store.params(method, backend=True),
                "views": views_available(), "method": method}

    def section(self, method: str) -> list:
        """A method's section: its own structure view (registered for its name or base, or the kind of view it
        declares), then each structure part it declares by kind (``workbench.structures``), drawn by
        ``widgets.structure_kinds``; structures.json as JSON only when it has neither."""
        data = self.store.structures(method)
        # a view registered for the method itself (or its base: ama[probe] -> ama), else the kind it declares
        view = (STRUCTURE_VIEWS.get(method) or STRUCTURE_VIEWS.get(method_base(method))
                or STRUCTURE_VIEWS.get(declared_view(method) or ""))
        out = []
        if view is not None:
            try:
                if getattr(view, "structure_files", False):
                    out.append(view(data, self.store.conversation(), **self.files(method)))
                else:
                    out.append(view(data, self.store.conversation()))
                out = [x for x in out if x is not None]  # None: the view has nothing here (declared parts may)
            except Exception as exc:  # a broken view must not take the app down; shown in its card
                out.append(message(f"structure view for {method} failed: {type(exc).__name__}: {exc}", "danger"))
        parts = declared_parts(data, self.store.conversation(), method)
        if parts:
            return out + parts
        if out:
            return out
        body = json_html(data) if data else "<p class='wb-muted'>structures.json is empty for this method.</p>"
        return [message(f"no structure view for this method ({method}), and its structures.json declares no "
                        "structure kind (docs/method-contract.md, \"Structure kinds\"): it is shown as JSON",
                        "info"), html_pane(box(body))]


def _drawn(items: list) -> list:
    """A kind's drawing (HTML strings and plotly figures) as Panel panes."""
    return [html_pane(x) if isinstance(x, str) else pn.pane.Plotly(x, sizing_mode="stretch_width") for x in items]


def declared_parts(data, conversation, method: str = "") -> list:
    """The Panel panes of every part ``data`` (a structures.json dict) declares by kind: a documented kind drawn by
    ``widgets.structure_kinds``, another kind by the view installed for it under the entry point group
    ``workbench.structures.STRUCTURE_VIEW_GROUP`` (loaded here, only when such a part is drawn), a part that breaks
    its kind's format as its problems. [] when it declares none."""
    from widgets.structure_kinds import draw_part, problems_html
    from workbench.structures import KINDS, parts_of, validate_structures

    parts = parts_of(data)
    if not parts:
        return []
    if not isinstance(data.get("parts", []), list):
        return [html_pane(problems_html(validate_structures(data), f"{method} structures.json"))]
    single = "kind" in data
    extra = {} if all(isinstance(p, dict) and p.get("kind") in KINDS for p in parts) else _view_entry_points()
    out = []
    for i, part in enumerate(parts):
        where = "structures" if single else f"parts[{i}]"
        kind = part.get("kind") if isinstance(part, dict) else None
        if kind not in KINDS and kind in extra:
            try:
                out.append(extra[kind].load()(part, conversation))
            except Exception as exc:  # a plugin's view must not take the tab down: said in its place
                out.append(message(f"the view installed for structure kind {kind!r} ({extra[kind].value}) failed on "
                                   f"{where}: {type(exc).__name__}: {exc}", "danger"))
            continue
        try:
            out += _drawn(draw_part(part, conversation, where=where, extra_kinds=tuple(extra)))
        except Exception as exc:  # a drawing that fails on odd data: said in its place, the others drawn
            out.append(message(f"{where} ({kind}) could not be drawn: {type(exc).__name__}: {exc}", "danger"))
    return out


def _view_entry_points() -> dict:
    from workbench.structures import view_entry_points

    try:
        return view_entry_points()
    except Exception as exc:  # broken package metadata: no extra views, said once in the log
        import logging

        logging.getLogger(__name__).warning("structure view entry points unreadable: %s", exc)
        return {}


# ------------------------------------------------------------------------------------------------
