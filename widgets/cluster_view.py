"""``ClusterView``: RecMem's units in 2-D, which consolidation each joined, and when the trigger fired —
with theta_sim / theta_count sliders that replay the recurrence gate from the stored unit
embeddings alone (``recmem.trigger.replay_triggers``; no LLM).

    ClusterView(recmem)                               # a built RecMem (uses recmem.structures())
    ClusterView(run.structures("recmem", cid))        # structures.json of a saved run
    cv.set_thresholds(0.5, 3); cv.trigger_count, cv.live_trigger_count

What the replay can and cannot show (see ``workbench.methods.recmem.trigger``): whether an LLM would have merged a unit
into an episode cannot be re-decided, so by default (``live_outcomes=True``) the live run's
merge-first absorptions and failed consolidations are taken as given; the live thresholds then
reproduce the live trigger log exactly. ``live_outcomes=False`` replays the gate alone.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from workbench.methods.recmem.trigger import TriggerDecision, check_gate_k, replay_triggers

from .html import DisplaysWidget, box, esc, short, table_html
from .structures import structures_of

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf")
FIXED = {"buffered": "#b0b0b0", "merged into an episode": "#6baed6", "failed (kept in buffer)": "#fdae6b",
         "dropped": "#000000"}


def decision_of(d: Mapping | TriggerDecision) -> TriggerDecision:
    if isinstance(d, TriggerDecision):
        return d
    return TriggerDecision(str(d["unit_id"]), int(d["position"]), tuple((str(i), float(c)) for i, c in
                                                                         d.get("neighbours") or ()),
                           tuple(d.get("relevant_ids") or ()), int(d.get("count", 0)), bool(d.get("fired")),
                           str(d.get("outcome", "buffered")))


def fired_count(decisions: Sequence[TriggerDecision]) -> int:
    """Gate checks that fired (a failed consolidation fired too)."""
    return sum(bool(d.fired) for d in decisions)


def membership(decisions: Sequence[TriggerDecision]) -> dict[str, str]:
    """``unit id -> label``: ``consolidation <n>`` for the n-th fired cluster (its members and trigger),
    else buffered / merged / failed / dropped. Later consolidations override an earlier buffering."""
    labels, n = {}, 0
    for d in decisions:
        if d.outcome == "triggered":
            n += 1
            for uid in (*d.relevant_ids, d.unit_id):
                labels[uid] = f"consolidation {n}"
        elif d.outcome == "merged":
            labels[d.unit_id] = "merged into an episode"
        elif d.outcome == "failed":
            labels[d.unit_id] = "failed (kept in buffer)"
        elif d.outcome == "dropped":
            labels[d.unit_id] = "dropped"
        else:
            labels[d.unit_id] = "buffered"
    return labels


class ClusterData:
    """The replayable state of one RecMem memory, from its structures dict (pure; no widgets)."""

    def __init__(self, structures: Mapping, *, live_outcomes: bool = True):
        self.structures = structures
        self.units = list(structures.get("units") or [])
        self.ids = [u["id"] for u in self.units]
        self.params = dict(structures.get("params") or {})
        emb = structures.get("embeddings")
        self.vectors = np.asarray(emb, dtype=np.float32) if emb is not None and len(emb) else None
        if self.vectors is not None and self.vectors.shape[0] != len(self.ids):
            self.vectors = None
        self.xy = [tuple(p) for p in structures.get("embeddings_2d") or []]
        self.live = [decision_of(d) for d in structures.get("trigger_log") or []]
        self.live_outcomes = live_outcomes
        self.episodes = list(structures.get("episodes") or [])
        self.facts = list(structures.get("facts") or [])

    @property
    def can_replay(self) -> bool:
        return self.vectors is not None and len(self.ids) > 0

    @property
    def live_thresholds(self) -> tuple[float, int]:
        return float(self.params.get("theta_sim", 0.7)), int(self.params.get("theta_count", 5))

    def max_theta_count(self) -> int:
        """Largest theta_count the gate can reach (a fixed gate_k caps it); at least 2 * the live one."""
        k = self.params.get("gate_k")
        if k is not None:
            return int(k) + (1 if self.params.get("count_self", True) else 0)
        return max(10, 2 * self.live_thresholds[1])

    def replay(self, theta_sim: float, theta_count: int) -> list[TriggerDecision]:
        """``replay_triggers`` on the stored embeddings with the run's gate settings (no LLM)."""
        if not self.can_replay:
            raise ValueError("these structures hold no unit embeddings: the gate cannot be replayed")
        live = self.live if self.live_outcomes else []
        return replay_triggers(self.vectors, None, float(theta_sim), int(theta_count), self.params.get("gate_k"),
                               ids=self.ids, strict=bool(self.params.get("strict_gate", True)),
                               count_self=bool(self.params.get("count_self", True)),
                               merged=[d.unit_id for d in live if d.outcome == "merged"],
                               failed=[d.unit_id for d in live if d.outcome in ("failed", "dropped")],
                               drop_failed=self.params.get("on_failure") == "drop")

    def check(self, theta_sim: float, theta_count: int) -> None:
        if not -1.0 <= float(theta_sim) <= 1.0:
            raise ValueError(f"theta_sim is a cosine in [-1, 1], got {theta_sim}")
        if int(theta_count) < 1:
            raise ValueError(f"theta_count must be >= 1, got {theta_count}")
        check_gate_k(int(theta_count), self.params.get("gate_k"), bool(self.params.get("count_self", True)))


