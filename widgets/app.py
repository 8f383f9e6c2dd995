"""The Memory Workbench Panel app: browse a saved run directory, read-only.

    panel serve widgets/app.py --auth-module widgets/host_auth.py --address 127.0.0.1 --args --run runs/demo
    python -m widgets.app --run runs/demo --port 5006        # or serve(run_dir) from Python / the CLI

The app has no login of its own: it binds to 127.0.0.1, and ``serve``/``python -m widgets.app``
refuse any other address unless told ``--allow-remote`` (then print a warning). To share it,
put it behind Panel's own ``--basic-auth`` or OAuth options (``--oauth-provider`` ...) or a
proxy that authenticates.

Tabs: Question (the app opens on it: one question, every method's answer, judge and F1 flags,
failure attribution, the rank of gold evidence in what each reader saw, that context expandable,
and a button to the method's trace), Conversations, Memories (full-text and embedding search,
kind filter, the selected unit's lifecycle), Lifecycle (a turn -> every unit each method derived
from it -> that unit's events and the answers whose reader saw it; ids are links), Traces (each
method's answer to a question, stepped through), Events (every method's changes on the
conversation's own time axis, paged table with before/after side by side), Results
(per-category tables with bootstrap CIs, cost vs accuracy) and Structures (method-specific views
registered in ``STRUCTURE_VIEWS``).

Structure (param/Panel style): ``RunStore`` owns the data, read through ``workbench.rundir.RunDir``
only (never unpickling); one small view class per tab; ``build_app`` composes them. A missing or
malformed part of the run shows a message in its tab, never a traceback. All conversation and
model text is escaped (``widgets.html.esc``) and tables render cells as plain text. A run
directory may come from someone else: folder and file names, JSON keys and manifest values are
data too, escaped wherever they become HTML (card titles, table headers, option labels); long
texts are cut in tables and collapsed behind an expand control (``<details>``) elsewhere.
"""
from __future__ import annotations

import argparse
import ipaddress
import os
import socket
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Callable, Sequence

import panel as pn

from widgets.cost_accuracy import (
    ALL,
)
from widgets.host_guard import allowed_names, guard_hosts, host_allowed
from widgets.html import box, esc
from widgets.mechanisms_census import census_pane
from widgets.panel_parts import (  # noqa: F401 - re-exported
    _SKIPPED_LINE,
    _VECTORS,
    _VECTORS_LOCK,
    CELL_LIMIT,
    DEFAULT_RUN,
    MAX_PROBLEMS_SHOWN,
    READ_ERRORS,
    TEXT_COLUMNS,
    VECTOR_CACHE_SIZE,
    LinkHTML,
    cap_cell,
    html_pane,
    in_server_session,
    message,
    plain_formatters,
    problem_source,
    problems_html,
    show_frame,
    text_table,
)
from widgets.plotly_loader import PlotHolder, PlotlyLoader
from widgets.run_store import RunStore, _cell_words, memories_frame  # noqa: F401 - re-exported
from widgets.tab_keys import TabKeys
from widgets.tabs.conversations import ConversationsView  # noqa: F401 - re-exported
from widgets.tabs.events import EventsView  # noqa: F401 - re-exported
from widgets.tabs.how_it_works import HowItWorksView
from widgets.tabs.lifecycle import LifecycleTab  # noqa: F401 - re-exported
from widgets.tabs.memories import MemoriesView  # noqa: F401 - re-exported
from widgets.tabs.question import QuestionTab, _export_name  # noqa: F401 - re-exported
from widgets.tabs.results import ResultsView, _fmt, cost_chart, results_table_html  # noqa: F401 - re-exported
from widgets.tabs.structures import (  # noqa: F401 - re-exported
    STRUCTURE_TITLE_STYLE,
    STRUCTURE_VIEWS,
    STRUCTURES_LEAD,
    StructuresView,
    _card_view,
    load_structure_views,
    register_structure_view,
    views_available,
)
from widgets.tabs.traces import TracesView  # noqa: F401 - re-exported
from workbench.eval.labels import label_problems
from workbench.methods import display_name, method_base
from workbench.methods.registry import plugin_problems
from workbench.words import counted

TABS = (("Question", QuestionTab), ("Conversations", ConversationsView), ("Memories", MemoriesView),
        ("Lifecycle", LifecycleTab), ("Traces", TracesView), ("Events", EventsView), ("Results", ResultsView),
        ("Structures", StructuresView), ("How it works", HowItWorksView))


