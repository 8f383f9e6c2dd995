"""The app shell: any ``ViewState`` (``widgets.view_state``) as Panel components.

The Panel twin of ``widgets.notebook_shell``: select -> ``Select``, float -> ``FloatSlider``,
int -> ``IntSlider``, button -> ``Button``; an HTML part -> ``pane.HTML``, a figure ->
``pane.Plotly``. Changes go to ``state.apply``, then every pane is refreshed from the state; a click
on a figure part that declares ``select`` sets that control (a tree box picks its node). The
component to put in a layout is ``shell.panel``.
"""
from __future__ import annotations

from typing import Any

import panel as pn

from .view_state import Control, Part, ShellBase, ViewState


def _widget(c: Control):
    if c.kind == "select":
        return pn.widgets.Select(label=c.label, options=dict(c.options), disabled=c.disabled,
                                 sizing_mode="stretch_width")
    if c.kind == "float":
        return pn.widgets.FloatSlider(label=c.label, start=c.start, end=c.end, step=c.step, disabled=c.disabled)
    if c.kind == "int":
        return pn.widgets.IntSlider(label=c.label, start=int(c.start), end=int(c.end), step=int(c.step),
                                    disabled=c.disabled)
    return pn.widgets.Button(label=c.label, disabled=c.disabled, align="end")


class PanelShell(ShellBase):
    """Panel over a ``ViewState``: ``inputs`` (name -> widget), ``outputs`` (name -> pane), ``panel``."""

    def __init__(self, state: ViewState):
        self.state = state
        self._syncing = False
        self.inputs = {c.name: _widget(c) for c in state.controls}
        self.outputs = {p.name: (pn.pane.HTML("", sizing_mode="stretch_width") if p.kind == "html"
                                 else pn.pane.Plotly(sizing_mode="stretch_width")) for p in state.parts}
        for name, w in self.inputs.items():
            if isinstance(w, pn.widgets.Button):
                w.on_click(lambda e, name=name: self._changed(name, None))
            else:
                w.param.watch(lambda e, name=name: self._changed(name, e.new), "value")
        for p in state.parts:
            if p.select:
                self.outputs[p.name].param.watch(lambda e, p=p: self._clicked(p, e.new), "click_data")
        rows = []
        for item in state.layout:
            names = item if isinstance(item, tuple) else (item,)
            ws = [self.inputs.get(n) or self.outputs[n] for n in names]
            rows.append(pn.Row(*ws, sizing_mode="stretch_width") if len(ws) > 1 else ws[0])
        self.panel = pn.Column(*rows, sizing_mode="stretch_width")
        self.refresh()

    def _set_control(self, widget, value: Any) -> None:
        if not isinstance(widget, pn.widgets.Button) and widget.value != value:
            widget.value = value

    def _show_part(self, part: Part, content: Any) -> None:
        self.outputs[part.name].object = content