def _colour(label: str, order: list[str]) -> str:
    return FIXED.get(label) or PALETTE[order.index(label) % len(PALETTE)]


def cluster_figure(data: ClusterData, decisions: Sequence[TriggerDecision], *, title: str = ""):
    """PCA scatter of the units, one trace per membership label; trigger units as stars."""
    import plotly.graph_objects as go

    labels = membership(decisions)
    triggers = {d.unit_id for d in decisions if d.outcome == "triggered"}
    groups = sorted({labels.get(u, "buffered") for u in data.ids},
                    key=lambda s: (s.startswith("consolidation"), int(s.split()[-1]) if s[-1].isdigit() else 0, s))
    fig = go.Figure()
    for label in groups:
        idx = [i for i, u in enumerate(data.ids) if labels.get(u, "buffered") == label and i < len(data.xy)]
        hover = [esc(f"{data.ids[i]} · {label}") + "<br>" + esc(f"live: {data.units[i].get('status', '?')} "
                                                                   f"{' '.join(data.units[i].get('into') or [])}")
                 + "<br>" + esc(short(data.units[i].get("text", ""), 140)) for i in idx]
        fig.add_trace(go.Scatter(
            x=[data.xy[i][0] for i in idx], y=[data.xy[i][1] for i in idx], mode="markers", name=esc(label),
            customdata=[data.ids[i] for i in idx], hovertext=hover, hoverinfo="text",
            marker=dict(size=[15 if data.ids[i] in triggers else 10 for i in idx], color=_colour(label, groups),
                        symbol=["star" if data.ids[i] in triggers else "circle" for i in idx],
                        line=dict(width=1, color="#333"))))
    fig.update_layout(height=420, margin=dict(l=40, r=10, t=40, b=40), xaxis_title="PC 1", yaxis_title="PC 2",
                      title=esc(title or "Units (PCA of embeddings) by the consolidation they joined"))
    return fig


def timeline_figure(decisions: Sequence[TriggerDecision], live: Sequence[TriggerDecision], theta_count: int):
    """Gate count per unit in arrival order, the threshold, replayed triggers and the live ones."""
    import plotly.graph_objects as go

    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[d.position for d in decisions], y=[d.count for d in decisions], mode="lines+markers",
                             name="gate count (replay)", line=dict(color="#aaa"), marker=dict(size=6),
                             hovertext=[esc(f"{d.unit_id}: count {d.count} · {d.outcome}") for d in decisions],
                             hoverinfo="text"))
    fired = [d for d in decisions if d.fired]
    fig.add_trace(go.Scatter(x=[d.position for d in fired], y=[d.count for d in fired], mode="markers",
                             name=f"replayed trigger ({len(fired)})", marker=dict(size=14, symbol="star",
                                                                                color="crimson"),
                             hovertext=[esc(f"{d.unit_id} fired: {' '.join(d.relevant_ids)}") for d in fired],
                             hoverinfo="text"))
    live_fired = [d for d in live if d.fired]
    fig.add_trace(go.Scatter(x=[d.position for d in live_fired], y=[d.count for d in live_fired], mode="markers",
                             name=f"live trigger ({len(live_fired)})",
                             marker=dict(size=18, symbol="diamond-open", color="#2b8a3e", line=dict(width=2)),
                             hovertext=[esc(f"live: {d.unit_id} fired ({d.outcome})") for d in live_fired],
                             hoverinfo="text"))
    fig.add_hline(y=theta_count, line_dash="dash", line_color="crimson", annotation_text=f"theta_count {theta_count}")
    fig.update_layout(height=300, margin=dict(l=40, r=10, t=40, b=40), title="Consolidation moments",
                      xaxis_title="unit (arrival order)", yaxis_title="recurrence count")
    return fig