class LazyViews(Mapping):
    """``name -> view`` of the app's tabs, each view built the first time it is asked for (its tab
    shown, a link into it followed, the prewarm step, a test reading it). Iterating gives every
    name in tab order without building anything; ``built`` says which exist."""

    def __init__(self, names, build: Callable[[str], Any]):
        self._names, self._build, self._views = list(names), build, {}

    def __getitem__(self, name: str):
        if name not in self._views:
            if name not in self._names:
                raise KeyError(name)
            self._views[name] = self._build(name)
        return self._views[name]

    def __iter__(self):
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def built(self, name: str) -> bool:
        return name in self._views


def variant_notes(methods, params_of) -> list[str]:
    """One line per labelled variant in the run (``ama[paper-judge]``, ``MemoryMethod.labelled``):
    which method it is a second configuration of, and the parameters that differ, read from the
    saved ``params.json`` of each (``params_of(method)``), so a reader knows why two AMA rows differ."""
    out = []
    for name in methods:
        base = method_base(name)
        if name == base:
            continue
        if base not in methods:
            out.append(f"{name}: a second configuration of {base}, which this run does not hold.")
            continue
        mine = (params_of(name) or {}).get("params") or {}
        theirs = (params_of(base) or {}).get("params") or {}
        diff = [f"{k} = {mine.get(k)!r} ({base}: {theirs.get(k)!r})" for k in sorted(set(mine) | set(theirs))
                if mine.get(k) != theirs.get(k)]
        what = "; ".join(diff) if diff else "no parameter differs in their saved params.json"
        out.append(f"{name} is {base} run again beside it: {what}.")
    return out


def departure_notes(methods, params_of, dataset: str | None = None) -> list[str]:
    """One line per saved parameter value that leaves the method's paper (``MemoryMethod.param_notes``),
    read from each method's ``params.json``: a recording made with a workbench option says so on screen.
    ``dataset``: the run's (a paper may set values per dataset: RecMem's LongMemEval thresholds)."""
    from workbench.methods import REGISTRY

    out = []
    for name in methods:
        cls = REGISTRY.get(method_base(name))
        params = (params_of(name) or {}).get("params") or {}
        out += [f"{name}: {note}." for note in (cls.departures(params, dataset) if cls else [])]
    return out


def departures_by_method(notes: list[str]) -> str:
    """The header's departure lines grouped under their method, one folded list each with its count, so a reader
    finds one method's departures from its paper without scanning every method's (``departure_notes`` lines)."""
    groups: dict[str, list[str]] = {}
    for note in notes:
        name, _, text = note.partition(": ")
        groups.setdefault(name, []).append(text)
    return "".join(
        f"<details style='margin:2px 0'><summary class='wb-muted'><b>{esc(name)}</b>: "
        f"{counted(len(items), 'departure')} from its paper</summary><ul style='margin:2px 0'>"
        + "".join(f"<li class='wb-muted'>{esc(t)}</li>" for t in items) + "</ul></details>"
        for name, items in groups.items())


def prefetch_views(store: RunStore) -> None:
    """The slow, widget-free parts of the Results and Structures tabs, done ahead in the read-ahead
    thread (measured on the demo run: those tabs took 0.76 s and 0.65 s to build, mostly plotly's
    first figure, the table widget's first import and pyvis writing H-Mem's graph page). Plotly and
    the table module are imported and a first cost figure is made; each method's entity-graph page
    is written into ``graph_view``'s page store. No Panel object is made here."""
    import pandas.io.formats.style  # noqa: F401  (the table widget's first use: ~0.15 s)
    import panel.widgets.tables  # noqa: F401  (first import: ~0.2 s)

    from widgets.graph_view import GraphState

    if store.run is None or store.conv_id is None:
        return
    metric = store.auto_metric()
    summary, _ = store.summary(metric)
    if not summary.empty:  # what the Results tab opens on
        results_table_html(store, metric)
        cost_chart(store, metric, "query_tokens", ALL)
    for method in store.methods:
        structures = store.structures(method)
        if (structures.get("graph") or {}).get("nodes"):
            GraphState(structures, store.conversation())


