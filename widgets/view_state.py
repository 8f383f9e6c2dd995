"""What a view is, written once: its controls, its rendered parts and how a control changes it.

A structure view (``TreeState``, ``GraphState``, ``ClusterState``) is a ``ViewState``: plain Python
that knows its data, declares its controls (a node picker, two threshold sliders, a reset button)
and renders each of its parts as an escaped HTML string or a plotly figure. It imports neither
ipywidgets nor Panel. Two shells display any ``ViewState`` by reading that declaration:
``widgets.notebook_shell.NotebookShell`` (ipywidgets, for notebooks) and
``widgets.panel_shell.PanelShell`` (Panel, for the app). A shell maps each ``Control`` to a widget
and each ``Part`` to a pane, forwards widget changes to ``ViewState.apply`` and redraws; it holds no
logic of its own, so the notebook and the app cannot drift apart (param/Panel's ``Param.mapping``
idea: one declaration, a table from declared kinds to widgets).

    state = TreeState(structures, conversation)
    state.apply("node_select", "sum4")      # what either shell does when its picker changes
    state.part("detail")                   # the HTML both shells show
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: control kinds a shell knows how to draw
CONTROL_KINDS = ("select", "float", "int", "button")
#: part kinds: an HTML string or a plotly figure
PART_KINDS = ("html", "figure")


@dataclass(frozen=True)
class Control:
    """One input of a view. ``options``: ``(label, value)`` pairs of a select; ``start``/``end``/
    ``step``: a slider's range; a button's value is ignored (pressing it is the event)."""

    name: str
    kind: str
    label: str
    options: tuple[tuple[str, Any], ...] = ()
    start: float = 0.0
    end: float = 1.0
    step: float = 1.0
    disabled: bool = False

    def __post_init__(self):
        if self.kind not in CONTROL_KINDS:
            raise ValueError(f"control kind must be one of {CONTROL_KINDS}, got {self.kind!r}")


@dataclass(frozen=True)
class Part:
    """One rendered output of a view: ``kind`` "html" (a string) or "figure" (plotly). ``select``: for a
    figure whose points carry a control's option values in ``customdata`` (a tree's node ids), the
    control a click on a point sets (where the shell can hear clicks: the app's, not a notebook's
    static figure)."""

    name: str
    kind: str = "html"
    select: str = ""

    def __post_init__(self):
        if self.kind not in PART_KINDS:
            raise ValueError(f"part kind must be one of {PART_KINDS}, got {self.kind!r}")
        if self.select and self.kind != "figure":
            raise ValueError(f"only a figure part can select by click, not the {self.kind} part {self.name!r}")


class ViewState:
    """Base of the views' state. A subclass sets ``controls`` and ``parts`` (in ``__init__`` when
    they depend on the data), keeps the current control values in ``values`` and implements
    ``apply`` and ``part``. ``layout``: the order the shells show things in, by name; a tuple of
    names is one row (side by side)."""

    controls: tuple[Control, ...] = ()
    parts: tuple[Part, ...] = ()
    layout: tuple[Any, ...] = ()

    def __init__(self):
        self.values: dict[str, Any] = {}

    def control(self, name: str) -> Control:
        for c in self.controls:
            if c.name == name:
                return c
        raise KeyError(f"{type(self).__name__} has no control {name!r}")

    def apply(self, name: str, value: Any) -> None:
        """A control changed (a shell calls this): update the state."""
        raise NotImplementedError

    def part(self, name: str) -> Any:
        """The current rendering of part ``name`` (an HTML string or a plotly figure)."""
        raise NotImplementedError

    def static_part(self, name: str) -> str:
        """Part ``name`` for a page that runs no script (a notebook opened without live widgets): an HTML
        part as it is, a figure drawn as an inline SVG (``widgets.static_figure``). A state whose HTML part
        needs a script (the entity graph's page) overrides this for that part."""
        content = self.part(name)
        if next(p for p in self.parts if p.name == name).kind == "figure":
            from .static_figure import figure_html

            return figure_html(content)
        return content or ""


class ShellBase:
    """What the notebook and app shells share, toolkit-free: a widget change goes to ``state.apply``,
    then ``refresh`` writes every control value back (without re-firing) and redraws every part.
    A shell sets ``state``, ``inputs``, ``outputs`` and ``_syncing`` and says how to set one widget
    (``_set_control``) and show one part (``_show_part``); attribute lookups fall through to its
    widgets, then to the state (the views' older attribute names keep working)."""

    def _changed(self, name: str, value: Any) -> None:
        if not self._syncing:
            self.state.apply(name, value)
            self.refresh()

    def _clicked(self, part: Part, click: Any) -> None:
        """A click on figure ``part`` (plotly event data): the clicked point's ``customdata`` goes to
        control ``part.select`` when it is one of that control's options; anything else is ignored."""
        points = (click or {}).get("points") or [{}]
        value = points[0].get("customdata")
        if isinstance(value, (list, tuple)):
            value = value[0] if value else None
        options = {v for _, v in self.state.control(part.select).options}
        if value not in (None, "") and value in options and value != self.state.values.get(part.select):
            self._changed(part.select, value)

    def refresh(self):
        """Every widget from the state: control values (without firing), then each part."""
        self._syncing = True
        try:
            for name, value in self.state.values.items():
                w = self.inputs.get(name)
                if w is not None:
                    self._set_control(w, value)
        finally:
            self._syncing = False
        for p in self.state.parts:
            self._show_part(p, self.state.part(p.name))
        return self

    def _set_control(self, widget, value: Any) -> None:
        raise NotImplementedError

    def _show_part(self, part: Part, content: Any) -> None:
        raise NotImplementedError

    def __getattr__(self, name: str):
        # Only called for names not found normally: the shell's widgets, then the state's attributes.
        d = self.__dict__
        if "inputs" in d and name in d["inputs"]:
            return d["inputs"][name]
        if "outputs" in d and name in d["outputs"]:
            return d["outputs"][name]
        if "state" in d:
            return getattr(d["state"], name)
        raise AttributeError(name)