def counts_html(data: ClusterData, decisions, theta_sim: float, theta_count: int) -> str:
    live_sim, live_count = data.live_thresholds
    mode = "live merges/failures taken as given" if data.live_outcomes else "gate alone"
    return box(f"replayed at theta_sim={theta_sim:.2f}, theta_count={theta_count}: "
               f"<b class='wb-replay-count'>{fired_count(decisions)}</b> triggers · live run "
               f"(theta_sim={live_sim:.2f}, theta_count={live_count}): <b class='wb-live-count'>"
               f"{fired_count(data.live)}</b> triggers · {len(data.ids)} units · {len(data.episodes)} episodes · "
               f"{len(data.facts)} facts <small class='wb-muted'>({esc(mode)}; no LLM)</small>")


def episodes_html(data: ClusterData) -> str:
    rows = [{"id": e["id"], "members": " ".join(e.get("member_ids") or []),
             "turns": " ".join(e.get("source_ids") or []), "text": e.get("text", "")} for e in data.episodes]
    return box(f"<h5>Episodes ({len(rows)})</h5>" + (table_html(rows, ["id", "members", "turns", "text"]) if rows
                                                     else "<p class='wb-muted'>(none)</p>"))


class ClusterView(DisplaysWidget):
    """Scatter + timeline + threshold sliders. State: ``theta_sim``, ``theta_count``, ``decisions``,
    ``trigger_count``, ``live_trigger_count``, ``labels``, ``figure``, ``timeline``, ``counts_html``."""

    def __init__(self, recmem_or_structures: Any, *, live_outcomes: bool = True):
        self.data = ClusterData(structures_of(recmem_or_structures), live_outcomes=live_outcomes)
        self.live_trigger_count = fired_count(self.data.live)
        self._build_widgets()
        self.set_thresholds(*self.data.live_thresholds)

    def set_thresholds(self, theta_sim: float | None = None, theta_count: int | None = None) -> "ClusterView":
        """Replay the gate at these thresholds (None keeps the current one) and redraw."""
        theta_sim = float(self.theta_sim if theta_sim is None else theta_sim)
        theta_count = int(self.theta_count if theta_count is None else theta_count)
        self.data.check(theta_sim, theta_count)
        self.theta_sim, self.theta_count = theta_sim, theta_count
        self.decisions = self.data.replay(theta_sim, theta_count) if self.data.can_replay else list(self.data.live)
        self.trigger_count = fired_count(self.decisions)
        self.labels = membership(self.decisions)
        self.figure = cluster_figure(self.data, self.decisions)
        self.timeline = timeline_figure(self.decisions, self.data.live, theta_count)
        self.counts_html = counts_html(self.data, self.decisions, theta_sim, theta_count)
        self._render()
        return self

    def _build_widgets(self) -> None:
        import ipywidgets as W

        sim, count = self.data.live_thresholds
        off = not self.data.can_replay
        self.sim_slider = W.FloatSlider(value=sim, min=min(0.0, sim), max=1.0, step=0.01, description="theta_sim",
                                        continuous_update=False, disabled=off, readout_format=".2f")
        self.count_slider = W.IntSlider(value=count, min=1, max=max(self.data.max_theta_count(), count),
                                        description="theta_count", continuous_update=False, disabled=off)
        self.reset_button = W.Button(description="live thresholds", disabled=off)
        self.counts = W.HTML()
        self.message = W.HTML(box("<p class='wb-muted'>No unit embeddings saved: showing the live run only.</p>")
                              if off else "")
        self.plot, self.timeline_plot, self.episodes = W.Output(), W.Output(), W.HTML(episodes_html(self.data))
        self._syncing = False
        self.sim_slider.observe(self._on_slider, names="value")
        self.count_slider.observe(self._on_slider, names="value")
        self.reset_button.on_click(lambda _: self.set_thresholds(*self.data.live_thresholds))
        self.widget = W.VBox([W.HBox([self.sim_slider, self.count_slider, self.reset_button]), self.message,
                              self.counts, self.plot, self.timeline_plot, self.episodes])

    def _on_slider(self, change) -> None:
        if self._syncing:
            return
        try:
            self.set_thresholds(self.sim_slider.value, self.count_slider.value)
        except ValueError as exc:  # e.g. a theta_count a fixed gate_k cannot reach: shown, not raised
            self.message.value = box(f"<p class='wb-forced'>{esc(exc)}</p>")

    def _render(self) -> None:
        from .html import show_figure

        self._syncing = True
        try:
            self.sim_slider.value, self.count_slider.value = self.theta_sim, self.theta_count
        finally:
            self._syncing = False
        self.counts.value = self.counts_html
        show_figure(self.plot, self.figure)
        show_figure(self.timeline_plot, self.timeline)

    def __repr__(self) -> str:
        return (f"ClusterView({len(self.data.ids)} units, theta_sim={self.theta_sim}, theta_count={self.theta_count}, "
                f"triggers {self.trigger_count} replayed / {self.live_trigger_count} live)")