class WorkbenchApp(pn.viewable.Viewer):
    """The app: header (run, manifest, conversation picker, problems) over one tab per view.

    First paint builds only what it shows: the header and the Question tab. Every other tab is an
    empty slot until its view is built, when the tab is first shown or a link opens it (``views``
    builds on first access; ``prewarm`` builds them all). In a served page, once the first paint is
    done, a worker thread reads and computes what those views need (``RunStore.warm``: lifecycle,
    events, results tables, structures), so a tab's first show only builds its widgets; problems
    in those files reach the header then. plotly.js, too, is loaded after the first paint
    (``PlotlyLoader``), and the views' Plotly panes wait for it (``PlotHolder``)."""

    def __init__(self, run_dir=DEFAULT_RUN, *, embedder=None, plotly_on_demand: bool | None = None, **params):
        super().__init__(**params)
        self.store = RunStore(run_dir, embedder=embedder)
        # widgets/*_view(s).py register into STRUCTURE_VIEWS
        self.store.note_all(f"structure views: {problem}" for problem in load_structure_views())
        # a plugin left out (raised at import, a name two plugins claim, no method class) is said here once,
        # and every other method and view goes on working
        self.store.note_all(f"method plugins: {problem}" for problem in plugin_problems())
        self.store.note_all(label_problems())  # shipped label files damaged before this session began
        served = in_server_session()
        if plotly_on_demand is None:
            plotly_on_demand = page_lacks_plotly()
        self.plotly = PlotlyLoader()
        self.plots = PlotHolder(self.plotly, active=served or plotly_on_demand, plotly_on_demand=plotly_on_demand)
        self.slots = {name: pn.Column(sizing_mode="stretch_width") for name, _ in TABS}
        self.views = LazyViews(self.slots, self._build_view)
        self.tabs = pn.Tabs(*self.slots.items(), dynamic=True, sizing_mode="stretch_width")
        self.tabs.param.watch(self._switched, "active")
        # after the views' own conversation watchers (lower precedence runs first): hold new plots
        self.store.param.watch(lambda e: self._hold_plots(), "conv_id", precedence=10)
        self.plots.show(self.views[list(self.slots)[self.tabs.active]].panel)  # the tab the app opens on
        self.problems = pn.Column(sizing_mode="stretch_width")
        self._problems_pane = message("", "danger")  # one pane, its text replaced: never one per problem
        self.store.param.watch(lambda e: self._show_problems(), "errors")
        self._show_problems()
        # the picker's own label, not a text pane beside it: the row keeps room for the run line and the toggle
        conv = pn.widgets.Select.from_param(self.store.param.conv_id, name="conversation", width=200, margin=(0, 8))
        self.presenting = False
        self._runline = html_pane(self.header_html())
        self._census = census_pane(self.store.run_dir, on_link=self.follow)
        # presentation mode one click away (usability review T1: only ``?present=1`` in the URL turned it on)
        self.present_toggle = pn.widgets.Toggle(name="present", value=False, width=76, margin=(18, 8, 0, 0))
        self.present_toggle.param.watch(lambda e: self.present(e.new), "value")
        self.header = pn.Column(pn.Row(self._runline, conv, self.present_toggle, sizing_mode="stretch_width"),
                                self._census, self.problems, sizing_mode="stretch_width")

    def _build_view(self, name: str):
        view = dict(TABS)[name](self.store)
        if name == "Question":
            view.open_trace = self.open_trace
            view.follow = self.follow
            view.update_button()  # the trace button can work now
        elif name == "Lifecycle":
            view.open_question = self.open_question
        elif name in ("Memories", "Events", "Structures", "Results", "Traces"):
            view.follow = self.follow
        self.plots.hold(view.panel)
        self.slots[name].objects = [view.panel]
        return view

    def _switched(self, event) -> None:
        """A tab was shown (click, keyboard, link): build its view if need be; the charts and
        embedded pages of the tab shown are drawn after its text (once; a pending draw for the
        tab left is dropped)."""
        names = list(self.slots)
        if event.old is not None and 0 <= event.old < len(names) and self.views.built(names[event.old]):
            self.plots.hide(self.views[names[event.old]].panel)
        if 0 <= event.new < len(names):
            self.plots.show(self.views[names[event.new]].panel)

    def _hold_plots(self) -> None:
        """After a conversation switch the views made new panes: the slow ones go into slots too."""
        names = list(self.slots)
        for name in names:
            if self.views.built(name):
                panel = self.views[name].panel
                if self.plots.hold(panel) and names.index(name) == self.tabs.active:
                    self.plots.show(panel)

    def prewarm(self) -> None:
        """Build every tab's view now (a notebook, a test, a script that reads ``views``)."""
        for name in self.views:
            self.views[name]

    def warm_in_background(self) -> threading.Thread:
        """After a served page's first paint: read and compute what the other tabs need
        (``RunStore.warm``) in a worker thread, so the event loop stays free for clicks and a tab
        shown later only builds its widgets."""
        def work():
            try:
                self.store.warm()
                prefetch_views(self.store)
                self.store.note_all(label_problems())  # label files first read while warming
            except Exception as exc:  # nobody would see it in a worker thread: shown in the header
                self.store.note(f"reading the run ahead of its tabs: {type(exc).__name__}: {exc}")
            try:  # last: the model and one method's vectors, for the first semantic search
                self.store.warm_search()
            except Exception as exc:  # shown in the header, as above; search reports its own failure again
                self.store.note(f"preparing semantic search: {type(exc).__name__}: {exc}")

        # IPython is first imported by whichever thread needs it first (pyvis in the read-ahead, a notebook-facing
        # module in a view): two first imports at once raced ("KeyError: 'IPython'" in the header, now and then,
        # in the Events tab's screenshot); importing it here first (0.05 s) leaves the threads nothing to race on
        import IPython.display  # noqa: F401

        thread = threading.Thread(target=work, name="workbench-warm", daemon=True)
        thread.start()
        return thread

    def present(self, on: bool = True) -> "WorkbenchApp":
        """Presentation mode (``?present=1``, or the header's "present" toggle): the header keeps its one run line,
        without the details and the mechanisms census, so that with the browser's own zoom at 125 % a 1280x720
        projector still shows the tab bar and the first answer row. Larger text is left to the browser's zoom: CSS
        ``zoom`` on the page (tried) puts Plotly's hover targets out of place. Problems reading the run stay
        shown."""
        self.presenting = bool(on)
        self._census.visible = not self.presenting
        self._runline.object = self.header_html()
        if self.present_toggle.value != self.presenting:  # turned on from the URL: the toggle shows it
            self.present_toggle.value = self.presenting
        return self

    def header_html(self) -> str:
        """Run, methods and what produced them, read from the manifest (``workbench.eval.manifest.run_summary``);
        in presentation mode the run line alone."""
        from workbench.eval.manifest import run_summary

        from workbench.eval.method_llms import mixed_embedders_line, mixed_llms_line

        m = self.store.manifest
        s = run_summary(m)
        # methods run on different LLMs (a scripted plugin beside replayed built-ins) or embedders (each paper's
        # own under --embedder auto): each is named, never the last evaluation's for all
        s = {**s, "llm": mixed_llms_line(m) or s["llm"], "embedder": mixed_embedders_line(m) or s["embedder"]}
        sha = f" (sha256 {esc(s['llm_sha256'])}…)" if s["llm_sha256"] else ""
        audit = s["judge_audit"]
        fa = (audit or {}).get("false_accept") or {}
        judge_note = (f" — audited: accepted {fa['rate']:.0%} of {fa.get('n')} known-wrong answers"
                      if fa.get("rate") is not None else " — not audited" if s["judge"] != "not recorded" else "")
        scripted = (f"<p class='wb-forced' style='padding:4px'><b>{esc(m.get('label') or 'Scripted run.')}</b></p>"
                    if m.get("scripted") else "")
        # the directory's name on screen (screenshots and projected pages show no machine path); the full
        # path in the tooltip for whoever runs it
        run = Path(self.store.run_dir)
        notes = departure_notes(self.store.methods, self.store.params, s.get("dataset"))
        titles = ", ".join(f"{display_name(m)} ({m})" if display_name(m) != m else m for m in self.store.methods)
        details = (f"<p>methods: {esc(titles or 'none')} · llm: {esc(s['llm'])}{sha} · "
                   f"embedder: {esc(s['embedder'])} · judge: {esc(s['judge'])}{esc(judge_note)} · data: "
                   f"{esc(s['dataset'])} · commit: {esc(s['git_commit'])}</p>"
                   + departures_by_method(notes)
                   + "".join(f"<p class='wb-muted' style='margin:2px 0'>{esc(n)}</p>"
                             for n in variant_notes(self.store.methods, self.store.params)))
        departures = f" · {counted(len(notes), 'departure')} from the papers" if notes else ""
        # one line on first paint (a 1280x720 projector shows the tabs and their content); the rest one click away
        if getattr(self, "presenting", False):
            return box(f"<div class='wb-runline'><b style='font-size:17px'>Memory Workbench</b> · run "
                       f"<code title='{esc(run)}'>{esc(run.name)}</code> · {esc(s['llm'])} · judge: "
                       f"{esc(s['judge'])}{esc(judge_note)}</div>{scripted}")
        return box(f"<div class='wb-runline'><b style='font-size:17px'>Memory Workbench</b> · run "
                   f"<code title='{esc(run)}'>{esc(run.name)}</code> · {esc(s['llm'])} · judge: {esc(s['judge'])}"
                   f"{esc(judge_note)}</div>{scripted}<details><summary class='wb-muted'>details: "
                   f"{len(self.store.methods)} methods, embedder, data, commit{esc(departures)}</summary>{details}"
                   "</details>")

    def open_trace(self, qa_id: str, method: str) -> None:
        """Show ``method``'s trace of ``qa_id`` in the Traces tab and switch to it."""
        traces = self.views["Traces"]
        traces.question.value = qa_id
        if method in traces.method.values:
            traces.method.value = method
        self.tabs.active = list(self.views).index("Traces")

    def follow(self, target: tuple) -> None:
        """A turn/unit/question/method link clicked in any tab: a turn or unit opens in Lifecycle, a method's
        name opens its How it works page."""
        if target[0] == "question":
            self.open_question(target[1], target[2])
            return
        if target[0] == "method":
            self.open_method(target[1])
            return
        self.views["Lifecycle"].show(target)
        self.tabs.active = list(self.views).index("Lifecycle")

    def open_method(self, method: str) -> None:
        """Show ``method``'s How it works page and switch to it."""
        self.views["How it works"].show(method)
        self.tabs.active = list(self.views).index("How it works")

    def open_question(self, qa_id: str, method: str | None = None) -> None:
        """Show ``qa_id`` in the Question tab, ``method``'s row highlighted and its context open."""
        view = self.views["Question"]
        if qa_id in view.question.options.values():
            view.question.value = qa_id
        if method in view.method.values:
            view.method.value = method
        self.tabs.active = list(self.views).index("Question")

    def _show_problems(self) -> None:
        """The header's problems: one alert (``problems_html``: the first ``MAX_PROBLEMS_SHOWN`` listed,
        the rest counted per file), redrawn once per batch of problems (``RunStore.note_all``)."""
        errors = list(self.store.errors)
        self._problems_pane.object = problems_html(errors)
        if bool(errors) != bool(self.problems.objects):
            self.problems.objects = [self._problems_pane] if errors else []

    def __panel__(self):
        # TabKeys: the tab bar as an ARIA tab list, switched with Enter/Space and the arrow keys
        if in_server_session():
            pn.state.onload(self.warm_in_background)
            if getattr(self, "url", None) is None and pn.state.location is not None:
                from widgets.url_state import UrlState

                self.url = UrlState(self, pn.state.location)  # the view in the page's URL, both ways
        return pn.Column(self.header, self.tabs, TabKeys(label="Memory Workbench views", height=0, margin=0),
                         self.plotly, sizing_mode="stretch_width")


