"""``ClusterView``: RecMem's units in 2-D, which consolidation each joined, and when the trigger fired —
with theta_sim / theta_count sliders that replay the recurrence gate from the stored unit
embeddings alone (``recmem.trigger.replay_triggers``; no LLM) — and below, per consolidation of
the live run, its member units and the episodes it wrote.

Every consolidation gets its own colour and marker (16 colours, then the same colours with another
marker shape, so 40 consolidations still look different); the unit whose arrival fired a
consolidation is a star, and the legend says so. Buffered, merged and failed units keep fixed
greys and blues.

State and rendering are written once here (``ClusterState``: no ipywidgets, no Panel);
``ClusterView`` is the notebook shell and ``widgets.structure_views.ClusterPanel`` the app's.

    ClusterView(recmem)                               # a built RecMem (uses recmem.structures())
    ClusterView(run.structures("recmem", cid), conversation=cid)   # structures.json of a saved run; with the
                                                      # conversation, episodes are checked against its topics
    cv.set_thresholds(0.5, 3); cv.trigger_count, cv.live_trigger_count

What the replay can and cannot show (see ``workbench.methods.recmem.trigger``): whether an LLM would have merged a unit
into an episode cannot be re-decided, so by default (``live_outcomes=True``) the live run's
merge-first absorptions and failed consolidations are taken as given; the live thresholds then
reproduce the live trigger log exactly. ``live_outcomes=False`` replays the gate alone.
"""
from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

import numpy as np

from workbench.words import counted

from .html import box, clip, esc, short, source_ids_html, table_html, when_text
from .notebook_shell import NotebookShell
from .readability import fact_flags_html, method_prompts
from .structures import conversation_of, structures_of
from .view_state import Control, Part, ViewState

#: consolidation colours: saturated, told apart on white, none grey (greys mean "not consolidated")
PALETTE = ("#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#42d4f4", "#f032e6", "#9a6324", "#469990",
           "#800000", "#808000", "#000075", "#bfef45", "#ffe119", "#fabed4", "#dcbeff")
#: marker shapes, one per round through the palette ("star" is kept for trigger units); with the
#: unicode shape the HTML lists use for the same marker
SYMBOLS = (("circle", "●"), ("square", "■"), ("diamond", "◆"), ("triangle-up", "▲"), ("hexagon", "⬢"),
           ("pentagon", "⬟"), ("cross", "✚"), ("x", "✖"))
FIXED = {"buffered": ("#adb5bd", "circle"), "merged into an episode": ("#74c0fc", "circle"),
         "failed (kept in buffer)": ("#495057", "x"), "dropped": ("#000000", "x")}
TRIGGER_NOTE = "trigger: the unit whose arrival fired its consolidation"
#: the label of a declared cluster member in no cluster (``members_figure``)
UNCLUSTERED = "in no cluster"


def declared_hooks(kind: str = "clusters") -> dict:
    """The ``structure_hooks`` of the first registered method whose ``structure_view`` is ``kind`` ({} if none):
    what a view built from a bare structures dict, with no method name at hand, replays with."""
    from workbench.methods import REGISTRY

    for cls in REGISTRY.values():
        if getattr(cls, "structure_view", None) == kind and getattr(cls, "structure_hooks", None):
            return dict(cls.structure_hooks)
    return {}


def declared_prompts(kind: str = "clusters") -> tuple[str, ...]:
    """The prompts of the first registered method whose ``structure_view`` is ``kind`` (``method_prompts``), so a
    refined fact copied from them is flagged; () if none."""
    from workbench.methods import REGISTRY

    return next((method_prompts(name) for name, cls in REGISTRY.items()
                 if getattr(cls, "structure_view", None) == kind), ())


def fired_count(decisions: Sequence[Any]) -> int:
    """Gate checks that fired (a failed consolidation fired too)."""
    return sum(bool(d.fired) for d in decisions)


def consolidation_label(trigger: str) -> str:
    """A consolidation's name: the unit whose arrival fired it ("consolidation at unit-18"). Named by its trigger,
    not by its rank, so a replay at other thresholds that fires at the same unit gives the same name, colour and
    shape as the live run's list (numbered by rank, "consolidation 2" of a replay was another cluster than the
    list's when the replay skipped one: usability review)."""
    return f"consolidation at {trigger}"


