"""What the app shows, in its URL: a view can be linked to, and a link opens on that view.

    http://127.0.0.1:5006/app?conv=sample-1&tab=Traces&q=sample-1%2Fq13&method=hymem&step=2&cmp=memr3&cstep=3

holds the conversation, the tab, the question and method (the Question tab's, or the Traces tab's
when that tab is shown), the trace step (1-based, as on screen) and, when two traces are side by
side, the compared method and its step; on the Lifecycle tab the turn (``turn=``) or the unit
(``unit=`` with ``method=``) shown, on Structures and How it works the method's page (``page=``); on Results the
chart's metric, cost axis and category (``metric=``, ``cost=``, ``chart=``) and the case finder's filters
(``category=``, ``disagree=1``, ``right=``, ``wrong=``, ``kind=``, ``why=`` for the attribution, ``words=``), each
written only when it is not what the tab opens on; on Events its filters (``kinds=`` and ``methods=``,
comma-separated, and ``search=``);
``present=1`` opens the app in presentation mode
(``WorkbenchApp.present``, also the header's "present" toggle: one header line, for a projector; larger text is
left to the browser's zoom). ``UrlState`` binds an
app to Panel's ``pn.state.location``
(a served page's ``window.location``): opening such a URL restores each part, and every change of
tab, conversation, question, method or step writes the query again (the browser's address bar and
history follow, through Panel's ``Location`` model).

A URL is untrusted input: anyone can hand one over. It is parsed here as plain strings
(``urllib.parse``: not ``Location.query_params``, which turns ``01`` into ``1`` and evaluates values
that start with ``[``), each value is only ever compared with the options the app already offers
(a conversation, question or method of the run, a tab name, a step in range), and anything else —
an unknown key, an id the run does not hold, a step past the end, an over-long or repeated value —
is ignored: the app opens as it would without it.
"""
from __future__ import annotations

from typing import Any, Mapping
from urllib.parse import parse_qsl, urlencode

#: query keys, in the order they are written
KEYS = ("conv", "tab", "q", "method", "cmp", "step", "cstep", "turn", "unit", "page", "metric", "cost", "chart",
        "category", "disagree", "right", "wrong", "kind", "why", "words", "kinds", "methods", "search", "present")
#: tabs whose one picker is a method's page (``page=``): its structures, or how it works
PAGE_TABS = ("Structures", "How it works")
#: tabs whose one method picker a link's ``method=`` sets (``page=`` too on the page tabs, where it wins)
METHOD_TABS = (*PAGE_TABS, "Memories")
#: the longest value looked at (ids in a run are far shorter; a longer one cannot match and is dropped)
MAX_VALUE = 500
#: the longest query parsed at all
MAX_QUERY = 8000
#: keys that only mean something in the Traces tab
TRACE_KEYS = ("cmp", "step", "cstep")
#: the case finder's filters (``widgets.case_finder.CaseFilter`` fields) by query key
CASE_KEYS = {"category": "category", "right": "right_with", "wrong": "wrong_with", "kind": "kind",
             "why": "attribution", "words": "words"}


def parse_query(search: Any) -> dict[str, str]:
    """The known keys of a URL query (``?a=1&b=2`` or ``a=1&b=2``) as strings: the first value of each,
    blank, over-long and unknown ones dropped. Never raises."""
    if not isinstance(search, str) or len(search) > MAX_QUERY:
        return {}
    out: dict[str, str] = {}
    try:
        pairs = parse_qsl(search.lstrip("?"), keep_blank_values=False, max_num_fields=64)
    except ValueError:  # more fields than max_num_fields
        return {}
    for key, value in pairs:
        if key in KEYS and key not in out and 0 < len(value) <= MAX_VALUE:
            out[key] = value
    return out


def query_string(state: Mapping[str, str]) -> str:
    """``state`` as a URL query (``?conv=...&tab=...``), keys in ``KEYS`` order; empty when there is nothing."""
    items = [(k, state[k]) for k in KEYS if state.get(k)]
    return "?" + urlencode(items) if items else ""


def step_number(value: str | None, n_steps: int) -> int | None:
    """A 1-based step written in a URL as a 0-based index, or None unless it is digits within 1..n_steps."""
    if not value or not value.isascii() or not value.isdigit() or len(value) > 6:
        return None
    k = int(value)
    return k - 1 if 1 <= k <= n_steps else None


def _pick(widget, value: str | None) -> bool:
    """Set a Select to ``value`` if it is one of its option values; say whether it was."""
    options = widget.options
    values = list(options.values()) if isinstance(options, Mapping) else list(options)
    if value is None or value not in values:
        return False
    widget.value = value
    return True