def page_lacks_plotly() -> bool:
    """True in a served page whose document did not declare plotly (the module's ``pn.extension``
    leaves it out there): its Plotly panes must wait for ``PlotlyLoader``. A served document that
    declared no extension list at all gets every imported model's library, plotly included."""
    if not in_server_session():
        return False
    declared = getattr(pn.state, "_extensions", None)  # the document's pn.extension(...) names
    if declared is None:
        pn.extension("tabulator", notifications=False)  # gives the document its own list, without plotly
        declared = getattr(pn.state, "_extensions", None)
    return declared is not None and "plotly" not in declared


def build_app(run_dir=DEFAULT_RUN, *, embedder=None) -> WorkbenchApp:
    """The app over ``run_dir`` (a ``Viewer``: display it, ``.servable()`` it, or use ``.tabs``)."""
    return WorkbenchApp(run_dir, embedder=embedder)


def free_port(address: str = "127.0.0.1") -> int:
    """A port free on ``address`` (an IPv6 address, bracketed or not, is bound as IPv6)."""
    bare = address.strip().strip("[]")
    family = socket.AF_INET6 if ":" in bare else socket.AF_INET
    with socket.socket(family) as s:
        s.bind((bare, 0))
        return s.getsockname()[1]


REMOTE_WARNING = ("WARNING: serving on {address}, reachable from other machines. Every request needs the access "
                  "token printed below (as Jupyter does); anyone you give the link can read the run. For accounts, "
                  "put it behind `panel serve --basic-auth ...`, Panel's OAuth options or an authenticating proxy.")