def membership(decisions: Sequence[Any]) -> dict[str, str]:
    """``unit id -> label``: ``consolidation_label(trigger)`` for each fired cluster (its members and trigger),
    else buffered / merged / failed / dropped. Later consolidations override an earlier buffering."""
    labels = {}
    for d in decisions:
        if d.outcome == "triggered":
            for uid in (*d.relevant_ids, d.unit_id):
                labels[uid] = consolidation_label(d.unit_id)
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

    def __init__(self, structures: Mapping, *, live_outcomes: bool = True, hooks: Mapping | None = None,
                 conversation_id: str | None = None, turn_text: Mapping[str, str] | None = None,
                 prompts: Sequence[str] | None = None):
        # the replay, the gate check, the trigger-log reader and the copy finder come from the method that
        # declares this kind of view (``structure_hooks``), so this view never imports a method by name
        self.hooks = declared_hooks("clusters") if hooks is None else dict(hooks)
        #: a unit's stored text as the view shows it (the method's ``readable`` hook; as stored without one)
        self.readable = self.hooks.get("readable") or (lambda t: "" if t is None else str(t))
        self.structures = structures
        self.conversation_id = conversation_id
        self.units = list(structures.get("units") or [])
        self.ids = [u["id"] for u in self.units]
        self.params = dict(structures.get("params") or {})
        emb = structures.get("embeddings")
        self.vectors = np.asarray(emb, dtype=np.float32) if emb is not None and len(emb) else None
        if self.vectors is not None and self.vectors.shape[0] != len(self.ids):
            self.vectors = None
        self.xy = [tuple(p) for p in structures.get("embeddings_2d") or []]
        self.live = [self.hooks["decision"](d) for d in structures.get("trigger_log") or []]
        self._looks: dict[str, int] = {}
        self.looks()  # the live run's consolidations take the first looks, in the order they fired
        self.live_outcomes = live_outcomes
        self.episodes = list(structures.get("episodes") or [])
        self.facts = [f for f in structures.get("facts") or [] if isinstance(f, Mapping)]
        #: what each turn said (turn id -> text), to read a refined fact against its turns; {} when not known
        self.turn_text = dict(turn_text or {})
        #: the method's own prompts, to flag a refined fact copied from them (``declared_prompts`` when not given)
        self.prompts = declared_prompts("clusters") if prompts is None else tuple(prompts)

    def looks(self, decisions: Sequence[Any] | None = None) -> dict[str, int]:
        """Consolidation label -> its place in the palette (``style``): the live run's in firing order, then
        those of ``decisions`` (a replay) not seen before, each kept for the view's life so a replay never
        recolours the list."""
        for d in self.live if decisions is None else decisions:
            if d.outcome == "triggered":
                self._looks.setdefault(consolidation_label(d.unit_id), len(self._looks))
        return self._looks

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

    def replay(self, theta_sim: float, theta_count: int) -> list[Any]:
        """The declared ``replay`` hook on the stored embeddings with the run's gate settings (no LLM)."""
        if not self.can_replay:
            raise ValueError("these structures hold no unit embeddings: the gate cannot be replayed")
        live = self.live if self.live_outcomes else []
        return self.hooks["replay"](
            self.vectors, float(theta_sim), int(theta_count), self.params.get("gate_k"),
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
        self.hooks["check"](int(theta_count), self.params.get("gate_k"), bool(self.params.get("count_self", True)))


def look(index: int) -> tuple[str, str]:
    """The ``index``-th consolidation's ``(colour, plotly marker symbol)``: every colour once, then every colour
    again with the next shape."""
    return PALETTE[index % len(PALETTE)], SYMBOLS[(index // len(PALETTE)) % len(SYMBOLS)][0]


def style(label: str, looks: Mapping[str, int] | None = None) -> tuple[str, str]:
    """``(colour, plotly marker symbol)`` of a membership label. A consolidation's is its place in ``looks`` (a
    ``ClusterData``'s: the live run's consolidations in order, then each new one a replay fires), so the scatter,
    its legend and the episode list agree, and two consolidations drawn together never share a look (a colour
    picked from the trigger's number did: unit-18 and unit-34 came out alike)."""
    if label in FIXED:
        return FIXED[label]
    return look((looks or {}).get(label, 0))


def marker_html(label: str, looks: Mapping[str, int] | None = None) -> str:
    """The label's colour and shape as an inline mark for HTML lists."""
    colour, symbol = style(label, looks)
    shape = dict(SYMBOLS).get(symbol, "●")
    return f"<span class='wb-mark' style='color:{colour}' title='{esc(label)}'>{shape}</span>"


def _label_order(label: str) -> tuple:
    digits = re.search(r"(\d+)$", label)  # a consolidation's trigger unit, in arrival order where it is numbered
    return (label.startswith("consolidation"), int(digits.group(1)) if digits else 0, label)


def cluster_figure(data: ClusterData, decisions: Sequence[Any], *, title: str = ""):
    """PCA scatter of the units, one trace per membership label (colour and shape from ``style``);
    trigger units as stars, explained by a legend entry of their own."""
    import plotly.graph_objects as go

    labels = membership(decisions)
    triggers = {d.unit_id for d in decisions if d.outcome == "triggered"}
    groups = sorted({labels.get(u, "buffered") for u in data.ids}, key=_label_order)
    fig = go.Figure()
    for label in groups:
        idx = [i for i, u in enumerate(data.ids) if labels.get(u, "buffered") == label and i < len(data.xy)]
        hover = [esc(f"{data.ids[i]} · {label}") + "<br>" + esc(f"live: {data.units[i].get('status', '?')} "
                                                                   f"{' '.join(data.units[i].get('into') or [])}")
                 + "<br>" + esc(short(data.readable(data.units[i].get("text", "")), 140)) for i in idx]
        colour, symbol = style(label, data.looks(decisions))
        fig.add_trace(go.Scatter(
            x=[data.xy[i][0] for i in idx], y=[data.xy[i][1] for i in idx], mode="markers", name=esc(label),
            customdata=[data.ids[i] for i in idx], hovertext=hover, hoverinfo="text",
            marker=dict(size=[17 if data.ids[i] in triggers else 11 for i in idx], color=colour,
                        symbol=["star" if data.ids[i] in triggers else symbol for i in idx],
                        line=dict(width=1, color="#333"))))
    if triggers:
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=esc(TRIGGER_NOTE), hoverinfo="skip",
                                 marker=dict(size=15, symbol="star", color="#ffffff", line=dict(width=1.5,
                                                                                                color="#333"))))
    # the axes have no units of their own: say what they are and what nearness means (review T4c)
    fig.update_layout(height=440, margin=dict(l=40, r=10, t=40, b=40),
                      xaxis_title="PC 1: the direction in which the units' embeddings differ most",
                      yaxis_title="PC 2: the next most varied direction",
                      legend=dict(title="units by the consolidation they joined"),
                      title=esc(title or "Units by consolidation (PCA of their embeddings: near = similar text)"))
    return fig


def members_figure(ids: Sequence[str], xy: Sequence[Sequence[float]], labels: Sequence[str],
                   hover: Sequence[str], *, centroids: Mapping[str, Sequence[float]] | None = None,
                   title: str = "", axes: tuple[str, str] = ("x", "y")):
    """A declared ``clusters`` part's members in 2-D (``widgets.structure_kinds``), drawn as ``cluster_figure``
    draws RecMem's units: one trace per cluster label, each with its colour and shape from ``look`` (in order of
    first appearance; a member in no cluster is grey), each centroid a large open marker of its cluster's colour.
    ``hover`` is escaped text per member."""
    import plotly.graph_objects as go

    order = list(dict.fromkeys(labels))
    looks = {label: i for i, label in enumerate(x for x in order if x != UNCLUSTERED)}
    fig = go.Figure()
    for label in order:
        idx = [i for i, lab in enumerate(labels) if lab == label]
        colour, symbol = FIXED["buffered"] if label == UNCLUSTERED else look(looks[label])
        fig.add_trace(go.Scatter(
            x=[xy[i][0] for i in idx], y=[xy[i][1] for i in idx], mode="markers", name=esc(label),
            customdata=[ids[i] for i in idx], hovertext=[hover[i] for i in idx], hoverinfo="text",
            marker=dict(size=11, color=colour, symbol=symbol, line=dict(width=1, color="#333"))))
    for label, point in (centroids or {}).items():
        colour = look(looks[label])[0] if label in looks else "#333"
        fig.add_trace(go.Scatter(x=[point[0]], y=[point[1]], mode="markers", name=esc(f"centroid of {label}"),
                                 hovertext=[esc(f"centroid of {label}")], hoverinfo="text", showlegend=False,
                                 marker=dict(size=20, symbol="circle-open", color=colour, line=dict(width=3))))
    fig.update_layout(height=440, margin=dict(l=40, r=10, t=40, b=40), xaxis_title=axes[0], yaxis_title=axes[1],
                      legend=dict(title="members by cluster"), title=esc(title or "Members by cluster"))
    return fig


def timeline_figure(decisions: Sequence[Any], live: Sequence[Any], theta_count: int):
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
    fig.add_hline(y=theta_count, line_dash="dash", line_color="crimson", annotation_text=f"θ_count {theta_count}")
    fig.update_layout(height=300, margin=dict(l=40, r=10, t=40, b=40), title="Consolidation moments",
                      xaxis_title="unit (arrival order)", yaxis_title="recurrence count")
    return fig


def counts_html(data: ClusterData, decisions, theta_sim: float, theta_count: int) -> str:
    live_sim, live_count = data.live_thresholds
    mode = ("the replay reuses the live run's merges and failed consolidations" if data.live_outcomes
            else "the trigger gate alone, no merges")
    failed = sum(d.outcome in ("failed", "dropped") for d in data.live)
    failed_note = f" ({failed} of them failed: no episode written)" if failed else ""
    # the sliders' symbols, not the parameter names (the sliders say what each decides)
    return box(f"replayed at θ_sim = {theta_sim:.2f}, θ_count = {theta_count}: "
               f"<b class='wb-replay-count'>{fired_count(decisions)}</b> triggers · live run "
               f"(θ_sim = {live_sim:.2f}, θ_count = {live_count}): <b class='wb-live-count'>"
               f"{fired_count(data.live)}</b> triggers{failed_note} · {len(data.ids)} units · "
               f"{len(data.episodes)} episodes · {len(data.facts)} facts "
               f"<small class='wb-muted'>({esc(mode)}; no LLM)</small>")


def consolidation_groups(data: ClusterData) -> list[dict]:
    """The live run's consolidations with what they wrote: episodes grouped by their ``cluster``
    (one consolidation can write several episodes), each with its member units in arrival order,
    the unit that triggered it and its label in ``membership(data.live)`` (so its colour)."""
    live_labels = membership(data.live)
    order = {u: i for i, u in enumerate(data.ids)}
    triggered = [d for d in data.live if d.outcome == "triggered"]
    groups: dict[str, dict] = {}
    for e in data.episodes:
        g = groups.setdefault(str(e.get("cluster") or e["id"]), {"cluster": str(e.get("cluster") or e["id"]),
                                                                 "episodes": [], "members": []})
        g["episodes"].append(e)
        g["members"] += [m for m in e.get("member_ids") or [] if m not in g["members"]]
    for g in groups.values():
        g["members"].sort(key=lambda u: order.get(u, len(order)))
        g["trigger"] = next((d.unit_id for d in triggered if d.unit_id in g["members"]), None)
        labels = [live_labels[u] for u in g["members"] if live_labels.get(u, "").startswith("consolidation")]
        g["label"] = (consolidation_label(g["trigger"]) if g["trigger"] else
                      max(set(labels), key=labels.count) if labels else "merged into an episode")
    return sorted(groups.values(), key=lambda g: (_label_order(g["label"]), g["cluster"]))


def recurrence_check(data: ClusterData) -> dict | None:
    """The episodes checked against the conversation's planted or annotated recurring topics
    (``annotations.check_recurrence``), or None when the conversation carries none or is not known."""
    from workbench.eval.annotations import check_recurrence, shipped_annotations

    try:
        ann = shipped_annotations()
    except ValueError:  # a damaged annotations file: the census says so; the view checks nothing
        return None
    cid, checkable = data.conversation_id, data.hooks.get("checkable")
    if not cid or cid not in ann or not ann[cid].recurring or checkable is None:
        return None
    checked = check_recurrence({cid: checkable(data.structures)}, {cid: ann[cid]})
    for x in (*checked.get("on", ()), *checked.get("mixed", ())):  # the topic as people say it, not its id
        x["topic_words"] = ann[cid].topic_words(x.get("topic"))
    return checked


def _copies(data: ClusterData, episodes: Sequence[Mapping]) -> dict[str, str]:
    """Episode id -> the episode of the same consolidation it repeats word for word: as the ``checkable`` hook
    reads them (the names the method saved, the same the recurrence check judges), else the ``repeated`` hook."""
    checkable = data.hooks.get("checkable")
    if checkable is None:
        return data.hooks["repeated"](episodes)
    ids = {e.get("id") for e in episodes}
    return {e["id"]: e["copy_of"] for e in checkable({**data.structures, "episodes": list(episodes)})
            if e.get("copy_of") and e["id"] in ids}


def _verdicts(checked: dict | None) -> dict[str, str]:
    """Episode id -> whether it is on a recurring topic, in words."""
    if not checked:
        return {}
    out = {}
    for x in checked["on"]:
        out[x["episode"]] = (f"✓ on {x.get('topic_words', x['topic'])} ({x['parts_on_topic']} of its "
                             f"{counted(x['parts'], 'exchange')})")
    for x in checked["mixed"]:
        out[x["episode"]] = (f"~ mixed: {x.get('topic_words', x['topic'])} in {x['parts_on_topic']} of its "
                             f"{counted(x['parts'], 'exchange')}")
    for x in checked["off"]:
        out[x["episode"]] = f"✗ not a recurrence: {x['why']}"
    for x in checked.get("repeats", []):
        out[x["episode"]] = f"✗ a copy of {x['copy_of']}: one recurrence, one episode"
    return out


def _checked_line(checked: dict | None) -> str:
    if not checked:
        return ""
    mixed = checked["mixed_planted_recurrence"]
    return (f"<p><b>On a recurring topic?</b> Checked against the conversation's {esc(checked['phenomena'])} "
            f"recurring topics: {checked['on_planted_recurrence']} on one (its turns from two sessions or more, in "
            f"at least {checked['threshold']:.0%} of the exchanges the episode was made of), "
            f"{mixed} mixed{' (in fewer)' if mixed else ''}, {checked['off_planted_recurrence']} not a "
            f"recurrence" + (f"; {checked['repeated_episodes']} word-for-word "
                             f"{'copy' if checked['repeated_episodes'] == 1 else 'copies'} of another episode, "
                             "counted wrong" if checked.get("repeated_episodes") else "") + ".</p>")


def episodes_html(data: ClusterData) -> str:
    """Per consolidation of the live run: a collapsible line (its marker as in the scatter at the live
    thresholds, trigger unit, counts), opening onto its member units' texts and the episodes it wrote."""
    units = {u["id"]: u for u in data.units}
    groups = consolidation_groups(data)
    checked = recurrence_check(data)
    verdicts = _verdicts(checked)
    ep_cols = ["episode", "turns", "on a recurring topic?", "text"] if checked else ["episode", "turns", "text"]
    lines = []
    for n, g in enumerate(groups):
        members = [units[m] for m in g["members"] if m in units]
        unit_rows = [{"unit": ("★ " if u["id"] == g["trigger"] else "") + u["id"], "time": when_text(u.get("time")),
                      "turns": source_ids_html(u.get("source_ids") or [], limit=6),
                      "text": clip(short(data.readable(u.get("text", "")), 400))} for u in members]
        copies = _copies(data, g["episodes"])
        ep_rows = [{"episode": e["id"] + (f" (copy of {copies[e['id']]})" if e["id"] in copies else ""),
                    "turns": source_ids_html(e.get("source_ids") or [], limit=8),
                    "on a recurring topic?": verdicts.get(e["id"], ""),
                    "text": clip(e.get("text", ""), limit=600)} for e in g["episodes"]]
        copied = f" ({len(copies)} a word-for-word copy)" if len(copies) == 1 else (
            f" ({len(copies)} word-for-word copies)" if copies else "")
        fact_rows, flagged = _refined_facts(data, g["cluster"])
        refined = (f" · {counted(len(fact_rows), 'fact')} refined" + (f" ({flagged} flagged ⚠)" if flagged else "")
                   if fact_rows else "")
        facts_part = (f"<h6>Facts refined from its episodes</h6>"
                      f"{table_html(fact_rows, ['fact', 'from episode'], raw=('fact',))}" if fact_rows else "")
        turns = sorted({t for u in members for t in u.get("source_ids") or []})
        # the label names the trigger; a group without one (merged episodes) says so
        trigger = "" if g["trigger"] else " · no trigger in this run"
        lines.append(
            f"<details{' open' if n == 0 else ''}><summary>{marker_html(g['label'], data.looks())} "
            f"<b>{esc(g['label'])}</b> "
            f"<span class='wb-muted'>({esc(g['cluster'])})</span>{trigger} · {counted(len(members), 'member unit')} · "
            f"{counted(len(g['episodes']), 'episode')}{copied}{refined} · {counted(len(turns), 'turn')}</summary>"
            f"<h6>Member units</h6>{table_html(unit_rows, ['unit', 'time', 'turns', 'text'], raw=('turns', 'text'))}"
            f"<h6>Episodes it wrote</h6>{table_html(ep_rows, ep_cols, raw=('turns', 'text'))}{facts_part}"
            "</details>")
    in_groups = {m for g in groups for m in g["members"]}
    waiting = [u for u in data.ids if u not in in_groups]
    rest = (f"<p class='wb-muted'>{counted(len(waiting), 'unit')} in no episode (still in the buffer): "
            f"{esc(' '.join(waiting))}</p>" if waiting else "")
    if not groups:
        return box("<h5>Episodes (0)</h5><p class='wb-muted'>(the live run wrote no episodes)</p>" + rest)
    return box("<style>.wb-box .wb-mark {font-size: 16px;} .wb-box details > summary {cursor: pointer; "
               "line-height: 1.7;}</style>"
               f"<h5>Episodes of the live run ({len(data.episodes)}), by the consolidation that wrote them "
               f"({len(groups)})</h5><p class='wb-muted'>Each consolidation is named by the unit whose arrival "
               "fired it, with its marker as in the scatter: a replay that fires at the same unit shows the same "
               "name and marker. Click a line for its member units, its episodes and the facts refined from them."
               "</p>" + _checked_line(checked) + _facts_line(data) + "".join(lines) + rest)


def _refined_facts(data: ClusterData, cluster: str) -> tuple[list[dict], int]:
    """The facts refined from one consolidation's episodes as table rows, each with its flags against its own turns
    and the method's prompts (``readability.fact_flags_html``: a copy of a turn or of the prompt, a relation no turn
    names, the first person), and how many are flagged."""
    rows, flagged = [], 0
    for f in data.facts:
        if str(f.get("cluster")) != cluster:
            continue
        ids = f.get("source_ids") if isinstance(f.get("source_ids"), list) else []
        flags = fact_flags_html(str(f.get("text") or ""), ids, data.turn_text, data.prompts)  # as the census reads
        flagged += bool(flags)
        rows.append({"fact": clip(short(data.readable(f.get("text")), 400)) + flags,
                     "from episode": str(f.get("episode") or "")})
    return rows, flagged


def _facts_line(data: ClusterData) -> str:
    """How many refined facts are flagged against their own turns (what the census counts too), or why only the
    first person and copies of the prompt could be read."""
    if not data.facts:
        return ""
    if not data.turn_text:
        return ("<p class='wb-muted'>The refined facts are read here for the first person and copies of the prompt "
                "only: the conversation's turns are not at hand, so a copy of a turn or a relation no turn names "
                "cannot be told.</p>")
    flagged = sum(_refined_facts(data, g)[1] for g in {str(f.get("cluster")) for f in data.facts})
    n = len(data.facts)
    if flagged:
        said = (f"{flagged} of {counted(n, 'refined fact')} flagged against their own turns (⚠, why on hover): a copy "
                "of a turn or of the method's own prompt, a relation none of its turns names, or the first person")
    else:
        clean = "a turn or the method's own prompt, names a relation its turns never say, or speaks as “I”"
        said = (f"None of the {n} refined facts copies {clean}" if n > 1 else
                "The one refined fact does not copy " + clean.replace("names", "name").replace("speaks", "speak"))
    return (f"<p class='wb-muted'>{said}. These rules read a fact's form, not its truth: a fact the turns do not "
            "support is not caught (open a line and read each against its member units).</p>")


NO_EMBEDDINGS = box("<p class='wb-muted'>No unit embeddings saved: showing the live run only.</p>")


# -- state -----------------------------------------------------------------------------------------------------
class ClusterState(ViewState):
    """The replayable state of one RecMem memory at the current thresholds: ``data`` (ClusterData),
    ``theta_sim``, ``theta_count``, ``decisions``, ``trigger_count``, ``live_trigger_count``, ``labels``,
    ``figure``, ``timeline``, ``counts_html``, ``message``, ``episodes_html``."""

    parts = (Part("message"), Part("counts"), Part("plot", "figure"), Part("timeline_plot", "figure"),
             Part("episodes"))
    layout = (("sim_slider", "count_slider", "reset_button"), "message", "counts", "plot", "timeline_plot",
              "episodes")

    def __init__(self, structures: Mapping, *, live_outcomes: bool = True, hooks: Mapping | None = None,
                 conversation=None):
        super().__init__()
        cid = conversation if isinstance(conversation, str) or conversation is None else \
            getattr(conversation, "id", None)
        turns = getattr(conversation, "turns", None) if not isinstance(conversation, str) else None
        self.data = ClusterData(structures, live_outcomes=live_outcomes, hooks=hooks, conversation_id=cid,
                                turn_text={str(t.id): str(t.text) for t in turns or ()})
        self.live_trigger_count = fired_count(self.data.live)
        sim, count = self.data.live_thresholds
        off = not self.data.can_replay
        self.controls = (
            # the paper's names, with what each threshold decides (usability review: bare "theta_count")
            Control("sim_slider", "float", "θ_sim (similarity)", start=min(0.0, sim), end=1.0,
                    step=0.01, disabled=off),
            Control("count_slider", "int", "θ_count (units to consolidate)", start=1,
                    end=max(self.data.max_theta_count(), count),
                    disabled=off),
            Control("reset_button", "button", "live thresholds", disabled=off))
        self.episodes_html = episodes_html(self.data)
        self.set_thresholds(sim, count)

    def set_thresholds(self, theta_sim: float | None = None, theta_count: int | None = None) -> None:
        """Replay the gate at these thresholds (None keeps the current one); out-of-range values raise
        ``ValueError`` and change nothing."""
        theta_sim = float(self.values.get("sim_slider") if theta_sim is None else theta_sim)
        theta_count = int(self.values.get("count_slider") if theta_count is None else theta_count)
        self.data.check(theta_sim, theta_count)
        self.theta_sim, self.theta_count = theta_sim, theta_count
        self.values.update(sim_slider=theta_sim, count_slider=theta_count)
        self.decisions = self.data.replay(theta_sim, theta_count) if self.data.can_replay else list(self.data.live)
        self.trigger_count = fired_count(self.decisions)
        self.labels = membership(self.decisions)
        self.figure = cluster_figure(self.data, self.decisions)
        self.timeline = timeline_figure(self.decisions, self.data.live, theta_count)
        self.counts_html = counts_html(self.data, self.decisions, theta_sim, theta_count)
        self.message = "" if self.data.can_replay else NO_EMBEDDINGS

    def apply(self, name: str, value: Any) -> None:
        """A slider moved or the reset button was pressed. A threshold the gate cannot take (e.g. a
        theta_count a fixed gate_k cannot reach) is shown as a message; the state stays where it was."""
        try:
            if name == "reset_button":
                self.set_thresholds(*self.data.live_thresholds)
            elif name == "sim_slider":
                self.set_thresholds(value, None)
            else:
                self.set_thresholds(None, value)
        except ValueError as exc:
            self.message = box(f"<p class='wb-forced'>{esc(exc)}</p>")

    def part(self, name: str):
        return getattr(self, {"message": "message", "counts": "counts_html", "plot": "figure",
                              "timeline_plot": "timeline", "episodes": "episodes_html"}[name])


# -- notebook shell --------------------------------------------------------------------------------------------
class ClusterView(NotebookShell):
    """The clusters in a notebook (``ClusterState`` bound to ipywidgets)."""

    def __init__(self, method_or_structures: Any, *, live_outcomes: bool = True, conversation=None):
        super().__init__(ClusterState(structures_of(method_or_structures), live_outcomes=live_outcomes,
                                      conversation=conversation_of(method_or_structures, conversation)))

    def set_thresholds(self, theta_sim: float | None = None, theta_count: int | None = None) -> "ClusterView":
        """Replay the gate at these thresholds (None keeps the current one) and redraw."""
        self.state.set_thresholds(theta_sim, theta_count)
        return self.refresh()

    def __repr__(self) -> str:
        s = self.state
        return (f"ClusterView({len(s.data.ids)} units, theta_sim={s.theta_sim}, theta_count={s.theta_count}, "
                f"triggers {s.trigger_count} replayed / {s.live_trigger_count} live)")