def _tab_index(app, name: str | None) -> int | None:
    names = list(app.slots)
    lowered = [n.lower() for n in names]
    return lowered.index(name.lower()) if name and name.lower() in lowered else None


def apply_state(app, state: Mapping[str, str]) -> None:
    """Show what ``state`` (``parse_query``'s strings) names in ``app`` (a ``WorkbenchApp``); each part
    that names nothing the app offers is ignored."""
    store = app.store
    if state.get("present") == "1" and hasattr(app, "present"):  # presentation mode: for a projector
        app.present(True)
    if state.get("conv") in (store.param["conv_id"].objects or ()):
        store.conv_id = state["conv"]
    q, method = state.get("q"), state.get("method")
    question = app.views["Question"]
    _pick(question.question, q)
    _pick(question.method, method)  # a method alone: on the question the tab opens on
    tab = _tab_index(app, state.get("tab"))
    if tab is not None and list(app.slots)[tab] == "Traces":
        traces = app.views["Traces"]
        _pick(traces.question, q)
        _pick(traces.method, method)
        if _pick(traces.compare, state.get("cmp")):
            i = step_number(state.get("cstep"), traces.other.n_steps)
            if i is not None:
                traces.other.goto(i)
        i = step_number(state.get("step"), traces.main.n_steps)
        if i is not None:
            traces.main.goto(i)
    name = list(app.slots)[tab] if tab is not None else None
    if name == "Lifecycle":
        _show_lifecycle(app.views["Lifecycle"], state)
    elif name in PAGE_TABS:  # ``page=`` as before, or ``method=`` as on every other tab
        _pick(app.views[name].method, state.get("page")) or _pick(app.views[name].method, method)
    elif name == "Memories":
        _pick(app.views[name].method, method)
    elif name == "Results":
        _show_results(app.views["Results"], state)
    elif name == "Events":
        _show_events(app.views["Events"], state)
    if tab is not None:
        app.tabs.active = tab


def _show_results(results, state: Mapping[str, str]) -> None:
    """The chart's metric first (it decides which categories the chart offers), then its cost axis and category;
    then the case finder's filters, each only when the grid offers that value."""
    _pick(results.metric, state.get("metric"))
    _pick(results.x, state.get("cost"))
    _pick(results.category, state.get("chart"))
    finder = getattr(results, "cases", None)
    if finder is None:
        return
    changes = {field: state[key] for key, field in CASE_KEYS.items() if state.get(key)}
    if state.get("disagree") == "1":
        changes["disagree"] = True
    if changes:
        finder.set_filter(**changes)


def _values(value: str | None, offered) -> list[str]:
    """A comma-separated list of the values ``offered`` (a picker's option values); anything else is dropped."""
    offered = list(offered.values()) if isinstance(offered, Mapping) else list(offered)
    return [v for v in dict.fromkeys((value or "").split(",")) if v in offered]


def _show_events(events, state: Mapping[str, str]) -> None:
    kinds = _values(state.get("kinds"), events.kinds.options)
    methods = _values(state.get("methods"), events.methods.options)
    if kinds:
        events.kinds.value = kinds
    if methods:
        events.methods.value = methods
    if state.get("search"):
        events.search.value = state["search"]


def _results_state(results) -> dict[str, str]:
    """The Results tab's controls that differ from what it opens on, as query values."""
    out: dict[str, str] = {}
    opened = getattr(results, "opened_on", {})
    for key, widget in (("metric", results.metric), ("cost", results.x), ("chart", results.category)):
        if widget.value != opened.get(key):
            out[key] = str(widget.value or "")
    finder = getattr(results, "cases", None)
    if finder is not None:
        flt = finder.filter
        out.update({key: str(getattr(flt, field)) for key, field in CASE_KEYS.items() if getattr(flt, field)})
        if flt.disagree:
            out["disagree"] = "1"
    return out


def _show_lifecycle(life, state: Mapping[str, str]) -> None:
    """``unit=`` (with ``method=``) opens that unit's lifecycle, else ``turn=`` that turn's; an id the run does not
    hold is ignored."""
    index, method, unit, turn = life.index, state.get("method"), state.get("unit"), state.get("turn")
    if index is None:
        return
    if unit and method in (life.method.values or ()) and index.has_unit(method, unit):
        life.show(("unit", method, unit))
    elif turn and turn in life.turn.options.values():
        life.show(("turn", turn))