def is_loopback(address: str) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost``; anything else (0.0.0.0 included) is remote."""
    if address.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(address.strip().strip("[]")).is_loopback
    except ValueError:
        return False


def check_address(address: str, allow_remote: bool) -> None:
    """Refuse a non-loopback bind without ``allow_remote``; warn (stderr) when it is allowed."""
    if is_loopback(address):
        return
    if not allow_remote:
        raise SystemExit(f"refusing to serve on {address}: the app would be reachable from other machines; use "
                         "127.0.0.1, or pass --allow-remote (every request then needs a printed access token)")
    print(REMOTE_WARNING.format(address=address), file=sys.stderr)


def url_host(address: str) -> str:
    """``address`` as it is written in a URL (an IPv6 literal in brackets)."""
    bare = address.strip().strip("[]")
    try:
        return f"[{bare}]" if ipaddress.ip_address(bare).version == 6 else bare
    except ValueError:
        return address


def serve(run_dir=None, port: int = 0, address: str = "127.0.0.1", show: bool = False, *, threaded: bool = False,
          allow_remote: bool = False, allowed_hosts: Sequence[str] = (), token: str | None = None,
          num_procs: int = 1):
    """Serve the app (one fresh app per browser session), at ``/`` and at ``/app`` (``APP_ROUTES``: the path of
    ``panel serve widgets/app.py``, so a link such as ``/app?tab=Traces&q=...`` works on both). Binds to
    127.0.0.1; another address needs ``allow_remote=True``, prints a warning and requires an access token on
    every request (``widgets.access_token``: ``token``, else ``$WORKBENCH_APP_TOKEN``, else a random one, printed
    once in the link). ``port=0`` picks a free port. Blocks unless ``threaded`` (then returns the
    server thread, which has ``stop()`` and the ``token`` it requires, or ``None``). ``num_procs``
    above 1 forks that many server processes on one port (Bokeh's own multi-process serving, for a
    class opening the app at once: each process builds its own sessions; 0 is one per core).

    Every route and the websocket go through one gate first (``widgets.host_guard.Gate``): a malformed
    ``Host`` gets 400, one that is not a loopback name, the bound address or one of ``allowed_hosts`` 403
    (the guard against DNS rebinding), an oversized address 414 or 400 with words; every response carries
    the page policy (``widgets.page_policy``)."""
    from panel.io.threads import StoppableThread
    from tornado.ioloop import IOLoop

    from widgets.access_token import AccessToken
    from widgets.host_guard import MAX_HEAD_BYTES, widen_tornado_limits
    from widgets.location_compat import patch_location_reader

    check_address(address, allow_remote)
    if num_procs != 1 and threaded:
        raise SystemExit("several server processes (--num-procs) cannot run in a thread")
    if num_procs < 0:
        raise SystemExit(f"--num-procs must be 0 (one per core) or more, got {num_procs}")
    if allowed_hosts and not allow_remote:
        raise SystemExit("host names other than loopback ones are only served with --allow-remote")
    run_dir = run_dir or os.environ.get("WORKBENCH_RUN", DEFAULT_RUN)
    port = port or free_port(address)
    names = allowed_names(address, allowed_hosts)
    if allow_remote and not allowed_hosts and address not in names:  # a wildcard bind (0.0.0.0, ::)
        print(f"note: requests are answered only when they name this server as {', '.join(sorted(names))}; list "
              "the names others use to reach it after --allow-remote (e.g. --allow-remote lab-box.local)",
              file=sys.stderr)
    access = None if is_loopback(address) else AccessToken(token, port=port)
    widen_tornado_limits()
    patch_location_reader()
    # Bokeh's origin list cannot hold IPv6 literals; a page on [::1] passes Tornado's same-origin check
    origins = sorted(f"{n}:{port}" for n in names if ":" not in n)
    base = f"http://{url_host(address)}:{port}/"
    print(f"Memory Workbench app for {run_dir} at {access.link(base) if access else base}")
    options = dict(port=port, address=address, show=show, websocket_origin=origins, title="Memory Workbench",
                   verbose=False, http_server_kwargs={"max_header_size": MAX_HEAD_BYTES})
    if num_procs != 1:
        options["num_procs"] = num_procs
    if not threaded:
        return _run_guarded(run_dir, names, options, access)
    loop = IOLoop(make_current=False)
    server_id = os.urandom(16).hex()  # Panel's StoppableThread.stop finds the server by this id
    thread = StoppableThread(target=_run_guarded, io_loop=loop, owns_loop=True, args=(run_dir, names),
                             kwargs=dict(options=dict(options, loop=loop, server_id=server_id), access=access),
                             daemon=True)
    thread.token = access.value if access else None
    thread.start()
    return thread


#: the paths ``serve`` answers the app at: ``/``, and ``/app`` as ``panel serve widgets/app.py`` names it
APP_ROUTES = ("/", "/app")


def _run_guarded(run_dir, names, options, access=None):
    """Build the Bokeh server unstarted, put the gate in front of its routes, then run it.

    Panel's ``pn.serve`` has no hook for routing rules, so the Tornado application is taken from the
    Bokeh server's ``_tornado`` (Panel reads the same attribute itself); if a future Bokeh renames
    it this raises instead of serving without the guard."""
    def page():
        return build_app(run_dir).__panel__()

    # the same app at / and at /app, the path `panel serve widgets/app.py` gives it, so one link form (the
    # README's `/app?tab=...`) opens the same view on either server
    server = pn.serve({route: page for route in APP_ROUTES}, start=False, threaded=False, **options)
    tornado_app = getattr(server, "_tornado", None)
    if tornado_app is None:
        raise RuntimeError("cannot install the Host check: this Bokeh server has no Tornado application "
                           "attribute `_tornado`; refusing to serve without it")
    guard_hosts(tornado_app, names, access)
    server.start()
    server.io_loop.start()
    return server


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="Serve the Memory Workbench app over a saved run directory.")
    ap.add_argument("--run", default=os.environ.get("WORKBENCH_RUN", DEFAULT_RUN), help="run directory")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--address", default="127.0.0.1")
    ap.add_argument("--allow-remote", nargs="*", default=None, metavar="NAME",
                    help="allow a non-loopback --address (the app has no login; a warning is printed); the NAMEs "
                         "are further host names the app may be reached by (loopback names and the address "
                         "always are; any other Host header is refused, against DNS rebinding)")
    ap.add_argument("--show", action="store_true")
    ap.add_argument("--num-procs", type=int, default=1,
                    help="server processes on the one port (Bokeh's multi-process serving; 0: one per core)")
    return ap.parse_args(argv)


FOREIGN_HOST_MESSAGE = ("This server answers only to its own names (localhost, 127.0.0.1, [::1]); this page was "
                        "requested under another name, as a DNS-rebinding page would. Nothing of the run is shown.")


def servable_for_request(args: argparse.Namespace, headers: Mapping[str, str]):
    """What ``panel serve widgets/app.py`` shows one session: the app, or (for a request whose ``Host``
    is not one of this server's names) a refusal that reads nothing of the run. Panel owns that
    server's routes, so this is the check there; ``serve`` refuses such requests before any route."""
    names = allowed_names("127.0.0.1", args.allow_remote or ())
    if not host_allowed(headers.get("Host"), names):
        return pn.pane.Alert(FOREIGN_HOST_MESSAGE, alert_type="danger")
    from widgets.app import build_app as _build_app  # the importable module: STRUCTURE_VIEWS registered there count

    return _build_app(args.run)


if __name__.startswith("bokeh_app_"):  # `panel serve widgets/app.py --args --run DIR`
    from widgets.app import servable_for_request as _servable

    _servable(parse_args(sys.argv[1:]), pn.state.headers or {}).servable(title="Memory Workbench")
elif __name__ == "__main__":
    _a = parse_args()
    serve(_a.run, port=_a.port, address=_a.address, show=_a.show, allow_remote=_a.allow_remote is not None,
          allowed_hosts=_a.allow_remote or (), num_procs=_a.num_procs)
