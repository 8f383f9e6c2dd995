"""Views over workbench results: ipywidgets/plotly classes for notebooks and the Panel app.

Every view takes frozen objects (an ``Answer``, a list of ``MemoryEvent``, result rows) or a saved
run directory, never calls an LLM, and escapes all conversation and model text.

    from widgets import TraceStepper, EvidenceGapView, EventTimeline, CostAccuracyChart, compare
    from widgets import TreeView, GraphView, ClusterView      # H-Mem tree / entity graph, RecMem clusters
    from widgets import QuestionView                           # one question, every method, what each reader saw
    from widgets import LifecycleView                          # a turn -> units of every method -> events, answers

Imports are lazy, so ``widgets.app`` (Panel) and ``widgets.html`` load without ipywidgets.

The structure views are written once: ``TreeState``, ``GraphState`` and ``ClusterState`` (no
ipywidgets, no Panel) declare their controls and rendered parts (``widgets.view_state``);
``widgets.notebook_shell.NotebookShell`` shows any of them with ipywidgets (``TreeView`` & co.) and
``widgets.panel_shell.PanelShell`` with Panel (``widgets.structure_views``, the app's Structures tab).

Structure views for the app's Structures tab (H-Mem tree/graph, RecMem clusters, ...) live in
modules named ``widgets/<something>_view.py`` or ``_views.py`` and register a function
``view(structures: dict, conversation) -> panel object`` per method name::

    from widgets.app import register_structure_view

    @register_structure_view("hmem")
    def hmem_tree(structures, conversation): ...

The app imports those modules (``widgets.app.load_structure_views``) before it builds the tab.
"""
from __future__ import annotations

import importlib

# ``compare`` is both a submodule and its main function: bind the function eagerly so that
# ``from widgets import compare`` gives the function (compare.py imports nothing heavy).
from .compare import Comparison, compare  # noqa: F401  (exported through __all__, built below)

_EXPORTS = {
    "TraceStepper": "trace_stepper",
    "EvidenceGapView": "evidence_gap",
    "EventTimeline": "event_timeline",
    "CostAccuracyChart": "cost_accuracy",
    "TreeView": "tree_view",
    "GraphView": "graph_view",
    "ClusterView": "cluster_view",
    "QuestionView": "question_notebook",
    "LifecycleView": "lifecycle",
    "LifecycleIndex": "lifecycle",
    "EventLog": "event_timeline",
    "build_app": "app",
    "serve": "app",
    "RunStore": "app",
    "STRUCTURE_VIEWS": "app",
    "register_structure_view": "app",
    "load_structure_views": "app",
}

__all__ = sorted([*_EXPORTS, "compare", "Comparison"])


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