def app_state(app, before: Mapping[str, str] = ()) -> dict[str, str]:
    """What ``app`` shows, as query values. On a tab other than Question and Traces the question and
    method are those of ``before`` (the last state written), so a link keeps them."""
    names = list(app.slots)
    tab = names[app.tabs.active] if 0 <= app.tabs.active < len(names) else None
    state = {"conv": app.store.conv_id or "", "tab": tab or ""}
    if tab == "Traces" and app.views.built("Traces"):
        traces = app.views["Traces"]
        state.update(q=traces.question.value or "", method=traces.method.value or "")
        if traces.main.n_steps:
            state["step"] = str(traces.main.index + 1)
        if traces.compared:
            state["cmp"] = traces.compared
            if traces.other.n_steps:
                state["cstep"] = str(traces.other.index + 1)
    elif tab == "Question" and app.views.built("Question"):
        question = app.views["Question"]
        state.update(q=question.question.value or "", method=question.selected or "")
    else:
        state.update({k: before[k] for k in ("q", "method") if before and before.get(k)})
        if tab == "Lifecycle" and app.views.built("Lifecycle"):
            target = app.views["Lifecycle"].target
            if target and target[0] == "turn":
                state["turn"] = target[1]
            elif target and target[0] == "unit":
                state.update(method=target[1], unit=target[2])
        elif tab in PAGE_TABS and app.views.built(tab):
            state["page"] = app.views[tab].method.value or ""
        elif tab == "Memories" and app.views.built(tab):
            state["method"] = app.views[tab].method.value or ""
        elif tab == "Results" and app.views.built("Results"):
            state.update(_results_state(app.views["Results"]))
        elif tab == "Events" and app.views.built("Events"):
            events = app.views["Events"]
            state.update(kinds=",".join(events.kinds.value or []), methods=",".join(events.methods.value or []),
                         search=events.search.value or "")
    if getattr(app, "presenting", False):
        state["present"] = "1"
    return {k: str(v) for k, v in state.items() if v}


class UrlState:
    """Binds ``app`` to ``location`` (``pn.state.location`` in a served page; any
    ``panel.io.location.Location`` in a test): restores what the location's query names, then writes
    the query whenever the view changes. The Question and Traces tabs are built lazily; their
    pickers are watched from the moment they exist."""

    def __init__(self, app, location):
        self.app, self.location = app, location
        self.state: dict[str, str] = {}
        self._watched: set[str] = set()
        self._applying = True
        try:
            apply_state(app, parse_query(getattr(location, "search", "")))
        finally:
            self._applying = False
        app.tabs.param.watch(lambda e: self._changed(), "active")
        app.store.param.watch(lambda e: self._changed(), "conv_id")
        if hasattr(app, "present_toggle"):
            app.present_toggle.param.watch(lambda e: self._changed(), "value")
        self._changed()

    def _watch_views(self) -> None:
        """Watch the pickers and steppers of the Question and Traces tabs once each is built."""
        views = self.app.views
        if "Question" not in self._watched and views.built("Question"):
            q = views["Question"]
            for w in (q.question, q.method):
                w.param.watch(lambda e: self._changed(), "value")
            self._watched.add("Question")
        if "Traces" not in self._watched and views.built("Traces"):
            t = views["Traces"]
            for w in (t.question, t.method, t.compare):
                w.param.watch(lambda e: self._changed(), "value")
            for pane in (t.main, t.other):
                pane.area.param.watch(lambda e: self._changed(), "index")
            self._watched.add("Traces")
        if "Lifecycle" not in self._watched and views.built("Lifecycle"):  # every show() redraws its body
            views["Lifecycle"].body.param.watch(lambda e: self._changed(), "object")
            self._watched.add("Lifecycle")
        if "Results" not in self._watched and views.built("Results"):
            r = views["Results"]
            widgets = [r.metric, r.x, r.category]
            finder = getattr(r, "cases", None)
            if finder is not None:  # the words on Enter: not a new address per key pressed
                widgets += [finder.category, finder.disagree, finder.right_with, finder.wrong_with, finder.kind,
                            finder.attribution, finder.words]
            for w in widgets:
                w.param.watch(lambda e: self._changed(), "value")
            self._watched.add("Results")
        if "Events" not in self._watched and views.built("Events"):
            e = views["Events"]
            for w in (e.kinds, e.methods, e.search):
                w.param.watch(lambda ev: self._changed(), "value")
            self._watched.add("Events")
        for name in METHOD_TABS:
            if name not in self._watched and views.built(name):
                views[name].method.param.watch(lambda e: self._changed(), "value")
                self._watched.add(name)

    def _changed(self) -> None:
        self._watch_views()
        if self._applying:
            return
        self.state = app_state(self.app, self.state)
        search = query_string(self.state)
        if search != self.location.search:
            self.location.search = search
