"""The notebook shell: any ``ViewState`` (``widgets.view_state``) as ipywidgets.

Each declared control becomes a widget (select -> Dropdown, float -> FloatSlider, int -> IntSlider,
button -> Button), each part an ``HTML`` or an ``Output`` holding the plotly figure. A widget
change goes to ``state.apply``, then every widget is refreshed from the state. Nothing here
knows what a tree node or a threshold is; ipywidgets is imported only when a shell is built.

Attributes the view classes offered before (``tv.node_select``, ``cv.sim_slider``, ``gv.detail_html``)
keep working: widget names are looked up first, then the state's own attributes.
"""
from __future__ import annotations

from typing import Any

from .html import DisplaysWidget, box, esc, show_figure
from .view_state import Control, Part, ShellBase, ViewState


#: a slider's share of its row: its label is drawn at full width ("initial"), so a fixed-width slider with a long
#: label ("θ_count (units to consolidate)") left its track a dot in JupyterLab (usability review)
SLIDER_LAYOUT = {"width": "42%", "min_width": "340px"}


def _widget(c: Control):
    import ipywidgets as W

    if c.kind == "select":
        return W.Dropdown(options=list(c.options), description=c.label, layout=W.Layout(width="95%"),
                          style={"description_width": "initial"}, disabled=c.disabled)
    if c.kind == "float":
        return W.FloatSlider(min=c.start, max=c.end, step=c.step, description=c.label, continuous_update=False,
                             readout_format=".2f", disabled=c.disabled, style={"description_width": "initial"},
                             layout=W.Layout(**SLIDER_LAYOUT))
    if c.kind == "int":
        return W.IntSlider(min=int(c.start), max=int(c.end), step=int(c.step), description=c.label,
                           continuous_update=False, disabled=c.disabled, style={"description_width": "initial"},
                           layout=W.Layout(**SLIDER_LAYOUT))
    return W.Button(description=c.label, disabled=c.disabled)


class NotebookShell(ShellBase, DisplaysWidget):
    """ipywidgets over a ``ViewState``: ``inputs`` (name -> widget), ``outputs`` (name -> widget),
    ``widget`` (the whole VBox, what Jupyter displays). ``static_html``: the same view without its
    controls, for a page with no live widgets (the controls' current values in one line, then every
    part in layout order, each as ``ViewState.static_part`` renders it)."""

    def __init__(self, state: ViewState):
        import ipywidgets as W

        self.state = state
        self._syncing = False
        self.inputs = {c.name: _widget(c) for c in state.controls}
        self.outputs = {p.name: (W.HTML() if p.kind == "html" else W.Output()) for p in state.parts}
        for name, w in self.inputs.items():
            if isinstance(w, W.Button):
                w.on_click(lambda _, name=name: self._changed(name, None))
            else:
                w.observe(lambda ch, name=name: self._changed(name, ch["new"]), names="value")
        rows = []
        for item in state.layout:
            names = item if isinstance(item, tuple) else (item,)
            ws = [self.inputs.get(n) or self.outputs[n] for n in names]
            if len(ws) > 1 and all(n in self.outputs for n in names):
                for w in ws:
                    w.layout.width = f"{100 // len(ws) - 1}%"
            rows.append(W.HBox(ws) if len(ws) > 1 else ws[0])
        self.widget = W.VBox(rows)
        self.refresh()

    def _set_control(self, widget, value: Any) -> None:
        if hasattr(widget, "value") and widget.value != value:
            widget.value = value

    def _show_part(self, part: Part, content: Any) -> None:
        if part.kind == "html":
            self.outputs[part.name].value = content
        else:
            show_figure(self.outputs[part.name], content)

    def static_html(self) -> str:
        names = [n for item in self.state.layout for n in (item if isinstance(item, tuple) else (item,))]
        settings = [control_text(self.state.control(n), self.state.values.get(n))
                    for n in names if n in self.inputs and self.state.control(n).kind != "button"]
        head = box(f"<p class='wb-muted'>{' · '.join(settings)}</p>") if settings else ""
        return head + "".join(self.state.static_part(n) for n in names if n in self.outputs)


def control_text(c: Control, value: Any) -> str:
    """A control's label and current value as escaped text (a select shows its option's label)."""
    if c.kind == "select":
        value = next((label for label, v in c.options if v == value), value)
    elif c.kind == "float":
        value = f"{float(value):.2f}"
    return f"{esc(c.label)}: <b>{esc(value)}</b>"
