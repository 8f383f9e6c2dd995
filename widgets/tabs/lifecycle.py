"""The Lifecycle tab: a turn to every unit derived from it, a unit to its events and the answers that saw it."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Callable

import panel as pn

from widgets.html import box, esc
from workbench.methods import display_options
from widgets.lifecycle import turn_html, unit_html
from widgets.panel_parts import (
    LinkHTML,
)
from widgets.run_store import RunStore


class LifecycleTab:
    """Unit lifecycle (``widgets.lifecycle``): a turn and every unit each method derived from it,
    or a unit with its source turns, events and the answers whose reader saw it. Ids are links:
    turns and units open here (``◀ back`` returns), a question opens the Question tab."""

    def __init__(self, store: RunStore):
        self.store = store
        self.open_question: Callable[[str, str], None] | None = None  # set by WorkbenchApp
        self.turn = pn.widgets.Select(label="turn", options={}, sizing_mode="stretch_width")
        self.method = pn.widgets.Select(label="or a unit of method", options=display_options(store.methods), width=200)
        self.unit = pn.widgets.Select(label="unit", options={"(pick a unit)": ""}, value="", width=260)
        self.back_button = pn.widgets.Button(label="◀ back", width=90, align="end", disabled=True)
        self.body = LinkHTML("", on_link=self.follow)
        self.history: list[tuple[str, ...]] = []
        self.target: tuple[str, ...] = ()
        self._syncing = False
        self.turn.param.watch(lambda e: self._picked(("turn", e.new)), "value")
        self.method.param.watch(lambda e: self._fill_units(), "value")
        self.unit.param.watch(lambda e: self._picked(("unit", self.method.value, e.new)), "value")
        self.back_button.on_click(lambda e: self.back())
        store.param.watch(lambda e: self.load(), "conv_id")
        self.panel = pn.Column(pn.Row(self.turn, self.method, self.unit, self.back_button), self.body,
                               sizing_mode="stretch_width")
        self.load()

    def load(self) -> None:
        self.index = self.store.lifecycle()
        self.history, self.target = [], ()
        if self.index is None:
            self.body.object = box("<p>No conversation in this run, so no lifecycle to show.</p>")
            return
        opts = self.index.turn_options()
        with self._quiet():
            self.turn.options = opts
            self._fill_units()
        first = next(iter(opts.values()), None)
        if first is not None:
            self.show(("turn", first), remember=False)

    @contextmanager
    def _quiet(self):
        """Set the pickers without their watchers navigating again."""
        self._syncing = True
        try:
            yield
        finally:
            self._syncing = False

    def _unit_options(self, method: str | None) -> dict[str, str]:
        """A placeholder first, so that no unit is picked (and opened) just because it is listed first."""
        units = self.index.unit_options(method) if self.index and method else []
        return {"(pick a unit)": "", **{u: u for u in units}}

    def _fill_units(self) -> None:
        with self._quiet():
            self.unit.options = self._unit_options(self.method.value)
            self.unit.value = ""

    def _picked(self, target: tuple) -> None:
        if not self._syncing and target[-1]:
            self.show(target)

    def follow(self, target: tuple) -> None:
        """A link was clicked in this tab (or sent here from another tab)."""
        if target[0] == "question":
            if self.open_question is not None:
                self.open_question(target[1], target[2])
            return
        self.show(target)

    def show(self, target: tuple, *, remember: bool = True) -> None:
        """Show ``("turn", id)`` or ``("unit", method, id)``; the pickers follow."""
        if self.index is None:
            return
        if remember and self.target and self.target != target:
            self.history.append(self.target)
        self.target = tuple(target)
        with self._quiet():
            if target[0] == "turn":
                if target[1] in self.turn.options.values():
                    self.turn.value = target[1]
                self.unit.value = ""
            else:
                if target[1] in self.method.values:
                    self.method.value = target[1]
                    self.unit.options = self._unit_options(target[1])
                if target[2] in self.unit.options.values():
                    self.unit.value = target[2]
        if target[0] == "turn":
            self.body.object = turn_html(self.index.turn(target[1]), links=True)
        elif self.index.has_unit(target[1], target[2]):
            self.body.object = unit_html(self.index.unit(target[1], target[2]), links=True)
        else:
            self.body.object = box(f"<p>No unit {esc(target[2])} of {esc(target[1])} in this run.</p>")
        self.back_button.disabled = not self.history

    def back(self) -> None:
        if self.history:
            self.show(self.history.pop(), remember=False)
