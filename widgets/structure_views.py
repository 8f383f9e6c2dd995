"""The app's Structures tab for H-Mem (tree and entity graph) and RecMem (clusters): the same
``TreeState``, ``GraphState`` and ``ClusterState`` the notebook views use, in ``PanelShell``.

``widgets.app.load_structure_views`` imports this module (its name ends in ``_views``), which
registers one view per kind in ``widgets.tabs.structures.STRUCTURE_VIEWS`` (re-exported by ``widgets.app``).
"""
from __future__ import annotations

from typing import Mapping

import panel as pn

from .tabs.structures import register_structure_view
from .cluster_view import ClusterState
from .graph_view import GraphState
from .panel_shell import PanelShell
from .tree_view import TreeState


class TreePanel(PanelShell):
    """H-Mem's tree in the app."""

    def __init__(self, structures: Mapping, conversation=None):
        super().__init__(TreeState(structures, conversation))


class GraphPanel(PanelShell):
    """H-Mem's entity graph in the app."""

    def __init__(self, structures: Mapping, conversation=None, *, height: int = 600):
        super().__init__(GraphState(structures, conversation, height=height))


class ClusterPanel(PanelShell):
    """RecMem's clusters and threshold replay in the app."""

    def __init__(self, structures: Mapping, conversation=None):
        super().__init__(ClusterState(structures, conversation=conversation))


def _missing(what: str, structures: Mapping | None = None):
    """An info line saying what is missing; None when the structures declare parts by kind (``workbench.structures``),
    which the tab draws instead (a plugin that names this view's kind for its own ``clusters`` or ``tree`` part)."""
    from workbench.structures import parts_of

    if structures is not None and parts_of(structures):
        return None
    return pn.pane.Alert(f"structures.json holds no {what} for this conversation.", alert_type="info",
                         sizing_mode="stretch_width")


@register_structure_view("tree_and_graph")
def tree_and_graph_view(structures: Mapping, conversation=None):
    """The ``tree_and_graph`` view: a temporal-semantic tree, then an entity graph (H-Mem declares it)."""
    if not structures.get("tree") and not (structures.get("graph") or {}).get("nodes"):
        return _missing("tree or entity graph", structures)
    return pn.Column(pn.pane.Markdown("#### Temporal–semantic tree"), TreePanel(structures, conversation).panel,
                     pn.pane.Markdown("#### Entity graph"), GraphPanel(structures, conversation).panel,
                     sizing_mode="stretch_width")


@register_structure_view("clusters")
def clusters_view(structures: Mapping, conversation=None):
    """The ``clusters`` view: units by consolidation, the trigger replay, episodes with their members (RecMem
    declares it)."""
    if not structures.get("units"):
        return _missing("clustered units", structures)
    return ClusterPanel(structures, conversation).panel