class ClusterPanel:
    """Panel version for the app's Structures tab: the same replay bound to two sliders."""

    def __init__(self, structures: Mapping, conversation=None):
        import panel as pn

        self.data = ClusterData(structures)
        sim, count = self.data.live_thresholds
        off = not self.data.can_replay
        self.sim_slider = pn.widgets.FloatSlider(label="theta_sim", start=min(0.0, sim), end=1.0, step=0.01,
                                                 value=sim, disabled=off)
        self.count_slider = pn.widgets.IntSlider(label="theta_count", start=1, value=count, disabled=off,
                                                 end=max(self.data.max_theta_count(), count))
        self.counts = pn.pane.HTML("", sizing_mode="stretch_width")
        self.plot = pn.pane.Plotly(sizing_mode="stretch_width")
        self.timeline = pn.pane.Plotly(sizing_mode="stretch_width")
        for w in (self.sim_slider, self.count_slider):
            w.param.watch(lambda e: self.update(), "value")
        note = [pn.pane.Alert("No unit embeddings saved: showing the live run only.", alert_type="info")] if off else []
        self.panel = pn.Column(pn.Row(self.sim_slider, self.count_slider), *note, self.counts, self.plot,
                               self.timeline, pn.pane.HTML(episodes_html(self.data), sizing_mode="stretch_width"),
                               sizing_mode="stretch_width")
        self.update()

    def update(self) -> None:
        sim, count = float(self.sim_slider.value), int(self.count_slider.value)
        try:
            self.data.check(sim, count)
        except ValueError as exc:
            self.counts.object = box(f"<p class='wb-forced'>{esc(exc)}</p>")
            return
        self.decisions = self.data.replay(sim, count) if self.data.can_replay else list(self.data.live)
        self.trigger_count = fired_count(self.decisions)
        self.counts.object = counts_html(self.data, self.decisions, sim, count)
        self.plot.object = cluster_figure(self.data, self.decisions)
        self.timeline.object = timeline_figure(self.decisions, self.data.live, count)


def recmem_structure_view(structures: Mapping, conversation=None):
    """The ``recmem`` card of the Structures tab."""
    import panel as pn

    if not structures.get("units"):
        return pn.pane.Alert("structures.json holds no RecMem units for this conversation.", alert_type="info",
                             sizing_mode="stretch_width")
    return ClusterPanel(structures, conversation).panel


try:  # registering needs Panel (widgets.app); notebook use of ClusterView does not
    from .app import register_structure_view
except ImportError:  # pragma: no cover - Panel not installed
    pass
else:
    register_structure_view("recmem")(recmem_structure_view)
